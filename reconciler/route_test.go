package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

func TestRelayVerdict(t *testing.T) {
	tests := []struct {
		code      int
		out       string
		ok        bool
		noVerdict bool
		says      string
	}{
		{code: helperapi.ExitOK, out: "HTTP 200\n", ok: true},
		{code: helperapi.ExitFailed, out: "HTTP 503\n", says: "probe failed (run in the DNS helper): HTTP 503"},
		{code: helperapi.ExitTimeout, out: "no answer", says: "timed out after 1s"},
		{code: helperapi.ExitUsage, out: "bad spec", noVerdict: true, says: "exited 2: bad spec"},
		{code: 127, out: "", noVerdict: true, says: "exited 127"},
	}
	for _, tt := range tests {
		err := relayVerdict(tt.code, []byte(tt.out), time.Second)
		switch {
		case tt.ok && err != nil, !tt.ok && err == nil:
			t.Errorf("exit %d: %v, want ok=%v", tt.code, err, tt.ok)
		case err != nil && errors.Is(err, podruntime.ErrNoVerdict) != tt.noVerdict:
			t.Errorf("exit %d: %v; no verdict = %v, want %v", tt.code, err, errors.Is(err, podruntime.ErrNoVerdict), tt.noVerdict)
		case err != nil && !strings.Contains(err.Error(), tt.says):
			t.Errorf("exit %d: %q does not say %q", tt.code, err, tt.says)
		}
	}
}

func TestRelaySpec(t *testing.T) {
	ports := []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7", Ports: ports}
	tests := []struct {
		name string
		p    *manifests.Probe
		want helperapi.ProbeSpec
		err  string
	}{
		{
			name: "httpGet by port name",
			p:    &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			want: helperapi.ProbeSpec{Kind: "http", Address: "10.222.0.7", Port: 8080, Scheme: "HTTP", Path: "/healthz", TimeoutMillis: 2000},
		},
		{
			name: "httpGet with a host, a Host header and another header",
			p: &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Host: "10.222.0.9", Scheme: "https",
				HTTPHeaders: []manifests.HTTPHeader{{Name: "host", Value: "web.example"}, {Name: "X-Probe", Value: "1"}}}},
			want: helperapi.ProbeSpec{Kind: "http", Address: "10.222.0.9", Port: 80, Scheme: "HTTPS", Path: "/", Host: "web.example",
				Headers: map[string]string{"X-Probe": "1"}, TimeoutMillis: 2000},
		},
		{
			name: "tcpSocket",
			p:    &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(5432)}},
			want: helperapi.ProbeSpec{Kind: "tcp", Address: "10.222.0.7", Port: 5432, TimeoutMillis: 2000},
		},
		{
			name: "unknown port name",
			p:    &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromString("db")}},
			err:  `no container port named "db"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := relaySpec(target, tt.p, 2*time.Second)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("relaySpec = %+v, %v; want an error saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("relaySpec = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// scriptedDial answers the route's reachability dial: ok, or an error.
type scriptedDial struct {
	mu    sync.Mutex
	err   error
	dials []string
}

func (d *scriptedDial) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = append(d.dials, addr)
	if d.err != nil {
		return nil, d.err
	}
	c1, c2 := net.Pipe()
	c2.Close()
	return c1, nil
}

func (d *scriptedDial) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.dials)
}

// modeRecorder is a NetworkObserver.
type modeRecorder struct {
	nopObserver
	mu        sync.Mutex
	modes     []string
	conflicts []bool
}

func (m *modeRecorder) ProbeMode(mode string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.modes = append(m.modes, mode)
}

func (m *modeRecorder) InstanceNetworkConflict(c bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.conflicts = append(m.conflicts, c)
}

func (m *modeRecorder) last() (mode string, conflict *bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.modes) > 0 {
		mode = m.modes[len(m.modes)-1]
	}
	if len(m.conflicts) > 0 {
		conflict = &m.conflicts[len(m.conflicts)-1]
	}
	return mode, conflict
}

// TestProbeRouteDecides: the mode is decided by dialing the DNS server
// once its helper runs, decided again only when the network is created
// again or a probe found no route (at most once per recheckEvery), and
// direct without an instance network.
func TestProbeRouteDecides(t *testing.T) {
	st := &store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", DNSIP: "10.222.8.0"}
	dns := []dockerx.Container{{ID: "dns1", Name: "i_dns", Role: dockerx.RoleDNS, Instance: "i", State: dockerx.StateRunning}}
	ctx := context.Background()
	obs := &modeRecorder{}
	sweeps := 0
	r := newProbeRoute("i", quietLog(), obs, func() { sweeps++ })
	now := t0
	r.now = func() time.Time { return now }
	d := &scriptedDial{}
	r.dial = d.dial

	r.update(ctx, st, true, nil)
	if r.mode != ProbeUndecided || d.count() != 0 {
		t.Fatalf("without a DNS helper: mode %s after %d dials, want undecided without dialing", r.mode, d.count())
	}
	if mode, _ := obs.last(); mode != ProbeUndecided {
		t.Fatalf("the first decision is not reported: metric says %q", mode)
	}
	r.update(ctx, st, false, dns)
	if r.mode != ProbeDirect || d.count() != 1 || d.dials[0] != "10.222.8.0:53" {
		t.Fatalf("DNS server answers: mode %s after dials %q, want direct after dialing 10.222.8.0:53", r.mode, d.dials)
	}
	if mode, _ := obs.last(); mode != ProbeDirect {
		t.Fatalf("metric says %q, want direct", mode)
	}
	r.update(ctx, st, false, dns)
	if d.count() != 1 {
		t.Fatalf("decided again at a resync: %d dials", d.count())
	}

	// A probe finds no route: a re-check at the next sweep, which finds
	// the network unreachable now.
	d.err = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH}
	now = now.Add(recheckEvery)
	r.unreachable(fmt.Errorf("probe: %w", syscall.ECONNREFUSED))
	if sweeps != 0 {
		t.Fatal("a refused connection is an answer: no re-check")
	}
	r.unreachable(fmt.Errorf("probe: %w", d.err))
	r.unreachable(fmt.Errorf("probe: %w", d.err))
	if sweeps != 1 {
		t.Fatalf("%d sweeps queued, want 1", sweeps)
	}
	r.update(ctx, st, false, dns)
	if helper, relay := r.via(); !relay || helper != "dns1" || d.count() != 2 {
		t.Fatalf("after the re-check: via %q, relay %v, %d dials; want relay through dns1 after 2 dials", helper, relay, d.count())
	}
	if mode, _ := obs.last(); mode != ProbeRelay {
		t.Fatalf("metric says %q, want relay", mode)
	}
	// Re-checks are spaced out: a pod that dies gives the same error.
	r.unreachable(fmt.Errorf("probe: %w", d.err))
	if sweeps != 1 {
		t.Fatalf("re-check within %v of the last: %d sweeps", recheckEvery, sweeps)
	}

	// The network created again (removed by hand): decided again.
	d.err = nil
	r.update(ctx, st, true, dns)
	if r.mode != ProbeDirect || d.count() != 3 {
		t.Fatalf("after the network's re-creation: %s after %d dials", r.mode, d.count())
	}
	// No instance network (a conflict): direct, as before.
	r.update(ctx, nil, false, dns)
	if helper, relay := r.via(); relay || r.networkName() != "" {
		t.Fatalf("without a network: relay %v via %q on %q", relay, helper, r.networkName())
	}
}

// execRecorder is a NetworkDocker whose ExecOutput answers relayed probes.
type execRecorder struct {
	NetworkDocker
	mu     sync.Mutex
	cmds   [][]string
	ids    []string
	answer func(spec helperapi.ProbeSpec) (int, string, error)
}

func (e *execRecorder) ExecOutput(_ context.Context, id string, cmd []string, _ time.Duration) (int, []byte, error) {
	e.mu.Lock()
	e.cmds = append(e.cmds, cmd)
	e.ids = append(e.ids, id)
	e.mu.Unlock()
	var spec helperapi.ProbeSpec
	if len(cmd) != 5 || cmd[0] != helperapi.Binary || cmd[1] != "helper" || cmd[2] != helperapi.ModeProbe || cmd[3] != "--spec" {
		return helperapi.ExitUsage, []byte("unexpected command"), nil
	}
	if err := json.Unmarshal([]byte(cmd[4]), &spec); err != nil {
		return helperapi.ExitUsage, []byte(err.Error()), nil
	}
	code, out, err := e.answer(spec)
	return code, []byte(out), err
}

// TestDockerProbeRunnerRelays: in relay mode httpGet and tcpSocket probes
// are exec'd in the DNS helper with their spec, its exit code is the
// verdict, and a relay that cannot run gives no verdict; exec probes and
// host-network pods never go through it.
func TestDockerProbeRunnerRelays(t *testing.T) {
	r := newProbeRoute("i", quietLog(), nil, func() {})
	r.mode, r.helper, r.network = ProbeRelay, "dns1", "dockctl_i"
	nd := &execRecorder{answer: func(spec helperapi.ProbeSpec) (int, string, error) {
		if spec.Address == "10.222.0.7" && spec.Port == 8080 {
			return helperapi.ExitOK, "HTTP 200", nil
		}
		return helperapi.ExitFailed, "connection refused", nil
	}}
	d := &scriptedDial{}
	runner := newDockerProbeRunner(nil, nd, r)
	runner.dial = d.dial
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7", Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}},
		OnNetwork: true}
	httpOK := &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}, TimeoutSeconds: 1}
	tcpBad := &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(9)}, TimeoutSeconds: 1}
	ctx := context.Background()

	if err := runner.Run(ctx, target, httpOK); err != nil {
		t.Fatalf("relayed httpGet: %v", err)
	}
	if err := runner.Run(ctx, target, tcpBad); err == nil || errors.Is(err, podruntime.ErrNoVerdict) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("relayed tcpSocket to a closed port: %v, want a failure with the relay's reason", err)
	}
	if len(nd.ids) != 2 || nd.ids[0] != "dns1" || d.count() != 0 {
		t.Fatalf("execs in %q and %d direct dials; want 2 execs in dns1 and no dial", nd.ids, d.count())
	}
	// A pod not connected yet (its address is on another network): no
	// verdict, nothing relayed.
	off := target
	off.OnNetwork, off.Address = false, "172.17.0.5"
	if err := runner.Run(ctx, off, httpOK); !errors.Is(err, podruntime.ErrNoVerdict) || len(nd.ids) != 2 {
		t.Fatalf("a pod off the network: %v after %d execs; want no verdict and no exec", err, len(nd.ids))
	}
	// Host network: the relay's loopback is its own; dialed directly.
	host := target
	host.HostNetwork, host.Address = true, "127.0.0.1"
	_ = runner.Run(ctx, host, httpOK)
	if len(nd.ids) != 2 || d.count() != 1 {
		t.Fatalf("a host-network pod's probe: %d execs, %d dials; want it dialed directly", len(nd.ids), d.count())
	}
	// The helper's exec fails: no verdict, and the helper is looked for
	// again.
	nd.answer = func(helperapi.ProbeSpec) (int, string, error) {
		return 0, "", fmt.Errorf("exec in dns1: %w", dockerx.ErrNotFound)
	}
	if err := runner.Run(ctx, target, httpOK); !errors.Is(err, podruntime.ErrNoVerdict) {
		t.Fatalf("relay gone: %v, want no verdict", err)
	}
	if helper, _ := r.via(); helper != "" {
		t.Fatalf("the lost helper %q is still used", helper)
	}
	if err := runner.Run(ctx, target, httpOK); !errors.Is(err, podruntime.ErrNoVerdict) || len(nd.ids) != 3 {
		t.Fatalf("no helper: %v after %d execs, want no verdict without an exec", err, len(nd.ids))
	}
}

// TestJudgeDirect: until the route is decided, a direct probe that could
// not connect gives no verdict (a controller that cannot reach the
// network yet must not restart pods); a refused connection is an answer;
// once decided, every failure counts.
func TestJudgeDirect(t *testing.T) {
	unreach := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	status := errors.New("HTTP probe: status 503")
	tests := []struct {
		mode, network string
		err           error
		noVerdict     bool
	}{
		{ProbeUndecided, "dockctl_i", unreach, true},
		{ProbeUndecided, "dockctl_i", fmt.Errorf("get: %w", timeout), true},
		{ProbeUndecided, "dockctl_i", refused, false},
		{ProbeUndecided, "dockctl_i", status, false},
		{ProbeUndecided, "", unreach, false},
		{ProbeDirect, "dockctl_i", unreach, false},
	}
	for _, tt := range tests {
		r := newProbeRoute("i", quietLog(), nil, func() {})
		r.mode, r.network = tt.mode, tt.network
		got := r.judgeDirect(tt.err)
		if got == nil || errors.Is(got, podruntime.ErrNoVerdict) != tt.noVerdict {
			t.Errorf("%s on %q, %v: %v; want no verdict = %v", tt.mode, tt.network, tt.err, got, tt.noVerdict)
		}
	}
	if r := newProbeRoute("i", quietLog(), nil, func() {}); r.judgeDirect(nil) != nil {
		t.Error("a success is a success")
	}
}

// TestProbeRouteNoteEvent: the DNS helper's start queues the sweep that
// decides the route, only while it is undecided.
func TestProbeRouteNoteEvent(t *testing.T) {
	sweeps := 0
	r := newProbeRoute("i", quietLog(), nil, func() { sweeps++ })
	r.noteEvent(dockerx.Event{Action: "start", Role: dockerx.RoleDNS})
	r.noteEvent(dockerx.Event{Action: "die", Role: dockerx.RoleDNS})
	r.noteEvent(dockerx.Event{Action: "start", Role: dockerx.RoleReplica})
	r.mode = ProbeDirect
	r.noteEvent(dockerx.Event{Action: "start", Role: dockerx.RoleDNS})
	if sweeps != 1 {
		t.Fatalf("%d sweeps queued, want 1 (the helper's start while undecided)", sweeps)
	}
}

// TestDirectHTTPSProbeSkipsVerification: as kubelet (and the relay), an
// HTTPS probe does not verify the pod's certificate (usually self-signed).
func TestDirectHTTPSProbeSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	runner := newDockerProbeRunner(nil, nil, nil)
	probe := &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(p)), Scheme: "HTTPS"}, TimeoutSeconds: 5}
	if err := runner.Run(context.Background(), podruntime.ProbeTarget{ContainerID: "c", Address: host}, probe); err != nil {
		t.Fatalf("HTTPS probe of a self-signed server: %v", err)
	}
}

// blackholeDial behaves as net.Dialer does towards an address whose
// packets are dropped (a controller in a container on another bridge,
// Docker's isolation rules dropping the SYN): it hangs until the context
// ends, then fails with a dial error.
func blackholeDial(ctx context.Context, network, addr string) (net.Conn, error) {
	<-ctx.Done()
	return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
}

// TestUndecidedRouteDialTimeoutGivesNoVerdict: while the route is
// undecided (no DNS helper runs yet, or the network was just created
// again), a direct probe that cannot even connect must give no verdict,
// or a controller that cannot reach the instance network restarts every
// healthy pod with a liveness probe. Both probe kinds are checked: the
// httpGet one is the trap, as net/http returns the context's error, not
// the dial's *net.OpError, and judgeDirect must still see a dial failure.
func TestUndecidedRouteDialTimeoutGivesNoVerdict(t *testing.T) {
	r := newProbeRoute("i", quietLog(), nil, func() {})
	r.mode, r.network = ProbeUndecided, "dockctl_i"
	runner := newDockerProbeRunner(nil, &execRecorder{}, r)
	runner.dial = blackholeDial
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7",
		Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}, OnNetwork: true}
	probes := map[string]*manifests.Probe{
		"tcpSocket": {TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(8080)}, TimeoutSeconds: 1},
		"httpGet":   {HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}, TimeoutSeconds: 1},
	}
	for _, kind := range []string{"tcpSocket", "httpGet"} {
		err := runner.Run(context.Background(), target, probes[kind])
		if !errors.Is(err, podruntime.ErrNoVerdict) {
			t.Errorf("%s probe whose dial timed out while the route is undecided: %v; want no verdict (it would count towards a restart)", kind, err)
		}
	}
}

// TestRefusedDNSDialMeansReachable: the route is decided by dialing the
// DNS server as soon as its helper's "start" event arrives, before the
// helper's process listens. A refused connection proves the network
// routes from here (judgeDirect itself treats a refusal as an answer), so
// update must not decide "relay": relay is never re-checked, and a
// controller on the Docker host would then exec in the DNS helper for
// every probe of every pod, for good, and lose all probes whenever that
// one helper is being replaced.
func TestRefusedDNSDialMeansReachable(t *testing.T) {
	st := &store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", DNSIP: "10.222.8.0"}
	dns := []dockerx.Container{{ID: "dns1", Name: "i_dns", Role: dockerx.RoleDNS, Instance: "i", State: dockerx.StateRunning}}
	r := newProbeRoute("i", quietLog(), nil, func() {})
	r.dial = func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	r.update(context.Background(), st, false, dns)
	if _, relay := r.via(); relay {
		t.Fatalf("the DNS server refused the connection (routed, not listening yet): mode %s; want direct (or undecided until it listens)", r.mode)
	}
}
