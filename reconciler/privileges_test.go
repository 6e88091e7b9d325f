package reconciler

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// Capabilities beyond Docker's default set, system host paths, networks
// other than the instance's and host ports are refused unless the
// controller's policy grants them, by name, prefix or port range; the
// condition names the field and the flag.
func TestControllerRefusesHostPrivileges(t *testing.T) {
	caps := func(add ...string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Capabilities: &manifests.Capabilities{Add: add}}
		}
	}
	hostPath := func(p string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "v", HostPath: &manifests.HostPathVolumeSource{Path: p}}}
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "v", MountPath: "/v"}}
		}
	}
	network := func(n string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: n}
		}
	}
	// One replica: a host port allows no more.
	hostPort := func(p int32) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			one := int32(1)
			d.Spec.Replicas = &one
			d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 8080, HostPort: p, HostIP: "127.0.0.1"}}
		}
	}
	// A probe's host is dialled from the host's network.
	probeHost := func(h string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[0].ReadinessProbe = &manifests.Probe{
				HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(2375), Host: h}}
		}
	}
	tests := []struct {
		name    string
		mutate  func(*manifests.Deployment)
		allow   manifests.Policy
		refused []string // in the ReplicaFailure message; nil: runs
	}{
		// dockctl.io/network joins a Docker network: another instance's
		// or another application's only when the operator names it.
		{"another instance's network", network("dockctl_other"), manifests.Policy{}, []string{"annotations[dockctl.io/network]", "--allow-networks=dockctl_other"}},
		{"Docker's default bridge", network("bridge"), manifests.Policy{}, []string{"annotations[dockctl.io/network]", "--allow-networks=bridge"}},
		{"the instance's own network", network("dockctl_i"), manifests.Policy{}, nil},
		// Pod Security's baseline level forbids host ports
		// (spec.containers[*].ports[*].hostPort must be 0 or allowed).
		{"a host port", hostPort(18080), manifests.Policy{}, []string{"containers[0].ports[0].hostPort", "--allow-host-ports=18080"}},
		{"a host port in an allowed range", hostPort(18080), manifests.Policy{HostPorts: []manifests.PortRange{{From: 18000, To: 18100}}}, nil},
		{"a host port outside the allowed ones", hostPort(18080), manifests.Policy{HostPorts: []manifests.PortRange{{From: 80, To: 80}, {From: 18081, To: 19000}}},
			[]string{"containers[0].ports[0].hostPort", "--allow-host-ports=18080"}},
		{"an allowed network", network("backend"), manifests.Policy{Networks: []string{"backend"}}, nil},
		{"a network not in the list", network("bridge"), manifests.Policy{Networks: []string{"backend"}}, []string{"--allow-networks=bridge"}},
		// Pod Security's baseline level (v1.34, KEP-4940) forbids the
		// host field of probes and lifecycle hooks.
		{"a probe dialling the host's loopback", probeHost("127.0.0.1"), manifests.Policy{},
			[]string{"containers[0].readinessProbe.httpGet.host", "--allow-host-namespaces"}},
		{"default capability", caps("NET_BIND_SERVICE", "cap_chown"), manifests.Policy{}, nil},
		{"SYS_ADMIN", caps("SYS_ADMIN"), manifests.Policy{}, []string{"capabilities.add[0]", "--allow-capabilities=SYS_ADMIN"}},
		{"ALL", caps("ALL"), manifests.Policy{Capabilities: []string{"NET_ADMIN"}}, []string{"capabilities.add[0]", "--allow-capabilities=ALL"}},
		{"SYS_ADMIN allowed", caps("CAP_SYS_ADMIN"), manifests.Policy{Capabilities: []string{"sys_admin"}}, nil},
		{"/etc with --allow-host-path only", hostPath("/etc"), manifests.Policy{HostPaths: []string{"/"}}, []string{"volumes[0].hostPath.path", "--allow-host-root"}},
		{"/etc allowed", hostPath("/etc"), manifests.Policy{HostPaths: []string{"/"}, HostRoot: true}, nil},
		{"/etc outside the allowed prefix", hostPath("/etc"), manifests.Policy{HostPaths: []string{"/srv"}, HostRoot: true}, []string{"volumes[0].hostPath.path", "--allow-host-path=/etc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{Allow: tt.allow})
			if err := h.engine.AddNetwork(dockerx.Network{Name: "backend", Subnet: "192.168.77.0/24"}); err != nil {
				t.Fatal(err)
			}
			d := testDeployment("web", 2, "x")
			tt.mutate(d)
			h.apply(d)
			h.start()
			if tt.refused == nil {
				h.waitReplicas("web", int(*d.Spec.Replicas))
				return
			}
			h.waitFor("a ReplicaFailure naming the field and the flag", func() bool { return h.failureSays("web", tt.refused...) })
			if n := h.engine.Calls()["create"]; n != 0 {
				t.Fatalf("%d creates of a refused deployment", n)
			}
		})
	}
}
