package dockerx

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-connections/nat"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/manifests"
)

const (
	testHolderImage = "dockctl-holder:default-0123456789ab"
	testPodUID      = "3f9a01bc"
)

// podDeployment is a pod of two app containers, "app" (port 8080) and
// "log-shipper", sharing an emptyDir "cache" — the kind of template that
// needs a holder.
func podDeployment(name string, mutate func(d *manifests.Deployment)) *manifests.Deployment {
	return deployment(name, func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.Volumes = []manifests.Volume{{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}}}
		ps.Containers = []manifests.Container{
			{
				Name: "app", Image: "dockctl-workload:test", ImagePullPolicy: manifests.PullIfNotPresent,
				Ports:        []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []manifests.VolumeMount{{Name: "cache", MountPath: "/cache"}},
			},
			{
				Name: "log-shipper", Image: "dockctl-workload:test", ImagePullPolicy: manifests.PullIfNotPresent,
				Args:         []string{"--listen", ":9090"},
				VolumeMounts: []manifests.VolumeMount{{Name: "cache", MountPath: "/logs", ReadOnly: true}},
			},
		}
		if mutate != nil {
			mutate(d)
		}
	})
}

// podRequest asks for the holder (role RoleHolder) or the member running
// the template container ctr of replica 0 of d.
func podRequest(d *manifests.Deployment, role, ctr string) CreateRequest {
	req := request(d)
	holder := req.Name
	req.Pod = &PodRef{Name: Hostname(d.Metadata.Name, req.TemplateHash, 0), UID: testPodUID, Holder: holder}
	req.Role = role
	if role == RoleHolder {
		req.Image = testHolderImage
	} else {
		req.Name = MemberName(holder, ctr)
		req.Container = ctr
	}
	return req
}

var testLogs = ContainerLogs{Driver: "json-file", MaxSize: DefaultContainerLogMaxSize, MaxFiles: DefaultContainerLogMaxFiles}

// podGoldenCases are the golden files of pods with a holder (pods.md
// "Creating").
func podGoldenCases() []goldenCase {
	// A holder of a two-container pod: its hostname, network alias and
	// the ports of both containers (the init container's too), every
	// emptyDir (both media) mounted.
	holderPod := podDeployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Labels["tier"] = "frontend"
		d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "dockctl-net"}
		ps := &d.Spec.Template.Spec
		ps.Volumes = append(ps.Volumes, manifests.Volume{Name: "shm", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory"}},
			manifests.Volume{Name: "config", HostPath: &manifests.HostPathVolumeSource{Path: "/etc/web"}})
		ps.InitContainers = []manifests.Container{{Name: "migrate", Image: "dockctl-workload:test",
			Ports: []manifests.ContainerPort{{ContainerPort: 5000, HostPort: 15000, HostIP: "127.0.0.1"}}}}
		ps.Containers[0].Ports = append(ps.Containers[0].Ports, manifests.ContainerPort{Name: "dns", ContainerPort: 53, HostPort: 5353, Protocol: "UDP"})
		ps.Containers[0].Resources.Limits = manifests.ResourceList{"memory": resource.MustParse("128Mi")}
		ps.Containers[1].Ports = []manifests.ContainerPort{{Name: "metrics", ContainerPort: 9090, HostPort: 19090, HostIP: "127.0.0.1"}}
	})

	// A member with a disk and a Memory emptyDir, a hostPath, resources,
	// security, a readiness probe, in a pod sharing its PID namespace.
	memberPod := podDeployment("api", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.ShareProcessNamespace = ptr(true)
		ps.TerminationGracePeriodSeconds = ptr(int64(7))
		ps.Volumes = append(ps.Volumes,
			manifests.Volume{Name: "shm", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory", SizeLimit: ptr(resource.MustParse("16Mi"))}},
			manifests.Volume{Name: "config", HostPath: &manifests.HostPathVolumeSource{Path: "/etc/api"}},
			manifests.Volume{Name: "logs", HostPath: &manifests.HostPathVolumeSource{Path: "/var/log/api", Type: "DirectoryOrCreate"}})
		c := &ps.Containers[0]
		c.Command = []string{"/workload"}
		c.Args = []string{"--listen", ":8080"}
		c.Env = []manifests.EnvVar{{Name: "GREETING", Value: "hi"}}
		c.WorkingDir = "/srv"
		c.Ports = append(c.Ports, manifests.ContainerPort{ContainerPort: 8443, HostPort: 18443})
		c.VolumeMounts = append(c.VolumeMounts,
			manifests.VolumeMount{Name: "shm", MountPath: "/dev/shm"},
			manifests.VolumeMount{Name: "config", MountPath: "/config", ReadOnly: true},
			manifests.VolumeMount{Name: "logs", MountPath: "/logs"})
		c.Resources = manifests.ResourceRequirements{
			Limits:   manifests.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("128Mi")},
			Requests: manifests.ResourceList{"cpu": resource.MustParse("250m")},
		}
		c.SecurityContext = &manifests.SecurityContext{RunAsUser: ptr(int64(65534)), ReadOnlyRootFilesystem: ptr(true),
			Capabilities: &manifests.Capabilities{Drop: []string{"ALL"}}}
		c.ReadinessProbe = &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"/workload", "probe", "http://127.0.0.1:8080/readyz"}}, PeriodSeconds: 2}
	})

	// An init container (runs to completion first) and a native sidecar
	// (an init container with restartPolicy Always), beside one app
	// container.
	initPod := deployment("batch", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.Volumes = []manifests.Volume{{Name: "work", EmptyDir: &manifests.EmptyDirVolumeSource{}}}
		ps.InitContainers = []manifests.Container{
			{Name: "init-db", Image: "dockctl-workload:test", Command: []string{"/workload"}, Args: []string{"--exit-after", "1s"},
				VolumeMounts: []manifests.VolumeMount{{Name: "work", MountPath: "/work"}}},
			{Name: "proxy", Image: "dockctl-workload:test", RestartPolicy: manifests.ContainerRestartPolicyAlways,
				Args:           []string{"--listen", ":15001"},
				Ports:          []manifests.ContainerPort{{ContainerPort: 15001}},
				ReadinessProbe: &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"/workload", "probe", "http://127.0.0.1:15001/readyz"}}},
				Resources:      manifests.ResourceRequirements{Limits: manifests.ResourceList{"memory": resource.MustParse("32Mi")}}},
		}
		ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "work", MountPath: "/work", ReadOnly: true}}
	})

	// hostNetwork: the holder is in the host's namespace (no hostname,
	// no alias even with the network annotation), the member joins it;
	// hostPID puts the holder and every member in the host's PID
	// namespace.
	hostPod := podDeployment("edge", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "ignored"}
		ps := &d.Spec.Template.Spec
		ps.HostNetwork = true
		ps.HostPID = true
		ps.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
	})

	return []goldenCase{
		{"pod-holder", podRequest(holderPod, RoleHolder, ""), testLogs},
		{"pod-member-emptydir", podRequest(memberPod, RoleReplica, "app"), testLogs},
		{"pod-member-init", podRequest(initPod, "", "init-db"), ContainerLogs{}},
		{"pod-member-sidecar", podRequest(initPod, RoleReplica, "proxy"), testLogs},
		{"pod-hostnetwork-holder", podRequest(hostPod, RoleHolder, ""), ContainerLogs{}},
		{"pod-hostnetwork-member", podRequest(hostPod, RoleReplica, "app"), ContainerLogs{}},
	}
}

// The holder's contract (pods.md "Creating"), field by field, so that
// regenerating the goldens cannot accept a regression.
func TestBuildConfigHolder(t *testing.T) {
	d := podDeployment("web", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.ShareProcessNamespace = ptr(true)
		ps.Volumes = append(ps.Volumes,
			manifests.Volume{Name: "shm", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory"}},
			manifests.Volume{Name: "host", HostPath: &manifests.HostPathVolumeSource{Path: "/srv"}})
		ps.InitContainers = []manifests.Container{{Name: "init", Image: "i", Ports: []manifests.ContainerPort{{ContainerPort: 7000, HostPort: 17000}}}}
		ps.Containers[1].Ports = []manifests.ContainerPort{{ContainerPort: 9090, HostPort: 19090, HostIP: "127.0.0.1"}}
		ps.Containers[0].Resources.Limits = manifests.ResourceList{"memory": resource.MustParse("1Gi"), "cpu": resource.MustParse("1")}
		ps.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: ptr(true)}
		ps.TerminationGracePeriodSeconds = ptr(int64(60))
		d.Spec.Template.Metadata.Labels["tier"] = "frontend"
	})
	req := podRequest(d, RoleHolder, "")
	req.Logs = testLogs
	cfg, hc, nc, err := BuildConfig(req)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Image != testHolderImage || cfg.Entrypoint != nil || cfg.Cmd != nil {
		t.Errorf("image %q entrypoint %v cmd %v, want the holder image's own entrypoint", cfg.Image, cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.Hostname != req.Pod.Name {
		t.Errorf("hostname %q, want the pod name %q", cfg.Hostname, req.Pod.Name)
	}
	if hc.NetworkMode != "bridge" || len(nc.EndpointsConfig) != 0 {
		t.Errorf("network %q %v, want the default bridge", hc.NetworkMode, nc.EndpointsConfig)
	}
	if hc.IpcMode != "shareable" {
		t.Errorf("IpcMode %q, want shareable (members join it)", hc.IpcMode)
	}
	// With shareProcessNamespace the holder is PID 1 of the namespace
	// the members join: its own.
	if hc.PidMode != "" {
		t.Errorf("PidMode %q, want its own namespace", hc.PidMode)
	}
	if cfg.StopTimeout == nil || *cfg.StopTimeout != 1 {
		t.Errorf("StopTimeout %v, want 1", cfg.StopTimeout)
	}
	if hc.RestartPolicy.Name != "no" {
		t.Errorf("restart policy %+v, want no", hc.RestartPolicy)
	}
	// Ports of every container, init ones included.
	if got := slices.Sorted(maps.Keys(cfg.ExposedPorts)); !slices.Equal(got, []nat.Port{"7000/tcp", "8080/tcp", "9090/tcp"}) {
		t.Errorf("exposed ports %v", got)
	}
	if b := hc.PortBindings["7000/tcp"]; len(b) != 1 || b[0].HostPort != "17000" || b[0].HostIP != "" {
		t.Errorf("7000/tcp bindings %v", b)
	}
	if b := hc.PortBindings["9090/tcp"]; len(b) != 1 || b[0].HostPort != "19090" || b[0].HostIP != "127.0.0.1" {
		t.Errorf("9090/tcp bindings %v", b)
	}
	if _, ok := hc.PortBindings["8080/tcp"]; ok || len(hc.PortBindings) != 2 {
		t.Errorf("port bindings %v, want only the ports with a hostPort", hc.PortBindings)
	}
	// Every emptyDir at /volumes/<name>, nothing else.
	want := []mount.Mount{
		{Type: mount.TypeVolume, Source: VolumeName(req.Pod.Holder, "cache", testPodUID), Target: "/volumes/cache", VolumeOptions: podVolumeOptions(req, "cache", 0)},
		{Type: mount.TypeVolume, Source: VolumeName(req.Pod.Holder, "shm", testPodUID), Target: "/volumes/shm", VolumeOptions: podVolumeOptions(req, "shm", 64<<20)},
	}
	if !mountsEqual(hc.Mounts, want) || len(hc.Binds) != 0 {
		t.Errorf("mounts %+v binds %v, want %+v", hc.Mounts, hc.Binds, want)
	}
	// No resources, no security options, no log options of the template.
	if hc.Memory != 0 || hc.CPUQuota != 0 || hc.CPUShares != 0 || hc.Privileged || hc.CapAdd != nil || hc.LogConfig.Type != "" || cfg.Healthcheck != nil || cfg.Env != nil {
		t.Errorf("holder has a template container's settings: %+v %+v", cfg, hc)
	}
	wantLabels := map[string]string{
		LabelInstance: "default", LabelDeployment: "web", LabelNamespace: "default", LabelTemplateHash: req.TemplateHash, LabelRole: RoleHolder,
		LabelPod: req.Pod.Name, LabelPodUID: testPodUID, "app": "web", "tier": "frontend",
	}
	if !maps.Equal(cfg.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", cfg.Labels, wantLabels)
	}

	t.Run("network annotation", func(t *testing.T) {
		d := podDeployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "mynet"}
		})
		cfg, hc, nc, err := BuildConfig(podRequest(d, RoleHolder, ""))
		if err != nil {
			t.Fatal(err)
		}
		if hc.NetworkMode != "mynet" || cfg.Hostname != "web-5d8f7c9b6-0" || nc.EndpointsConfig["mynet"] == nil ||
			!slices.Equal(nc.EndpointsConfig["mynet"].Aliases, []string{"web"}) {
			t.Errorf("network %q hostname %q endpoints %+v, want mynet with alias web", hc.NetworkMode, cfg.Hostname, nc.EndpointsConfig)
		}
	})
	t.Run("hostPID", func(t *testing.T) {
		d := podDeployment("web", func(d *manifests.Deployment) { d.Spec.Template.Spec.HostPID = true })
		if _, hc, _, err := BuildConfig(podRequest(d, RoleHolder, "")); err != nil || hc.PidMode != "host" {
			t.Errorf("PidMode %q, %v; want host", hc.PidMode, err)
		}
	})
	t.Run("hostNetwork", func(t *testing.T) {
		d := podDeployment("web", func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true })
		if cfg, hc, _, err := BuildConfig(podRequest(d, RoleHolder, "")); err != nil || hc.NetworkMode != "host" || cfg.Hostname != "" {
			t.Errorf("network %q hostname %q, %v; want host without a hostname", hc.NetworkMode, cfg.Hostname, err)
		}
	})
}

// A member's contract (pods.md "Creating"), field by field.
func TestBuildConfigMember(t *testing.T) {
	grace := int64(9)
	d := podDeployment("web", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.TerminationGracePeriodSeconds = &grace
		ps.Volumes = append(ps.Volumes,
			manifests.Volume{Name: "shm", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory"}},
			manifests.Volume{Name: "host", HostPath: &manifests.HostPathVolumeSource{Path: "/srv"}})
		c := &ps.Containers[0]
		c.Ports = append(c.Ports, manifests.ContainerPort{ContainerPort: 8443, HostPort: 18443})
		c.VolumeMounts = append(c.VolumeMounts,
			manifests.VolumeMount{Name: "shm", MountPath: "/dev/shm"},
			manifests.VolumeMount{Name: "host", MountPath: "/srv", ReadOnly: true})
		c.Resources.Limits = manifests.ResourceList{"memory": resource.MustParse("64Mi")}
		c.Env = []manifests.EnvVar{{Name: "A", Value: "1"}}
		d.Spec.Template.Metadata.Labels["tier"] = "frontend"
	})
	req := podRequest(d, RoleReplica, "app")
	req.Logs = testLogs
	cfg, hc, nc, err := BuildConfig(req)
	if err != nil {
		t.Fatal(err)
	}
	holder := "container:" + req.Pod.Holder
	if string(hc.NetworkMode) != holder || string(hc.IpcMode) != holder {
		t.Errorf("network %q ipc %q, want %q", hc.NetworkMode, hc.IpcMode, holder)
	}
	if hc.PidMode != "" {
		t.Errorf("PidMode %q without shareProcessNamespace, want its own", hc.PidMode)
	}
	// Docker refuses these on a container joining another's network.
	if cfg.Hostname != "" || cfg.Domainname != "" || cfg.ExposedPorts != nil || hc.PortBindings != nil || hc.PublishAllPorts ||
		hc.DNS != nil || hc.DNSSearch != nil || hc.DNSOptions != nil || hc.ExtraHosts != nil || len(nc.EndpointsConfig) != 0 {
		t.Errorf("member has network settings: %+v %+v %+v", cfg, hc, nc)
	}
	if cfg.Image != "dockctl-workload:test" || !slices.Equal(cfg.Env, []string{"A=1"}) || hc.Memory != 64<<20 {
		t.Errorf("member lacks its container's settings: %+v %+v", cfg, hc)
	}
	if cfg.StopTimeout == nil || int64(*cfg.StopTimeout) != grace {
		t.Errorf("StopTimeout %v, want terminationGracePeriodSeconds %d", cfg.StopTimeout, grace)
	}
	if hc.RestartPolicy.Name != "no" || hc.LogConfig.Type != "json-file" {
		t.Errorf("restart %+v logs %+v", hc.RestartPolicy, hc.LogConfig)
	}
	// emptyDir of both media: the pod's named volume; hostPath as ever.
	want := []mount.Mount{
		{Type: mount.TypeVolume, Source: VolumeName(req.Pod.Holder, "cache", testPodUID), Target: "/cache", VolumeOptions: podVolumeOptions(req, "cache", 0)},
		{Type: mount.TypeVolume, Source: VolumeName(req.Pod.Holder, "shm", testPodUID), Target: "/dev/shm", VolumeOptions: podVolumeOptions(req, "shm", 64<<20)},
		{Type: mount.TypeBind, Source: "/srv", Target: "/srv", ReadOnly: true},
	}
	if !mountsEqual(hc.Mounts, want) {
		t.Errorf("mounts %+v, want %+v", hc.Mounts, want)
	}
	wantLabels := map[string]string{
		LabelInstance: "default", LabelDeployment: "web", LabelNamespace: "default", LabelTemplateHash: req.TemplateHash, LabelRole: RoleReplica,
		LabelPod: req.Pod.Name, LabelPodUID: testPodUID, LabelContainer: "app", "app": "web", "tier": "frontend",
	}
	if !maps.Equal(cfg.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", cfg.Labels, wantLabels)
	}

	// The PID namespace: the holder's with shareProcessNamespace, the
	// host's with hostPID, else the member's own.
	for _, tt := range []struct {
		name     string
		share    *bool
		hostPID  bool
		wantMode string
	}{
		{"own", nil, false, ""},
		{"shareProcessNamespace false", ptr(false), false, ""},
		{"shareProcessNamespace", ptr(true), false, holder},
		{"hostPID", nil, true, "host"},
	} {
		t.Run("pid/"+tt.name, func(t *testing.T) {
			d := podDeployment("web", func(d *manifests.Deployment) {
				d.Spec.Template.Spec.ShareProcessNamespace = tt.share
				d.Spec.Template.Spec.HostPID = tt.hostPID
			})
			for _, ctr := range []string{"app", "log-shipper"} {
				if _, hc, _, err := BuildConfig(podRequest(d, RoleReplica, ctr)); err != nil || string(hc.PidMode) != tt.wantMode {
					t.Errorf("%s: PidMode %q, %v; want %q", ctr, hc.PidMode, err, tt.wantMode)
				}
			}
		})
	}

	// Init containers and sidecars are members like app containers.
	t.Run("init and sidecar", func(t *testing.T) {
		d := podDeployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.InitContainers = []manifests.Container{
				{Name: "init", Image: "init:1", Args: []string{"x"}},
				{Name: "side", Image: "side:1", RestartPolicy: manifests.ContainerRestartPolicyAlways},
			}
		})
		holder := podRequest(d, RoleHolder, "").Name
		for ctr, image := range map[string]string{"init": "init:1", "side": "side:1", "app": "dockctl-workload:test"} {
			cfg, hc, _, err := BuildConfig(podRequest(d, RoleReplica, ctr))
			if err != nil || cfg.Image != image || cfg.Labels[LabelContainer] != ctr || string(hc.NetworkMode) != "container:"+holder {
				t.Errorf("%s: image %q labels %v network %q, %v", ctr, cfg.Image, cfg.Labels, hc.NetworkMode, err)
			}
		}
	})
}

// What BuildConfig refuses in pods: a pod without holder of several
// containers (it must keep refusing them), and requests that do not name
// a consistent holder or member.
func TestBuildConfigPodErrors(t *testing.T) {
	two := podDeployment("web", nil)
	withInit := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.InitContainers = []manifests.Container{{Name: "init", Image: "i"}}
	})
	both := podDeployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.HostPID = true
		d.Spec.Template.Spec.ShareProcessNamespace = ptr(true)
	})
	mod := func(req CreateRequest, f func(*CreateRequest)) CreateRequest { f(&req); return req }
	tests := []struct {
		name    string
		req     CreateRequest
		wantErr string
	}{
		{"two containers without holder", request(two), "exactly one container, the template has 2"},
		{"an init container without holder", request(withInit), "exactly one container"},
		{"a replica naming another container", mod(request(deployment("web", nil)), func(r *CreateRequest) { r.Container = "other" }), `container "other"`},
		{"unknown member container", podRequest(two, RoleReplica, "nope"), `container "nope": no init or app container`},
		{"member without container", podRequest(two, RoleReplica, ""), "names its template container"},
		{"holder without image", mod(podRequest(two, RoleHolder, ""), func(r *CreateRequest) { r.Image = "" }), "needs its image"},
		{"holder without pod", mod(podRequest(two, RoleHolder, ""), func(r *CreateRequest) { r.Pod = nil }), "needs its pod"},
		{"holder of another name", mod(podRequest(two, RoleHolder, ""), func(r *CreateRequest) { r.Name += "x" }), "named as its pod's holder"},
		{"holder with a container", mod(podRequest(two, RoleHolder, ""), func(r *CreateRequest) { r.Container = "app" }), "runs no template container"},
		{"pod without uid", mod(podRequest(two, RoleReplica, "app"), func(r *CreateRequest) { r.Pod = &PodRef{Name: "p", Holder: "h"} }), "required"},
		{"unknown role", mod(podRequest(two, RoleReplica, "app"), func(r *CreateRequest) { r.Role = "proxy" }), `unknown role "proxy"`},
		{"hostPID and shareProcessNamespace", podRequest(both, RoleReplica, "app"), "cannot both be set"},
		{"hostPID and shareProcessNamespace holder", podRequest(both, RoleHolder, ""), "cannot both be set"},
		{"member with a volume of no source", podRequest(podDeployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Volumes[0].EmptyDir = nil
		}), RoleReplica, "app"), `volume "cache": no supported source`},
		{"holder with a bad protocol", podRequest(podDeployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[1].Ports = []manifests.ContainerPort{{ContainerPort: 1, Protocol: "t/cp"}}
		}), RoleHolder, ""), `container "log-shipper": port 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := BuildConfig(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("BuildConfig error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// EmptyDirSize: sizeLimit, else the memory limits of the containers that
// run for the pod's life (app containers and native sidecars) when all
// have one, else the default.
func TestEmptyDirSize(t *testing.T) {
	mem := func(q string) manifests.ResourceRequirements {
		if q == "" {
			return manifests.ResourceRequirements{}
		}
		return manifests.ResourceRequirements{Limits: manifests.ResourceList{"memory": resource.MustParse(q)}}
	}
	sidecar := func(name, q string) manifests.Container {
		return manifests.Container{Name: name, RestartPolicy: manifests.ContainerRestartPolicyAlways, Resources: mem(q)}
	}
	tests := []struct {
		name      string
		sizeLimit string
		init      []manifests.Container
		apps      []string // memory limits of the app containers; "" none
		want      int64
	}{
		{"one container without limit", "", nil, []string{""}, DefaultMemoryEmptyDirSize},
		{"one container's limit", "", nil, []string{"256Mi"}, 256 << 20},
		{"sizeLimit wins", "8Mi", nil, []string{"256Mi"}, 8 << 20},
		{"sizeLimit without limits", "8Mi", nil, []string{"", ""}, 8 << 20},
		{"sum of the app containers", "", nil, []string{"256Mi", "64Mi"}, 320 << 20},
		{"one app container without limit", "", nil, []string{"256Mi", ""}, DefaultMemoryEmptyDirSize},
		{"sidecars count", "", []manifests.Container{sidecar("s", "32Mi")}, []string{"64Mi"}, 96 << 20},
		{"a sidecar without limit", "", []manifests.Container{sidecar("s", "")}, []string{"64Mi"}, DefaultMemoryEmptyDirSize},
		{"init containers do not count", "", []manifests.Container{{Name: "i", Resources: mem("1Gi")}, {Name: "j"}}, []string{"64Mi"}, 64 << 20},
		{"zero sizeLimit is no limit", "0", nil, []string{"64Mi"}, 64 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := manifests.Volume{Name: "ram", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory"}}
			if tt.sizeLimit != "" {
				v.EmptyDir.SizeLimit = ptr(resource.MustParse(tt.sizeLimit))
			}
			ps := &manifests.PodSpec{Volumes: []manifests.Volume{v}, InitContainers: tt.init}
			for i, l := range tt.apps {
				ps.Containers = append(ps.Containers, manifests.Container{Name: "c" + string(rune('0'+i)), Resources: mem(l)})
			}
			if got := EmptyDirSize(ps, &ps.Volumes[0]); got != tt.want {
				t.Errorf("EmptyDirSize = %d, want %d", got, tt.want)
			}
		})
	}
}

// mountsEqual compares mounts, option pointers dereferenced.
func mountsEqual(a, b []mount.Mount) bool { return reflect.DeepEqual(a, b) }

// podVolumeOptions is what a pod's volume mount carries, written out: no
// copy of the image's files, the volume's own labels (so that Docker, should
// it have to make the volume again, makes it the pod's), and for a memory
// volume (size > 0) the tmpfs driver options.
func podVolumeOptions(req CreateRequest, volume string, size int64) *mount.VolumeOptions {
	o := &mount.VolumeOptions{NoCopy: true, Labels: map[string]string{
		LabelInstance: req.Instance, LabelDeployment: req.From.Owner, LabelNamespace: "default", LabelTemplateHash: req.TemplateHash,
		LabelRole: RoleEmptyDir, LabelPod: req.Pod.Name, LabelPodUID: req.Pod.UID,
	}}
	if size > 0 {
		o.DriverConfig = &mount.Driver{Name: "local", Options: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": fmt.Sprintf("size=%d", size)}}
	}
	return o
}
