package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

type portForwardOptions struct {
	addresses  []string
	podTimeout time.Duration
}

func newPortForwardCommand(g *globalOptions) *cobra.Command {
	o := &portForwardOptions{}
	cmd := &cobra.Command{
		Use:   "port-forward (POD | TYPE/NAME) [LOCAL_PORT:]REMOTE_PORT [...[LOCAL_PORT_N:]REMOTE_PORT_N] [--address ADDR]",
		Short: "Forward one or more local ports to a pod",
		Long: "Forward local ports to a pod, as kubectl does. For a deployment or a Service a pod is chosen as kubectl\n" +
			"chooses it; a Service's port is forwarded to its targetPort. REMOTE_PORT may name a container port.\n" +
			"The session runs until interrupted (SIGINT, SIGTERM), or until the pod stops.\n\n" +
			"Each connection is relayed through the Docker API by a helper container in the pod's network namespace,\n" +
			"so that it works against a remote DOCKER_HOST too; the helper goes with the session, even a killed one.",
		Example: `  # Listen on ports 5000 and 6000 locally, forwarding to the same ports of the pod
  dockctl port-forward pod/web-5d8f9c7b6a-0 5000 6000

  # Listen on port 8080 locally, forwarding to port 80 of a pod of deployment web
  dockctl port-forward deployment/web 8080:80

  # Listen on a random local port, forwarding to the targetPort of service web's port named http
  dockctl port-forward svc/web :http

  # Listen on port 8888 on every address, forwarding to 5000 in the pod
  dockctl port-forward --address 0.0.0.0 pod/web-5d8f9c7b6a-0 8888:5000`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf(cmd, "TYPE/NAME and list of ports are required for port-forward")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := parsePodTarget(args[0])
			if err != nil {
				return err
			}
			addrs, err := parseAddresses(o.addresses)
			if err != nil {
				return err
			}
			return runPortForward(cmd, g, o, target, args[1:], addrs)
		},
	}
	cmd.Flags().StringSliceVar(&o.addresses, "address", []string{"localhost"}, "addresses to listen on (comma separated): IP addresses, or localhost, "+
		"which binds 127.0.0.1 and ::1 and fails only if neither can be bound")
	cmd.Flags().DurationVar(&o.podTimeout, "pod-running-timeout", defaultPodRunningTimeout, "how long to wait for a deployment or Service to have a pod")
	return cmd
}

// forwardedPort is one local port forwarded to one port of the pod.
type forwardedPort struct{ Local, Remote uint16 }

// splitPort splits [LOCAL:]REMOTE, as kubectl does: REMOTE alone is the
// same local port.
func splitPort(spec string) (local, remote string) {
	if l, r, ok := strings.Cut(spec, ":"); ok {
		return l, r
	}
	return spec, spec
}

// checkPortSpecs refuses a spec of more than [LOCAL:]REMOTE before
// anything reads it (kubectl would read "1:2:3" as 1).
func checkPortSpecs(specs []string) error {
	for _, spec := range specs {
		if strings.Count(spec, ":") > 1 {
			return fmt.Errorf("invalid port format '%s'", spec)
		}
	}
	return nil
}

// joinPort is splitPort's inverse, REMOTE alone when both are the same.
func joinPort(local, remote string) string {
	if local == remote {
		return remote
	}
	return local + ":" + remote
}

// parsePorts reads [LOCAL:]REMOTE specs whose remote ports are numbers
// (named ones were resolved), with kubectl's errors; an empty LOCAL is 0:
// a random port.
func parsePorts(specs []string) ([]forwardedPort, error) {
	var out []forwardedPort
	for _, spec := range specs {
		parts := strings.Split(spec, ":")
		if len(parts) > 2 {
			return nil, fmt.Errorf("invalid port format '%s'", spec)
		}
		local, remote := splitPort(spec)
		if local == "" {
			local = "0"
		}
		l, err := strconv.ParseUint(local, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("error parsing local port '%s': %s", local, err)
		}
		r, err := strconv.ParseUint(remote, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("error parsing remote port '%s': %s", remote, err)
		}
		if r == 0 {
			return nil, fmt.Errorf("remote port must be > 0")
		}
		out = append(out, forwardedPort{Local: uint16(l), Remote: uint16(r)})
	}
	return out, nil
}

// podPorts are the container ports a pod declares, app containers first,
// then init containers (kubectl's search order for a named port).
type podPorts struct {
	pod   string
	ports []manifests.ContainerPort
}

func portsOf(e podEntry) podPorts {
	p := podPorts{pod: e.Name}
	if e.template != nil {
		for _, c := range append(slices.Clip(e.template.Spec.Containers), e.template.Spec.InitContainers...) {
			p.ports = append(p.ports, c.Ports...)
		}
	}
	return p
}

// byName is the number of the container port named name.
func (p podPorts) byName(name string) (int32, error) {
	for _, cp := range p.ports {
		if cp.Name == name {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("Pod '%s' does not have a named port '%s'", p.pod, name)
}

// udpOnly reports the ports declared UDP and not TCP: port-forward
// relays TCP only, as kubectl's.
func udpOnly(protocols map[int32][]string) map[int32]bool {
	out := map[int32]bool{}
	for port, ps := range protocols {
		if slices.Contains(ps, manifests.ProtocolUDP) && !slices.Contains(ps, manifests.ProtocolTCP) {
			out[port] = true
		}
	}
	return out
}

// resolvePodPorts turns named remote ports into numbers (kubectl's
// convertPodNamedPortToNumber), refusing UDP-only ports.
func resolvePodPorts(specs []string, p podPorts) ([]string, error) {
	protocols := map[int32][]string{}
	for _, cp := range p.ports {
		protocols[cp.ContainerPort] = append(protocols[cp.ContainerPort], protocolOrTCP(cp.Protocol))
	}
	udp := udpOnly(protocols)
	var out []string
	for _, spec := range specs {
		local, remote := splitPort(spec)
		if remote == "" {
			return nil, errors.New("remote port cannot be empty")
		}
		number := remote
		n, err := strconv.Atoi(remote)
		if err != nil {
			port, err := p.byName(remote)
			if err != nil {
				return nil, err
			}
			n, number = int(port), strconv.Itoa(int(port))
		}
		if udp[int32(n)] {
			return nil, fmt.Errorf("UDP protocol is not supported for %s", remote)
		}
		if local == remote {
			out = append(out, number)
		} else {
			out = append(out, local+":"+number)
		}
	}
	return out, nil
}

// serviceTargetPorts resolves port-forward's ports for service/NAME: the
// Service's ports, mapped onto the pod's (resolveServicePorts).
func serviceTargetPorts(snap *snapshot, g *globalOptions, name string, specs []string, p podPorts) ([]string, error) {
	svc, _ := snap.service(g.namespace, name)
	return resolveServicePorts(specs, svc.spec(), p)
}

// resolveServicePorts maps each spec's remote port — a port of the
// Service, by number or name — to the pod's port its targetPort names, as
// kubectl's translateServicePortToTargetPort does: a number as it is (0:
// the port), a name by the pod's container port of that name, and a
// headless Service's port as it is. UDP-only Service ports are refused.
func resolveServicePorts(specs []string, svc *manifests.Service, p podPorts) ([]string, error) {
	name := svc.Metadata.Name
	protocols := map[int32][]string{}
	for _, sp := range svc.Spec.Ports {
		protocols[sp.Port] = append(protocols[sp.Port], protocolOrTCP(sp.Protocol))
	}
	udp := udpOnly(protocols)
	var out []string
	for _, spec := range specs {
		local, remote := splitPort(spec)
		port, err := strconv.Atoi(remote)
		if err != nil {
			found := false
			for _, sp := range svc.Spec.Ports {
				if sp.Name == remote {
					port, found = int(sp.Port), true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("Service '%s' does not have a named port '%s'", name, remote)
			}
			if local == remote {
				local = strconv.Itoa(port)
			}
		}
		if udp[int32(port)] {
			return nil, fmt.Errorf("UDP protocol is not supported for %s", remote)
		}
		target, err := serviceTargetPort(svc, p, int32(port))
		if err != nil {
			return nil, err
		}
		out = append(out, joinPort(local, strconv.Itoa(int(target))))
	}
	return out, nil
}

// serviceTargetPort is kubectl's LookupContainerPortNumberByServicePort.
func serviceTargetPort(svc *manifests.Service, p podPorts, port int32) (int32, error) {
	for _, sp := range svc.Spec.Ports {
		if sp.Port != port {
			continue
		}
		if svc.IsHeadless() {
			return port, nil
		}
		if sp.TargetPort.Type == intstr.Int {
			if sp.TargetPort.IntVal == 0 {
				return sp.Port, nil
			}
			return sp.TargetPort.IntVal, nil
		}
		return p.byName(sp.TargetPort.StrVal)
	}
	return 0, fmt.Errorf("Service %s does not have a service port %d", svc.Metadata.Name, port)
}

func protocolOrTCP(p string) string {
	if p == "" {
		return manifests.ProtocolTCP
	}
	return strings.ToUpper(p)
}

// listenAddress is one address port-forward listens on. Those of
// localhost fail the session only when none of them can be bound.
type listenAddress struct {
	address, network string
	localhost        bool
}

// parseAddresses reads --address as kubectl does: localhost is 127.0.0.1
// and ::1, anything else an IP address; sorted, without duplicates.
func parseAddresses(in []string) ([]listenAddress, error) {
	byAddr := map[string]listenAddress{}
	for _, a := range in {
		if a == "localhost" {
			for _, l := range []listenAddress{{"127.0.0.1", "tcp4", true}, {"::1", "tcp6", true}} {
				if _, ok := byAddr[l.address]; !ok {
					byAddr[l.address] = l
				}
			}
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("%s is not a valid IP", a)
		}
		network := "tcp6"
		if ip.Unmap().Is4() {
			ip, network = ip.Unmap(), "tcp4"
		}
		byAddr[ip.String()] = listenAddress{address: ip.String(), network: network}
	}
	out := make([]listenAddress, 0, len(byAddr))
	for _, l := range byAddr {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].address < out[j].address })
	return out, nil
}

func runPortForward(cmd *cobra.Command, g *globalOptions, o *portForwardOptions, target podTarget, specs []string, addrs []listenAddress) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, cli, err := g.openLive(ctx, false)
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := checkPortSpecs(specs); err != nil {
		return err
	}
	pod, snap, err := g.attachablePod(ctx, st, cli, target, o.podTimeout)
	if err != nil {
		return err
	}
	if resolve := kindByName(target.kind).targetPorts; resolve != nil {
		specs, err = resolve(snap, g, target.name, specs, portsOf(pod))
	} else {
		specs, err = resolvePodPorts(specs, portsOf(pod))
	}
	if err != nil {
		return err
	}
	ports, err := parsePorts(specs)
	if err != nil {
		return err
	}
	owner := pod.networkOwner()
	if phase := pod.Phase(); phase != corev1.PodRunning || owner == nil || owner.State != dockerx.StateRunning {
		return fmt.Errorf("unable to forward port because pod is not running. Current status=%v", phase)
	}
	helper, err := startPortForwardHelper(ctx, cli, g.instance, pod, owner, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() {
		// The signals go back to their default first: a second Ctrl-C
		// while the helper is being removed ends the command at once, as
		// kubectl's does, instead of waiting out the removal.
		stop()
		helper.remove(cli, cmd.ErrOrStderr())
	}()
	f := &forwarder{docker: dockerExecs{cli}, helper: helper.id, pod: pod.Name, out: &syncWriter{w: cmd.OutOrStdout()}, errOut: &syncWriter{w: cmd.ErrOrStderr()}}
	if err := f.listen(ports, addrs); err != nil {
		return err
	}
	defer f.close()
	f.serve(ctx)
	lost := podGone(ctx, cli, g.instance, owner.ID)
	select {
	case <-ctx.Done():
		return nil
	case <-helper.attach.Done():
		return errors.New("lost connection to pod")
	case <-lost:
		return fmt.Errorf("lost connection to pod: pod %q stopped", pod.Name)
	}
}

// portForwardHelper is a session's helper container.
type portForwardHelper struct {
	id     string
	attach *dockerx.Attachment
}

// startPortForwardHelper creates, attaches and starts the session's
// helper in the network namespace of owner, pod's network owner. It runs
// dockctl's own helper image (nothing is pulled). If the helper image is
// removed between its load and the create (a controller collecting unused
// ones), it is loaded again.
func startPortForwardHelper(ctx context.Context, cli *dockerx.Client, instance string, pod podEntry, owner *dockerx.Container, errOut io.Writer) (*portForwardHelper, error) {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	req := dockerx.HelperRequest{Instance: instance, Namespace: pod.Namespace, Role: dockerx.RolePortForward,
		Name:        dockerx.PortForwardHelperName(instance, pod.Namespace, pod.Name, hex.EncodeToString(suffix)),
		Cmd:         []string{helperapi.Binary, "helper", helperapi.ModePortForward},
		JoinNetwork: joinNetworkMode(owner), Attached: true}
	var id string
	for attempt := 0; ; attempt++ {
		img, err := cli.EnsureHelperImage(ctx, instance)
		if err != nil {
			return nil, err
		}
		req.Image = img
		id, err = cli.CreateHelper(ctx, req)
		if errors.Is(err, dockerx.ErrNotFound) && attempt == 0 {
			continue
		}
		if err != nil {
			if !errors.Is(err, dockerx.ErrConflict) {
				// A failed or cancelled (Ctrl-C) call may still have
				// created it, and a helper that never ran is never
				// auto-removed: remove it by the name chosen here (none
				// is no error). A conflict is another session's helper.
				(&portForwardHelper{id: req.Name}).remove(cli, errOut)
			}
			return nil, err
		}
		break
	}
	h := &portForwardHelper{id: id}
	a, err := cli.AttachHelper(ctx, id)
	if err != nil {
		h.remove(cli, errOut)
		return nil, err
	}
	h.attach = a
	if err := cli.StartContainer(ctx, id); err != nil {
		h.remove(cli, errOut)
		return nil, err
	}
	return h, nil
}

// remove ends the helper: closing the attachment makes it exit (and
// Docker remove it); removing it too leaves nothing behind if Docker has
// not yet. It runs after the session's context is cancelled (SIGINT), so
// it has a short one of its own.
func (h *portForwardHelper) remove(cli *dockerx.Client, errOut io.Writer) {
	if h.attach != nil {
		h.attach.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.RemoveContainer(ctx, h.id); err != nil {
		fmt.Fprintf(errOut, "warning: removing the port-forward helper %s: %v\n", h.id, err)
		return
	}
	// RemoveContainer takes a removal Docker already has under way (the
	// helper exited as its attachment closed, and Docker removes it by
	// itself) for success: wait until it is done, so that the helper is
	// gone once port-forward has returned.
	for {
		_, err := cli.InspectContainer(ctx, h.id)
		if errors.Is(err, dockerx.ErrNotFound) {
			return
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(errOut, "warning: the port-forward helper %s is still being removed\n", h.id)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// podGone is closed once the container owning the pod's network namespace
// has stopped: the session ends, as kubectl's ends with its pod. It
// watches Docker's events, and looks at the container again whenever the
// event stream (re)starts.
func podGone(ctx context.Context, cli *dockerx.Client, instance, ownerID string) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		for ev := range cli.Events(ctx, instance) {
			switch {
			case ev.Gap:
				d, err := cli.InspectContainer(ctx, ownerID)
				if errors.Is(err, dockerx.ErrNotFound) || err == nil && d.State != dockerx.StateRunning {
					close(gone)
					return
				}
			case ev.ContainerID == ownerID && (ev.Action == "die" || ev.Action == "destroy"):
				close(gone)
				return
			}
		}
	}()
	return gone
}

// execStarter starts a command in a container, its streams attached.
type execStarter interface {
	startExec(ctx context.Context, id string, cfg dockerx.ExecConfig) (execStream, error)
}

// dockerExecs is Docker's execStarter.
type dockerExecs struct{ *dockerx.Client }

func (d dockerExecs) startExec(ctx context.Context, id string, cfg dockerx.ExecConfig) (execStream, error) {
	s, err := d.ExecAttach(ctx, id, cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// forwarder accepts local connections and relays each through an exec of
// `helper relay` in the session's helper.
type forwarder struct {
	docker      execStarter
	helper, pod string
	out, errOut io.Writer
	listeners   []portListener
	accepting   sync.WaitGroup
}

type portListener struct {
	net.Listener
	port forwardedPort
}

// syncWriter keeps the lines of concurrent connections whole.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// listen binds every port on every address as kubectl does, printing
// "Forwarding from ADDR:PORT -> REMOTE" for each. A local port 0 takes
// the port the first address got on the others. A port that cannot be
// bound on an explicit address, or on no localhost address, is reported
// and skipped; no port bound at all is an error.
func (f *forwarder) listen(ports []forwardedPort, addrs []listenAddress) error {
	listening := false
	for i := range ports {
		p := &ports[i]
		var errs []error
		localhostOK, localhostFailed, explicitFailed := 0, 0, 0
		var bound []portListener
		for _, a := range addrs {
			ln, err := net.Listen(a.network, net.JoinHostPort(a.address, strconv.Itoa(int(p.Local))))
			if err != nil {
				errs = append(errs, fmt.Errorf("unable to create listener: Error %s", err))
				if a.localhost {
					localhostFailed++
				} else {
					explicitFailed++
				}
				continue
			}
			if a.localhost {
				localhostOK++
			}
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			n, _ := strconv.ParseUint(port, 10, 16)
			p.Local = uint16(n)
			fmt.Fprintf(f.out, "Forwarding from %s -> %d\n", net.JoinHostPort(a.address, port), p.Remote)
			bound = append(bound, portListener{Listener: ln, port: *p})
		}
		if localhostOK == 0 && localhostFailed > 0 || explicitFailed > 0 {
			for _, l := range bound {
				l.Close()
			}
			fmt.Fprintf(f.errOut, "Unable to listen on port %d: Listeners failed to create with the following errors: %v\n", p.Local, errs)
			continue
		}
		f.listeners = append(f.listeners, bound...)
		listening = listening || len(bound) > 0
	}
	if !listening {
		return fmt.Errorf("unable to listen on any of the requested ports: %v", ports)
	}
	return nil
}

// serve accepts connections on every listener until close, each relayed
// by a goroutine of its own.
func (f *forwarder) serve(ctx context.Context) {
	for _, l := range f.listeners {
		f.accepting.Add(1)
		go func() {
			defer f.accepting.Done()
			for {
				conn, err := l.Accept()
				if err != nil {
					if !errors.Is(err, net.ErrClosed) {
						fmt.Fprintf(f.errOut, "error: accepting a connection on port %d: %v\n", l.port.Local, err)
					}
					return
				}
				go f.handle(ctx, conn, l.port)
			}
		}()
	}
}

// close stops accepting; connections in progress end with the helper.
func (f *forwarder) close() {
	for _, l := range f.listeners {
		l.Close()
	}
	f.accepting.Wait()
}

// relayCommand is the exec that relays one connection to port of the pod:
// on its IPv4 loopback, else its IPv6 one, as a CRI runtime dials
// localhost over tcp4, then tcp6, for kubectl.
func relayCommand(port uint16) []string {
	p := strconv.Itoa(int(port))
	return []string{helperapi.Binary, "helper", helperapi.ModeRelay, net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("::1", p)}
}

// handle relays one local connection to the pod: the local side's end is
// passed on as a half-close, its failure (a reset) closes the exec
// session, so that the pod's side sees its end rather than wait on an
// idle connection for the whole session; the pod's side's end closes the
// connection (kubectl's behaviour). A connection the pod's side refuses is reported
// as kubectl reports it, and the session goes on.
func (f *forwarder) handle(ctx context.Context, conn net.Conn, p forwardedPort) {
	defer conn.Close()
	fmt.Fprintf(f.out, "Handling connection for %d\n", p.Local)
	s, err := f.docker.startExec(ctx, f.helper, dockerx.ExecConfig{Cmd: relayCommand(p.Remote), Stdin: true})
	if err != nil {
		f.failed(ctx, p, err)
		return
	}
	defer s.Close()
	go func() {
		if _, err := io.Copy(s, conn); err != nil {
			_ = s.Close()
			return
		}
		_ = s.CloseWrite()
	}()
	relayErr := &boundedBuffer{max: 4 << 10}
	if err := s.Output(conn, relayErr); err != nil {
		// The local side went away (or the session is ending): nothing
		// to tell about the pod's.
		return
	}
	code, err := s.Wait(ctx)
	switch {
	case err != nil:
		f.failed(ctx, p, err)
	case code != 0:
		msg := strings.ReplaceAll(strings.TrimSpace(relayErr.String()), "\n", "; ")
		if msg == "" {
			msg = fmt.Sprintf("the relay exited with code %d", code)
		}
		f.failed(ctx, p, errors.New(msg))
	}
}

// failed reports a connection that could not be relayed, in kubectl's
// words (unless the session is ending).
func (f *forwarder) failed(ctx context.Context, p forwardedPort, err error) {
	if ctx.Err() != nil {
		return
	}
	fmt.Fprintf(f.errOut, "error: an error occurred forwarding %d -> %d: error forwarding port %d to pod %s: %v\n", p.Local, p.Remote, p.Remote, f.pod, err)
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	strings.Builder
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Builder.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
