package dockerx

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
)

// NetworkName returns the name of the instance's network (docs/design.md §3,
// §10). Instance names may contain "_" but no "/" or ":", so every instance
// has its own.
func NetworkName(instance string) string { return "dockctl_" + instance }

// NetworkRequest is the instance's network: a user-defined bridge with an
// explicit IPAM configuration, so that dockctl can give stable (static)
// addresses in the part of Subnet that Docker's allocator does not use.
type NetworkRequest struct {
	Instance string
	Name     string // NetworkName(Instance)
	Subnet   string // IPv4 CIDR, e.g. "10.222.0.0/20"
	IPRange  string // where Docker allocates dynamic addresses, inside Subnet; "" the whole subnet
	Gateway  string // inside Subnet; "" Docker's choice (the first address)
}

// Network is a Docker network as ListNetworks and EnsureNetwork report it:
// its first IPv4 IPAM configuration ("" fields when it has none, e.g.
// host and none).
type Network struct {
	ID, Name                 string
	Labels                   map[string]string
	Subnet, IPRange, Gateway string
}

// EndpointSettings is how a container is attached to a network.
type EndpointSettings struct {
	IPv4    string // a static address in the network's subnet; "" one from its IPRange
	Aliases []string
}

// NetworkLabels returns the labels of the instance's network.
func NetworkLabels(instance string) map[string]string {
	return map[string]string{LabelInstance: instance, LabelRole: RoleNetwork}
}

// Validate checks that the request's addresses are consistent IPv4:
// Docker would otherwise refuse them only with a less precise message,
// or, for a gateway outside the subnet, with none at create.
func (req NetworkRequest) Validate() error {
	if req.Instance == "" || req.Name == "" || req.Subnet == "" {
		return fmt.Errorf("network %q: instance, name and subnet are required", req.Name)
	}
	subnet, err := netip.ParsePrefix(req.Subnet)
	if err != nil || !subnet.Addr().Is4() || subnet.Masked() != subnet {
		return fmt.Errorf("network %s: subnet %q is not an IPv4 network address in CIDR form", req.Name, req.Subnet)
	}
	if req.IPRange != "" {
		r, err := netip.ParsePrefix(req.IPRange)
		if err != nil || !r.Addr().Is4() || r.Masked() != r || r.Bits() < subnet.Bits() || !subnet.Contains(r.Addr()) {
			return fmt.Errorf("network %s: IP range %q is not an IPv4 CIDR inside subnet %s", req.Name, req.IPRange, req.Subnet)
		}
	}
	if req.Gateway != "" {
		gw, err := netip.ParseAddr(req.Gateway)
		if err != nil || !gw.Is4() || !subnet.Contains(gw) {
			return fmt.Errorf("network %s: gateway %q is not an IPv4 address inside subnet %s", req.Name, req.Gateway, req.Subnet)
		}
	}
	return nil
}

// networkOptions is the create request for a valid req.
func networkOptions(req NetworkRequest) (network.CreateOptions, error) {
	if err := req.Validate(); err != nil {
		return network.CreateOptions{}, err
	}
	return network.CreateOptions{
		Driver: network.NetworkBridge,
		IPAM: &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{
			Subnet: req.Subnet, IPRange: req.IPRange, Gateway: req.Gateway,
		}}},
		Labels: NetworkLabels(req.Instance),
	}, nil
}

// ownNetwork reports whether a network's labels say it is the instance's
// network.
func ownNetwork(labels map[string]string, instance string) bool {
	return labels[LabelInstance] == instance && labels[LabelRole] == RoleNetwork
}

// EnsureNetwork creates the instance's network, or returns it as it is
// when it exists: its IPAM configuration is the one it was created with,
// which may differ from req's (the caller decides what a different subnet
// means). A network of that name that is not the instance's (labels
// instance and role network) is never adopted: the error wraps
// ErrConflict and names it.
func (c *Client) EnsureNetwork(ctx context.Context, req NetworkRequest) (Network, error) {
	opts, err := networkOptions(req)
	if err != nil {
		return Network{}, err
	}
	n, found, err := c.inspectNetwork(ctx, req.Name)
	if err != nil {
		return Network{}, err
	}
	if !found {
		// Docker before API 1.44 makes a second network of a name unless
		// the request sets CheckDuplicate; the SDK sets it itself for
		// such daemons (the API version is negotiated), and no longer
		// lets a caller set it.
		cctx, cancel := c.callCtx(ctx)
		_, err := c.api.NetworkCreate(cctx, req.Name, opts)
		cancel()
		// A conflict is a network of that name made meanwhile (another
		// controller of this instance, or anyone): judged below as one
		// found at first.
		if err != nil && !cerrdefs.IsConflict(err) {
			return Network{}, mapErr("create network "+req.Name, err)
		}
		if n, found, err = c.inspectNetwork(ctx, req.Name); err != nil {
			return Network{}, err
		}
		if !found {
			return Network{}, fmt.Errorf("create network %s: the daemon reported success but has no such network", req.Name)
		}
	}
	if !ownNetwork(n.Labels, req.Instance) {
		return Network{}, &mappedError{sentinel: ErrConflict, err: fmt.Errorf(
			"network %s (%s) exists and is not dockctl's network of instance %q (labels %s=%q %s=%q): remove or rename it, dockctl never adopts a network it did not create",
			n.Name, short12(n.ID), req.Instance, LabelInstance, n.Labels[LabelInstance], LabelRole, n.Labels[LabelRole])}
	}
	return n, nil
}

// inspectNetwork returns the network named name; found is false when there
// is none. Docker also resolves a reference by ID prefix: only a network
// of exactly that name counts.
func (c *Client) inspectNetwork(ctx context.Context, name string) (n Network, found bool, err error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	insp, err := c.api.NetworkInspect(ctx, name, network.InspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return Network{}, false, nil
	case err != nil:
		return Network{}, false, mapErr("inspect network "+name, err)
	case insp.Name != name:
		return Network{}, false, nil
	}
	return fromNetwork(insp), true, nil
}

// fromNetwork reads a network's first IPv4 IPAM configuration.
func fromNetwork(s network.Inspect) Network {
	n := Network{ID: s.ID, Name: s.Name, Labels: s.Labels}
	for _, cfg := range s.IPAM.Config {
		if p, err := netip.ParsePrefix(cfg.Subnet); err == nil && p.Addr().Is4() {
			n.Subnet, n.IPRange, n.Gateway = cfg.Subnet, cfg.IPRange, cfg.Gateway
			break
		}
	}
	return n
}

// ListNetworks returns every network of the daemon, whoever made it (to
// choose a subnet that overlaps none), sorted by name.
func (c *Client) ListNetworks(ctx context.Context) ([]Network, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	list, err := c.api.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		return nil, mapErr("list networks", err)
	}
	out := make([]Network, 0, len(list))
	for _, s := range list {
		out = append(out, fromNetwork(s))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ConnectNetwork connects a container, running or not, to a network, with
// a static address when ep.IPv4 is set (it must lie in the network's
// subnet and be free: Docker refuses it otherwise, at once for a running
// container, at its next start for another). A container already
// connected to the network is left as it is: nil, whatever its address
// and aliases there.
//
// Measured on Docker 20.10: a running container whose connect was refused
// (a static address in use) keeps that network in its configuration,
// without an endpoint, and its next start fails ("Address already in
// use") until a connect succeeds (which replaces that configuration) or
// the stopped container is disconnected; a disconnect while it runs is
// refused. Container.Networks and ContainerDetails.Networks do not report
// such an entry, and a later ConnectNetwork tries again.
func (c *Client) ConnectNetwork(ctx context.Context, networkName, containerID string, ep EndpointSettings) error {
	cctx, cancel := c.callCtx(ctx)
	err := c.api.NetworkConnect(cctx, networkName, containerID, endpointConfig(ep))
	cancel()
	if err == nil {
		return nil
	}
	// Docker 20.10 answers 403 "endpoint with name … already exists in
	// network …" for a running container already connected: ask the
	// container rather than parse the message.
	if st, ierr := c.attachment(ctx, networkName, containerID); ierr == nil && st.attached && (st.live || !st.running) {
		return nil
	}
	return mapErr(fmt.Sprintf("connect container %s to network %s", containerID, networkName), err)
}

// attachmentState is what a container's inspect says of one network.
type attachmentState struct {
	attached bool // in its network configuration
	live     bool // with an endpoint (a running container really on it)
	running  bool
}

// attachment reads a container's attachment to a network (by name, or by
// ID once it has an endpoint).
func (c *Client) attachment(ctx context.Context, networkName, containerID string) (attachmentState, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.api.ContainerInspect(ctx, containerID)
	if err != nil {
		return attachmentState{}, err
	}
	var st attachmentState
	if r.ContainerJSONBase != nil && r.State != nil {
		st.running = r.State.Running || r.State.Paused || r.State.Restarting
	}
	if r.NetworkSettings == nil {
		return st, nil
	}
	for name, ep := range r.NetworkSettings.Networks {
		if name == networkName || (ep != nil && ep.NetworkID != "" && ep.NetworkID == networkName) {
			st.attached = true
			st.live = ep != nil && ep.EndpointID != ""
			return st, nil
		}
	}
	return st, nil
}

// endpointConfig is the SDK form of ep (nil when it asks for nothing).
func endpointConfig(ep EndpointSettings) *network.EndpointSettings {
	if ep.IPv4 == "" && len(ep.Aliases) == 0 {
		return nil
	}
	s := &network.EndpointSettings{Aliases: slices.Clone(ep.Aliases)}
	if ep.IPv4 != "" {
		s.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ep.IPv4}
	}
	return s
}

// RemoveNetwork removes a network dockctl made (labels role network and an
// instance), never another: that is an error wrapping ErrConflict. A
// network already gone is success; one a running container is still
// connected to stays, with an error wrapping ErrConflict (Docker's "has
// active endpoints"). A container that is connected but not running does
// not keep it (Docker then fails that container's next start: the
// network is not found).
func (c *Client) RemoveNetwork(ctx context.Context, name string) error {
	n, found, err := c.inspectNetwork(ctx, name)
	if err != nil || !found {
		return err
	}
	if n.Labels[LabelRole] != RoleNetwork || n.Labels[LabelInstance] == "" {
		return &mappedError{sentinel: ErrConflict, err: fmt.Errorf(
			"remove network %s (%s): it is not a network dockctl made (labels %s=%q %s=%q)",
			name, short12(n.ID), LabelInstance, n.Labels[LabelInstance], LabelRole, n.Labels[LabelRole])}
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	// By ID: a network re-created under the name meanwhile is not the one
	// judged above.
	err = c.api.NetworkRemove(ctx, n.ID)
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsPermissionDenied(err) && strings.Contains(err.Error(), "active endpoints"):
		return &mappedError{sentinel: ErrConflict, err: fmt.Errorf("remove network %s: in use: %w", name, err)}
	}
	return mapErr("remove network "+name, err)
}

// short12 shortens an ID as Docker prints it.
func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
