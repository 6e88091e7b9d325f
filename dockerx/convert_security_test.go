package dockerx

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/manifests"
)

const testSeccompProfile = `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write","exit_group"],"action":"SCMP_ACT_ALLOW"}]}`

// securePod sets every pod field with a meaning on one host (docs/manifests.md,
// "Security context and other pod fields") on d: the pod's securityContext, hostAliases and dnsConfig.
func securePod(d *manifests.Deployment) {
	ps := &d.Spec.Template.Spec
	ps.SecurityContext = &manifests.PodSecurityContext{
		RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)), RunAsNonRoot: ptr(true),
		SupplementalGroups: []int64{4000, 4001}, FSGroup: ptr(int64(2000)),
		SeccompProfile: &manifests.SeccompProfile{Type: manifests.SeccompRuntimeDefault},
		Sysctls: []manifests.Sysctl{
			{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"},
			{Name: "kernel/shm_rmid_forced", Value: "1"},
		},
	}
	ps.HostAliases = []manifests.HostAlias{
		{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}},
		{IP: "fd00::1", Hostnames: []string{"v6.local"}},
	}
	ps.DNSConfig = &manifests.PodDNSConfig{
		Nameservers: []string{"10.222.8.1", "1.1.1.1", "9.9.9.9"}, // the first is the cluster's already
		Searches:    []string{"example.com", "cluster.local"},
		Options:     []manifests.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}},
	}
}

// secureContainer sets every container field of item 5 on c.
func secureContainer(c *manifests.Container) {
	c.WorkingDir = "/srv"
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	c.Resources.Limits = manifests.ResourceList{manifests.ResourceGPU: resource.MustParse("2")}
	c.SecurityContext = &manifests.SecurityContext{
		RunAsUser:                ptr(int64(1001)), // wins over the pod's
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &manifests.Capabilities{Drop: []string{"ALL"}},
		SeccompProfile:           &manifests.SeccompProfile{Type: manifests.SeccompUnconfined},
	}
}

// securityGoldenCases are the golden files of the pod fields with a meaning on one host: a
// replica (network owner and container at once), and a pod's holder
// (the owner) and member (the container).
func securityGoldenCases() []goldenCase {
	replica := inNamespace(request(deployment("web", func(d *manifests.Deployment) {
		securePod(d)
		secureContainer(&d.Spec.Template.Spec.Containers[0])
	})))
	pod := podDeployment("web", func(d *manifests.Deployment) {
		securePod(d)
		secureContainer(&d.Spec.Template.Spec.Containers[0])
	})
	// runAsGroup alone takes the image's user.
	group := request(deployment("grp", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.SecurityContext = &manifests.PodSecurityContext{RunAsGroup: ptr(int64(3000))}
	}))
	group.ImageUser = "nginx:nginx"
	// A Localhost seccomp profile: its content, read by the reconciler.
	local := request(deployment("audit", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.SecurityContext = &manifests.PodSecurityContext{
			SeccompProfile: &manifests.SeccompProfile{Type: manifests.SeccompLocalhost, LocalhostProfile: ptr("profiles/audit.json")}}
	}))
	local.SeccompProfile = testSeccompProfile
	return []goldenCase{
		{"security-localhost-seccomp", local, ContainerLogs{}},
		{"security-replica", replica, ContainerLogs{}},
		{"security-pod-holder", inNamespace(podRequest(pod, RoleHolder, "")), ContainerLogs{}},
		{"security-pod-member", inNamespace(podRequest(pod, RoleReplica, "app")), ContainerLogs{}},
		{"security-rungroup-imageuser", group, ContainerLogs{}},
	}
}

// The contract of the mapping, field by field, so that regenerating the
// goldens (-update) cannot accept a regression.
func TestBuildConfigSecurity(t *testing.T) {
	cases := securityGoldenCases()
	build := func(req CreateRequest) (*container.Config, *container.HostConfig) {
		t.Helper()
		cfg, hc, _, err := BuildConfig(req)
		if err != nil {
			t.Fatalf("BuildConfig: %v", err)
		}
		return cfg, hc
	}
	wantContainer := func(t *testing.T, cfg *container.Config, hc *container.HostConfig) {
		t.Helper()
		if cfg.User != "1001:3000" {
			t.Errorf("User = %q, want the container's runAsUser with the pod's runAsGroup", cfg.User)
		}
		if !slices.Equal(hc.GroupAdd, []string{"4000", "4001", "2000"}) {
			t.Errorf("GroupAdd = %v, want supplementalGroups then fsGroup", hc.GroupAdd)
		}
		if !slices.Equal(hc.SecurityOpt, []string{"no-new-privileges", "seccomp=unconfined"}) {
			t.Errorf("SecurityOpt = %v", hc.SecurityOpt)
		}
		if !hc.ReadonlyRootfs || !slices.Equal(hc.CapDrop, []string{"ALL"}) || hc.Privileged {
			t.Errorf("ReadonlyRootfs %v, CapDrop %v, Privileged %v", hc.ReadonlyRootfs, hc.CapDrop, hc.Privileged)
		}
		if !cfg.OpenStdin || !cfg.StdinOnce || !cfg.Tty || cfg.AttachStdin || cfg.WorkingDir != "/srv" {
			t.Errorf("OpenStdin %v StdinOnce %v Tty %v AttachStdin %v WorkingDir %q", cfg.OpenStdin, cfg.StdinOnce, cfg.Tty, cfg.AttachStdin, cfg.WorkingDir)
		}
		want := []container.DeviceRequest{{Count: 2, Capabilities: [][]string{{"gpu"}}}}
		if !reflect.DeepEqual(hc.DeviceRequests, want) {
			t.Errorf("DeviceRequests = %+v, want %+v (docker run --gpus 2)", hc.DeviceRequests, want)
		}
	}
	wantOwner := func(t *testing.T, hc *container.HostConfig) {
		t.Helper()
		if !slices.Equal(hc.ExtraHosts, []string{"foo.local:10.1.2.3", "bar.local:10.1.2.3", "v6.local:fd00::1"}) {
			t.Errorf("ExtraHosts = %v", hc.ExtraHosts)
		}
		if !reflect.DeepEqual(hc.Sysctls, map[string]string{"net.ipv4.ip_local_port_range": "1024 65000", "kernel.shm_rmid_forced": "1"}) {
			t.Errorf("Sysctls = %v", hc.Sysctls)
		}
		// The cluster's resolver first, the pod's appended without
		// duplicates, at most three nameservers; options by name.
		if !slices.Equal(hc.DNS, []string{"10.222.8.1", "1.1.1.1", "9.9.9.9"}) {
			t.Errorf("DNS = %v", hc.DNS)
		}
		if !slices.Equal(hc.DNSSearch, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com"}) {
			t.Errorf("DNSSearch = %v", hc.DNSSearch)
		}
		if !slices.Equal(hc.DNSOptions, []string{"ndots:2", "edns0"}) {
			t.Errorf("DNSOptions = %v", hc.DNSOptions)
		}
	}
	t.Run("replica", func(t *testing.T) {
		cfg, hc := build(cases[1].req)
		wantContainer(t, cfg, hc)
		wantOwner(t, hc)
	})
	t.Run("holder", func(t *testing.T) {
		cfg, hc := build(cases[2].req)
		wantOwner(t, hc)
		// The holder runs dockctl's own image as it always did.
		if cfg.User != "" || len(hc.GroupAdd) != 0 || len(hc.SecurityOpt) != 0 || hc.ReadonlyRootfs || cfg.Tty || len(hc.DeviceRequests) != 0 {
			t.Errorf("the holder took a container's settings: User %q GroupAdd %v SecurityOpt %v", cfg.User, hc.GroupAdd, hc.SecurityOpt)
		}
	})
	t.Run("member", func(t *testing.T) {
		cfg, hc := build(cases[3].req)
		wantContainer(t, cfg, hc)
		// Docker refuses these on a container in another's network and
		// IPC namespaces: the holder has them.
		if len(hc.ExtraHosts) != 0 || len(hc.Sysctls) != 0 || len(hc.DNS)+len(hc.DNSSearch)+len(hc.DNSOptions) != 0 {
			t.Errorf("member: ExtraHosts %v Sysctls %v DNS %v %v %v", hc.ExtraHosts, hc.Sysctls, hc.DNS, hc.DNSSearch, hc.DNSOptions)
		}
	})
	t.Run("the other member inherits the pod's context", func(t *testing.T) {
		pod := podDeployment("web", securePod)
		cfg, hc := build(podRequest(pod, RoleReplica, "log-shipper"))
		if cfg.User != "1000:3000" || len(hc.SecurityOpt) != 0 || !slices.Equal(hc.GroupAdd, []string{"4000", "4001", "2000"}) {
			t.Errorf("User %q SecurityOpt %v GroupAdd %v", cfg.User, hc.SecurityOpt, hc.GroupAdd)
		}
	})
	t.Run("runAsGroup alone", func(t *testing.T) {
		for _, tt := range []struct{ image, want string }{{"nginx:nginx", "nginx:3000"}, {"1000", "1000:3000"}, {"", "0:3000"}} {
			req := cases[4].req
			req.ImageUser = tt.image
			if cfg, _ := build(req); cfg.User != tt.want {
				t.Errorf("image user %q: User = %q, want %q", tt.image, cfg.User, tt.want)
			}
		}
	})
	t.Run("dnsPolicy", func(t *testing.T) {
		// On the instance network: ClusterFirst merges dnsConfig into the
		// cluster's resolver (wantOwner); Default into the host's, which
		// Docker gives a container without --dns; None is dnsConfig alone.
		for _, tt := range []struct {
			policy               string
			dns, search, options []string
		}{
			{manifests.DNSDefault, []string{"10.222.8.1", "1.1.1.1", "9.9.9.9"}, []string{"example.com", "cluster.local"}, []string{"ndots:2", "edns0"}},
			{manifests.DNSNone, []string{"10.222.8.1", "1.1.1.1", "9.9.9.9"}, []string{"example.com", "cluster.local"}, []string{"ndots:2", "edns0"}},
		} {
			req := cases[1].req
			from, d := *req.From, *req.From.Template
			d.Spec.DNSPolicy = tt.policy
			from.Template, req.From = &d, &from
			_, hc := build(req)
			if !slices.Equal(hc.DNS, tt.dns) || !slices.Equal(hc.DNSSearch, tt.search) || !slices.Equal(hc.DNSOptions, tt.options) {
				t.Errorf("%s: DNS %v search %v options %v, want %v %v %v", tt.policy, hc.DNS, hc.DNSSearch, hc.DNSOptions, tt.dns, tt.search, tt.options)
			}
			d.Spec.DNSConfig = &manifests.PodDNSConfig{Nameservers: []string{"192.0.2.53"}}
			_, hc = build(req)
			if tt.policy == manifests.DNSDefault && len(hc.DNS)+len(hc.DNSSearch)+len(hc.DNSOptions) != 1 {
				t.Errorf("Default: DNS %v search %v options %v, want the pod's one nameserver on the host's resolver", hc.DNS, hc.DNSSearch, hc.DNSOptions)
			}
		}
		// Without dnsConfig, Default is Docker's own resolver settings.
		req := cases[1].req
		from, d := *req.From, *req.From.Template
		d.Spec.DNSPolicy, d.Spec.DNSConfig = manifests.DNSDefault, nil
		from.Template, req.From = &d, &from
		if _, hc := build(req); len(hc.DNS)+len(hc.DNSSearch)+len(hc.DNSOptions) != 0 {
			t.Errorf("Default without dnsConfig: DNS %v search %v options %v, want none (the host's)", hc.DNS, hc.DNSSearch, hc.DNSOptions)
		}
	})
	t.Run("dnsConfig without the instance network", func(t *testing.T) {
		req := request(deployment("web", securePod))
		_, hc := build(req)
		if !slices.Equal(hc.DNS, []string{"10.222.8.1", "1.1.1.1", "9.9.9.9"}) || !slices.Equal(hc.DNSOptions, []string{"ndots:2", "edns0"}) {
			t.Errorf("DNS %v options %v", hc.DNS, hc.DNSOptions)
		}
	})
	t.Run("hostNetwork: extra hosts and sysctls, no resolver setting", func(t *testing.T) {
		d := deployment("edge", securePod)
		d.Spec.Template.Spec.HostNetwork = true
		_, hc := build(request(d))
		if hc.NetworkMode != "host" || len(hc.DNS)+len(hc.DNSSearch)+len(hc.DNSOptions) != 0 || len(hc.ExtraHosts) != 3 || len(hc.Sysctls) != 2 {
			t.Errorf("mode %s DNS %v %v %v ExtraHosts %v Sysctls %v", hc.NetworkMode, hc.DNS, hc.DNSSearch, hc.DNSOptions, hc.ExtraHosts, hc.Sysctls)
		}
	})
	t.Run("Localhost seccomp", func(t *testing.T) {
		req := cases[0].req
		_, hc := build(req)
		if !slices.Equal(hc.SecurityOpt, []string{"seccomp=" + testSeccompProfile}) {
			t.Errorf("SecurityOpt = %v, want the profile's content, as `docker run --security-opt seccomp=FILE` sends it", hc.SecurityOpt)
		}
		req.SeccompProfile = ""
		if _, _, _, err := BuildConfig(req); err == nil || !strings.Contains(err.Error(), "Localhost seccomp profile profiles/audit.json was not loaded") {
			t.Errorf("a profile not loaded must not run with Docker's default: %v", err)
		}
	})
	t.Run("nothing set changes nothing", func(t *testing.T) {
		cfg, hc := build(request(deployment("web", nil)))
		if cfg.User != "" || hc.GroupAdd != nil || hc.SecurityOpt != nil || hc.Sysctls != nil || hc.ExtraHosts != nil || hc.DeviceRequests != nil || cfg.OpenStdin || cfg.Tty {
			t.Errorf("settings appeared from nowhere: %+v %+v", cfg, hc)
		}
	})
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	yes, no := true, false
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name      string
		sec       manifests.EffectiveSecurity
		imageUser string
		want      string // "" no error
	}{
		{"not asked", manifests.EffectiveSecurity{}, "", ""},
		{"asked false", manifests.EffectiveSecurity{RunAsNonRoot: &no}, "", ""},
		{"image without user is root", manifests.EffectiveSecurity{RunAsNonRoot: &yes}, "",
			`container has runAsNonRoot and image will run as root (pod: "web-1", container: app)`},
		{"image user 0 with group", manifests.EffectiveSecurity{RunAsNonRoot: &yes}, "0:10",
			`container has runAsNonRoot and image will run as root (pod: "web-1", container: app)`},
		{"image user by name", manifests.EffectiveSecurity{RunAsNonRoot: &yes}, "nginx",
			`container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "web-1", container: app)`},
		{"image user numeric", manifests.EffectiveSecurity{RunAsNonRoot: &yes}, "65532:65532", ""},
		{"runAsUser 0", manifests.EffectiveSecurity{RunAsNonRoot: &yes, RunAsUser: i64(0)}, "1000",
			`container's runAsUser breaks non-root policy (pod: "web-1", container: app)`},
		{"runAsUser wins over a root image", manifests.EffectiveSecurity{RunAsNonRoot: &yes, RunAsUser: i64(1000)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyRunAsNonRoot(tt.sec, tt.imageUser, "web-1", "app")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("error %v\nwant %s", err, tt.want)
			}
		})
	}
	if !NeedsImageUser(manifests.EffectiveSecurity{RunAsNonRoot: &yes}) || !NeedsImageUser(manifests.EffectiveSecurity{RunAsGroup: i64(1)}) ||
		NeedsImageUser(manifests.EffectiveSecurity{RunAsNonRoot: &yes, RunAsUser: i64(1)}) || NeedsImageUser(manifests.EffectiveSecurity{}) {
		t.Error("NeedsImageUser: wrong")
	}
}

// A sysctl in the slash form reaches Docker in the dotted form, with '.'
// and '/' swapped as kubelet swaps them: the '.' inside a segment (the
// VLAN interface eno2.100) stays part of that segment.
func TestBuildConfigSysctlSlashForm(t *testing.T) {
	d := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.SecurityContext = &manifests.PodSecurityContext{Sysctls: []manifests.Sysctl{
			{Name: "net/ipv4/conf/eno2.100/rp_filter", Value: "1"},
			{Name: "net.ipv4.conf.eno3/200.rp_filter", Value: "2"},
		}}
	})
	_, hc, _, err := BuildConfig(request(d))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"net.ipv4.conf.eno2/100.rp_filter": "1", "net.ipv4.conf.eno3/200.rp_filter": "2"}
	if !reflect.DeepEqual(hc.Sysctls, want) {
		t.Errorf("Sysctls = %v, want %v", hc.Sysctls, want)
	}
}
