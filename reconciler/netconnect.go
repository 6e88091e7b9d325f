package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// Connecting existing pods to the instance network in place (docs/design.md
// §16: a network can be connected to a running container; recreating every
// pod of an upgraded instance would restart every workload). Pods created
// since the instance network exists are created on it; this pass catches
// the others — made by an earlier release, or while the network was
// unusable — and repairs a pod someone disconnected by hand. It runs with
// the sweep, on its one list, and plans with planConnects (pure), so an
// instance whose pods are all connected costs no Docker call more.
//
// DNS settings are fixed when a container is created: a pod connected in
// place reaches Services by address, and by name from its next rollout.

// ConnectOp connects one pod's network owner to the instance network.
type ConnectOp struct {
	ContainerID string
	Name        string // container name
	Network     string
	Cause       string
}

func (o ConnectOp) String() string {
	return fmt.Sprintf("connect %s to %s: %s", o.Name, o.Network, o.Cause)
}

// Causes of a ConnectOp.
const (
	causeEarlierRelease = "created by an earlier release"
	causeDisconnected   = "not connected (disconnected by hand, or created while the network was unusable)"
)

// planConnects returns the connects that put every pod's network owner of
// cs on network: replicas without holder and holders, in any state Docker
// accepts a connect in, unless their network mode joins none (the host's,
// none, or another container's namespace). A member lives
// in its holder's namespace and is never connected itself; helpers (the
// Services' proxies and DNS server) are the Service reconciler's. Sorted
// by name, so that plans are deterministic.
func planConnects(network string, cs []dockerx.Container) []ConnectOp {
	var ops []ConnectOp
	for i := range cs {
		c := &cs[i]
		if !networkOwner(c) {
			continue
		}
		switch c.State {
		case dockerx.StateRemoving, dockerx.StateDead, dockerx.StatePaused, dockerx.StateRestarting:
			continue // Docker refuses, or it is going: the next sweep sees it again
		}
		nets := c.Networks
		if _, ok := nets[network]; ok {
			continue
		}
		if m := c.NetworkMode; m == "host" || m == "none" || strings.HasPrefix(m, "container:") {
			continue // another's namespace (container:X of an earlier release), the host's or none: Docker refuses
		}
		if _, host := nets["host"]; host {
			continue // hostNetwork: the host's namespace joins no network
		}
		if _, none := nets["none"]; none {
			continue
		}
		cause := causeDisconnected
		if _, labelled := c.Labels[dockerx.LabelNamespace]; !labelled {
			cause = causeEarlierRelease // every object made since carries it
		}
		ops = append(ops, ConnectOp{ContainerID: c.ID, Name: c.Name, Network: network, Cause: cause})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops
}

// networkOwner reports whether c owns a pod's network namespace: a holder,
// or a replica that is a pod by itself.
func networkOwner(c *dockerx.Container) bool {
	switch c.Role {
	case dockerx.RoleHolder:
		return true
	case dockerx.RoleReplica, "":
		return c.PodUID == ""
	}
	return false
}

// connect carries the connects out. A container gone meanwhile is no
// error; any other failure is logged and tried again at the next sweep, so
// that one container Docker refuses never holds the others back.
func (c *Controller) connect(ctx context.Context, ops []ConnectOp) {
	for _, op := range ops {
		c.log.Info("connecting pod to the instance network", "container", op.Name, "network", op.Network, "cause", op.Cause)
		err := c.netDocker.ConnectNetwork(ctx, op.Network, op.ContainerID, dockerx.EndpointSettings{})
		switch {
		case err == nil, errors.Is(err, dockerx.ErrNotFound):
		default:
			c.log.Warn("connect to the instance network failed; the next resync retries", "container", op.Name, "network", op.Network, "err", err)
		}
	}
}

// syncNetwork is the sweep's network pass: the instance network ensured
// (re-created if removed), the pods of cs (the sweep's list) connected to
// it, and how probes reach them decided when it must be. With no network
// to use (not ours) pods stay where they are. With nothing wanted (see
// networkWanted) and no container left, the network is removed instead.
func (c *Controller) syncNetwork(ctx context.Context, cs []dockerx.Container, wanted bool) error {
	if c.net == nil {
		return nil
	}
	if !wanted && len(cs) == 0 {
		left, err := c.net.release(ctx, c.networkWanted)
		if err != nil {
			return fmt.Errorf("instance network: %w", err)
		}
		if !left {
			c.route.Update(ctx, nil, false, cs)
			return nil
		}
		// Wanted after all (applied meanwhile), or a name conflict:
		// ensured as usual.
	}
	st, created, err := c.net.ensure(ctx)
	if err != nil {
		return fmt.Errorf("instance network: %w", err)
	}
	if st != nil {
		c.connect(ctx, planConnects(st.Name, cs))
	}
	// After the connects: a relay can reach only pods on the network.
	c.route.Update(ctx, st, created, cs)
	return nil
}

// networkWanted reports, from the store, whether anything may want the
// instance network: a live deployment or Service, or a record it cannot
// read (never judged on the strength of an unreadable one).
func (c *Controller) networkWanted() bool {
	records, errs := c.store.ListAll()
	return c.wantsNetwork(records, errs)
}

// wantsNetwork is networkWanted on records (and errs) already read.
func (c *Controller) wantsNetwork(records []*store.Record, errs []error) bool {
	if len(errs) > 0 || c.svc.NeedHelpers(records) {
		return true
	}
	for _, r := range records {
		if !r.Deleted {
			return true
		}
	}
	return false
}
