package dockerfake

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/dockctl/dockctl/dockerx"
)

// Networks. Measured on Docker 20.10.24 (API 1.41):
//   - A container created on a network that does not exist is created;
//     its start fails with 404 "network N not found". The same holds for
//     a network removed after the create.
//   - Addresses are allocated when a container starts (or when a running
//     container is connected) and released when it stops: a created or
//     exited container lists its networks without an address. A dynamic
//     address comes from the network's IPRange (its subnet without one),
//     never the gateway; a container started again may get another one.
//   - A static address (IPAMConfig) is checked then, not at create: on the
//     default bridge "user specified IP address is supported on user
//     defined networks only"; outside the subnet "Invalid address A: It
//     does not belong to any of this network's subnets"; held by a running
//     container, or the gateway's, 403 "Address already in use". None of
//     these has a dockerx sentinel.
//   - A network create of a taken name is 409; one whose subnet overlaps
//     another network's, 403 "Pool overlaps with other one on this address
//     space".
//   - A connect of a running container already connected is refused (403
//     "endpoint with name … already exists in network …", which
//     dockerx.Client.ConnectNetwork reports as nil); of a container that is
//     not running, accepted without change.
//   - A refused connect of a running container (a static address in use)
//     leaves the network in its configuration without an endpoint: not
//     listed (dockerx reports a running container's networks with an
//     endpoint only), not removable by a disconnect while it runs, and
//     its next start fails ("Address already in use") unless a later
//     connect succeeded, which replaces it.
//   - A network remove is refused while a running container is connected
//     (403 "has active endpoints"); connected containers that are not
//     running do not keep it.

// netObjects holds the engine's networks and the containers' endpoints,
// under Engine.mu. Its maps are made on first use (networksLocked).
type netObjects struct {
	networks map[string]*fakeNetwork // by name
	netID    int
	exec     func(containerID string, cmd []string, stdin []byte) (int, []byte) // HandleExecInput

	// OnHelperImage, when set, runs (with the lock released) at each
	// EnsureHelperImage; an error it returns is EnsureHelperImage's.
	OnHelperImage func(instance string) error
}

type fakeNetwork struct {
	n           dockerx.Network
	subnet      netip.Prefix // invalid for host and none
	pool        netip.Prefix // where dynamic addresses come from: IPRange, else subnet
	gateway     netip.Addr
	userDefined bool // static addresses and aliases are allowed
}

// endpoint is a container's attachment to one network.
type endpoint struct {
	static  string // IPAMConfig's IPv4 address
	aliases []string
	ip      string // allocated at its start; live only while the container runs
	// refused: left by a refused connect of the running container, with no
	// address until its next start.
	refused bool
}

// networksLocked returns the networks, made with Docker's own three on
// first use.
func (e *Engine) networksLocked() map[string]*fakeNetwork {
	if e.networks == nil {
		e.networks = map[string]*fakeNetwork{}
		bridge := dockerx.Network{Name: "bridge", Subnet: "172.17.0.0/16", Gateway: "172.17.0.1"}
		for _, n := range []dockerx.Network{bridge, {Name: "host"}, {Name: "none"}} {
			_ = e.addNetworkLocked(n, false)
		}
	}
	return e.networks
}

// addNetworkLocked adds a network, refusing a taken name (409) or a subnet
// overlapping another network's.
func (e *Engine) addNetworkLocked(n dockerx.Network, userDefined bool) error {
	nets := e.networks
	if _, taken := nets[n.Name]; taken {
		return fmt.Errorf("network with name %s already exists: %w", n.Name, dockerx.ErrConflict)
	}
	fn := &fakeNetwork{n: n, userDefined: userDefined}
	if n.Subnet != "" {
		var err error
		if fn.subnet, err = netip.ParsePrefix(n.Subnet); err != nil {
			return fmt.Errorf("network %s: invalid subnet %q: %v", n.Name, n.Subnet, err)
		}
		for _, other := range nets {
			if other.subnet.IsValid() && other.subnet.Overlaps(fn.subnet) {
				return fmt.Errorf("create network %s: Pool overlaps with other one on this address space", n.Name)
			}
		}
		fn.pool = fn.subnet
		if n.IPRange != "" {
			if fn.pool, err = netip.ParsePrefix(n.IPRange); err != nil {
				return fmt.Errorf("network %s: invalid IP range %q: %v", n.Name, n.IPRange, err)
			}
		}
		if n.Gateway == "" {
			n.Gateway = fn.subnet.Addr().Next().String() // Docker's choice: the first address
			fn.n.Gateway = n.Gateway
		}
		if fn.gateway, err = netip.ParseAddr(n.Gateway); err != nil {
			return fmt.Errorf("network %s: invalid gateway %q: %v", n.Name, n.Gateway, err)
		}
	}
	e.netID++
	fn.n.ID = fmt.Sprintf("%064x", 1<<60+e.netID)
	fn.n.Labels = copyMap(n.Labels)
	nets[n.Name] = fn
	return nil
}

// AddNetwork adds a network as someone other than dockctl would make it
// (`docker network create`), e.g. one that takes the instance network's
// name or a subnet. A subnet overlapping another network's is refused, as
// Docker does.
func (e *Engine) AddNetwork(n dockerx.Network) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.networksLocked()
	return e.addNetworkLocked(n, true)
}

// EnsureNetwork creates the instance's network as dockerx.Client does, or
// returns the existing one of that name when its labels say it is the
// instance's (its own IPAM, whatever req asks); one that is not is an
// error wrapping ErrConflict. Counted as "network:ensure", and
// "network:create" when it creates.
func (e *Engine) EnsureNetwork(ctx context.Context, req dockerx.NetworkRequest) (dockerx.Network, error) {
	if err := req.Validate(); err != nil {
		return dockerx.Network{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["network:ensure"]++
	if e.down {
		return dockerx.Network{}, fmt.Errorf("ensure network %s: %w", req.Name, dockerx.ErrUnreachable)
	}
	nets := e.networksLocked()
	if fn := nets[req.Name]; fn != nil {
		if fn.n.Labels[dockerx.LabelInstance] != req.Instance || fn.n.Labels[dockerx.LabelRole] != dockerx.RoleNetwork {
			return dockerx.Network{}, fmt.Errorf("network %s exists and is not dockctl's network of instance %q (labels %v): %w",
				req.Name, req.Instance, fn.n.Labels, dockerx.ErrConflict)
		}
		return copyNetwork(fn.n), nil
	}
	n := dockerx.Network{Name: req.Name, Labels: dockerx.NetworkLabels(req.Instance), Subnet: req.Subnet, IPRange: req.IPRange, Gateway: req.Gateway}
	if err := e.addNetworkLocked(n, true); err != nil {
		return dockerx.Network{}, err
	}
	e.calls["network:create"]++
	return copyNetwork(nets[req.Name].n), nil
}

// ListNetworks lists every network, sorted by name. Counted as
// "network:list".
func (e *Engine) ListNetworks(ctx context.Context) ([]dockerx.Network, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["network:list"]++
	if e.down {
		return nil, fmt.Errorf("list networks: %w", dockerx.ErrUnreachable)
	}
	out := make([]dockerx.Network, 0, len(e.networksLocked()))
	for _, fn := range e.networks {
		out = append(out, copyNetwork(fn.n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ConnectNetwork connects a container to a network as
// dockerx.Client.ConnectNetwork does: a running container gets its
// address at once (a static one must be valid and free), another when it
// starts; a container already connected is left as it is (nil). Counted
// as "network:connect" when it connects.
func (e *Engine) ConnectNetwork(ctx context.Context, name, id string, ep dockerx.EndpointSettings) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return fmt.Errorf("connect network %s: %w", name, dockerx.ErrUnreachable)
	}
	return e.connectLocked(name, id, ep)
}

func (e *Engine) connectLocked(name, id string, ep dockerx.EndpointSettings) error {
	fn := e.networksLocked()[name]
	if fn == nil {
		return fmt.Errorf("connect container %s to network %s: network %s not found: %w", short(id), name, name, dockerx.ErrNotFound)
	}
	c := e.lookupLocked(id)
	if c == nil {
		return fmt.Errorf("connect container %s to network %s: No such container: %s: %w", short(id), name, id, dockerx.ErrNotFound)
	}
	ns := e.ns[c.ID]
	if p, connected := ns.endpoints[name]; connected && !(p.refused && runningOrPaused(c)) {
		return nil
	}
	switch {
	case ns.netJoin() != "" || ns.network == "host":
		return fmt.Errorf("connect container %s to network %s: container sharing network namespace with another container or host cannot be connected to any other network", c.Name, name)
	case name == "host" || name == "none":
		return fmt.Errorf("connect container %s to network %s: container cannot be disconnected from host network or connected to host network", c.Name, name)
	}
	p := &endpoint{static: ep.IPv4, aliases: slices.Clone(ep.Aliases)}
	if ns.endpoints == nil {
		ns.endpoints = map[string]*endpoint{}
	}
	if runningOrPaused(c) {
		if err := e.allocateLocked(c.ID, name, p); err != nil {
			p.refused = true
			ns.endpoints[name] = p
			return fmt.Errorf("connect container %s to network %s: %w", c.Name, name, err)
		}
	}
	ns.endpoints[name] = p
	e.calls["network:connect"]++
	return nil
}

// DisconnectNetwork disconnects a container from a network, as `docker
// network disconnect` does: the drift dockctl must notice and repair.
func (e *Engine) DisconnectNetwork(name, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.lookupLocked(id)
	if c == nil {
		return fmt.Errorf("disconnect: No such container: %s: %w", id, dockerx.ErrNotFound)
	}
	if e.networksLocked()[name] == nil {
		return fmt.Errorf("disconnect: network %s not found: %w", name, dockerx.ErrNotFound)
	}
	ns := e.ns[c.ID]
	if p, ok := ns.endpoints[name]; !ok || (p.refused && runningOrPaused(c)) {
		return fmt.Errorf("container %s is not connected to network %s", c.ID, name)
	}
	delete(ns.endpoints, name)
	return nil
}

// RemoveNetwork removes a network dockctl made (labels role network and an
// instance), as dockerx.Client.RemoveNetwork does: one that is missing is
// success; another's, or one a running container is connected to, is an
// error wrapping ErrConflict. Counted as "network:remove" when it removes.
func (e *Engine) RemoveNetwork(ctx context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return fmt.Errorf("remove network %s: %w", name, dockerx.ErrUnreachable)
	}
	fn := e.networksLocked()[name]
	if fn == nil {
		return nil
	}
	if fn.n.Labels[dockerx.LabelRole] != dockerx.RoleNetwork || fn.n.Labels[dockerx.LabelInstance] == "" {
		return fmt.Errorf("remove network %s: it is not a network dockctl made: %w", name, dockerx.ErrConflict)
	}
	var users []string
	for id, ns := range e.ns {
		if p, ok := ns.endpoints[name]; ok && !p.refused && runningOrPaused(e.containers[id]) {
			users = append(users, short(id))
		}
	}
	if len(users) > 0 {
		sort.Strings(users)
		return fmt.Errorf("remove network %s: in use: error while removing network: network %s id %s has active endpoints (%s): %w",
			name, name, fn.n.ID, strings.Join(users, ", "), dockerx.ErrConflict)
	}
	delete(e.networks, name)
	e.calls["network:remove"]++
	return nil
}

// endpointsOf is what a create attaches: the network of the network mode,
// with the settings NetworkingConfig gives it. A container that joins
// another's network namespace has none.
func endpointsOf(hc *container.HostConfig, nc *network.NetworkingConfig) map[string]*endpoint {
	mode := string(hc.NetworkMode)
	switch {
	case mode == "" || mode == "default":
		mode = "bridge"
	case joinRef(mode) != "":
		return nil
	}
	ep := &endpoint{}
	if nc != nil {
		if s := nc.EndpointsConfig[mode]; s != nil {
			ep.aliases = slices.Clone(s.Aliases)
			if s.IPAMConfig != nil {
				ep.static = s.IPAMConfig.IPv4Address
			}
		}
	}
	return map[string]*endpoint{mode: ep}
}

// defaultEndpoints is what a hand-made container (Add) is attached to.
func defaultEndpoints(mode string) map[string]*endpoint {
	return endpointsOf(&container.HostConfig{NetworkMode: container.NetworkMode(mode)}, nil)
}

// startNetworksLocked gives a starting container its addresses, in the
// order of its networks' names, failing as Docker's start does; on
// failure none is kept.
func (e *Engine) startNetworksLocked(id string) error {
	ns := e.ns[id]
	names := make([]string, 0, len(ns.endpoints))
	for name, p := range ns.endpoints {
		p.ip = ""
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := e.allocateLocked(id, name, ns.endpoints[name]); err != nil {
			for _, p := range ns.endpoints {
				p.ip = ""
			}
			return err
		}
	}
	for _, p := range ns.endpoints {
		p.refused = false
	}
	return nil
}

// allocateLocked gives container id its address on a network, as Docker
// does when the endpoint is made.
func (e *Engine) allocateLocked(id, name string, p *endpoint) error {
	fn := e.networksLocked()[name]
	if fn == nil {
		return fmt.Errorf("network %s not found: %w", name, dockerx.ErrNotFound)
	}
	if !fn.subnet.IsValid() { // host, none
		if p.static != "" {
			return fmt.Errorf("user specified IP address is supported on user defined networks only")
		}
		return nil
	}
	inUse := e.addressesInUseLocked(name, id)
	if p.static != "" {
		addr, err := netip.ParseAddr(p.static)
		switch {
		case !fn.userDefined:
			return fmt.Errorf("user specified IP address is supported on user defined networks only")
		case err != nil || !fn.subnet.Contains(addr):
			return fmt.Errorf("Invalid address %s: It does not belong to any of this network's subnets", p.static)
		case addr == fn.gateway || inUse[addr]:
			return fmt.Errorf("Address already in use")
		}
		p.ip = addr.String()
		return nil
	}
	// The lowest free address: a stopped container's address is reused at
	// once, so that nothing may rely on an address outliving its pod.
	broadcast := lastAddr(fn.subnet)
	for a := fn.pool.Masked().Addr(); fn.pool.Contains(a); a = a.Next() {
		if a == fn.subnet.Masked().Addr() || a == broadcast || a == fn.gateway || inUse[a] {
			continue
		}
		p.ip = a.String()
		return nil
	}
	return fmt.Errorf("no available IPv4 addresses on this network's address pools: %s (%s)", name, fn.n.ID)
}

// addressesInUseLocked returns the addresses running containers other
// than except hold on a network.
func (e *Engine) addressesInUseLocked(name, except string) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for id, ns := range e.ns {
		if id == except || !runningOrPaused(e.containers[id]) {
			continue
		}
		if p := ns.endpoints[name]; p != nil && p.ip != "" {
			if a, err := netip.ParseAddr(p.ip); err == nil {
				out[a] = true
			}
		}
	}
	return out
}

// lastAddr is a subnet's last (broadcast) address.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// addressesLocked is what a list reports of a container's networks: its
// address on each while it runs, "" otherwise.
func (e *Engine) addressesLocked(c *dockerx.Container) map[string]string {
	ns := e.ns[c.ID]
	if ns == nil || len(ns.endpoints) == 0 {
		return nil
	}
	out := make(map[string]string, len(ns.endpoints))
	for name, p := range ns.endpoints {
		switch {
		case !runningOrPaused(c):
			out[name] = ""
		case !p.refused:
			out[name] = p.ip
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Aliases returns a container's aliases on a network (nil when it is not
// connected), as Docker's embedded DNS would answer them.
func (e *Engine) Aliases(id, network string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.lookupLocked(id)
	if c == nil {
		return nil
	}
	if p := e.ns[c.ID].endpoints[network]; p != nil {
		return slices.Clone(p.aliases)
	}
	return nil
}

func copyNetwork(n dockerx.Network) dockerx.Network {
	n.Labels = copyMap(n.Labels)
	return n
}

// staticLocked maps each network a container has a static address on
// (IPAMConfig) onto it, as Docker lists it whether or not it runs.
func (e *Engine) staticLocked(c *dockerx.Container) map[string]string {
	ns := e.ns[c.ID]
	if ns == nil {
		return nil
	}
	var out map[string]string
	for name, p := range ns.endpoints {
		if p.static != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = p.static
		}
	}
	return out
}
