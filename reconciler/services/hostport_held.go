package services

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Host ports a process of the host holds. No list shows them (they are
// not containers): the publisher finds them when it cannot bind one, and
// says so in its push's ack (publisherctl.go). The Service must not go
// down for it — its ClusterIP serves pods, and its other ports are
// served, whatever happens on the host — so the port is remembered as
// held, left out of the Service's allocation (reported as a
// PortConflict), and tried again later, with a backoff: as kube-proxy,
// which logs "can't open port, skipping it" for a nodePort it cannot open
// and keeps the Service's other rules. It is not tried while the
// controller still reaches a listener on that port (or, with none to
// reach, while its bind is still refused).

// hostProcessOwner is the holder a PortConflict names.
const hostProcessOwner = "a process of the host"

// A port a Service, or the gateway, claimed that a process of the host
// holds is still its claim (docs/design.md §10, the first publisher
// keeps a port): the other publisher of this instance leaves it out, as
// published by it, so that the one that claimed it first gets it once
// the host frees it — not whichever tries first (the gateway tries in a
// second, a Service after hostHeldRetry). hostHeldClaim completes the
// holder's name.
const hostHeldClaim = " (its claim; " + hostProcessOwner + " holds it for now)"

// hostHeldRetry is the first wait before a held port is tried again; it
// doubles each time the port is found held, up to hostHeldRetryMax.
const (
	hostHeldRetry    = 30 * time.Second
	hostHeldRetryMax = 10 * time.Minute
)

// heldPort is a host port a process of the host was found to hold.
type heldPort struct {
	retryAt time.Time
	backoff time.Duration
	// trying: due and not found listened on, it is given to the
	// publisher, whose ack ends the try (publishedHostPorts when bound,
	// noteHostHeld when refused). Until then the port is still reported
	// held: a controller in a container sees no listener of the host, so
	// a try is not a finding that the host freed it.
	trying bool
}

// noteHostHeld remembers hp as held by a process of the host: it is left
// out until its next try, after a backoff that doubles each time a try
// finds it held (not each time an ack names it before that try).
func (s *Controller) noteHostHeld(key string, hp hostPort) {
	now := s.cfg.Now()
	s.mu.Lock()
	if s.hostHeld == nil {
		s.hostHeld = map[hostPort]*heldPort{}
	}
	h := s.hostHeld[hp]
	switch {
	case h == nil:
		h = &heldPort{backoff: hostHeldRetry}
		s.hostHeld[hp] = h
	case now.Before(h.retryAt):
		// Already noted, not tried since: the publisher pushed again
		// before the Service's sync left the port out. Found held once,
		// backed off once.
		s.mu.Unlock()
		return
	default:
		h.backoff = min(2*h.backoff, hostHeldRetryMax)
	}
	h.retryAt, h.trying = now.Add(h.backoff), false
	s.mu.Unlock()
	s.log.Warn("host port held by a process of the host: the Service is published without it, and it is tried again later",
		"service", key, "port", hp.String(), "retry in", h.backoff)
}

// recallHostHeld marks as held the host ports of svc that its previous
// status reports held by a process of the host (storedHostHeld), at its
// first sync since the controller started: a controller that restarted
// knows them from the status only. Else that sync would publish them —
// status listing a port nothing serves, a Normal PortConflictResolved
// event — until the publisher's ack finds them held again and the
// Warning comes back. They are tried after the first backoff, as after
// any finding: a controller in a container sees no listener of the host,
// so a try at once would be that flap. Later syncs go by the memory
// alone: a port being tried is still in the status when the publisher
// binds it, and must not be recalled as held then.
func (s *Controller) recallHostHeld(svc *manifests.Service, prev *store.ServiceStatus) {
	s.mu.Lock()
	seen := s.pub.seen[serviceKey(svc)]
	s.mu.Unlock()
	if seen {
		return
	}
	held := s.storedHostHeld(svc, prev)
	if len(held) == 0 {
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, hp := range held {
		if s.hostHeld[hp] != nil {
			continue
		}
		if s.hostHeld == nil {
			s.hostHeld = map[hostPort]*heldPort{}
		}
		s.hostHeld[hp] = &heldPort{backoff: hostHeldRetry, retryAt: now.Add(hostHeldRetry)}
	}
}

// storedHostHeld are the host ports of svc that its stored status st
// reports held by a process of the host under a PortConflict: its
// HostHeld. A status an earlier release wrote has no HostHeld: its
// PortConflict's message names them, read until the Service's first
// sync after the upgrade writes HostHeld. Both the Service's own sync
// (recallHostHeld) and the gateway synced before it after a restart
// (unseenPublishedHolders) read the claim here, so that they agree on it.
func (s *Controller) storedHostHeld(svc *manifests.Service, st *store.ServiceStatus) []hostPort {
	var msg string
	for _, c := range st.Conditions {
		if c.Type == ServicePortConflict && c.Status == "True" {
			msg += c.Message + "; "
		}
	}
	if msg == "" {
		return nil
	}
	recorded := func(hp hostPort) bool {
		if st.HostHeld == nil {
			return strings.Contains(msg, "host port "+hp.String()+" is held by "+hostProcessOwner)
		}
		return slices.ContainsFunc(st.HostHeld, func(p store.PublishedPort) bool {
			return int32(p.Port) == hp.Port && protocolOr(p.Protocol) == hp.Protocol
		})
	}
	var out []hostPort
	for _, hp := range s.hostPortsOf(svc, st) {
		if hp.Port != 0 && !slices.Contains(out, hp) && recorded(hp) {
			out = append(out, hp)
		}
	}
	return out
}

// hostPortsOf are the host ports svc may publish on the service
// address: each port's number (a LoadBalancer's), its nodePort given,
// and the nodePorts its status holds (0: none).
func (s *Controller) hostPortsOf(svc *manifests.Service, st *store.ServiceStatus) []hostPort {
	var out []hostPort
	for _, p := range svc.Spec.Ports {
		out = append(out, hostPort{IP: s.address, Port: p.Port, Protocol: p.Protocol},
			hostPort{IP: s.address, Port: p.NodePort, Protocol: p.Protocol})
	}
	for _, np := range st.NodePorts {
		out = append(out, hostPort{IP: s.address, Port: np.NodePort, Protocol: np.Protocol})
	}
	return out
}

// publishedHostPorts forgets the held and unserved marks of the ports
// the publisher now serves. It reports whether one of them was being
// tried: its Service still reports it held, and must sync again.
func (s *Controller) publishedHostPorts(bindings []dockerx.PortBinding) (tried bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, hp := range publishedOf(bindings) {
		if h := s.hostHeld[hp]; h != nil && h.trying {
			tried = true
		}
		delete(s.hostHeld, hp)
		delete(s.unserved, hp)
	}
	return tried
}

// noteChosen marks the nodePorts an allocation chose anew as unserved:
// until the publisher binds one, a process of the host holding it makes
// it chosen again. Only this controller's own choices are: after a
// restart every nodePort is one a client may know, and is kept.
func (s *Controller) noteChosen(chosen []hostPort) {
	if len(chosen) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unserved == nil {
		s.unserved = map[hostPort]bool{}
	}
	for _, hp := range chosen {
		s.unserved[hp] = true
	}
}

// hostHolders are the host ports a process of the host holds that an
// allocation must leave out now, the held ports being tried (given to
// the publisher, still reported held until its ack: heldPort.trying),
// and how soon the earliest of those in wants is tried again (0: none
// of them is held): only a Service that may publish a held port is
// requeued for its try, not every Service that publishes one. A port due
// for a try is left out still while the controller reaches a listener
// on it.
func (s *Controller) hostHolders(ctx context.Context, wants []hostPort) ([]portHolder, []hostPort, time.Duration) {
	now := s.cfg.Now()
	s.mu.Lock()
	due := map[hostPort]*heldPort{}
	for hp, h := range s.hostHeld {
		// A port being tried is the publisher's until its ack: a
		// listener there now may be the publisher's own.
		if !now.Before(h.retryAt) && !h.trying {
			due[hp] = h
		}
	}
	s.mu.Unlock()
	for hp := range due {
		if !s.listening(ctx, hp) {
			delete(due, hp) // tried at this sync
		}
	}
	var out []portHolder
	var trying []hostPort
	var next time.Duration
	s.mu.Lock()
	defer s.mu.Unlock()
	for hp, h := range s.hostHeld {
		if d := due[hp]; d != nil {
			h.retryAt, h.trying = now.Add(h.backoff), false // still listened on: not tried
		}
		if !now.Before(h.retryAt) {
			h.trying = true
			trying = append(trying, hp)
			continue
		}
		out = append(out, portHolder{Port: hp, Owner: hostProcessOwner, Unserved: s.unserved[hp]})
		if !slices.Contains(wants, hp) {
			continue
		}
		if wait := h.retryAt.Sub(now); next == 0 || wait < next {
			next = wait // the soonest retry
		}
	}
	return out, trying, next
}

// listening reports whether a held host port is still taken: whether
// the controller reaches a listener there (TCP), or else whether its bind
// is refused (EADDRINUSE) — a UDP port has no listener to reach, and a
// TCP listener may be on another address of the host than the one
// dialled. Else a try would push the publisher at every backoff for a
// bind refused again.
func (s *Controller) listening(ctx context.Context, hp hostPort) bool {
	network := strings.ToLower(hp.Protocol)
	if network != "tcp" && network != "udp" {
		return false
	}
	if network == "tcp" {
		ip := hp.IP
		switch ip {
		case "", "0.0.0.0":
			ip = "127.0.0.1"
		case "::":
			ip = "::1"
		}
		dial := s.hostDial
		if dial == nil {
			dial = dialHost
		}
		if dial(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(hp.Port)))) == nil {
			return true
		}
	}
	bind := s.hostBind
	if bind == nil {
		bind = bindHost
	}
	ip := hp.IP
	if ip == "" {
		ip = "0.0.0.0"
	}
	return errors.Is(bind(network, net.JoinHostPort(ip, strconv.Itoa(int(hp.Port)))), syscall.EADDRINUSE)
}

// bindHost binds a TCP or UDP address and closes the socket.
func bindHost(network, addr string) error {
	if network == "udp" {
		c, err := net.ListenPacket(network, addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	return l.Close()
}

// dialHost connects to addr and closes the connection.
func dialHost(ctx context.Context, network, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	return c.Close()
}
