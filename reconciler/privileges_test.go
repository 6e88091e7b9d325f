package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// Capabilities beyond Docker's default set and system host paths are
// refused unless the controller's policy grants them, by name and by prefix
// (items 18 and 19 of issue 8); the condition names the field and the flag.
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
	tests := []struct {
		name    string
		mutate  func(*manifests.Deployment)
		allow   manifests.Policy
		refused []string // in the ReplicaFailure message; nil: runs
	}{
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
			d := testDeployment("web", 2, "x")
			tt.mutate(d)
			h.apply(d)
			h.start()
			if tt.refused == nil {
				h.waitReplicas("web", 2)
				return
			}
			h.waitFor("a ReplicaFailure naming the field and the flag", func() bool { return h.failureSays("web", tt.refused...) })
			if n := h.engine.Calls()["create"]; n != 0 {
				t.Fatalf("%d creates of a refused deployment", n)
			}
		})
	}
}
