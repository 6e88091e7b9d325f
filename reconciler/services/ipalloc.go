package services

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/store"
)

// The address plan of an instance network and what Services are given in
// it (docs/design.md §10), as pure functions: ClusterIPs, nodePorts and
// host-port conflicts. The controller keeps the results in each Service's
// status, so an allocation survives controller restarts and re-applies: a
// kept value is given back whenever it is still valid and free.
//
// A Service's ClusterIP is a static address in the upper half of the
// instance subnet, where Docker's IPAM (which hands out the lower half,
// IPRange) never puts a container: the address outlives whatever serves it.
//
// ClusterIPs, as Kubernetes gives them: an address given is the Service's
// until it is deleted, never taken back for another that names it (that one
// is refused, ClusterIPInUse, as the API server refuses it); an address a
// live Service names in spec.clusterIP is never chosen for another; and a
// chosen address is taken from the top of the range down, away from the low
// addresses users pick (KEP-3070 reserves the bottom of the range for them),
// so that an explicit address rarely finds itself already chosen.

// Condition types and reasons of a Service.
const (
	// ServicePortConflict: a host port the Service would publish is held by
	// another object; that port is not published (the others are).
	ServicePortConflict = "PortConflict"
	// ServiceProxyFailure: the Service has no working proxy (no address
	// could be given, or Docker refused the proxy or a push).
	ServiceProxyFailure = "ProxyFailure"

	ReasonHostPortInUse       = "HostPortInUse"
	ReasonClusterIPNotInRange = "ClusterIPNotInRange"
	ReasonClusterIPInUse      = "ClusterIPInUse"
	ReasonClusterIPsExhausted = "ClusterIPsExhausted"
	ReasonNodePortsExhausted  = "NodePortsExhausted"
	ReasonProxyCreateFailed   = "CreateFailed"
	ReasonProxyPushFailed     = "PushFailed"
	ReasonPublisherFailed     = "PublisherFailed"
)

// hostPort is one host port, as Docker binds it.
type hostPort struct {
	IP       string // "" or 0.0.0.0: every address
	Port     int32
	Protocol string
}

func (h hostPort) String() string {
	if h.IP == "" || h.IP == "0.0.0.0" {
		return fmt.Sprintf("%d/%s", h.Port, h.Protocol)
	}
	// An IPv6 address in brackets, as Docker and kubectl write one with a
	// port: "[::1]:8080/TCP", not "::1:8080/TCP".
	return net.JoinHostPort(h.IP, strconv.Itoa(int(h.Port))) + "/" + h.Protocol
}

// overlaps reports whether Docker could not bind both: same port and
// protocol, on the same address or on every address.
func (h hostPort) overlaps(o hostPort) bool {
	wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return h.Port == o.Port && h.Protocol == o.Protocol && (h.IP == o.IP || wild(h.IP) || wild(o.IP))
}

// portHolder is a host port held by an object that is not a Service of
// this instance: a deployment's hostPort, or a container of the daemon.
type portHolder struct {
	Port  hostPort
	Owner string // for the condition: "deployment default/web", "container x"
	// Since is when a deployment's templates began to declare it; zero
	// for what holds it now (a container): it always wins.
	Since time.Time
	// Unserved: held by a process of the host (hostProcessOwner), a
	// nodePort this controller chose that the publisher never served —
	// another instance's publisher on the same host, whose ports Docker
	// lists none of, or a process there before it: it is chosen again
	// rather than kept (keptNodePort).
	Unserved bool
}

// portClaim is a host port a Service publishes, since when.
type portClaim struct {
	Port  hostPort
	Since time.Time
}

// serviceAllocation is what a Service holds, as the allocator remembers it
// for the others' sake.
type serviceAllocation struct {
	Key       string
	Created   time.Time
	ClusterIP string // "" none, "None" headless
	// NodePorts are every nodePort it was given (allocated or explicit):
	// an allocation never picks one of them.
	NodePorts []int32
	// Published are the host ports it publishes (conflicts left out).
	Published []hostPort
	// Claims are its published nodePorts with the time it began to
	// publish them: a deployment's hostPort declared later waits.
	Claims []portClaim
}

// allocInput is what one Service's allocation depends on.
type allocInput struct {
	Key     string
	Service *manifests.Service // defaulted (defaultService)
	Created time.Time
	Prev    *store.ServiceStatus // nil: never allocated
	// Layout is the instance network's; nil while it is not known: the
	// previous ClusterIP is kept, unchecked, and no proxy is made.
	Layout *netlayout.NetworkLayout
	// Address is the host address NodePort and LoadBalancer Services
	// publish on (--service-address).
	Address string
	// Now dates the nodePorts it begins to publish (NodePortStatus.Since).
	Now     time.Time
	Others  []serviceAllocation // every other live Service of the instance
	Holders []portHolder
	// Trying are the held host ports being tried (heldPort.trying): bound
	// if free, and reported held still until the publisher binds them.
	Trying []hostPort
	// Reserved, when set, returns the addresses other live Services name in
	// spec.clusterIP (address → Service key): never chosen for this one.
	// Called only when an address must be chosen.
	Reserved func() map[netip.Addr]string
	// KeepPorts: the host ports are not to be judged now (they wait for
	// the gateway's, awaitGatewayPorts): the previous nodePorts and the
	// conditions about host ports are kept, nothing is bound, chosen or
	// displaced; the ClusterIP is allocated as ever.
	KeepPorts bool
}

// allocation is the outcome: what to record in status and to publish.
type allocation struct {
	ClusterIP string // "" none (yet); "None" headless
	// Usable: the ClusterIP is valid in the network as it is: a proxy can
	// be made.
	Usable    bool
	NodePorts []store.NodePortStatus
	// Bindings are the host ports to publish, one per Service port whose
	// host port is free.
	Bindings []dockerx.PortBinding
	// Conditions are PortConflict and ProxyFailure, when they hold.
	Conditions []store.Condition
	// Displaced are the younger Services that publish a host port this
	// one takes (the older Service wins): they must be synced again.
	Displaced []string
	// Freed are the Services waiting for an address or a port, queued
	// because this one gave one up (set by allocator.assign);
	// FreedDeployments the deployments waiting for a host port it gave up.
	Freed, FreedDeployments []string
	// Chosen are the nodePorts chosen anew (none kept, none given), on
	// in.Address: unserved until the publisher binds them.
	Chosen []hostPort
	// HostHeld are its host ports left out only because a process of
	// the host holds them: its claim still (hostport_held.go); and those
	// being tried (Trying).
	HostHeld []hostPort
	// Trying are the ports of Bindings that a process of the host held
	// and that are being tried: reported as HostHeld, with the same
	// PortConflict, until the publisher binds them.
	Trying []hostPort
}

// allocate gives a Service its ClusterIP, nodePorts and host ports. It is
// pure: the allocator calls it under its lock with every other Service's
// holdings, so that two Services are never given one address or port.
//
// Host ports go, in this order of precedence: a container of the daemon
// that is not one of this instance's proxies (it is there, and dockctl
// does not stop it); a deployment's hostPort, unless this Service already
// published that nodePort before the deployment declared it (the older
// claim keeps it: the deployment waits, hostPortWaits); then, between two
// Services, the older one (created first; its key breaks a tie), so that
// the outcome never depends on which was synced first. An allocated
// nodePort that collides is allocated again instead: it was dockctl's to
// choose.
func allocate(in allocInput) allocation {
	var out allocation
	s := in.Service
	prev := in.Prev
	if prev == nil {
		prev = &store.ServiceStatus{}
	}
	var clusterIPProblem *store.Condition
	out.ClusterIP, out.Usable, clusterIPProblem = allocateClusterIP(in, prev.ClusterIP)
	if clusterIPProblem != nil {
		out.Conditions = append(out.Conditions, *clusterIPProblem)
	}
	if in.KeepPorts {
		out.NodePorts = slices.Clone(prev.NodePorts)
		out.Conditions = append(out.Conditions, hostPortConditions(prev.Conditions)...)
		return out
	}

	usedNumbers := map[int32]bool{} // never allocated: any protocol
	for _, o := range in.Others {
		for _, p := range o.NodePorts {
			usedNumbers[p] = true
		}
		for _, h := range o.Published {
			usedNumbers[h.Port] = true
		}
	}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			usedNumbers[p.NodePort] = true
		}
	}

	var conflicts []string
	displaced := map[string]bool{}
	publish := s.Spec.Type == manifests.ServiceTypeNodePort || s.Spec.Type == manifests.ServiceTypeLoadBalancer
	for _, p := range s.Spec.Ports {
		proto := p.Protocol
		if !publish || s.IsHeadless() {
			continue
		}
		var wants []int32
		switch {
		case s.Spec.Type == manifests.ServiceTypeNodePort:
			want := p.NodePort
			if want == 0 {
				// Allocated: never one in use, so never a conflict.
				var chosen bool
				want, chosen = keptNodePort(prev.NodePorts, p, usedNumbers, in, proto)
				if chosen {
					out.Chosen = append(out.Chosen, hostPort{IP: in.Address, Port: want, Protocol: proto})
				}
				if want == 0 {
					out.Conditions = append(out.Conditions, store.Condition{Type: ServiceProxyFailure, Status: "True", Reason: ReasonNodePortsExhausted,
						Message: fmt.Sprintf("port %d/%s: no free nodePort in %d-%d", p.Port, proto, manifests.NodePortMin, manifests.NodePortMax)})
					continue
				}
				usedNumbers[want] = true
			}
			out.NodePorts = append(out.NodePorts, store.NodePortStatus{Port: p.Port, Protocol: proto, NodePort: want})
			wants = []int32{want}
		default:
			// A LoadBalancer publishes its port, and, as the NodePort
			// Service it builds on in Kubernetes, the nodePort given
			// (none is allocated: there is no load balancer to point at
			// it).
			wants = []int32{p.Port}
			if p.NodePort != 0 && p.NodePort != p.Port {
				out.NodePorts = append(out.NodePorts, store.NodePortStatus{Port: p.Port, Protocol: proto, NodePort: p.NodePort})
				wants = append(wants, p.NodePort)
			}
		}
		for _, want := range wants {
			hp := hostPort{IP: in.Address, Port: want, Protocol: proto}
			if i := slices.IndexFunc(out.Bindings, func(b dockerx.PortBinding) bool {
				return int32(b.HostPort) == want && b.Protocol == proto
			}); i >= 0 {
				// One of its ports is another's nodePort (valid: on a
				// cluster the load balancer is another host): the first
				// keeps it, as the publisher serves one listener per
				// host port and refuses a config listing one twice.
				conflicts = append(conflicts, fmt.Sprintf("host port %s is published by this service's port %d", hp, out.Bindings[i].ContainerPort))
				continue
			}
			if owner := portHolderOf(hp, in, claimedSince(prev.NodePorts, want, proto)); owner != "" {
				verb := "published"
				if owner == hostProcessOwner {
					verb = "held" // outside Docker: a listener of the host
					out.HostHeld = append(out.HostHeld, hp)
				}
				conflicts = append(conflicts, fmt.Sprintf("host port %s is %s by %s", hp, verb, owner))
				continue
			}
			if o, older := olderServiceHolding(hp, in); o != "" {
				if older {
					conflicts = append(conflicts, fmt.Sprintf("host port %s is published by service %s", hp, o))
					continue
				}
				displaced[o] = true
			}
			if slices.Contains(in.Trying, hp) {
				conflicts = append(conflicts, fmt.Sprintf("host port %s is held by %s", hp, hostProcessOwner))
				out.HostHeld = append(out.HostHeld, hp)
				out.Trying = append(out.Trying, hp)
			}
			out.Bindings = append(out.Bindings, dockerx.PortBinding{HostIP: in.Address, HostPort: int(want), ContainerPort: int(p.Port), Protocol: proto})
		}
	}
	for i := range out.NodePorts {
		out.NodePorts[i].Since = publishedSince(out.NodePorts[i], out.Bindings, prev.NodePorts, in)
	}
	if len(conflicts) > 0 {
		out.Conditions = append(out.Conditions, store.Condition{Type: ServicePortConflict, Status: "True", Reason: ReasonHostPortInUse,
			Message: strings.Join(conflicts, "; ") + ": not published"})
	}
	for k := range displaced {
		out.Displaced = append(out.Displaced, k)
	}
	slices.Sort(out.Displaced)
	return out
}

// hostPortConditions are the conditions of conds about host ports: a
// PortConflict, no nodePort left, the publisher failing.
func hostPortConditions(conds []store.Condition) []store.Condition {
	var out []store.Condition
	for _, c := range conds {
		if c.Type == ServicePortConflict || (c.Type == ServiceProxyFailure && (c.Reason == ReasonNodePortsExhausted || c.Reason == ReasonPublisherFailed)) {
			out = append(out, c)
		}
	}
	return out
}

// allocateClusterIP keeps, takes or allocates the Service's address.
func allocateClusterIP(in allocInput, prev string) (ip string, usable bool, problem *store.Condition) {
	s := in.Service
	if s.IsHeadless() {
		return manifests.ClusterIPNone, false, nil
	}
	if in.Layout == nil {
		// Not checkable yet: keep what was given, make nothing.
		if s.Spec.ClusterIP != "" {
			return s.Spec.ClusterIP, false, nil
		}
		return prev, false, nil
	}
	l := *in.Layout
	owner := map[netip.Addr]string{}
	for _, o := range in.Others {
		if a, err := netip.ParseAddr(o.ClusterIP); err == nil {
			owner[a] = o.Key
		}
	}
	fail := func(reason, msg string) (string, bool, *store.Condition) {
		return "", false, &store.Condition{Type: ServiceProxyFailure, Status: "True", Reason: reason, Message: msg}
	}
	if want := s.Spec.ClusterIP; want != "" {
		a, err := netip.ParseAddr(want)
		switch {
		case err != nil || !l.InServiceRange(a):
			return fail(ReasonClusterIPNotInRange, fmt.Sprintf("spec.clusterIP %s is not in the instance's service range %s-%s", want, l.ServiceFirst, l.ServiceLast))
		case owner[a] != "":
			return fail(ReasonClusterIPInUse, fmt.Sprintf("spec.clusterIP %s is the address of service %s", want, owner[a]))
		}
		return a.String(), true, nil
	}
	if a, err := netip.ParseAddr(prev); err == nil && l.InServiceRange(a) && owner[a] == "" {
		// Kept across restarts and re-applies, even if another Service
		// names it since: given is given.
		return a.String(), true, nil
	}
	var reserved map[netip.Addr]string
	if in.Reserved != nil {
		reserved = in.Reserved()
	}
	for a := l.ServiceLast; a.Compare(l.ServiceFirst) >= 0; a = a.Prev() {
		if owner[a] == "" && reserved[a] == "" {
			return a.String(), true, nil
		}
	}
	return fail(ReasonClusterIPsExhausted, fmt.Sprintf("every address of the service range %s-%s is taken", l.ServiceFirst, l.ServiceLast))
}

// keptNodePort returns the nodePort given before to this Service port if
// it is still free, else the lowest free one (chosen); 0 when none is.
//
// A nodePort it publishes stays its own when a deployment declares it as
// a hostPort afterwards (the older claim keeps it); one never allocated
// is never one a holder names, whatever its protocol or address. One a
// process of the host holds stays its own too (a PortConflict, tried
// again): as on Kubernetes, where the apiserver allocates a nodePort once
// and kube-proxy failing to open it on a node never changes it. Unless
// it was never served (portHolder.Unserved): then it was never a port a
// client knew, only dockctl's unlucky choice, and is chosen again.
func keptNodePort(prev []store.NodePortStatus, p manifests.ServicePort, used map[int32]bool, in allocInput, proto string) (n int32, chosen bool) {
	free := func(n int32, since time.Time, kept bool) bool {
		if used[n] {
			return false
		}
		if !kept && slices.ContainsFunc(in.Trying, func(hp hostPort) bool { return hp.Port == n }) {
			return false // found held by the host: being tried, no free choice
		}
		for _, h := range in.Holders {
			if kept && h.Owner == hostProcessOwner && !h.Unserved {
				continue
			}
			if h.Port.Port == n && !claimedBefore(since, h.Since) {
				return false
			}
		}
		return true
	}
	for _, np := range prev {
		if np.Port == p.Port && np.Protocol == proto && np.NodePort >= manifests.NodePortMin && np.NodePort <= manifests.NodePortMax && free(np.NodePort, np.Since, true) {
			return np.NodePort, false
		}
	}
	for n := int32(manifests.NodePortMin); n <= manifests.NodePortMax; n++ {
		if free(n, time.Time{}, false) {
			return n, true
		}
	}
	return 0, false
}

// holderOf names the deployment or container that holds hp against a
// Service that publishes it since since (zero: it does not), or "".
func portHolderOf(hp hostPort, in allocInput, since time.Time) string {
	for _, h := range in.Holders {
		if h.Port.overlaps(hp) && !claimedBefore(since, h.Since) {
			return h.Owner
		}
	}
	return ""
}

// claimedBefore reports whether a Service's claim (since it published a
// port) is older than a deployment's (since it declared it); a zero time
// is no claim, or one that cannot be dated.
func claimedBefore(service, deployment time.Time) bool {
	return !service.IsZero() && !deployment.IsZero() && service.Before(deployment)
}

// claimedSince is when a Service began to publish nodePort n (its status),
// zero when it does not publish it.
func claimedSince(prev []store.NodePortStatus, n int32, proto string) time.Time {
	for _, np := range prev {
		if np.NodePort == n && np.Protocol == proto {
			return np.Since
		}
	}
	return time.Time{}
}

// publishedSince dates a nodePort of the outcome: zero when it is not
// published (a conflict), else as the previous status dated it, or now
// when it begins to be published. A status of an earlier release, which
// dated none, dates it from the Service's creation.
func publishedSince(np store.NodePortStatus, bindings []dockerx.PortBinding, prev []store.NodePortStatus, in allocInput) time.Time {
	if !slices.ContainsFunc(bindings, func(b dockerx.PortBinding) bool {
		return int32(b.HostPort) == np.NodePort && b.Protocol == np.Protocol && int32(b.ContainerPort) == np.Port
	}) {
		return time.Time{}
	}
	for _, p := range prev {
		if p.NodePort == np.NodePort && p.Protocol == np.Protocol && p.Port == np.Port {
			if !p.Since.IsZero() {
				return p.Since
			}
			if !in.Created.IsZero() {
				return in.Created
			}
		}
	}
	return in.Now
}

// olderServiceHolding returns the other Service that publishes hp, if any,
// and whether it is older than this one (and so keeps it).
func olderServiceHolding(hp hostPort, in allocInput) (key string, older bool) {
	for _, o := range in.Others {
		for _, h := range o.Published {
			if h.overlaps(hp) {
				c := o.Created.Compare(in.Created)
				return o.Key, c < 0 || (c == 0 && o.Key < in.Key)
			}
		}
	}
	return "", false
}

// publishedOf turns bindings into the host ports they hold.
func publishedOf(bs []dockerx.PortBinding) []hostPort {
	out := make([]hostPort, len(bs))
	for i, b := range bs {
		out[i] = hostPort{IP: b.HostIP, Port: int32(b.HostPort), Protocol: b.Protocol}
	}
	return out
}

// nodePortNumbers are the nodePorts of a status and the explicit ones of
// a spec: what no other Service may be allocated.
func nodePortNumbers(s *manifests.Service, st *store.ServiceStatus) []int32 {
	var out []int32
	if st != nil {
		for _, np := range st.NodePorts {
			out = append(out, np.NodePort)
		}
	}
	if s != nil {
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				out = append(out, p.NodePort)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// defaultService returns a copy of s with Kubernetes' defaults applied
// (manifests.SetServiceDefaults): type ClusterIP, protocol TCP, targetPort
// = port. The stored record is never changed.
func defaultService(s *manifests.Service) *manifests.Service {
	out := *s
	out.Spec.Ports = slices.Clone(s.Spec.Ports)
	manifests.SetServiceDefaults(&out)
	return &out
}
