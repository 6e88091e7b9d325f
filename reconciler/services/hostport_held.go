package services

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// Host ports a process of the host holds. No list shows them (they are
// not containers): Docker finds them when it starts a proxy that
// publishes one, and refuses the start. The Service must not go down for
// it — its ClusterIP serves pods, whatever happens on the host — so the
// port is remembered as held, the proxy made again without it (reported
// as a PortConflict), and the port tried again later, with a backoff: as
// kube-proxy, which logs "can't open port, skipping it" for a nodePort it
// cannot open and keeps the Service's other rules. A try replaces the
// proxy, so it is not made while the controller still reaches a listener
// on that port (or, with none to reach, while its bind is still refused).

// hostProcessOwner is the holder a PortConflict names.
const hostProcessOwner = "a process of the host"

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
}

// inUseMessages are what dockerd says when a published port cannot be
// bound: a listener of the host ("address already in use", with or
// without its userland proxy), or a port its own allocator has given.
var inUseMessages = []string{"address already in use", "port is already allocated"}

// colonPort finds the ports of the addresses in a message ("127.0.0.1:30080").
var colonPort = regexp.MustCompile(`:([0-9]{1,5})\b`)

// hostPortInUse finds, in the error of a plan that created or started a
// proxy, the published port Docker could not bind because something
// holds it: the first address the message names whose port is bound.
func hostPortInUse(err error, bindings []dockerx.PortBinding) (dockerx.PortBinding, bool) {
	var opErr *helperOpError
	if !errors.As(err, &opErr) || (opErr.Kind != HelperCreate && opErr.Kind != HelperStart) {
		return dockerx.PortBinding{}, false
	}
	msg := err.Error()
	inUse := false
	for _, m := range inUseMessages {
		inUse = inUse || strings.Contains(msg, m)
	}
	if !inUse {
		return dockerx.PortBinding{}, false
	}
	lower := strings.ToLower(msg)
	for _, m := range colonPort.FindAllStringSubmatch(msg, -1) {
		n, _ := strconv.Atoi(m[1])
		var found []dockerx.PortBinding
		for _, b := range bindings {
			if b.HostPort == n {
				found = append(found, b)
			}
		}
		for _, b := range found {
			if len(found) == 1 || strings.Contains(lower, "/"+strings.ToLower(protocolOr(b.Protocol))) ||
				strings.Contains(lower, strings.ToLower(protocolOr(b.Protocol))+"4 ") {
				return b, true
			}
		}
	}
	return dockerx.PortBinding{}, false
}

// noteHostHeld remembers hp as held by a process of the host: it is left
// out until its next try, after a backoff that doubles each time.
func (s *Controller) noteHostHeld(key string, hp hostPort) {
	now := s.cfg.Now()
	s.mu.Lock()
	if s.hostHeld == nil {
		s.hostHeld = map[hostPort]*heldPort{}
	}
	h := s.hostHeld[hp]
	if h == nil {
		h = &heldPort{backoff: hostHeldRetry}
		s.hostHeld[hp] = h
	} else {
		h.backoff = min(2*h.backoff, hostHeldRetryMax)
	}
	h.retryAt = now.Add(h.backoff)
	s.mu.Unlock()
	s.log.Warn("host port held by a process of the host: the Service is published without it, and it is tried again later",
		"service", key, "port", hp.String(), "retry in", h.backoff)
}

// publishedHostPorts forgets the held marks of the ports a running proxy
// now publishes.
func (s *Controller) publishedHostPorts(bindings []dockerx.PortBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, hp := range publishedOf(bindings) {
		delete(s.hostHeld, hp)
	}
}

// hostHolders are the host ports a process of the host holds that an
// allocation must leave out now, and how soon the earliest is tried
// again (0: none is held). A port due for a try is left out still while
// the controller reaches a listener on it.
func (s *Controller) hostHolders(ctx context.Context) ([]portHolder, time.Duration) {
	now := s.cfg.Now()
	s.mu.Lock()
	due := map[hostPort]*heldPort{}
	for hp, h := range s.hostHeld {
		if !now.Before(h.retryAt) {
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
	var next time.Duration
	s.mu.Lock()
	defer s.mu.Unlock()
	for hp, h := range s.hostHeld {
		if d := due[hp]; d != nil {
			h.retryAt = now.Add(h.backoff) // still listened on: not tried
		}
		if now.Before(h.retryAt) {
			out = append(out, portHolder{Port: hp, Owner: hostProcessOwner})
			if wait := h.retryAt.Sub(now); next == 0 || wait < next {
				next = wait // the soonest retry
			}
		}
	}
	return out, next
}

// listening reports whether a held host port is still taken: whether
// the controller reaches a listener there (TCP), or else whether its bind
// is refused (EADDRINUSE) — a UDP port has no listener to reach, and a
// TCP listener may be on another address of the host than the one
// dialled. Else a try would tear down the running proxy at every backoff
// for a start Docker refuses again.
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
