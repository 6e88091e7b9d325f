package dockerfake

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// These tests hold the fake's networks to Docker 20.10's behaviour
// (networks.go): addresses allocated at start, from IPRange, released at a
// stop; static addresses checked at start; a network never adopted; one in
// use by a running container kept.

var netReq = dockerx.NetworkRequest{Instance: "i", Name: "dockctl_i", Subnet: "10.222.0.0/24", IPRange: "10.222.0.0/25", Gateway: "10.222.0.1"}

func ensureNet(t *testing.T, e *Engine) dockerx.Network {
	t.Helper()
	n, err := e.EnsureNetwork(context.Background(), netReq)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// onNet creates a replica of deployment name on the instance network,
// with a static address when ip is set.
func onNet(t *testing.T, e *Engine, name, ip string, mutate func(*manifests.Deployment)) (string, error) {
	t.Helper()
	d := deployment(name, mutate)
	return e.CreateContainer(context.Background(), dockerx.CreateRequest{Instance: "i", Name: "i_" + name + "-h-0", TemplateHash: "h", From: dockerx.TemplateOf(d),
		Namespace: "default", Network: &dockerx.PodNetwork{Name: "dockctl_i", IPv4: ip, Aliases: []string{name + "-h-0"}}})
}

func mustOnNet(t *testing.T, e *Engine, name, ip string) string {
	t.Helper()
	id, err := onNet(t, e, name, ip, nil)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return id
}

func listed(t *testing.T, e *Engine, id string) dockerx.Container {
	t.Helper()
	c, ok := find(t, e, id)
	if !ok {
		t.Fatalf("container %s not listed", short(id))
	}
	return c
}

func TestFakeEnsureNetwork(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	n := ensureNet(t, e)
	want := dockerx.Network{ID: n.ID, Name: "dockctl_i", Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleNetwork},
		Subnet: "10.222.0.0/24", IPRange: "10.222.0.0/25", Gateway: "10.222.0.1"}
	if !reflect.DeepEqual(n, want) || n.ID == "" {
		t.Errorf("EnsureNetwork = %+v, want %+v", n, want)
	}
	// Again, asking another subnet: the network as it is.
	other := netReq
	other.Subnet, other.IPRange, other.Gateway = "10.222.16.0/20", "", ""
	if again, err := e.EnsureNetwork(ctx, other); err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("second EnsureNetwork = %+v, %v; want the network as created", again, err)
	}
	if c := e.Calls(); c["network:ensure"] != 2 || c["network:create"] != 1 {
		t.Errorf("calls %v", c)
	}
	list, err := e.ListNetworks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list {
		names = append(names, n.Name+" "+n.Subnet)
	}
	if want := []string{"bridge 172.17.0.0/16", "dockctl_i 10.222.0.0/24", "host ", "none "}; !reflect.DeepEqual(names, want) {
		t.Errorf("ListNetworks = %v, want %v", names, want)
	}

	for _, tt := range []struct {
		name    string
		setup   func(e *Engine) error
		req     dockerx.NetworkRequest
		wantIs  error
		wantErr string
	}{
		{name: "a network of that name not dockctl's", setup: func(e *Engine) error { return e.AddNetwork(dockerx.Network{Name: "dockctl_i"}) },
			req: netReq, wantIs: dockerx.ErrConflict, wantErr: "is not dockctl's network of instance"},
		{name: "another instance's", setup: func(e *Engine) error {
			return e.AddNetwork(dockerx.Network{Name: "dockctl_i", Labels: dockerx.NetworkLabels("j")})
		}, req: netReq, wantIs: dockerx.ErrConflict, wantErr: "is not dockctl's network"},
		{name: "a subnet overlapping another network's", setup: func(e *Engine) error {
			return e.AddNetwork(dockerx.Network{Name: "theirs", Subnet: "10.222.0.128/25"})
		}, req: netReq, wantErr: "Pool overlaps with other one on this address space"},
		{name: "the default bridge's subnet", req: dockerx.NetworkRequest{Instance: "i", Name: "dockctl_i", Subnet: "172.17.5.0/24"},
			wantErr: "Pool overlaps"},
		{name: "invalid request", req: dockerx.NetworkRequest{Instance: "i", Name: "dockctl_i", Subnet: "10.222.0.1/24"},
			wantErr: "is not an IPv4 network address"},
		{name: "daemon down", setup: func(e *Engine) error { e.DaemonDown(); return nil }, req: netReq, wantIs: dockerx.ErrUnreachable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := New(img)
			if tt.setup != nil {
				if err := tt.setup(e); err != nil {
					t.Fatal(err)
				}
			}
			_, err := e.EnsureNetwork(ctx, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Errorf("EnsureNetwork = %v, want an error containing %q (is %v)", err, tt.wantErr, tt.wantIs)
			}
		})
	}
}

func TestFakeNetworkAddresses(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	ensureNet(t, e)
	a := mustOnNet(t, e, "a", "")
	if got := listed(t, e, a).Networks; !reflect.DeepEqual(got, map[string]string{"dockctl_i": ""}) {
		t.Errorf("created: networks %v, want the network without an address", got)
	}
	mustStart(t, e, a)
	if got := listed(t, e, a).Networks; !reflect.DeepEqual(got, map[string]string{"dockctl_i": "10.222.0.2"}) {
		t.Errorf("running: networks %v, want the first free address after the gateway", got)
	}
	if d := inspect(t, e, a); d.IPAddress != "10.222.0.2" || !reflect.DeepEqual(d.Networks, map[string]string{"dockctl_i": "10.222.0.2"}) {
		t.Errorf("inspect: %q %v", d.IPAddress, d.Networks)
	}
	b := mustOnNet(t, e, "b", "")
	s := mustOnNet(t, e, "s", "10.222.0.200") // static: outside the range, inside the subnet
	mustStart(t, e, b, s)
	if got := listed(t, e, b).Networks["dockctl_i"]; got != "10.222.0.3" {
		t.Errorf("second dynamic address %q, want 10.222.0.3", got)
	}
	if got := listed(t, e, s).Networks["dockctl_i"]; got != "10.222.0.200" {
		t.Errorf("static address %q", got)
	}

	// Static addresses are checked at start, as Docker does.
	for _, tt := range []struct{ name, ip, want string }{
		{"taken by a running container", "10.222.0.200", "Address already in use"},
		{"the gateway's", "10.222.0.1", "Address already in use"},
		{"outside the subnet", "10.9.9.9", "Invalid address 10.9.9.9: It does not belong to any of this network's subnets"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := mustOnNet(t, e, "x"+strings.ReplaceAll(tt.ip, ".", ""), tt.ip)
			err := e.StartContainer(ctx, id)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("start = %v, want an error containing %q", err, tt.want)
			}
			if c := listed(t, e, id); c.State != dockerx.StateCreated || c.Networks["dockctl_i"] != "" {
				t.Errorf("after a failed start: %s %v", c.State, c.Networks)
			}
		})
	}

	// A stop releases the address: the next container takes it at once.
	if err := e.Kill(a); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, e, a).Networks; !reflect.DeepEqual(got, map[string]string{"dockctl_i": ""}) {
		t.Errorf("exited: networks %v, want no address", got)
	}
	c := mustOnNet(t, e, "c", "")
	mustStart(t, e, c)
	if got := listed(t, e, c).Networks["dockctl_i"]; got != "10.222.0.2" {
		t.Errorf("address after a stop %q, want the released 10.222.0.2", got)
	}
	mustStart(t, e, a) // started again: another address
	if got := listed(t, e, a).Networks["dockctl_i"]; got != "10.222.0.4" {
		t.Errorf("restarted: address %q, want 10.222.0.4", got)
	}

	// A network that does not exist: created, not started.
	id, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "i_lost-h-0", TemplateHash: "h", From: dockerx.TemplateOf(deployment("lost", nil)),
		Network: &dockerx.PodNetwork{Name: "missing"}})
	if err != nil {
		t.Fatalf("create on a missing network: %v (Docker creates it)", err)
	}
	if err := e.StartContainer(ctx, id); !errors.Is(err, dockerx.ErrNotFound) || !strings.Contains(err.Error(), "network missing not found") {
		t.Errorf("start on a missing network = %v, want ErrNotFound", err)
	}

	// A full range.
	small := New(img)
	if _, err := small.EnsureNetwork(ctx, dockerx.NetworkRequest{Instance: "i", Name: "dockctl_i", Subnet: "10.1.0.0/29", IPRange: "10.1.0.0/30"}); err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, name := range []string{"p", "q", "r"} {
		if err := small.StartContainer(ctx, mustOnNet(t, small, name, "")); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "no available IPv4 addresses") {
		t.Errorf("three containers in a range of two usable addresses: errors %v", errs)
	}
}

func TestFakeCreateOnPodNetwork(t *testing.T) {
	e := New(img)
	ensureNet(t, e)
	withExtra := func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "extra"}
	}
	// The additional network is missing: the create fails and leaves nothing.
	if _, err := onNet(t, e, "web", "", withExtra); !errors.Is(err, dockerx.ErrNotFound) || !strings.Contains(err.Error(), "network extra not found") {
		t.Fatalf("create with a missing additional network = %v, want ErrNotFound", err)
	}
	e.FinishRemovals()
	if cs := e.Snapshot(); len(cs) != 0 {
		t.Fatalf("left %+v", cs)
	}
	if err := e.AddNetwork(dockerx.Network{Name: "extra", Subnet: "172.30.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	id, err := onNet(t, e, "web", "10.222.0.77", withExtra)
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, id)
	c := listed(t, e, id)
	if want := map[string]string{"dockctl_i": "10.222.0.77", "extra": "172.30.0.2"}; !reflect.DeepEqual(c.Networks, want) {
		t.Errorf("networks %v, want %v", c.Networks, want)
	}
	if c.Namespace != "default" || c.Labels[dockerx.LabelNamespace] != "default" {
		t.Errorf("namespace %q labels %v", c.Namespace, c.Labels)
	}
	if got := e.Aliases(id, "dockctl_i"); !reflect.DeepEqual(got, []string{"web-h-0"}) {
		t.Errorf("aliases on the instance network %v", got)
	}
	if got := e.Aliases(id, "extra"); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("aliases on the additional network %v, want the deployment's name", got)
	}
	// hostNetwork: the host's network only.
	host, err := onNet(t, e, "edge", "", func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true })
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, host)
	if got := listed(t, e, host).Networks; !reflect.DeepEqual(got, map[string]string{"host": ""}) {
		t.Errorf("hostNetwork networks %v", got)
	}
	if d := inspect(t, e, host); !d.HostNetwork || d.IPAddress != "" {
		t.Errorf("hostNetwork inspect %+v", d)
	}
}

func TestFakeConnectNetwork(t *testing.T) {
	ctx := context.Background()
	e := New(img, holderImg)
	ensureNet(t, e)
	created := create(t, e, "created") // on the default bridge
	running := create(t, e, "running")
	mustStart(t, e, running)
	if got := listed(t, e, running).Networks; !reflect.DeepEqual(got, map[string]string{"bridge": "172.17.0.2"}) {
		t.Errorf("default bridge: %v", got)
	}

	// Not running: attached, an address at its start.
	if err := e.ConnectNetwork(ctx, "dockctl_i", created, dockerx.EndpointSettings{Aliases: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, e, created).Networks; !reflect.DeepEqual(got, map[string]string{"bridge": "", "dockctl_i": ""}) {
		t.Errorf("connected, not running: %v", got)
	}
	mustStart(t, e, created)
	if got := listed(t, e, created).Networks; got["dockctl_i"] != "10.222.0.2" || got["bridge"] != "172.17.0.3" {
		t.Errorf("connected, then started: %v", got)
	}
	// Running: the static address at once; connecting again changes nothing.
	if err := e.ConnectNetwork(ctx, "dockctl_i", running, dockerx.EndpointSettings{IPv4: "10.222.0.150"}); err != nil {
		t.Fatal(err)
	}
	if err := e.ConnectNetwork(ctx, "dockctl_i", running, dockerx.EndpointSettings{IPv4: "10.222.0.151"}); err != nil {
		t.Errorf("connect again = %v, want nil", err)
	}
	if got := listed(t, e, running).Networks["dockctl_i"]; got != "10.222.0.150" {
		t.Errorf("connected in place: %q, want 10.222.0.150", got)
	}
	if n := e.Calls()["network:connect"]; n != 2 {
		t.Errorf("%d connects counted, want 2 (the repeated one changed nothing)", n)
	}

	p := createPod(t, e, "pod", nil)
	mustStart(t, e, p.holder, p.members["app"])
	other := create(t, e, "other")
	mustStart(t, e, other)
	for _, tt := range []struct {
		name, network, id string
		ep                dockerx.EndpointSettings
		wantIs            error
		want              string
	}{
		{"static taken", "dockctl_i", other, dockerx.EndpointSettings{IPv4: "10.222.0.150"}, nil, "Address already in use"},
		{"already connected (the default bridge): nil", "bridge", created, dockerx.EndpointSettings{IPv4: "172.17.0.99"}, nil, ""},
		{"a member", "dockctl_i", p.members["app"], dockerx.EndpointSettings{}, nil, "sharing network namespace with another container"},
		{"no such network", "nope", other, dockerx.EndpointSettings{}, dockerx.ErrNotFound, "network nope not found"},
		{"no such container", "dockctl_i", "nope", dockerx.EndpointSettings{}, dockerx.ErrNotFound, "No such container"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := e.ConnectNetwork(ctx, tt.network, tt.id, tt.ep)
			if tt.want == "" {
				if err != nil { // already connected: nil, as dockerx reports it
					t.Errorf("ConnectNetwork = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Errorf("ConnectNetwork = %v, want an error containing %q (is %v)", err, tt.want, tt.wantIs)
			}
		})
	}
	// The refused connect stays in its configuration, as Docker keeps it:
	// not listed, not disconnectable while it runs, and its next start
	// fails; a connect that succeeds replaces it.
	if got := listed(t, e, other).Networks; len(got) != 1 || got["bridge"] == "" {
		t.Errorf("after a refused connect: %v, want its bridge address only", got)
	}
	if err := e.DisconnectNetwork("dockctl_i", other); err == nil {
		t.Error("disconnect of a refused network while running: no error")
	}
	if err := e.Kill(other); err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(ctx, other); err == nil || !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("start after a refused connect = %v, want Address already in use", err)
	}
	if err := e.DisconnectNetwork("dockctl_i", other); err != nil {
		t.Errorf("disconnect while stopped = %v", err)
	}
	mustStart(t, e, other)
	if err := e.ConnectNetwork(ctx, "dockctl_i", other, dockerx.EndpointSettings{IPv4: "10.222.0.150"}); err == nil {
		t.Fatal("connect with a taken address: no error")
	}
	if err := e.ConnectNetwork(ctx, "dockctl_i", other, dockerx.EndpointSettings{IPv4: "10.222.0.151"}); err != nil {
		t.Fatalf("connect with a free address after a refused one: %v", err)
	}
	if err := e.Kill(other); err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, other)
	if got := listed(t, e, other).Networks["dockctl_i"]; got != "10.222.0.151" {
		t.Errorf("restarted after the repairing connect: %q", got)
	}
	// A static address on the default bridge: refused at start.
	fresh := create(t, e, "fresh")
	if err := e.ConnectNetwork(ctx, "bridge", fresh, dockerx.EndpointSettings{IPv4: "172.17.0.99"}); err != nil {
		t.Fatalf("connect again to its own network = %v, want nil", err)
	}
	if err := e.DisconnectNetwork("bridge", fresh); err != nil {
		t.Fatal(err)
	}
	if err := e.ConnectNetwork(ctx, "bridge", fresh, dockerx.EndpointSettings{IPv4: "172.17.0.99"}); err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(ctx, fresh); err == nil || !strings.Contains(err.Error(), "supported on user defined networks only") {
		t.Errorf("start with a static address on the default bridge = %v", err)
	}
	if err := e.DisconnectNetwork("dockctl_i", fresh); err == nil {
		t.Error("disconnect of a network it is not connected to: no error")
	}
}

func TestFakeRemoveNetwork(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	ensureNet(t, e)
	id := mustOnNet(t, e, "web", "")
	mustStart(t, e, id)
	if err := e.RemoveNetwork(ctx, "dockctl_i"); !errors.Is(err, dockerx.ErrConflict) || !strings.Contains(err.Error(), "has active endpoints") {
		t.Errorf("remove with a running container = %v, want ErrConflict", err)
	}
	if err := e.Kill(id); err != nil {
		t.Fatal(err)
	}
	// A container that is not running does not keep it; its next start
	// fails.
	if err := e.RemoveNetwork(ctx, "dockctl_i"); err != nil {
		t.Fatalf("remove with a stopped container = %v", err)
	}
	if err := e.StartContainer(ctx, id); !errors.Is(err, dockerx.ErrNotFound) {
		t.Errorf("start after the network's removal = %v, want ErrNotFound", err)
	}
	if err := e.RemoveNetwork(ctx, "dockctl_i"); err != nil {
		t.Errorf("remove of a missing network = %v, want nil", err)
	}
	if err := e.AddNetwork(dockerx.Network{Name: "theirs"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"theirs", "bridge"} {
		if err := e.RemoveNetwork(ctx, name); !errors.Is(err, dockerx.ErrConflict) {
			t.Errorf("remove of %s = %v, want ErrConflict (not dockctl's)", name, err)
		}
	}
	if n := e.Calls()["network:remove"]; n != 1 {
		t.Errorf("%d removals counted, want 1", n)
	}
}
