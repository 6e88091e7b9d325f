package dockerx

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
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
