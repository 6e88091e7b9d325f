package dockerx

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// networksAPI is a daemon's networks, answering as Docker 20.10 does
// (measured): a create of a taken name is 409, a connect of a running
// container already connected 403 "endpoint with name … already exists",
// a remove of a network with running containers 403 "has active
// endpoints", an inspect resolves a name or an ID prefix.
type networksAPI struct {
	dockerAPI

	mu        sync.Mutex
	networks  []network.Inspect
	createErr error // returned by NetworkCreate (after adding raceWith, if set)
	raceWith  *network.Inspect
	created   []network.CreateOptions
	connects  []*network.EndpointSettings
	connectTo []string // network, container of each connect
	connErr   error
	attached  map[string][]string // container → networks it is connected to
	stale     map[string][]string // container → networks in its configuration without an endpoint
	stopped   bool                // the containers are not running
	removed   []string
	removeErr error
}

func (f *networksAPI) find(ref string) (network.Inspect, bool) {
	for _, n := range f.networks {
		if n.Name == ref || n.ID == ref {
			return n, true
		}
	}
	for _, n := range f.networks {
		if strings.HasPrefix(n.ID, ref) {
			return n, true
		}
	}
	return network.Inspect{}, false
}

func (f *networksAPI) NetworkInspect(_ context.Context, ref string, _ network.InspectOptions) (network.Inspect, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.find(ref); ok {
		return n, nil
	}
	return network.Inspect{}, cerrdefs.ErrNotFound.WithMessage("network " + ref + " not found")
}

func (f *networksAPI) NetworkCreate(_ context.Context, name string, o network.CreateOptions) (network.CreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, o)
	if f.raceWith != nil {
		f.networks = append(f.networks, *f.raceWith)
	}
	if f.createErr != nil {
		return network.CreateResponse{}, f.createErr
	}
	n := network.Inspect{Name: name, ID: "n" + strings.Repeat("0", 63), Driver: o.Driver, Labels: o.Labels, IPAM: *o.IPAM}
	f.networks = append(f.networks, n)
	return network.CreateResponse{ID: n.ID}, nil
}

func (f *networksAPI) NetworkList(context.Context, network.ListOptions) ([]network.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.networks, nil
}

func (f *networksAPI) NetworkConnect(_ context.Context, net, ctr string, cfg *network.EndpointSettings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects = append(f.connects, cfg)
	f.connectTo = append(f.connectTo, net+" "+ctr)
	return f.connErr
}

func (f *networksAPI) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	nets, ok := f.attached[id]
	stale, ok2 := f.stale[id]
	if !ok && !ok2 {
		return container.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("No such container: " + id)
	}
	r := container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: id, State: &container.State{Running: !f.stopped}},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{}}}
	for _, n := range nets {
		r.NetworkSettings.Networks[n] = &network.EndpointSettings{IPAddress: "10.222.0.9", EndpointID: "ep-" + n}
	}
	for _, n := range stale {
		r.NetworkSettings.Networks[n] = &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.5"}}
	}
	return r, nil
}

func (f *networksAPI) NetworkRemove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, id)
	return f.removeErr
}

func newNetworksClient(f *networksAPI) *Client {
	return &Client{api: f, timeout: DefaultTimeout, log: newFakeClient(&fakeAPI{}).log, leaves: leaveGate{decided: true}}
}

var instanceNet = NetworkRequest{Instance: "i", Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}

func TestNetworkOptions(t *testing.T) {
	got, err := networkOptions(instanceNet)
	if err != nil {
		t.Fatal(err)
	}
	want := network.CreateOptions{Driver: "bridge",
		IPAM:   &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}}},
		Labels: map[string]string{LabelInstance: "i", LabelRole: RoleNetwork}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("networkOptions = %+v, want %+v", got, want)
	}
	for _, tt := range []struct {
		name string
		edit func(*NetworkRequest)
		want string
	}{
		{"no instance", func(r *NetworkRequest) { r.Instance = "" }, "instance, name and subnet are required"},
		{"no subnet", func(r *NetworkRequest) { r.Subnet = "" }, "instance, name and subnet are required"},
		{"subnet not a network address", func(r *NetworkRequest) { r.Subnet = "10.222.0.5/20" }, `subnet "10.222.0.5/20" is not an IPv4 network address`},
		{"IPv6 subnet", func(r *NetworkRequest) { r.Subnet = "fd00::/64" }, "is not an IPv4 network address"},
		{"range outside", func(r *NetworkRequest) { r.IPRange = "10.223.0.0/21" }, `IP range "10.223.0.0/21" is not an IPv4 CIDR inside subnet`},
		{"range larger than subnet", func(r *NetworkRequest) { r.IPRange = "10.222.0.0/19" }, "is not an IPv4 CIDR inside subnet"},
		{"gateway outside", func(r *NetworkRequest) { r.Gateway = "10.0.0.1" }, `gateway "10.0.0.1" is not an IPv4 address inside subnet`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := instanceNet
			tt.edit(&req)
			if _, err := networkOptions(req); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("networkOptions = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Without range and gateway: Docker's choices.
	if _, err := networkOptions(NetworkRequest{Instance: "i", Name: "n", Subnet: "10.1.0.0/16"}); err != nil {
		t.Errorf("subnet alone: %v", err)
	}
}

func TestEnsureNetwork(t *testing.T) {
	ipam := network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: "10.222.16.0/20", IPRange: "10.222.16.0/21", Gateway: "10.222.16.1"}}}
	ours := network.Inspect{Name: "dockctl_i", ID: "ours", Labels: map[string]string{LabelInstance: "i", LabelRole: RoleNetwork}, IPAM: ipam}
	foreign := network.Inspect{Name: "dockctl_i", ID: "abcdef0123456789", Labels: map[string]string{"x": "y"}, IPAM: ipam}
	otherInstance := network.Inspect{Name: "dockctl_i", ID: "other", Labels: map[string]string{LabelInstance: "j", LabelRole: RoleNetwork}}
	ourInstanceNoRole := network.Inspect{Name: "dockctl_i", ID: "norole", Labels: map[string]string{LabelInstance: "i"}}
	created := Network{ID: "n" + strings.Repeat("0", 63), Name: "dockctl_i", Labels: NetworkLabels("i"),
		Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}
	asFound := Network{ID: "ours", Name: "dockctl_i", Labels: ours.Labels, Subnet: "10.222.16.0/20", IPRange: "10.222.16.0/21", Gateway: "10.222.16.1"}
	for _, tt := range []struct {
		name        string
		f           *networksAPI
		want        Network
		wantCreates int
		wantErr     string
		wantIs      error
	}{
		{name: "absent: created", f: &networksAPI{}, want: created, wantCreates: 1},
		{name: "an ID prefix is not a name: created", f: &networksAPI{networks: []network.Inspect{{Name: "x", ID: "dockctl_i0"}}},
			want: created, wantCreates: 1},
		{name: "ours: returned as it is, with its own IPAM", f: &networksAPI{networks: []network.Inspect{ours}}, want: asFound},
		{name: "not dockctl's: never adopted", f: &networksAPI{networks: []network.Inspect{foreign}}, wantIs: ErrConflict,
			wantErr: `network dockctl_i (abcdef012345) exists and is not dockctl's network of instance "i" (labels io.dockctl.instance="" io.dockctl.role="")`},
		{name: "another instance's", f: &networksAPI{networks: []network.Inspect{otherInstance}}, wantIs: ErrConflict,
			wantErr: `labels io.dockctl.instance="j" io.dockctl.role="network"`},
		{name: "our instance label without the role", f: &networksAPI{networks: []network.Inspect{ourInstanceNoRole}}, wantIs: ErrConflict,
			wantErr: `io.dockctl.role=""`},
		{name: "created meanwhile by another controller of the instance", f: &networksAPI{raceWith: &ours,
			createErr: cerrdefs.ErrConflict.WithMessage("network with name dockctl_i already exists")}, want: asFound, wantCreates: 1},
		{name: "created meanwhile by someone else", f: &networksAPI{raceWith: &foreign,
			createErr: cerrdefs.ErrConflict.WithMessage("network with name dockctl_i already exists")}, wantCreates: 1, wantIs: ErrConflict,
			wantErr: "is not dockctl's network"},
		{name: "subnet taken", f: &networksAPI{createErr: cerrdefs.ErrPermissionDenied.WithMessage("Pool overlaps with other one on this address space")},
			wantCreates: 1, wantErr: "create network dockctl_i: Pool overlaps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newNetworksClient(tt.f).EnsureNetwork(context.Background(), instanceNet)
			if len(tt.f.created) != tt.wantCreates {
				t.Errorf("%d creates, want %d", len(tt.f.created), tt.wantCreates)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
					t.Fatalf("EnsureNetwork = %+v, %v; want an error containing %q (is %v)", got, err, tt.wantErr, tt.wantIs)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EnsureNetwork = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := newNetworksClient(&networksAPI{}).EnsureNetwork(context.Background(), NetworkRequest{Instance: "i", Name: "n", Subnet: "bad"}); err == nil {
		t.Error("EnsureNetwork of an invalid request: no error")
	}
}

func TestListNetworks(t *testing.T) {
	f := &networksAPI{networks: []network.Inspect{
		{Name: "none", ID: "3"},
		{Name: "dual", ID: "2", Labels: map[string]string{"a": "b"}, IPAM: network.IPAM{Config: []network.IPAMConfig{
			{Subnet: "fd00::/64", Gateway: "fd00::1"}, {Subnet: "172.20.0.0/16", Gateway: "172.20.0.1"}}}},
		{Name: "bridge", ID: "1", IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "172.17.0.0/16", Gateway: "172.17.0.1"}}}},
	}}
	got, err := newNetworksClient(f).ListNetworks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Network{
		{ID: "1", Name: "bridge", Subnet: "172.17.0.0/16", Gateway: "172.17.0.1"},
		{ID: "2", Name: "dual", Labels: map[string]string{"a": "b"}, Subnet: "172.20.0.0/16", Gateway: "172.20.0.1"},
		{ID: "3", Name: "none"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListNetworks =\n%+v\nwant\n%+v", got, want)
	}
}

func TestConnectNetwork(t *testing.T) {
	alreadyConnected := cerrdefs.ErrPermissionDenied.WithMessage("endpoint with name web already exists in network dockctl_i")
	addressInUse := cerrdefs.ErrPermissionDenied.WithMessage("Address already in use")
	for _, tt := range []struct {
		name     string
		ep       EndpointSettings
		f        *networksAPI
		wantSent *network.EndpointSettings
		wantErr  string
		wantIs   error
	}{
		{name: "dynamic, no alias", f: &networksAPI{}, wantSent: nil},
		{name: "static with aliases", ep: EndpointSettings{IPv4: "10.222.8.5", Aliases: []string{"web", "web.default"}}, f: &networksAPI{},
			wantSent: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.5"}, Aliases: []string{"web", "web.default"}}},
		{name: "already connected: nil", f: &networksAPI{connErr: alreadyConnected, attached: map[string][]string{"c1": {"bridge", "dockctl_i"}}}},
		{name: "refused, not connected", ep: EndpointSettings{IPv4: "10.222.8.5"},
			f:        &networksAPI{connErr: cerrdefs.ErrPermissionDenied.WithMessage("Address already in use"), attached: map[string][]string{"c1": {"bridge"}}},
			wantSent: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.5"}},
			wantErr:  "connect container c1 to network dockctl_i: Address already in use"},
		{name: "refused, running, left in its configuration by Docker: not connected", ep: EndpointSettings{IPv4: "10.222.8.5"},
			f:        &networksAPI{connErr: addressInUse, stale: map[string][]string{"c1": {"dockctl_i"}}},
			wantSent: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.5"}},
			wantErr:  "Address already in use"},
		{name: "refused, not running, in its configuration: connected", ep: EndpointSettings{IPv4: "10.222.8.5"},
			f:        &networksAPI{connErr: addressInUse, stale: map[string][]string{"c1": {"dockctl_i"}}, stopped: true},
			wantSent: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.5"}}},
		{name: "no such network", f: &networksAPI{connErr: cerrdefs.ErrNotFound.WithMessage("network dockctl_i not found"), attached: map[string][]string{"c1": nil}},
			wantErr: "network dockctl_i not found", wantIs: ErrNotFound},
		{name: "no such container", f: &networksAPI{connErr: cerrdefs.ErrNotFound.WithMessage("No such container: c1")},
			wantErr: "No such container", wantIs: ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := newNetworksClient(tt.f).ConnectNetwork(context.Background(), "dockctl_i", "c1", tt.ep)
			if !reflect.DeepEqual(tt.f.connectTo, []string{"dockctl_i c1"}) {
				t.Errorf("connects %v", tt.f.connectTo)
			}
			if len(tt.f.connects) != 1 || !reflect.DeepEqual(tt.f.connects[0], tt.wantSent) {
				t.Errorf("sent %+v, want %+v", tt.f.connects, tt.wantSent)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("ConnectNetwork = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Errorf("ConnectNetwork = %v, want an error containing %q (is %v)", err, tt.wantErr, tt.wantIs)
			}
		})
	}
}

func TestRemoveNetwork(t *testing.T) {
	ours := network.Inspect{Name: "dockctl_i", ID: "ours0123456789", Labels: NetworkLabels("i")}
	for _, tt := range []struct {
		name        string
		f           *networksAPI
		wantRemoved []string
		wantErr     string
		wantIs      error
	}{
		{name: "absent: nil", f: &networksAPI{}},
		{name: "ours: removed by ID", f: &networksAPI{networks: []network.Inspect{ours}}, wantRemoved: []string{"ours0123456789"}},
		{name: "gone meanwhile: nil", f: &networksAPI{networks: []network.Inspect{ours}, removeErr: cerrdefs.ErrNotFound.WithMessage("network not found")},
			wantRemoved: []string{"ours0123456789"}},
		{name: "in use", f: &networksAPI{networks: []network.Inspect{ours},
			removeErr: cerrdefs.ErrPermissionDenied.WithMessage("error while removing network: network dockctl_i id ours has active endpoints")},
			wantRemoved: []string{"ours0123456789"}, wantIs: ErrConflict, wantErr: "remove network dockctl_i: in use"},
		{name: "not dockctl's: refused, untouched", f: &networksAPI{networks: []network.Inspect{{Name: "dockctl_i", ID: "theirs"}}},
			wantIs: ErrConflict, wantErr: "it is not a network dockctl made"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := newNetworksClient(tt.f).RemoveNetwork(context.Background(), "dockctl_i")
			if !reflect.DeepEqual(tt.f.removed, tt.wantRemoved) {
				t.Errorf("removed %v, want %v", tt.f.removed, tt.wantRemoved)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("RemoveNetwork = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tt.wantIs) {
				t.Errorf("RemoveNetwork = %v, want an error containing %q (is %v)", err, tt.wantErr, tt.wantIs)
			}
		})
	}
}
