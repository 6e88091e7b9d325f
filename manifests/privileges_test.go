package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func privBase(mut func(*Deployment)) *Deployment {
	d := &Deployment{Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{Containers: []Container{{Name: "c", Image: "i"}}}}}}
	mut(d)
	return d
}

func withHostPath(p string) func(*Deployment) {
	return func(d *Deployment) {
		d.Spec.Template.Spec.Volumes = []Volume{{Name: "v", HostPath: &HostPathVolumeSource{Path: p}}}
	}
}

func withNetwork(n string) func(*Deployment) {
	return func(d *Deployment) {
		d.Spec.Template.Metadata.Annotations = map[string]string{AnnotationNetwork: n}
	}
}

func withCaps(add ...string) func(*Deployment) {
	return func(d *Deployment) {
		d.Spec.Template.Spec.Containers[0].SecurityContext = &SecurityContext{Capabilities: &Capabilities{Add: add, Drop: []string{"ALL"}}}
	}
}

func TestPrivileges(t *testing.T) {
	yes := true
	const vol = "spec.template.spec.volumes[0].hostPath.path"
	const netAnn = "spec.template.metadata.annotations[dockctl.io/network]"
	tests := []struct {
		name      string
		d         *Deployment
		protected []string
		want      []string // "path flag"
	}{
		{"nothing", privBase(func(*Deployment) {}), nil, nil},
		{"privileged", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &SecurityContext{Privileged: &yes}
		}), nil, []string{"spec.template.spec.containers[0].securityContext.privileged --allow-privileged"}},
		{"host namespaces", privBase(func(d *Deployment) { d.Spec.Template.Spec.HostNetwork, d.Spec.Template.Spec.HostPID = true, true }), nil,
			[]string{"spec.template.spec.hostNetwork --allow-host-namespaces", "spec.template.spec.hostPID --allow-host-namespaces"}},
		// Item 17: the network annotation cannot bypass the host namespace gate.
		{"network host", privBase(withNetwork("host")), nil, []string{netAnn + " --allow-host-namespaces"}},
		{"network container", privBase(withNetwork("container:dockctl")), nil, []string{netAnn + " --allow-host-namespaces"}},
		// Any other network is another instance's or application's.
		{"network user-defined", privBase(withNetwork("backend")), nil, []string{netAnn + " --allow-networks"}},
		{"network none, of an earlier release", privBase(withNetwork("none")), nil, nil},
		// Docker's network modes are exact, lower-case words
		// (container.NetworkMode.IsNone/IsHost): "None", " none" or "HOST"
		// from a record of an earlier release is the name of a network
		// that Docker joins, which needs the network flag as any other.
		{"network None is a network", privBase(withNetwork("None")), nil, []string{netAnn + " --allow-networks"}},
		{"network NONE is a network", privBase(withNetwork("NONE")), nil, []string{netAnn + " --allow-networks"}},
		{"network none with a space is a network", privBase(withNetwork(" none")), nil, []string{netAnn + " --allow-networks"}},
		{"network HOST is a network, and looks like the host's", privBase(withNetwork("HOST")), nil,
			[]string{netAnn + " --allow-host-namespaces", netAnn + " --allow-networks"}},
		// Pod Security's baseline level: host ports of every container.
		{"host ports", privBase(func(d *Deployment) {
			ps := &d.Spec.Template.Spec
			ps.Containers[0].Ports = []ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, HostPort: 53, Protocol: "UDP"}}
			ps.InitContainers = []Container{{Name: "proxy", Image: "p", RestartPolicy: ContainerRestartPolicyAlways,
				Ports: []ContainerPort{{ContainerPort: 8443, HostPort: 443, HostIP: "127.0.0.1"}}}}
		}), nil, []string{
			"spec.template.spec.initContainers[0].ports[0].hostPort --allow-host-ports",
			"spec.template.spec.containers[0].ports[1].hostPort --allow-host-ports",
		}},
		// Pod Security's baseline level (v1.34+, KEP-4940) forbids the
		// host field of probes and lifecycle hooks: the prober (here the
		// controller, on the host's network) would dial any address, the
		// host's loopback included, for a manifest with no privilege.
		{"probe and hook hosts", privBase(func(d *Deployment) {
			ps := &d.Spec.Template.Spec
			ps.Containers[0].ReadinessProbe = &Probe{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(2375), Host: "127.0.0.1"}}
			ps.Containers[0].LivenessProbe = &Probe{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(22), Host: "localhost"}}
			ps.Containers[0].StartupProbe = &Probe{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(8080)}}
			ps.InitContainers = []Container{{Name: "side", Image: "s", RestartPolicy: ContainerRestartPolicyAlways,
				StartupProbe: &Probe{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(80), Host: "169.254.169.254"}},
				Lifecycle: &Lifecycle{PostStart: &LifecycleHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(80), Host: "10.0.0.1"}},
					PreStop: &LifecycleHandler{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(80), Host: "::1"}}}}}
		}), nil, []string{
			"spec.template.spec.initContainers[0].startupProbe.httpGet.host --allow-host-namespaces",
			"spec.template.spec.initContainers[0].lifecycle.postStart.tcpSocket.host --allow-host-namespaces",
			"spec.template.spec.initContainers[0].lifecycle.preStop.httpGet.host --allow-host-namespaces",
			"spec.template.spec.containers[0].readinessProbe.httpGet.host --allow-host-namespaces",
			"spec.template.spec.containers[0].livenessProbe.tcpSocket.host --allow-host-namespaces",
		}},
		// Item 18: capabilities beyond Docker's default set.
		{"default capabilities", privBase(withCaps("NET_BIND_SERVICE", "cap_chown", "Kill")), nil, nil},
		{"extra capabilities", privBase(withCaps("NET_BIND_SERVICE", "SYS_ADMIN", "cap_net_admin", "ALL", "SYS_MODULE", "DAC_READ_SEARCH")), nil, []string{
			"spec.template.spec.containers[0].securityContext.capabilities.add[1] --allow-capabilities",
			"spec.template.spec.containers[0].securityContext.capabilities.add[2] --allow-capabilities",
			"spec.template.spec.containers[0].securityContext.capabilities.add[3] --allow-capabilities",
			"spec.template.spec.containers[0].securityContext.capabilities.add[4] --allow-capabilities",
			"spec.template.spec.containers[0].securityContext.capabilities.add[5] --allow-capabilities",
		}},
		// Pods: every container is judged, init containers and sidecars
		// included, each under its own path.
		{"privileged init container", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.InitContainers = []Container{{Name: "init", Image: "i", SecurityContext: &SecurityContext{Privileged: &yes}}}
		}), nil, []string{"spec.template.spec.initContainers[0].securityContext.privileged --allow-privileged"}},
		{"privileged sidecar", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.InitContainers = []Container{{Name: "init", Image: "i"},
				{Name: "proxy", Image: "p", RestartPolicy: ContainerRestartPolicyAlways, SecurityContext: &SecurityContext{Privileged: &yes}}}
		}), nil, []string{"spec.template.spec.initContainers[1].securityContext.privileged --allow-privileged"}},
		{"privileged second container", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, Container{Name: "side", Image: "s", SecurityContext: &SecurityContext{Privileged: &yes}})
		}), nil, []string{"spec.template.spec.containers[1].securityContext.privileged --allow-privileged"}},
		{"capabilities of every container, init containers first", privBase(func(d *Deployment) {
			ps := &d.Spec.Template.Spec
			ps.Containers = append(ps.Containers, Container{Name: "side", Image: "s", SecurityContext: &SecurityContext{Capabilities: &Capabilities{Add: []string{"SYS_PTRACE"}}}})
			ps.InitContainers = []Container{{Name: "init", Image: "i", SecurityContext: &SecurityContext{Capabilities: &Capabilities{Add: []string{"CHOWN", "NET_ADMIN"}}}}}
		}), nil, []string{
			"spec.template.spec.initContainers[0].securityContext.capabilities.add[1] --allow-capabilities",
			"spec.template.spec.containers[1].securityContext.capabilities.add[0] --allow-capabilities",
		}},
		{"a host path only an init container mounts", privBase(func(d *Deployment) {
			ps := &d.Spec.Template.Spec
			ps.Volumes = []Volume{{Name: "v", HostPath: &HostPathVolumeSource{Path: "/etc"}}}
			ps.InitContainers = []Container{{Name: "init", Image: "i", VolumeMounts: []VolumeMount{{Name: "v", MountPath: "/host-etc"}}}}
		}), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		// Item 19: system paths need --allow-host-root.
		{"plain host path", privBase(withHostPath("/srv/data")), nil, []string{vol + " --allow-host-path"}},
		{"root", privBase(withHostPath("/")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"the socket, disguised", privBase(withHostPath("/var/run/../run/./docker.sock")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"a parent of the socket", privBase(withHostPath("/var/run/")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"a sibling of the socket", privBase(withHostPath("/var/runner")), nil, []string{vol + " --allow-host-path"}},
		{"/etc", privBase(withHostPath("/etc")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"inside /etc", privBase(withHostPath("/etc/ssl/certs")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/etcfoo is not /etc", privBase(withHostPath("/etcfoo")), nil, []string{vol + " --allow-host-path"}},
		{"/proc", privBase(withHostPath("/proc/1")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/sys", privBase(withHostPath("/sys")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/dev", privBase(withHostPath("/dev/sda")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/root", privBase(withHostPath("/root/.ssh")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/boot", privBase(withHostPath("/boot")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/var/lib/docker", privBase(withHostPath("/var/lib/docker/volumes")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"a parent of /var/lib/docker", privBase(withHostPath("/var/lib")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/run/containerd", privBase(withHostPath("/run/containerd/containerd.sock")), nil, []string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"/var/lib/dockerfoo", privBase(withHostPath("/var/lib/dockerfoo")), nil, []string{vol + " --allow-host-path"}},
		{"a custom DOCKER_HOST socket", privBase(withHostPath("/srv/docker/d.sock")), []string{DockerSocket("unix:///srv/docker/d.sock")},
			[]string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"a parent of a custom DOCKER_HOST socket", privBase(withHostPath("/srv/docker")), []string{DockerSocket("unix:///srv/docker/d.sock")},
			[]string{vol + " --allow-host-path", vol + " --allow-host-root"}},
		{"a sibling of a custom DOCKER_HOST socket", privBase(withHostPath("/srv/data")), []string{DockerSocket("unix:///srv/docker/d.sock")},
			[]string{vol + " --allow-host-path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range Privileges(tt.d, Host{Protected: tt.protected}) {
				got = append(got, p.Path+" "+p.Flag)
				if !strings.Contains(p.String(), p.Flag) {
					t.Errorf("message %q does not name the flag", p.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A symbolic link to / is judged by what it names.
func TestPrivilegesResolveLinks(t *testing.T) {
	link := filepath.Join(t.TempDir(), "innocent")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	ps := Privileges(privBase(withHostPath(link)), Host{Resolve: filepath.EvalSymlinks})
	if len(ps) != 2 || ps[1].Flag != FlagAllowHostRoot {
		t.Fatalf("a link to / should need %s: %v", FlagAllowHostRoot, ps)
	}
}

// Policy.Refused is what the controller checks: the allowed host path
// prefixes, judged after resolving symbolic links and by whole components,
// the system paths behind --allow-host-root, paths that cannot be resolved
// refused, and capabilities by name.
func TestPolicyRefused(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "data")
	other := filepath.Join(tmp, "other")
	for _, dir := range []string{data, other, filepath.Join(tmp, "datafoo")} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// data/escape -> other; data/etc -> /etc
	if err := os.Symlink(other, filepath.Join(data, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(data, "etc")); err != nil {
		t.Fatal(err)
	}
	host := Host{Resolve: filepath.EvalSymlinks, Network: "dockctl_x"}
	withHostPort := func(p int32) func(*Deployment) {
		return func(d *Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []ContainerPort{{ContainerPort: 8080, HostPort: p}}
		}
	}
	yes := true
	createType := func(p, typ string) func(*Deployment) {
		return func(d *Deployment) {
			d.Spec.Template.Spec.Volumes = []Volume{{Name: "v", HostPath: &HostPathVolumeSource{Path: p, Type: typ}}}
		}
	}
	tests := []struct {
		name   string
		d      *Deployment
		policy Policy
		want   []string // refused flags
	}{
		{"no flags refuse a host path", privBase(withHostPath(data)), Policy{}, []string{FlagAllowHostPath}},
		{"the prefix itself", privBase(withHostPath(data)), Policy{HostPaths: []string{data}}, nil},
		{"below the prefix", privBase(withHostPath(data + "/.")), Policy{HostPaths: []string{data}}, nil},
		{"a sibling with the prefix as string prefix", privBase(withHostPath(tmp + "/datafoo")), Policy{HostPaths: []string{data}}, []string{FlagAllowHostPath}},
		{"a link out of the prefix", privBase(withHostPath(data + "/escape")), Policy{HostPaths: []string{data}}, []string{FlagAllowHostPath}},
		{"dot-dot out of the prefix", privBase(withHostPath(data + "/../other")), Policy{HostPaths: []string{data}}, []string{FlagAllowHostPath}},
		{"a link to /etc inside the prefix", privBase(withHostPath(data + "/etc")), Policy{HostPaths: []string{data}}, []string{FlagAllowHostPath, FlagAllowHostRoot}},
		{"/ allows any non-system path", privBase(withHostPath(other)), Policy{HostPaths: []string{"/"}}, nil},
		{"/ does not allow /etc", privBase(withHostPath("/etc")), Policy{HostPaths: []string{"/"}}, []string{FlagAllowHostRoot}},
		{"/ and host root allow /etc", privBase(withHostPath("/etc")), Policy{HostPaths: []string{"/"}, HostRoot: true}, nil},
		{"host root alone allows nothing", privBase(withHostPath("/etc")), Policy{HostRoot: true}, []string{FlagAllowHostPath}},
		{"host root and a prefix elsewhere", privBase(withHostPath("/etc")), Policy{HostPaths: []string{data}, HostRoot: true}, []string{FlagAllowHostPath}},
		{"a relative path is refused", privBase(withHostPath("srv/data")), Policy{HostPaths: []string{"/"}}, []string{FlagAllowHostPath}},
		{"a missing path is refused", privBase(withHostPath(data + "/missing")), Policy{HostPaths: []string{"/"}}, []string{FlagAllowHostPath}},
		{"a missing path Docker creates", privBase(createType(data+"/missing/deeper", "DirectoryOrCreate")), Policy{HostPaths: []string{data}}, nil},
		{"a missing path Docker creates, through a link", privBase(createType(data+"/escape/new", "DirectoryOrCreate")), Policy{HostPaths: []string{data}}, []string{FlagAllowHostPath}},
		{"a prefix that does not exist here allows nothing", privBase(createType(tmp+"/nowhere/x", "DirectoryOrCreate")), Policy{HostPaths: []string{tmp + "/nowhere"}}, []string{FlagAllowHostPath}},
		{"comma list entries are separate prefixes", privBase(withHostPath(other)), Policy{HostPaths: []string{data, other}}, nil},
		{"a capability not allowed", privBase(withCaps("SYS_ADMIN")), Policy{Capabilities: []string{"NET_ADMIN"}}, []string{FlagAllowCapabilities}},
		{"a capability allowed by name", privBase(withCaps("CAP_SYS_ADMIN")), Policy{Capabilities: []string{"sys_admin"}}, nil},
		{"every capability allowed", privBase(withCaps("SYS_ADMIN", "ALL")), Policy{Capabilities: []string{"ALL"}}, nil},
		{"ALL needs ALL", privBase(withCaps("ALL")), Policy{Capabilities: []string{"SYS_ADMIN"}}, []string{FlagAllowCapabilities}},
		{"a privileged init container is refused", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.InitContainers = []Container{{Name: "init", Image: "i", SecurityContext: &SecurityContext{Privileged: &yes}}}
		}), Policy{}, []string{FlagAllowPrivileged}},
		{"a privileged init container allowed", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.InitContainers = []Container{{Name: "init", Image: "i", SecurityContext: &SecurityContext{Privileged: &yes}}}
		}), Policy{Privileged: true}, nil},
		{"a second container's capability is refused", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers,
				Container{Name: "side", Image: "s", SecurityContext: &SecurityContext{Capabilities: &Capabilities{Add: []string{"SYS_ADMIN"}}}})
		}), Policy{Capabilities: []string{"NET_ADMIN"}}, []string{FlagAllowCapabilities}},
		{"a sidecar's capability is refused", privBase(func(d *Deployment) {
			d.Spec.Template.Spec.InitContainers = []Container{{Name: "proxy", Image: "p", RestartPolicy: ContainerRestartPolicyAlways,
				SecurityContext: &SecurityContext{Capabilities: &Capabilities{Add: []string{"NET_ADMIN"}}}}}
		}), Policy{}, []string{FlagAllowCapabilities}},
		{"a host path an init container mounts is refused", privBase(func(d *Deployment) {
			ps := &d.Spec.Template.Spec
			ps.Volumes = []Volume{{Name: "v", HostPath: &HostPathVolumeSource{Path: other}}}
			ps.InitContainers = []Container{{Name: "init", Image: "i", VolumeMounts: []VolumeMount{{Name: "v", MountPath: "/data"}}}}
		}), Policy{HostPaths: []string{data}}, []string{FlagAllowHostPath}},
		{"network host", privBase(withNetwork("host")), Policy{}, []string{FlagAllowHostNamespaces}},
		{"network host allowed", privBase(withNetwork("host")), Policy{HostNamespaces: true}, nil},
		{"the instance's own network", privBase(withNetwork("dockctl_x")), Policy{}, nil},
		{"another instance's network", privBase(withNetwork("dockctl_y")), Policy{}, []string{FlagAllowNetworks}},
		{"a network allowed by name", privBase(withNetwork("backend")), Policy{Networks: []string{"front", "backend"}}, nil},
		{"network names are exact", privBase(withNetwork("Backend")), Policy{Networks: []string{"backend"}}, []string{FlagAllowNetworks}},
		{"host networks need their own flag", privBase(withNetwork("host")), Policy{Networks: []string{"host"}}, []string{FlagAllowHostNamespaces}},
		{"a host port", privBase(withHostPort(8080)), Policy{}, []string{FlagAllowHostPorts}},
		{"a host port allowed by number", privBase(withHostPort(8080)), Policy{HostPorts: []PortRange{{8080, 8080}}}, nil},
		{"a host port at a range's end", privBase(withHostPort(9100)), Policy{HostPorts: []PortRange{{9000, 9100}}}, nil},
		{"a host port past a range", privBase(withHostPort(9101)), Policy{HostPorts: []PortRange{{9000, 9100}}}, []string{FlagAllowHostPorts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.policy.Host = host
			var got []string
			for _, p := range tt.policy.Refused(tt.d) {
				got = append(got, p.Flag)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("refused %v, want %v (%v)", got, tt.want, tt.policy.Refused(tt.d))
			}
		})
	}
}

func TestNormalizeCapability(t *testing.T) {
	for in, want := range map[string]string{"cap_sys_admin": "SYS_ADMIN", "SYS_ADMIN": "SYS_ADMIN", " Net_Admin ": "NET_ADMIN", "all": "ALL"} {
		if got := NormalizeCapability(in); got != want {
			t.Errorf("NormalizeCapability(%q) = %q, want %q", in, got, want)
		}
	}
}

// Docker's exec root (/run/docker, /var/run/docker) holds the socket of the
// containerd that dockerd starts itself (docker/containerd/containerd.sock,
// the default of Debian's docker.io), its plugin sockets and the network
// namespaces: as much control of the host as /run/containerd, which is a
// system path. --allow-host-path=/ alone must not hand it to a container.
func TestPrivilegesDockerExecRootIsSystem(t *testing.T) {
	for _, p := range []string{
		"/run/docker/containerd/containerd.sock",
		"/var/run/docker/containerd/containerd.sock",
		"/run/docker",
		"/run/docker/plugins",
	} {
		t.Run(p, func(t *testing.T) {
			refused := Policy{HostPaths: []string{"/"}}.Refused(privBase(withHostPath(p)))
			if len(refused) != 1 || refused[0].Flag != FlagAllowHostRoot {
				t.Fatalf("%s with --allow-host-path=/ only: refused %v, want %s", p, refused, FlagAllowHostRoot)
			}
		})
	}
}

// /run holds the sockets of the host's root daemons, and any of them is
// control of the host as much as the Docker socket: systemd's and D-Bus's
// (start a unit as root), snapd's, libvirt's, podman's, CRI-O's. Listing
// them one by one always misses one: the whole of /run needs
// --allow-host-root.
func TestPrivilegesRunIsSystem(t *testing.T) {
	for _, p := range []string{
		"/run/dbus/system_bus_socket",
		"/var/run/dbus/system_bus_socket",
		"/run/systemd/private",
		"/run/snapd.socket",
		"/run/libvirt/libvirt-sock",
		"/run/podman/podman.sock",
		"/run/crio/crio.sock",
	} {
		t.Run(p, func(t *testing.T) {
			refused := Policy{HostPaths: []string{"/"}}.Refused(privBase(withHostPath(p)))
			if len(refused) != 1 || refused[0].Flag != FlagAllowHostRoot {
				t.Fatalf("%s with --allow-host-path=/ only: refused %v, want %s", p, refused, FlagAllowHostRoot)
			}
		})
	}
}
