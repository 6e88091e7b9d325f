package reconciler

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/store"
)

func TestChooseSubnet(t *testing.T) {
	nets := func(subnets ...string) []dockerx.Network {
		var out []dockerx.Network
		for i, s := range subnets {
			out = append(out, dockerx.Network{Name: "n" + string(rune('0'+i)), Subnet: s})
		}
		return out
	}
	bridge := dockerx.Network{Name: "bridge", Subnet: "172.17.0.0/16"}
	tests := []struct {
		name     string
		given    string
		recorded string
		existing []dockerx.Network
		want     string
		wantErr  string // a part of the error
	}{
		{name: "nothing else: the first candidate", existing: []dockerx.Network{bridge}, want: "10.222.0.0/20"},
		{name: "no network at all", want: "10.222.0.0/20"},
		{name: "the first candidates taken", existing: nets("10.222.0.0/20", "10.222.16.0/24"), want: "10.222.32.0/20"},
		{name: "a larger network covering several candidates", existing: nets("10.222.0.0/18"), want: "10.222.64.0/20"},
		{name: "a network inside a candidate takes it", existing: nets("10.222.0.128/25"), want: "10.222.16.0/20"},
		{name: "10.222/16 full: on to 10.223", existing: nets("10.222.0.0/16"), want: "10.223.0.0/20"},
		{name: "all taken", existing: nets("10.222.0.0/15"), wantErr: "give one with --subnet"},
		{name: "networks without a subnet (host, none) and IPv6 ones are ignored",
			existing: []dockerx.Network{{Name: "host"}, {Name: "none"}, {Name: "v6", Subnet: "fd00::/64"}, {Name: "junk", Subnet: "x"}}, want: "10.222.0.0/20"},
		{name: "our own name is not a conflict with itself", existing: []dockerx.Network{{Name: "dockctl_i", Subnet: "10.222.0.0/20"}}, want: "10.222.0.0/20"},
		{name: "the recorded subnet is kept", recorded: "10.222.48.0/20", existing: []dockerx.Network{bridge}, want: "10.222.48.0/20"},
		{name: "the recorded subnet taken meanwhile: the first free", recorded: "10.222.0.0/20", existing: nets("10.222.0.0/20"), want: "10.222.16.0/20"},
		{name: "a given subnet wins over the recorded one", given: "192.168.77.0/24", recorded: "10.222.0.0/20", want: "192.168.77.0/24"},
		{name: "a given /16", given: "10.50.0.0/16", existing: []dockerx.Network{bridge}, want: "10.50.0.0/16"},
		{name: "a given /24 is large enough", given: "10.50.1.0/24", want: "10.50.1.0/24"},
		{name: "a given subnet overlapping another network", given: "172.17.5.0/24", existing: []dockerx.Network{bridge},
			wantErr: `--subnet 172.17.5.0/24 overlaps Docker network "bridge" (172.17.0.0/16)`},
		{name: "a given subnet containing another network", given: "10.0.0.0/8", existing: nets("10.1.2.0/24"), wantErr: "overlaps Docker network"},
		{name: "a given /25 is too small", given: "10.50.1.0/25", wantErr: "too small; give a /24 or larger"},
		{name: "host bits set", given: "10.50.1.7/24", wantErr: "did you mean 10.50.1.0/24?"},
		{name: "IPv6", given: "fd00::/64", wantErr: "must be an IPv4 subnet"},
		{name: "not CIDR", given: "10.50.1.0", wantErr: "not a subnet in CIDR notation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseSubnet("dockctl_i", tt.given, tt.recorded, tt.existing)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("chooseSubnet = %v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("chooseSubnet = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestNetworkLayout(t *testing.T) {
	tests := []struct {
		subnet                    string
		gateway, ipRange, dnsAddr string
	}{
		{"10.222.0.0/20", "10.222.0.1", "10.222.0.0/21", "10.222.8.0"},
		{"10.222.16.0/20", "10.222.16.1", "10.222.16.0/21", "10.222.24.0"},
		{"192.168.77.0/24", "192.168.77.1", "192.168.77.0/25", "192.168.77.128"},
		{"10.50.0.0/16", "10.50.0.1", "10.50.0.0/17", "10.50.128.0"},
	}
	for _, tt := range tests {
		p, err := ParseSubnet(tt.subnet)
		if err != nil {
			t.Fatal(err)
		}
		got, err := networkLayout("dockctl_i", p)
		if err != nil {
			t.Fatal(err)
		}
		want := store.NetworkStatus{Version: 1, Name: "dockctl_i", Subnet: tt.subnet, Gateway: tt.gateway, IPRange: tt.ipRange, DNSIP: tt.dnsAddr}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", tt.subnet, got, want)
		}
	}
}

func TestNetworkStatusOf(t *testing.T) {
	tests := []struct {
		name string
		n    dockerx.Network
		want store.NetworkStatus
		ok   bool
	}{
		{name: "Docker's IPAM is the truth", n: dockerx.Network{Name: "dockctl_i", Subnet: "10.222.0.0/20", Gateway: "10.222.0.254", IPRange: "10.222.0.0/22"}, ok: true,
			want: store.NetworkStatus{Version: 1, Name: "dockctl_i", Subnet: "10.222.0.0/20", Gateway: "10.222.0.254", IPRange: "10.222.0.0/22", DNSIP: "10.222.8.0"}},
		{name: "missing gateway and range are derived", n: dockerx.Network{Name: "dockctl_i", Subnet: "10.9.0.0/24"}, ok: true,
			want: store.NetworkStatus{Version: 1, Name: "dockctl_i", Subnet: "10.9.0.0/24", Gateway: "10.9.0.1", IPRange: "10.9.0.0/25", DNSIP: "10.9.0.128"}},
		{name: "too small", n: dockerx.Network{Name: "dockctl_i", Subnet: "10.9.0.0/28"}},
		{name: "no subnet", n: dockerx.Network{Name: "dockctl_i"}},
	}
	for _, tt := range tests {
		got, ok := networkStatusOf(tt.n)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPodNetwork(t *testing.T) {
	st := &store.NetworkStatus{Name: "dockctl_i", DNSIP: "10.222.8.0"}
	got := podNetwork(st, "shop")
	want := dockerx.PodNetwork{Name: "dockctl_i", DNS: []string{"10.222.8.0"},
		DNSSearch: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}, DNSOptions: []string{"ndots:5"}}
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("podNetwork = %+v, want %+v", got, want)
	}
	if podNetwork(nil, "shop") != nil {
		t.Fatal("no instance network (a conflict) must give no pod network: pods are created as before")
	}
}

// TestNetworkMadeOutsideASweepQueuesOne: a network that a pod's create
// makes (current), not a sweep, is announced, so that the sweep connects
// pods and decides how probes reach them at once rather than at the next
// resync; one the sweep makes itself (ensure) is not. Either way its
// record is announced once (the Service controller waits for the address
// plan), and not again when an ensure finds the network as recorded.
func TestNetworkMadeOutsideASweepQueuesOne(t *testing.T) {
	for _, tt := range []struct {
		name string
		do   func(context.Context, *instanceNetwork) error
		want int
	}{
		{"made by a create", func(ctx context.Context, n *instanceNetwork) error {
			if _, err := n.current(ctx); err != nil {
				return err
			}
			_, err := n.current(ctx) // known since: nothing more to tell
			return err
		}, 1},
		{"made by the sweep", func(ctx context.Context, n *instanceNetwork) error {
			if _, _, err := n.ensure(ctx); err != nil {
				return err
			}
			_, _, err := n.ensure(ctx) // found as recorded: nothing more to tell
			return err
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newInstanceNetwork("i", "", dockerfake.New(), nil, quietLog(), nil)
			made, recorded := 0, 0
			n.made = func() { made++ }
			n.onRecord = func() { recorded++ }
			if err := tt.do(context.Background(), n); err != nil {
				t.Fatal(err)
			}
			if made != tt.want || recorded != 1 {
				t.Fatalf("made called %d times, onRecord %d: want %d and 1", made, recorded, tt.want)
			}
		})
	}
}

// TestInstanceNetworkRemovedWhenEverythingIsDeleted: once the last
// deployment is deleted the controller removes every container (the DNS
// server too: "so that deleting everything leaves the host as it was",
// dnsctl.go) and collects its images; the instance network it made must
// go as well, not stay for good.
func TestInstanceNetworkRemovedWhenEverythingIsDeleted(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitReplicas("web", 1)
	if h.network("dockctl_i") == nil {
		t.Fatal("no instance network made")
	}
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("every container of the instance gone and its images collected", func() bool {
		for _, c := range h.engine.Snapshot() {
			if c.Instance == "i" {
				return false
			}
		}
		return len(h.engine.HelperImages()) == 0
	})
	h.waitFor("the instance network removed", func() bool { return h.network("dockctl_i") == nil })
}

// listedNetworks is a NetworkDocker whose list is fixed.
type listedNetworks struct {
	NetworkDocker
	nets []dockerx.Network
}

func (l *listedNetworks) ListNetworks(context.Context) ([]dockerx.Network, error) {
	return slices.Clone(l.nets), nil
}

// TestDuplicateInstanceNetworkNameIsAConflict: Docker 20.10 creates a
// second network of an existing name for any client that does not set
// CheckDuplicate (the SDK's default), and then refuses the name as
// ambiguous everywhere dockctl uses it ("2 matches found based on name":
// pods' NetworkMode at start, connect, inspect). ensure must report the
// conflict and use neither network, even when the first of that name in
// the list is ours: otherwise every pod created on the name fails to
// start, and nothing says why.
func TestDuplicateInstanceNetworkNameIsAConflict(t *testing.T) {
	ours := dockerx.Network{ID: "aaa", Name: "dockctl_i", Labels: dockerx.NetworkLabels("i"), Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}
	foreign := dockerx.Network{ID: "bbb", Name: "dockctl_i", Subnet: "172.30.0.0/16"}
	n := newInstanceNetwork("i", "", &listedNetworks{nets: []dockerx.Network{ours, foreign}}, nil, quietLog(), nil)
	st, _, err := n.ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st != nil || !n.conflict {
		t.Fatalf("two networks named dockctl_i (one not ours): pods are put on %+v, conflict reported %v; want no network used and the conflict reported", st, n.conflict)
	}
}

// TestPodNetworkOnlyWhileWanted: the workload controllers' pods are
// created on the instance network only while something wants it (a
// deployment, a Service): with nothing, the sweep removes it, even under
// a pod being created on it, whose start then fails for good on the
// network made again.
func TestPodNetworkOnlyWhileWanted(t *testing.T) {
	h := newHarness(t, Options{})
	ctx := context.Background()
	if pn, err := h.ctrl.PodNetwork(ctx, ""); err != nil || pn != nil {
		t.Fatalf("with nothing applied: PodNetwork = %+v, %v; want none", pn, err)
	}
	h.apply(testDeployment("web", 1, "x"))
	pn, err := h.ctrl.PodNetwork(ctx, "")
	if err != nil || pn == nil || pn.Name != "dockctl_i" || len(pn.DNSSearch) == 0 || pn.DNSSearch[0] != "default.svc.cluster.local" {
		t.Fatalf("with a deployment: PodNetwork = %+v, %v; want dockctl_i resolving default's names", pn, err)
	}
}
