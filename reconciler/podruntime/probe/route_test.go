package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// modeRecorder is a ModeObserver.
type modeRecorder struct {
	mu    sync.Mutex
	modes []string
}

func (m *modeRecorder) ProbeMode(mode string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.modes = append(m.modes, mode)
}

// last is the mode last reported ("" none).
func (m *modeRecorder) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.modes) == 0 {
		return ""
	}
	return m.modes[len(m.modes)-1]
}

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
	r := NewRoute("i", quietLog(), obs, func() { sweeps++ })
	now := podtest.T0
	r.now = func() time.Time { return now }
	d := &podtest.ScriptedDial{}
	r.Dial = d.Dial

	r.Update(ctx, st, true, nil)
	if r.mode != Undecided || d.Count() != 0 {
		t.Fatalf("without a DNS helper: mode %s after %d dials, want undecided without dialing", r.mode, d.Count())
	}
	if mode := obs.last(); mode != Undecided {
		t.Fatalf("the first decision is not reported: metric says %q", mode)
	}
	r.Update(ctx, st, false, dns)
	if r.mode != Direct || d.Count() != 1 || d.Dials()[0] != "10.222.8.0:53" {
		t.Fatalf("DNS server answers: mode %s after dials %q, want direct after dialing 10.222.8.0:53", r.mode, d.Dials())
	}
	if mode := obs.last(); mode != Direct {
		t.Fatalf("metric says %q, want direct", mode)
	}
	r.Update(ctx, st, false, dns)
	if d.Count() != 1 {
		t.Fatalf("decided again at a resync: %d dials", d.Count())
	}

	// A probe finds no route: a re-check at the next sweep, which finds
	// the network unreachable now.
	d.Err = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH}
	now = now.Add(recheckEvery)
	r.unreachable(fmt.Errorf("probe: %w", syscall.ECONNREFUSED))
	if sweeps != 0 {
		t.Fatal("a refused connection is an answer: no re-check")
	}
	r.unreachable(fmt.Errorf("probe: %w", d.Err))
	r.unreachable(fmt.Errorf("probe: %w", d.Err))
	if sweeps != 1 {
		t.Fatalf("%d sweeps queued, want 1", sweeps)
	}
	r.Update(ctx, st, false, dns)
	if helper, relay := r.Via(); !relay || helper != "dns1" || d.Count() != 2 {
		t.Fatalf("after the re-check: via %q, relay %v, %d dials; want relay through dns1 after 2 dials", helper, relay, d.Count())
	}
	if mode := obs.last(); mode != Relay {
		t.Fatalf("metric says %q, want relay", mode)
	}
	// Re-checks are spaced out: a pod that dies gives the same error.
	r.unreachable(fmt.Errorf("probe: %w", d.Err))
	if sweeps != 1 {
		t.Fatalf("re-check within %v of the last: %d sweeps", recheckEvery, sweeps)
	}

	// The network created again (removed by hand): decided again.
	d.Err = nil
	r.Update(ctx, st, true, dns)
	if r.mode != Direct || d.Count() != 3 {
		t.Fatalf("after the network's re-creation: %s after %d dials", r.mode, d.Count())
	}
	// No instance network (a conflict): direct, as before.
	r.Update(ctx, nil, false, dns)
	if helper, relay := r.Via(); relay || r.NetworkName() != "" {
		t.Fatalf("without a network: relay %v via %q on %q", relay, helper, r.NetworkName())
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
		{Undecided, "dockctl_i", unreach, true},
		{Undecided, "dockctl_i", fmt.Errorf("get: %w", timeout), true},
		{Undecided, "dockctl_i", refused, false},
		{Undecided, "dockctl_i", status, false},
		{Undecided, "", unreach, false},
		{Direct, "dockctl_i", unreach, false},
	}
	for _, tt := range tests {
		r := NewRoute("i", quietLog(), nil, func() {})
		r.mode, r.network = tt.mode, tt.network
		got := r.judgeDirect(tt.err)
		if got == nil || errors.Is(got, podruntime.ErrNoVerdict) != tt.noVerdict {
			t.Errorf("%s on %q, %v: %v; want no verdict = %v", tt.mode, tt.network, tt.err, got, tt.noVerdict)
		}
	}
	if r := NewRoute("i", quietLog(), nil, func() {}); r.judgeDirect(nil) != nil {
		t.Error("a success is a success")
	}
}

// TestProbeRouteNoteEvent: the DNS helper's start queues the sweep that
// decides the route, only while it is undecided.
func TestProbeRouteNoteEvent(t *testing.T) {
	sweeps := 0
	r := NewRoute("i", quietLog(), nil, func() { sweeps++ })
	r.NoteEvent(dockerx.Event{Action: "start", Role: dockerx.RoleDNS})
	r.NoteEvent(dockerx.Event{Action: "die", Role: dockerx.RoleDNS})
	r.NoteEvent(dockerx.Event{Action: "start", Role: dockerx.RoleReplica})
	r.mode = Direct
	r.NoteEvent(dockerx.Event{Action: "start", Role: dockerx.RoleDNS})
	if sweeps != 1 {
		t.Fatalf("%d sweeps queued, want 1 (the helper's start while undecided)", sweeps)
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
	r := NewRoute("i", quietLog(), nil, func() {})
	r.Dial = func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	r.Update(context.Background(), st, false, dns)
	if _, relay := r.Via(); relay {
		t.Fatalf("the DNS server refused the connection (routed, not listening yet): mode %s; want direct (or undecided until it listens)", r.mode)
	}
}
