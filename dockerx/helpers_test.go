package dockerx

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
)

func proxyRequest() HelperRequest {
	return HelperRequest{
		Instance: "default", Namespace: "shop", Name: "default_web.shop_svc", Role: RoleProxy, Service: "web", ConfigHash: "0f1e2d3c",
		Image: "dockctl-helper:default-0123456789ab",
		Cmd:   []string{"/dockctl", "helper", "proxy", "--config", `{"generation":1}`},
		Network: PodNetwork{Name: "dockctl_default", IPv4: "10.222.8.2", Aliases: []string{"web.shop.svc"},
			DNS: []string{"10.222.8.1"}, DNSOptions: []string{"ndots:5"}},
		Ports: []PortBinding{
			{HostIP: "127.0.0.1", HostPort: 30080, ContainerPort: 80, Protocol: "TCP"},
			{HostIP: "127.0.0.1", HostPort: 30053, ContainerPort: 53, Protocol: "udp"},
			{HostPort: 30081, ContainerPort: 81},
		},
	}
}

func TestBuildHelperConfigGolden(t *testing.T) {
	cfg, hc, nc, err := BuildHelperConfig(proxyRequest(), testLogs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(map[string]any{"Config": cfg, "HostConfig": hc, "NetworkingConfig": nc}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "BuildHelperConfig", filepath.Join("testdata", "helperconfig-proxy.golden.json"), append(got, '\n'))
}

// hostHelperRequest is a helper on the host's network: the gateway or the
// publisher (docs/design.md §10), binding its ports on the service
// address itself.
func hostHelperRequest(role string) HelperRequest {
	return HelperRequest{
		Instance: "default", Name: "default_" + role, Role: role, ConfigHash: "0f1e2d3c",
		Image:       "dockctl-helper:default-0123456789ab",
		Cmd:         []string{"/dockctl", "helper", role, "--listen-host", "127.0.0.1", "--host-ports", "--control-socket", "/run/dockctl/control.sock", "--config", `{"generation":0}`},
		JoinNetwork: NetworkModeHost,
	}
}

func TestBuildHelperConfigGoldenOnTheHostNetwork(t *testing.T) {
	for _, role := range []string{RoleGateway, RolePublisher} {
		cfg, hc, nc, err := BuildHelperConfig(hostHelperRequest(role), testLogs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(map[string]any{"Config": cfg, "HostConfig": hc, "NetworkingConfig": nc}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		compareGolden(t, "BuildHelperConfig", filepath.Join("testdata", "helperconfig-"+role+".golden.json"), append(got, '\n'))
	}
}

// The gateway and the publisher share the host's network namespace: they
// keep no capability but to bind their ports and cannot gain one; Docker
// publishes nothing of theirs; the gateway's state (TLS keys) is on a
// tmpfs, the publisher's in its writable layer (kept across its restarts).
func TestBuildHelperConfigOnTheHostNetworkBindsOnlyItsPorts(t *testing.T) {
	for _, role := range []string{RoleGateway, RolePublisher} {
		t.Run(role, func(t *testing.T) {
			_, hc, nc, err := BuildHelperConfig(hostHelperRequest(role), testLogs)
			if err != nil {
				t.Fatal(err)
			}
			if !hc.NetworkMode.IsHost() || len(hc.PortBindings) != 0 || len(nc.EndpointsConfig) != 0 {
				t.Errorf("network mode %q, bindings %v, endpoints %v: want the host's, none, none", hc.NetworkMode, hc.PortBindings, nc.EndpointsConfig)
			}
			if !reflect.DeepEqual([]string(hc.CapDrop), []string{"ALL"}) || !reflect.DeepEqual([]string(hc.CapAdd), []string{"NET_BIND_SERVICE"}) ||
				!slices.Contains(hc.SecurityOpt, securityOptNoNewPrivileges) {
				t.Errorf("caps -%v +%v, security %v: want all dropped but NET_BIND_SERVICE, no-new-privileges", hc.CapDrop, hc.CapAdd, hc.SecurityOpt)
			}
			if hc.RestartPolicy.Name != container.RestartPolicyAlways {
				t.Errorf("restart policy %q, want always: it serves while the controller is down", hc.RestartPolicy.Name)
			}
			if _, tmpfs := hc.Tmpfs[gatewayStateDir]; tmpfs != (role == RoleGateway) {
				t.Errorf("tmpfs %v: want one on %s for the gateway only", hc.Tmpfs, gatewayStateDir)
			}
		})
	}
	req := hostHelperRequest(RolePublisher)
	req.Ports = []PortBinding{{HostIP: "127.0.0.1", HostPort: 30080, ContainerPort: 30080}}
	if _, _, _, err := BuildHelperConfig(req, testLogs); err == nil {
		t.Error("a helper on the host's network with Docker port bindings was accepted")
	}
}

// The helper's contract, field by field, so that regenerating the golden
// cannot accept a regression.
func TestBuildHelperConfig(t *testing.T) {
	req := proxyRequest()
	cfg, hc, nc, err := BuildHelperConfig(req, testLogs)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{LabelInstance: "default", LabelNamespace: "shop", LabelRole: RoleProxy, LabelService: "web", LabelConfigHash: "0f1e2d3c"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) || cfg.Image != req.Image || !reflect.DeepEqual([]string(cfg.Cmd), req.Cmd) || cfg.Entrypoint != nil {
		t.Errorf("config %+v", cfg)
	}
	if hc.RestartPolicy.Name != container.RestartPolicyAlways || hc.NetworkMode != "dockctl_default" {
		t.Errorf("restart policy %q network mode %q: want always on the instance network", hc.RestartPolicy.Name, hc.NetworkMode)
	}
	if !reflect.DeepEqual(hc.DNS, req.Network.DNS) || !reflect.DeepEqual(hc.DNSOptions, req.Network.DNSOptions) || hc.DNSSearch != nil {
		t.Errorf("resolver %v %v %v", hc.DNS, hc.DNSSearch, hc.DNSOptions)
	}
	if hc.LogConfig.Type != "json-file" || hc.LogConfig.Config["max-file"] != "5" {
		t.Errorf("log config %+v, want the replicas' rotation", hc.LogConfig)
	}
	wantBindings := nat.PortMap{
		"80/tcp": {{HostIP: "127.0.0.1", HostPort: "30080"}},
		"53/udp": {{HostIP: "127.0.0.1", HostPort: "30053"}},
		"81/tcp": {{HostIP: "", HostPort: "30081"}},
	}
	if !reflect.DeepEqual(hc.PortBindings, wantBindings) || len(cfg.ExposedPorts) != 3 {
		t.Errorf("bindings %v exposed %v, want %v", hc.PortBindings, cfg.ExposedPorts, wantBindings)
	}
	wantEP := map[string]*network.EndpointSettings{"dockctl_default": {
		IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.2"}, Aliases: []string{"web.shop.svc"}}}
	if !reflect.DeepEqual(nc.EndpointsConfig, wantEP) {
		t.Errorf("endpoints %+v, want %+v", nc.EndpointsConfig, wantEP)
	}

	// The DNS server: no namespace, service or config hash given, none
	// labelled; no ports.
	dns := HelperRequest{Instance: "i", Name: "i_dns", Role: RoleDNS, Image: "img", Cmd: []string{"/dockctl"}, Network: PodNetwork{Name: "dockctl_i"}}
	cfg, hc, _, err = BuildHelperConfig(dns, ContainerLogs{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{LabelInstance: "i", LabelRole: RoleDNS}; !reflect.DeepEqual(cfg.Labels, want) || hc.PortBindings != nil || hc.LogConfig.Type != "" {
		t.Errorf("dns helper: labels %v bindings %v log %+v", cfg.Labels, hc.PortBindings, hc.LogConfig)
	}

	for _, tt := range []struct {
		name string
		edit func(*HelperRequest)
		want string
	}{
		{"no instance", func(r *HelperRequest) { r.Instance = "" }, "instance, name and image are required"},
		{"no image", func(r *HelperRequest) { r.Image = "" }, "instance, name and image are required"},
		{"a replica's role", func(r *HelperRequest) { r.Role = RoleReplica }, `role "replica" is not a helper's`},
		{"no role", func(r *HelperRequest) { r.Role = "" }, `role "" is not a helper's`},
		{"no command", func(r *HelperRequest) { r.Cmd = nil }, "no command"},
		{"no network", func(r *HelperRequest) { r.Network.Name = "" }, "no network"},
		{"sctp", func(r *HelperRequest) { r.Ports[0].Protocol = "SCTP" }, `unsupported protocol "SCTP"`},
		{"host port 0", func(r *HelperRequest) { r.Ports[0].HostPort = 0 }, "ports are 1–65535"},
		{"container port too large", func(r *HelperRequest) { r.Ports[0].ContainerPort = 70000 }, "ports are 1–65535"},
		{"host address", func(r *HelperRequest) { r.Ports[0].HostIP = "localhost" }, `host address "localhost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := proxyRequest()
			tt.edit(&req)
			if _, _, _, err := BuildHelperConfig(req, ContainerLogs{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("BuildHelperConfig = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCreateHelper(t *testing.T) {
	f := &fakeAPI{loggingDriver: "json-file"}
	c := newFakeClient(f)
	WithContainerLogs(DefaultContainerLogMaxSize, DefaultContainerLogMaxFiles)(c)
	id, err := c.CreateHelper(context.Background(), proxyRequest())
	if err != nil || id != "abc" {
		t.Fatalf("CreateHelper = %q, %v", id, err)
	}
	if f.created.RestartPolicy.Name != container.RestartPolicyAlways || f.created.LogConfig.Config["max-size"] != "10485760" {
		t.Errorf("created %+v: want restart always and the client's log rotation", f.created)
	}
	f = &fakeAPI{loggingDriver: "json-file", createErr: cerrdefs.ErrConflict.WithMessage(`Conflict. The container name "/default_web.shop_svc" is already in use`)}
	if _, err := newFakeClient(f).CreateHelper(context.Background(), proxyRequest()); !errors.Is(err, ErrConflict) {
		t.Errorf("CreateHelper of a taken name = %v, want ErrConflict", err)
	}
}

// A port-forward session's helper: in the pod's network namespace, alive
// only while its creator's attach is.
func TestBuildHelperConfigAttached(t *testing.T) {
	req := HelperRequest{Instance: "i", Namespace: "shop", Name: "i_web-abc-0.shop_pf-1a2b3c", Role: RolePortForward, Image: "img",
		Cmd: []string{"/dockctl", "helper", "port-forward"}, JoinNetwork: "container:0123abcd", Attached: true}
	cfg, hc, nc, err := BuildHelperConfig(req, testLogs)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{LabelInstance: "i", LabelNamespace: "shop", LabelRole: RolePortForward}; !reflect.DeepEqual(cfg.Labels, want) {
		t.Errorf("labels %v, want %v", cfg.Labels, want)
	}
	if !cfg.AttachStdin || !cfg.OpenStdin || !cfg.StdinOnce || cfg.Tty {
		t.Errorf("stdin: attach %v open %v once %v tty %v; want stdin open for one attach, no tty", cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce, cfg.Tty)
	}
	if !hc.AutoRemove || hc.RestartPolicy.Name != container.RestartPolicyDisabled || hc.NetworkMode != "container:0123abcd" {
		t.Errorf("auto-remove %v restart %q network mode %q", hc.AutoRemove, hc.RestartPolicy.Name, hc.NetworkMode)
	}
	if hc.DNS != nil || hc.DNSOptions != nil || hc.PortBindings != nil || len(nc.EndpointsConfig) != 0 {
		t.Errorf("a joined namespace has no resolver, binding or endpoint of its own: %v %v %v %v", hc.DNS, hc.DNSOptions, hc.PortBindings, nc.EndpointsConfig)
	}
	req.JoinNetwork = "host"
	if _, hc, _, err := BuildHelperConfig(req, testLogs); err != nil || hc.NetworkMode != "host" {
		t.Errorf("host: %v, %v", hc, err)
	}
	for _, tt := range []struct {
		name string
		edit func(*HelperRequest)
		want string
	}{
		{"neither", func(r *HelperRequest) { r.JoinNetwork = "" }, "no network"},
		{"both", func(r *HelperRequest) { r.Network = PodNetwork{Name: "dockctl_i"} }, "both a network (dockctl_i) and a namespace to join"},
		{"a network's name", func(r *HelperRequest) { r.JoinNetwork = "dockctl_i" }, `network mode "dockctl_i" joins no namespace`},
		{"published", func(r *HelperRequest) { r.Ports = []PortBinding{{HostPort: 8080, ContainerPort: 80}} }, "publishes no port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := req
			tt.edit(&r)
			if _, _, _, err := BuildHelperConfig(r, ContainerLogs{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("BuildHelperConfig = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if !IsHelperRole(RolePortForward) || !IsHelperRole(RoleProxy) || !IsHelperRole(RoleDNS) || IsHelperRole(RoleReplica) || IsHelperRole(RoleHolder) || IsHelperRole("") {
		t.Error("IsHelperRole: port-forward, proxy and dns are helpers; replica, holder and none are not")
	}
}

// attachAPI is a helper's attach: it reads stdin to its end, then exits.
type attachAPI struct {
	dockerAPI
	opts  container.AttachOptions
	ended chan struct{} // closed once the helper read its stdin's end
}

func (f *attachAPI) ContainerAttach(_ context.Context, _ string, o container.AttachOptions) (types.HijackedResponse, error) {
	f.opts = o
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		_, _ = io.Copy(io.Discard, server)
		close(f.ended)
	}()
	return types.HijackedResponse{Conn: client, Reader: bufio.NewReader(client)}, nil
}

func TestAttachHelper(t *testing.T) {
	f := &attachAPI{ended: make(chan struct{})}
	c := newFakeClient(&fakeAPI{})
	c.api = f
	a, err := c.AttachHelper(context.Background(), "h1")
	if err != nil {
		t.Fatal(err)
	}
	if o := f.opts; !o.Stream || !o.Stdin || !o.Stdout || !o.Stderr || o.Logs {
		t.Errorf("attach options %+v: want the streams of stdin and output", o)
	}
	select {
	case <-a.Done():
		t.Fatal("done before the helper exited")
	default:
	}
	a.Close()
	<-f.ended  // the helper read its stdin's end…
	<-a.Done() // …and its exit ended the attachment
}

// A port-forward session's helper joins the network namespace of a user's
// pod and needs nothing there but to open TCP connections to 127.0.0.1
// (`helper relay`) and to wait on its stdin (`helper port-forward`): no
// capability, no root, no writable file system. Docker's defaults would
// give it root (the image names no user), Docker's default capability set
// — NET_RAW (raw sockets: sniff and forge the pod's traffic in its
// namespace), NET_BIND_SERVICE, CHOWN, DAC_OVERRIDE, SETUID, SETGID, … —
// privilege escalation allowed, and a writable root: BuildHelperConfig
// drops them all. docs/design.md §10 asks for small helpers: the helper container
// must not get more than it needs.
func TestPortForwardHelperDropsWhatItDoesNotNeed(t *testing.T) {
	req := HelperRequest{Instance: "i", Namespace: "shop", Name: "i_web-abc-0.shop_pf-1a2b3c", Role: RolePortForward, Image: "img",
		Cmd: []string{"/dockctl", "helper", "port-forward"}, JoinNetwork: "container:0123abcd", Attached: true}
	cfg, hc, _, err := BuildHelperConfig(req, testLogs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hc.CapDrop, "ALL") || len(hc.CapAdd) != 0 {
		t.Errorf("capabilities: drop %v, add %v; want every one dropped (it only dials 127.0.0.1 and reads stdin)", hc.CapDrop, hc.CapAdd)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") && !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("security options %v: want no-new-privileges", hc.SecurityOpt)
	}
	if cfg.User == "" || cfg.User == "0" || cfg.User == "root" || cfg.User == "0:0" {
		t.Errorf("user %q: the helper runs as root in the pod's network namespace; want an unprivileged uid (e.g. 65534)", cfg.User)
	}
	if !hc.ReadonlyRootfs {
		t.Error("the helper's root file system is writable; it writes nothing")
	}
	if hc.Privileged || len(hc.Binds) > 0 || len(hc.Mounts) > 0 {
		t.Errorf("privileged %v, binds %v, mounts %v: want none", hc.Privileged, hc.Binds, hc.Mounts)
	}
}
