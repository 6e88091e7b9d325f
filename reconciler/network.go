package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/podruntime/probe"
	"github.com/dockctl/dockctl/store"
)

// The instance network (docs/design.md §10): one user-defined bridge per
// instance, dockctl_INSTANCE, with an explicit subnet so that dockctl can
// hand out stable addresses. Its lower half is Docker's (IPRange: pods get
// dynamic addresses from it); its upper half is dockctl's: the DNS server
// takes its first address, Service ClusterIPs follow.
//
// Invariants:
//   - The subnet is chosen once, when the network is created: the --subnet
//     flag, else the one recorded in the store (so that a network removed
//     by hand comes back with the addresses Services were given), else the
//     first candidate that overlaps no Docker network. Once the network
//     exists its own IPAM is the truth, recorded in the store.
//   - A network named so without this instance's label is never adopted,
//     written to or removed: the conflict is reported (log, metric) and
//     pods are created as before, without the instance network. So is a
//     name that several networks have (Docker refuses it as ambiguous).
//   - Ensuring is a read (one network list) once the network exists: an
//     idle controller makes no Docker call that writes.
//   - Once no container of the instance is left and nothing may want one
//     (no live deployment or Service, no unreadable record), the sweep
//     removes the network, so that deleting everything leaves the host as
//     it was; its record stays, so that it comes back with the same subnet
//     (and Services with their ClusterIPs) when needed again. The removal
//     holds the lock pods are created under (current) and checks the store
//     again under it: a pod is never created on a network being removed.

// NetworkDocker is what the instance network and the probe relay need
// from Docker (Options.NetworkDocker).
type NetworkDocker interface {
	EnsureNetwork(ctx context.Context, req dockerx.NetworkRequest) (dockerx.Network, error)
	ListNetworks(ctx context.Context) ([]dockerx.Network, error)
	ConnectNetwork(ctx context.Context, network, containerID string, ep dockerx.EndpointSettings) error
	// RemoveNetwork removes the instance network once nothing uses it.
	RemoveNetwork(ctx context.Context, name string) error
	// ExecOutput runs a relayed probe in the DNS helper.
	ExecOutput(ctx context.Context, id string, cmd []string, timeout time.Duration) (exit int, stdout []byte, err error)
}

// MaxSubnetPrefix is the longest prefix --subnet may have: a /24 leaves
// 128 addresses for pods and 128 for the DNS server and Services.
const MaxSubnetPrefix = 24

// subnetCandidates are tried in order when no subnet is given: the /20s of
// 10.222.0.0/15, a range Docker's default pools (172.17–31/16,
// 192.168/16) and most VPNs leave alone.
func subnetCandidates() []netip.Prefix {
	out := make([]netip.Prefix, 0, 32)
	for _, second := range []byte{222, 223} {
		for third := 0; third < 256; third += 16 {
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, second, byte(third), 0}), 20))
		}
	}
	return out
}

// ParseSubnet checks a --subnet value: an IPv4 network address with a
// prefix of at most /24.
func ParseSubnet(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("--subnet %s: not a subnet in CIDR notation (e.g. 10.222.0.0/20)", s)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("--subnet %s: must be an IPv4 subnet", s)
	}
	if p.Bits() > MaxSubnetPrefix {
		return netip.Prefix{}, fmt.Errorf("--subnet %s: too small; give a /%d or larger (the upper half holds the DNS server and the Services' addresses)", s, MaxSubnetPrefix)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("--subnet %s: not a network address (did you mean %s?)", s, m)
	}
	return p, nil
}

// networkLayout is the record of a network dockctl makes in subnet: the
// gateway, Docker's dynamic range and the DNS server's address as the
// instance network's address plan (netlayout.Of) places them.
func networkLayout(name string, subnet netip.Prefix) (store.NetworkStatus, error) {
	l, err := netlayout.Of(subnet.String())
	if err != nil {
		return store.NetworkStatus{}, err
	}
	return store.NetworkStatus{Version: 1, Name: name, Subnet: l.Subnet.String(), Gateway: l.Gateway.String(),
		IPRange: l.IPRange.String(), DNSIP: l.DNSIP.String()}, nil
}

// chooseSubnet picks the subnet of a network about to be created: given
// (the --subnet flag, already parsed) if set, else recorded (the subnet the
// store holds from an earlier creation) if it is still free, else the
// first free candidate. A subnet is free if it overlaps none of the
// existing networks' subnets (the network being created, ours, excepted:
// it does not exist, or the choice is not made).
func chooseSubnet(ours, given, recorded string, existing []dockerx.Network) (netip.Prefix, error) {
	taken := func(p netip.Prefix) *dockerx.Network {
		for i := range existing {
			n := &existing[i]
			if n.Name == ours || n.Subnet == "" {
				continue
			}
			q, err := netip.ParsePrefix(n.Subnet)
			if err != nil || q.Addr().Is4() != p.Addr().Is4() {
				continue // another family, or nothing Docker would compare
			}
			if q.Overlaps(p) {
				return n
			}
		}
		return nil
	}
	if given != "" {
		p, err := ParseSubnet(given)
		if err != nil {
			return netip.Prefix{}, err
		}
		if n := taken(p); n != nil {
			return netip.Prefix{}, fmt.Errorf("--subnet %s overlaps Docker network %q (%s): choose another subnet", given, n.Name, n.Subnet)
		}
		return p, nil
	}
	if recorded != "" {
		if p, err := ParseSubnet(recorded); err == nil && taken(p) == nil {
			return p, nil
		}
	}
	for _, p := range subnetCandidates() {
		if taken(p) == nil {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free subnet for network %s: every /20 of 10.222.0.0/15 overlaps a Docker network; give one with --subnet", ours)
}

// networkStatusOf is the record of an existing network of ours: its own
// IPAM, with the DNS address derived from its subnet. ok is false when its
// subnet is not one dockctl can use (not IPv4, or too small): then it was
// not made by a dockctl that follows these rules.
func networkStatusOf(n dockerx.Network) (st store.NetworkStatus, ok bool) {
	p, err := netip.ParsePrefix(n.Subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() > MaxSubnetPrefix {
		return store.NetworkStatus{}, false
	}
	if st, err = networkLayout(n.Name, p.Masked()); err != nil {
		return store.NetworkStatus{}, false
	}
	// Docker's own record wins where it has one.
	if n.Gateway != "" {
		st.Gateway = n.Gateway
	}
	if n.IPRange != "" {
		st.IPRange = n.IPRange
	}
	return st, true
}

// NetworkObserver is implemented by an Observer that also records the
// instance network's state and how probes reach pods (metrics). Optional,
// so that an Observer without it keeps working.
type NetworkObserver interface {
	// InstanceNetworkConflict reports whether a network of the instance
	// network's name exists without this instance's label.
	InstanceNetworkConflict(conflict bool)
	// ProbeMode reports how httpGet and tcpSocket probes reach pods:
	// ProbeDirect, ProbeRelay or ProbeUndecided.
	ProbeMode(mode string)
}

// Probe modes (NetworkObserver.ProbeMode), as the pod runtime's probe
// route decides them (podruntime/probe.Route).
const (
	ProbeUndecided = probe.Undecided
	ProbeDirect    = probe.Direct
	ProbeRelay     = probe.Relay
)

// modeObserver is the observer the probe route reports its mode to: obs
// when it is a NetworkObserver, else none.
func modeObserver(obs Observer) probe.ModeObserver {
	if no, ok := obs.(NetworkObserver); ok {
		return no
	}
	return nil
}

// networkStore keeps the network's record (Store's).
type networkStore interface {
	ReadNetwork() (*store.NetworkStatus, error)
	WriteNetwork(*store.NetworkStatus) error
}

// instanceNetwork ensures the instance network and remembers it.
type instanceNetwork struct {
	instance, name string
	given          string // --subnet
	docker         NetworkDocker
	store          networkStore // nil (tests): remembered in memory only
	log            *slog.Logger
	obs            NetworkObserver // may be nil

	mu      sync.Mutex
	ensured bool                 // ensure ran to completion at least once
	status  *store.NetworkStatus // nil: no network to put pods on (a conflict)
	// recorded is what the store holds, read once.
	recorded     *store.NetworkStatus
	readRecorded bool
	conflict     bool
	warnedGiven  bool
	// made is called when current, outside a sweep, creates the network:
	// the sweep, which connects pods and decides how probes reach them,
	// must look at it (nil: nothing to tell).
	made func()
	// onRecord is called, under mu, each time the network's record
	// changes (its first record included): the Service controller waits
	// for the address plan, and must not wait for a retry to see it
	// (nil: nothing to tell).
	onRecord func()

	// gateway is status's gateway ("" none), read without mu (held
	// across Docker calls) by the endpoints' feed.
	gateway atomic.Value // string
}

func newInstanceNetwork(instance, given string, d NetworkDocker, st networkStore, log *slog.Logger, obs Observer) *instanceNetwork {
	n := &instanceNetwork{instance: instance, name: dockerx.NetworkName(instance), given: given, docker: d, store: st, log: log}
	n.obs, _ = obs.(NetworkObserver)
	return n
}

// current returns the network pods are created on, ensuring it first if
// no ensure has completed yet; nil when there is none to use (a network
// of that name that is not ours).
func (n *instanceNetwork) current(ctx context.Context) (*store.NetworkStatus, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ensured {
		return n.status, nil
	}
	st, created, err := n.ensureLocked(ctx)
	if created && n.made != nil {
		n.made()
	}
	return st, err
}

// ensure looks at Docker again (a resync): the network is created if it
// is missing (removed by hand, or never made). created reports a creation.
func (n *instanceNetwork) ensure(ctx context.Context) (st *store.NetworkStatus, created bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ensureLocked(ctx)
}

func (n *instanceNetwork) ensureLocked(ctx context.Context) (*store.NetworkStatus, bool, error) {
	nets, err := n.docker.ListNetworks(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("list networks: %w", err)
	}
	var existing *dockerx.Network
	named := 0
	for i := range nets {
		if nets[i].Name == n.name {
			named++
			if existing == nil {
				existing = &nets[i]
			}
		}
	}
	if named > 1 {
		// Docker 20.10 lets a client that does not ask it to check make a
		// second network of a name, then refuses the name as ambiguous
		// wherever it is used: no pod could start on it.
		n.reportConflict(fmt.Sprintf("%d Docker networks have the instance network's name: none is used; pods are created without the instance network (no Service name resolves in them) until only one is left", named), "")
		return nil, false, nil
	}
	if existing != nil && !n.ours(existing) {
		n.reportConflict(conflictNotOurs, existing.Labels[dockerx.LabelInstance])
		return nil, false, nil
	}
	created := false
	if existing == nil {
		rec := n.readRecord()
		recorded := ""
		if rec != nil && rec.Name == n.name {
			recorded = rec.Subnet
		}
		subnet, err := chooseSubnet(n.name, n.given, recorded, nets)
		if err != nil {
			return nil, false, err
		}
		if recorded != "" && subnet.String() != recorded {
			n.log.Warn("the instance network is created with another subnet than before: addresses given out in the old one (Services' ClusterIPs) change",
				"network", n.name, "subnet", subnet, "before", recorded)
		}
		want, err := networkLayout(n.name, subnet)
		if err != nil {
			return nil, false, err
		}
		got, err := n.docker.EnsureNetwork(ctx, dockerx.NetworkRequest{Instance: n.instance, Name: n.name, Subnet: want.Subnet, IPRange: want.IPRange, Gateway: want.Gateway})
		if errors.Is(err, dockerx.ErrConflict) {
			// Made by someone else since the list: never adopted.
			n.reportConflict(conflictNotOurs, "")
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("create network %s (%s): %w", n.name, want.Subnet, err)
		}
		existing, created = &got, true
		n.log.Info("instance network created", "network", n.name, "subnet", got.Subnet, "dns", want.DNSIP)
	}
	st, ok := networkStatusOf(*existing)
	if !ok {
		return nil, false, fmt.Errorf("network %s: subnet %q is not an IPv4 subnet of /%d or larger; remove the network to let the controller create it again", n.name, existing.Subnet, MaxSubnetPrefix)
	}
	if n.given != "" && n.given != st.Subnet && !n.warnedGiven {
		n.warnedGiven = true
		n.log.Warn("--subnet ignored: the instance network exists with another subnet (remove it, with every pod stopped, to change it)",
			"network", n.name, "subnet", st.Subnet, "flag", n.given)
	}
	if n.conflict {
		n.conflict = false
		n.log.Info("instance network conflict resolved", "network", n.name)
		if n.obs != nil {
			n.obs.InstanceNetworkConflict(false)
		}
	}
	if n.recorded == nil || *n.recorded != st {
		if n.store != nil {
			if err := n.store.WriteNetwork(&st); err != nil {
				return nil, false, fmt.Errorf("record network %s: %w", n.name, err)
			}
		}
		n.recorded = &st
		if n.onRecord != nil {
			n.onRecord()
		}
	}
	n.status, n.ensured = &st, true
	n.gateway.Store(st.Gateway)
	return &st, created, nil
}

// ours reports whether a network's labels say it is this instance's
// network.
func (n *instanceNetwork) ours(net *dockerx.Network) bool {
	return net.Labels[dockerx.LabelInstance] == n.instance && net.Labels[dockerx.LabelRole] == dockerx.RoleNetwork
}

// release removes the network if it exists, is ours and wanted still
// says no (asked under the lock: see the invariants). left reports
// whether a network of its name is left (kept, or not ours to remove).
// Ensure creates it again when needed.
func (n *instanceNetwork) release(ctx context.Context, wanted func() bool) (left bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	nets, err := n.docker.ListNetworks(ctx)
	if err != nil {
		return false, fmt.Errorf("list networks: %w", err)
	}
	var ours *dockerx.Network
	for i := range nets {
		if nets[i].Name != n.name {
			continue
		}
		if ours != nil || !n.ours(&nets[i]) {
			return true, nil // not ours alone: never removed (ensure reports it)
		}
		ours = &nets[i]
	}
	if ours != nil {
		if wanted() {
			return true, nil
		}
		if err := n.docker.RemoveNetwork(ctx, n.name); err != nil {
			return true, fmt.Errorf("remove network %s: %w", n.name, err)
		}
		n.log.Info("instance network removed: nothing of the instance is left", "network", n.name, "subnet", ours.Subnet)
	}
	n.status, n.ensured = nil, false
	n.gateway.Store("")
	return false, nil
}

// readRecord returns what the store holds about the network, read once
// (the controller is the store's only writer of it).
func (n *instanceNetwork) readRecord() *store.NetworkStatus {
	if n.readRecorded {
		return n.recorded
	}
	n.readRecorded = true
	if n.store == nil {
		return nil
	}
	rec, err := n.store.ReadNetwork()
	if err != nil {
		n.log.Warn("unreadable network record; a subnet is chosen afresh", "err", err)
		return nil
	}
	n.recorded = rec
	return rec
}

// conflictNotOurs is why a network of our name is not used when it is not
// ours.
const conflictNotOurs = "a Docker network has the instance network's name but not this instance's label: it is not used; pods are created without the instance network (no Service name resolves in them) until it is removed or renamed"

// reportConflict notes a network of our name that cannot be used (not
// ours, or not the only one of that name), saying why: logged once per
// occurrence, pods created as before meanwhile.
func (n *instanceNetwork) reportConflict(why, owner string) {
	n.status, n.ensured = nil, true
	n.gateway.Store("")
	if n.conflict {
		return
	}
	n.conflict = true
	n.log.Error(why, "network", n.name, "ownerInstance", owner)
	if n.obs != nil {
		n.obs.InstanceNetworkConflict(true)
	}
}

// hostAddress is the host's address on the instance network in use (its
// gateway), as its pods and proxies reach the host; "" while there is
// none, or none is known yet.
func (c *Controller) hostAddress() string {
	if c.net == nil {
		return ""
	}
	gw, _ := c.net.gateway.Load().(string)
	return gw
}

// podNetworkStatus is the instance network pods are created on: nil when
// Docker has no network API or the name is taken by a network not ours.
func (c *Controller) podNetworkStatus(ctx context.Context) (*store.NetworkStatus, error) {
	if c.net == nil {
		return nil, nil
	}
	st, err := c.net.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("instance network: %w", err)
	}
	return st, nil
}

// PodNetwork is the create-time network of the pods of namespace ns
// (podNetwork of the instance network in use; nil while there is none),
// for the workload controllers' pods (docs/design.md §17), created as
// the Deployment controller's are. nil too while nothing wants the
// network (networkWanted: no deployment, no Service): the sweep removes
// it then, even under a pod being created on it, whose start would fail
// on the network made again; such a pod is created as before and
// connected by the sweep (netconnect.go), and with no Service there is
// no name for it to resolve.
func (c *Controller) PodNetwork(ctx context.Context, ns string) (*dockerx.PodNetwork, error) {
	if c.net == nil || !c.networkWanted() {
		return nil, nil
	}
	st, err := c.podNetworkStatus(ctx)
	if err != nil {
		return nil, err
	}
	return podNetwork(st, podruntime.OrDefaultNamespace(ns)), nil
}

// podNetwork is the create-time network of a pod's network owner in
// namespace ns (docs/design.md §10, DNS): on the instance network, resolving
// through dockctl's DNS server with a pod's search path and ndots.
func podNetwork(st *store.NetworkStatus, ns string) *dockerx.PodNetwork {
	if st == nil {
		return nil
	}
	return &dockerx.PodNetwork{
		Name:       st.Name,
		DNS:        []string{st.DNSIP},
		DNSSearch:  []string{ns + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain},
		DNSOptions: []string{"ndots:5"},
	}
}

// clusterDomain is the DNS domain Services resolve under.
const clusterDomain = "cluster.local"
