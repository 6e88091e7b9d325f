package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dataplane"
	"github.com/dockctl/dockctl/manifests"
)

func TestParsePorts(t *testing.T) {
	for _, tt := range []struct {
		specs []string
		want  []forwardedPort
		err   string
	}{
		{specs: []string{"8080:80"}, want: []forwardedPort{{8080, 80}}},
		{specs: []string{":80"}, want: []forwardedPort{{0, 80}}},
		{specs: []string{"80"}, want: []forwardedPort{{80, 80}}},
		{specs: []string{"5000", "6000:7000"}, want: []forwardedPort{{5000, 5000}, {6000, 7000}}},
		{specs: []string{"1:2:3"}, err: "invalid port format '1:2:3'"},
		{specs: []string{"x:80"}, err: `error parsing local port 'x': strconv.ParseUint: parsing "x": invalid syntax`},
		{specs: []string{"70000:80"}, err: "error parsing local port '70000'"},
		{specs: []string{"8080:"}, err: "error parsing remote port ''"},
		{specs: []string{"8080:0"}, err: "remote port must be > 0"},
	} {
		t.Run(strings.Join(tt.specs, " "), func(t *testing.T) {
			got, err := parsePorts(tt.specs)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("parsePorts = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// The pod of the port tests: web serves http (8080) and metrics (9090),
// an init container declares "setup"; dns is UDP only, syslog both.
var testPorts = podPorts{pod: "web-0", ports: []manifests.ContainerPort{
	{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090, Protocol: "TCP"},
	{Name: "dns", ContainerPort: 53, Protocol: "UDP"},
	{Name: "syslog", ContainerPort: 514, Protocol: "UDP"}, {Name: "syslog-tcp", ContainerPort: 514, Protocol: "TCP"},
	{Name: "setup", ContainerPort: 7000},
}}

func TestResolvePodPorts(t *testing.T) {
	for _, tt := range []struct {
		specs []string
		want  string
		err   string
	}{
		{specs: []string{"8080:80", ":80", "80"}, want: "8080:80 :80 80"},
		{specs: []string{"http"}, want: "8080"}, // a name alone: that port locally too, as kubectl
		{specs: []string{"8000:http", ":metrics", "setup"}, want: "8000:8080 :9090 7000"},
		{specs: []string{"514"}, want: "514"},
		{specs: []string{"nope"}, err: "Pod 'web-0' does not have a named port 'nope'"},
		{specs: []string{"5353:dns"}, err: "UDP protocol is not supported for dns"},
		{specs: []string{"53"}, err: "UDP protocol is not supported for 53"},
		{specs: []string{"8080:"}, err: "remote port cannot be empty"},
	} {
		t.Run(strings.Join(tt.specs, " "), func(t *testing.T) {
			got, err := resolvePodPorts(tt.specs, testPorts)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tt.want {
				t.Errorf("resolvePodPorts = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	// A named local port goes no further, as in kubectl.
	if _, err := parsePorts([]string{"http:8080"}); err == nil {
		t.Error("a named local port was accepted")
	}
	// Nor more than LOCAL:REMOTE (which kubectl reads as LOCAL alone).
	if err := checkPortSpecs([]string{"80", "1:2:3"}); err == nil || err.Error() != "invalid port format '1:2:3'" {
		t.Errorf("checkPortSpecs: %v", err)
	}
}

// A Service's port maps to its targetPort on the pod chosen, as kubectl's
// translateServicePortToTargetPort maps it.
func TestResolveServicePorts(t *testing.T) {
	svc := &manifests.Service{Metadata: manifests.ObjectMeta{Name: "web"}, Spec: manifests.ServiceSpec{Ports: []manifests.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		{Name: "admin", Port: 81, TargetPort: intstr.FromInt32(9090)},
		{Name: "same", Port: 82}, // targetPort unset: the port
		{Name: "dns", Port: 53, Protocol: "UDP", TargetPort: intstr.FromInt32(53)},
		{Name: "gone", Port: 83, TargetPort: intstr.FromString("nope")},
	}}}
	headless := svc.DeepCopy()
	headless.Spec.ClusterIP = manifests.ClusterIPNone
	for _, tt := range []struct {
		svc   *manifests.Service
		specs []string
		want  string
		err   string
	}{
		{svc: svc, specs: []string{"8080:80"}, want: "8080"},
		{svc: svc, specs: []string{"8000:80"}, want: "8000:8080"},
		{svc: svc, specs: []string{":80"}, want: ":8080"},
		{svc: svc, specs: []string{"80"}, want: "80:8080"},
		{svc: svc, specs: []string{"http"}, want: "80:8080"}, // the name: the Service port's number locally
		{svc: svc, specs: []string{"9000:admin", "82"}, want: "9000:9090 82"},
		{svc: svc, specs: []string{"99"}, err: "Service web does not have a service port 99"},
		{svc: svc, specs: []string{"nope"}, err: "Service 'web' does not have a named port 'nope'"},
		{svc: svc, specs: []string{"gone"}, err: "Pod 'web-0' does not have a named port 'nope'"},
		{svc: svc, specs: []string{"5353:53"}, err: "UDP protocol is not supported for 53"},
		// kubectl forwards a headless Service's port as it is.
		{svc: headless, specs: []string{"80", ":admin"}, want: "80 :81"},
	} {
		t.Run(strings.Join(tt.specs, " "), func(t *testing.T) {
			got, err := resolveServicePorts(tt.specs, tt.svc, testPorts)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tt.want {
				t.Errorf("resolveServicePorts = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestParseAddresses(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
		err  string
	}{
		{in: []string{"localhost"}, want: "127.0.0.1/tcp4/localhost ::1/tcp6/localhost"},
		{in: []string{"localhost", "127.0.0.1"}, want: "127.0.0.1/tcp4 ::1/tcp6/localhost"},
		{in: []string{"0.0.0.0", "::", "::ffff:10.0.0.1"}, want: "0.0.0.0/tcp4 10.0.0.1/tcp4 ::/tcp6"},
		{in: []string{"example.com"}, err: "example.com is not a valid IP"},
		{in: []string{"fe80::1%eth0"}, err: "fe80::1%eth0 is not a valid IP"},
	} {
		t.Run(strings.Join(tt.in, ","), func(t *testing.T) {
			got, err := parseAddresses(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			var words []string
			for _, a := range got {
				w := a.address + "/" + a.network
				if a.localhost {
					w += "/localhost"
				}
				words = append(words, w)
			}
			if err != nil || strings.Join(words, " ") != tt.want {
				t.Errorf("parseAddresses = %q, %v; want %q", words, err, tt.want)
			}
		})
	}
}

// relayExecs runs each relay exec in-process: the helper's relay
// (dataplane.Dial and Relay) between pipes that stand for the exec's
// streams.
type relayExecs struct {
	mu    sync.Mutex
	execs [][]string
}

func (r *relayExecs) startExec(_ context.Context, id string, cfg dockerx.ExecConfig) (execStream, error) {
	r.mu.Lock()
	r.execs = append(r.execs, append([]string{id}, cfg.Cmd...))
	r.mu.Unlock()
	if !cfg.Stdin || cfg.TTY || len(cfg.Cmd) < 4 || cfg.Cmd[2] != "relay" {
		return nil, fmt.Errorf("not a relay: %+v", cfg)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &pipeExec{in: inW, out: outR, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer outW.Close()
		conn, err := dataplane.Dial(context.Background(), 10*time.Second, cfg.Cmd[3:])
		if err != nil {
			fmt.Fprintln(&s.stderr, err)
			s.code = 1
			return
		}
		if err := dataplane.Relay(conn, inR, outW); err != nil {
			fmt.Fprintln(&s.stderr, err)
			s.code = 1
		}
	}()
	return s, nil
}

// pipeExec is an execStream over pipes.
type pipeExec struct {
	in     *io.PipeWriter
	out    *io.PipeReader
	stderr bytes.Buffer
	code   int
	done   chan struct{}
}

func (p *pipeExec) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *pipeExec) CloseWrite() error           { return p.in.Close() }
func (p *pipeExec) Output(stdout, stderr io.Writer) error {
	_, err := io.Copy(stdout, p.out)
	<-p.done
	stderr.Write(p.stderr.Bytes())
	return err
}
func (p *pipeExec) Resize(context.Context, dockerx.TerminalSize) error { return nil }
func (p *pipeExec) Wait(context.Context) (int, error)                  { <-p.done; return p.code, nil }
func (p *pipeExec) Close() error {
	p.in.Close()
	p.out.Close()
	return nil
}

// The forwarder: each local connection relayed by an exec in the helper,
// half-close passed on, a refused one reported as kubectl reports it
// while the others go on being served.
func TestForwarder(t *testing.T) {
	// The pod's side: answers once the client has finished sending.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				io.WriteString(c, "got: "+string(b))
			}()
		}
	}()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	served, _ := strconv.Atoi(p)
	// Nothing listens on the other.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ = net.SplitHostPort(closed.Addr().String())
	refused, _ := strconv.Atoi(p)
	closed.Close()

	execs := &relayExecs{}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	f := &forwarder{docker: execs, helper: "helper-1", pod: "web-0", out: out, errOut: errOut}
	addrs, _ := parseAddresses([]string{"127.0.0.1"})
	if err := f.listen([]forwardedPort{{0, uint16(served)}, {0, uint16(refused)}}, addrs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.serve(ctx)
	defer f.close()
	lines := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> ` + strconv.Itoa(served) + `\nForwarding from 127\.0\.0\.1:(\d+) -> ` + strconv.Itoa(refused) + `\n$`).FindStringSubmatch(out.String())
	if lines == nil {
		t.Fatalf("output %q", out.String())
	}
	local, localRefused := lines[1], lines[2]

	ask := func(msg string) string {
		c, err := net.Dial("tcp", "127.0.0.1:"+local)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, msg)
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(bufio.NewReader(c))
		return string(b)
	}
	if got := ask("hello"); got != "got: hello" {
		t.Fatalf("through the forward: %q", got)
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+localRefused)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a refused connection answered %q", b)
	}
	c.Close()
	want := fmt.Sprintf("error: an error occurred forwarding %s -> %d: error forwarding port %d to pod web-0: dial tcp 127.0.0.1:%d: connect: connection refused\n",
		localRefused, refused, refused, refused)
	waitUntil(t, "the refused connection's report", func() bool { return errOut.String() != "" })
	if errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
	if got := ask("again"); got != "got: again" {
		t.Fatalf("after a refused connection: %q", got)
	}
	wantOut := fmt.Sprintf("Handling connection for %s\nHandling connection for %s\nHandling connection for %s\n", local, localRefused, local)
	if got := out.String()[len(lines[0]):]; got != wantOut {
		t.Errorf("output %q, want %q", got, wantOut)
	}
	execs.mu.Lock()
	defer execs.mu.Unlock()
	wantExec := fmt.Sprintf("helper-1 /dockctl helper relay 127.0.0.1:%d [::1]:%d", served, served)
	if len(execs.execs) != 3 || strings.Join(execs.execs[0], " ") != wantExec {
		t.Errorf("execs %q, want 3, the first %q", execs.execs, wantExec)
	}
}

// Listening as kubectl: a port another holds on an explicit address is
// reported and skipped; no port at all is an error.
func TestForwarderListen(t *testing.T) {
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, p, _ := net.SplitHostPort(taken.Addr().String())
	port, _ := strconv.Atoi(p)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	f := &forwarder{docker: &relayExecs{}, pod: "web-0", out: out, errOut: errOut}
	addrs, _ := parseAddresses([]string{"127.0.0.1"})
	err = f.listen([]forwardedPort{{uint16(port), 80}}, addrs)
	if err == nil || err.Error() != fmt.Sprintf("unable to listen on any of the requested ports: [{%d 80}]", port) {
		t.Errorf("listen on a taken port: %v", err)
	}
	if !strings.HasPrefix(errOut.String(), fmt.Sprintf("Unable to listen on port %d: Listeners failed to create with the following errors: [unable to create listener: Error listen tcp4 127.0.0.1:%d: bind: address already in use]", port, port)) {
		t.Errorf("stderr %q", errOut.String())
	}
	f = &forwarder{docker: &relayExecs{}, pod: "web-0", out: out, errOut: errOut}
	if err := f.listen([]forwardedPort{{uint16(port), 80}, {0, 81}}, addrs); err != nil || len(f.listeners) != 1 || f.listeners[0].port.Remote != 81 {
		t.Errorf("one port of two: %v, %+v", err, f.listeners)
	}
	f.close()
}

// port-forward's arguments, through the real command against the fake
// Engine API, up to the helper (which e2e tests: it needs dockctl's own
// static binary packaged as an image).
func TestPortForwardArgsAgainstEngine(t *testing.T) {
	api, base, d := shopApplied(t)
	pod := dockerx.Hostname("shop", manifests.TemplateHash(&d.Spec.Template), 0)
	for _, c := range testPod("t1", d, 0, time.Minute, false, member{name: "migrate", state: dockerx.StateRunning}) {
		api.add(c.Name, c.State, c.Labels)
	}
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"deploy/shop"}, "TYPE/NAME and list of ports are required for port-forward\nSee 'dockctl port-forward -h' for help and examples"},
		{[]string{"configmap/shop", "80"}, `expected POD, pod/NAME, deployment/NAME or service/NAME, got "configmap/shop"`},
		{[]string{"deploy/shop", "80", "--address", "localhost,nope"}, "nope is not a valid IP"},
		{[]string{"deploy/nope", "80"}, `deployments.apps "nope" not found in instance "t1"`},
		{[]string{"deploy/shop", "8080:http"}, "Pod '" + pod + "' does not have a named port 'http'"},
		{[]string{"deploy/shop", "1:2:3"}, "invalid port format '1:2:3'"},
		// Still initializing: no app container runs.
		{[]string{"deploy/shop", "8080"}, "unable to forward port because pod is not running. Current status=Pending"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := run(t, "", append(base, append([]string{"port-forward"}, tt.args...)...)...)
			if err == nil || err.Error() != tt.err {
				t.Errorf("err %v, want %q", err, tt.err)
			}
		})
	}
	if cs := api.createsSnapshot(); len(cs) != 0 {
		t.Errorf("%d containers created, want none", len(cs))
	}
}

// procExecs runs each exec as the helper container would: dockctl's own
// binary (this test binary, run as dockctl) with the exec's command line,
// its stdin and output piped.
type procExecs struct{ t *testing.T }

func (p procExecs) startExec(_ context.Context, _ string, cfg dockerx.ExecConfig) (execStream, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, cfg.Cmd[1:]...) // cfg.Cmd[0] is the binary's path in the helper image
	cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1")
	s := &procExec{cmd: cmd}
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if s.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if s.errPipe, err = cmd.StderrPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s, nil
}

type procExec struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	// errPipe is the relay's stderr, where it says why it failed.
	errPipe io.ReadCloser
}

func (s *procExec) Write(b []byte) (int, error) { return s.stdin.Write(b) }
func (s *procExec) CloseWrite() error           { return s.stdin.Close() }
func (s *procExec) Output(stdout, stderr io.Writer) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(stderr, s.errPipe)
	}()
	_, err := io.Copy(stdout, s.stdout)
	<-done
	return err
}
func (s *procExec) Resize(context.Context, dockerx.TerminalSize) error { return nil }
func (s *procExec) Wait(context.Context) (int, error) {
	err := s.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}
func (s *procExec) Close() error { return s.stdin.Close() }

// kubectl's port-forward connects to the pod's localhost: the runtime
// (containerd's CRI portForward) dials 127.0.0.1:PORT and, when that fails,
// [::1]:PORT. dockctl's relay must do the same, so that a server that
// listens on the IPv6 loopback alone — e.g. one that binds "localhost"
// where that resolves to ::1 first, as Node.js does since v17 — is
// reachable as it is with kubectl. The relay below is the real one:
// `dockctl helper relay`, run as the helper container runs it.
func TestPortForwardReachesIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatalf("this test needs the IPv6 loopback: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello from ::1\n")
			c.Close()
		}
	}()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	remote, _ := strconv.Atoi(p)
	errOut := &syncBuffer{}
	f := &forwarder{docker: procExecs{t}, helper: "helper-1", pod: "web-0", out: &syncBuffer{}, errOut: errOut}
	addrs, _ := parseAddresses([]string{"127.0.0.1"})
	if err := f.listen([]forwardedPort{{0, uint16(remote)}}, addrs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.serve(ctx)
	defer f.close()
	c, err := net.Dial("tcp", f.listeners[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, _ := io.ReadAll(c)
	if string(b) != "hello from ::1\n" {
		waitUntil(t, "the forward's report", func() bool { return errOut.String() != "" })
		t.Errorf("through the forward to a server on [::1]:%d: %q; stderr %q (kubectl reaches it)", remote, b, errOut.String())
	}
}

// A local client that resets its connection (RST: killed with unread data,
// SO_LINGER 0, a load balancer's health check) while the pod's side is idle
// — a database or cache waiting for the next command, a long-poll waiting
// for an event — must be passed on to the pod. If the local copy's read
// error were ignored (the relay's stdin half-closed only when that copy
// ends cleanly), the output copy would wait for the pod's side, which waits
// for the client: the pod would keep the connection open, the relay exec
// would keep running in the helper, and the CLI would keep a goroutine and
// a hijacked Docker connection for as long as the session lasts, one of
// each per reset connection (a pod with a connection limit, e.g. Postgres'
// max_connections, runs out). kubectl ends the forwarded stream when the
// local copy fails (its handleConnection's localError), which closes the
// pod's side.
func TestPortForwardLocalResetClosesThePodSide(t *testing.T) {
	// The pod's side: reads until its client goes, never writes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan struct{}, 1)
	gone := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		if n, _ := c.Read(b); n > 0 {
			got <- struct{}{}
		}
		_, _ = io.Copy(io.Discard, c)
		close(gone)
	}()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	remote, _ := strconv.Atoi(p)

	f := &forwarder{docker: &relayExecs{}, helper: "helper-1", pod: "db-0", out: &syncBuffer{}, errOut: &syncBuffer{}}
	addrs, _ := parseAddresses([]string{"127.0.0.1"})
	if err := f.listen([]forwardedPort{{0, uint16(remote)}}, addrs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.serve(ctx)
	defer f.close()

	c, err := net.Dial("tcp", f.listeners[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got: // the relay reached the pod
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the pod")
	}
	// Reset, not close: SO_LINGER 0.
	_ = c.(*net.TCPConn).SetLinger(0)
	c.Close()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the local client reset its connection 30 s ago; the pod's side of it is still open (relay still running)")
	}
}
