package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// How httpGet and tcpSocket probes reach pods (docs/design.md §10, Probes).
// Pods live on the instance network; a controller on the Docker host reaches
// it through the bridge, but one in a container on another network, or
// talking to a remote DOCKER_HOST, cannot. Then probes run inside the
// network, relayed through the instance's DNS helper (`dockctl helper probe
// --spec JSON`, exec'd there), which works wherever the exec API does; the
// controller is never joined to the network.
//
// The choice is made by dialing the DNS server (TCP 53 on its address)
// with a short timeout: at start (once its helper runs), after each
// creation of the network, and again when a direct probe finds no route to
// a pod (EHOSTUNREACH, ENETUNREACH), at most once per recheckEvery. An
// answer, or a refusal (its helper started but does not listen yet), means
// the network routes from here.

// ModeObserver records how probes reach pods (metrics); nil records nothing.
type ModeObserver interface {
	// ProbeMode reports the mode: Direct, Relay or Undecided.
	ProbeMode(mode string)
}

// Probe modes (ModeObserver.ProbeMode).
const (
	// Undecided: not decided yet (no DNS helper runs); probes go
	// directly, as before the instance network.
	Undecided = "undecided"
	// Direct: the controller dials pods itself.
	Direct = "direct"
	// Relay: probes run in the DNS helper.
	Relay = "relay"
)

const (
	// reachTimeout bounds the dial that decides the mode: on a network
	// that routes, a listening server answers in well under it.
	reachTimeout = time.Second
	// recheckEvery spaces out re-checks asked for by probes that found no
	// route (a pod that just died gives the same error).
	recheckEvery = 30 * time.Second
	// relayMargin is what the exec of a relayed probe may take beyond the
	// probe's own timeout.
	relayMargin = 5 * time.Second
)

// Route decides and remembers how probes reach pods. Its methods are
// safe for concurrent use; a nil Route never relays.
type Route struct {
	instance string
	log      *slog.Logger
	obs      ModeObserver // may be nil
	// Dial connects to an address (tests substitute it).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// sweep queues the sweep, which re-checks.
	sweep func()
	now   func() time.Time

	mu         sync.Mutex
	mode       string
	network    string // the instance network's name; "" none
	helper     string // the DNS helper's container ID
	decidedFor string // the network (name and subnet) the mode was decided for
	recheck    bool
	lastCheck  time.Time
	lastWarn   time.Time
	announced  bool // the mode was logged and reported once
}

// NewRoute returns an undecided route for the instance's network; sweep
// queues the sweep that decides it (Update), obs (may be nil) is told of
// each mode.
func NewRoute(instance string, log *slog.Logger, obs ModeObserver, sweep func()) *Route {
	r := &Route{instance: instance, log: log, obs: obs, sweep: sweep, now: time.Now, mode: Undecided}
	var d net.Dialer
	r.Dial = d.DialContext
	return r
}

// networkName is the network whose address a probe targets ("" none).
func (r *Route) NetworkName() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.network
}

// via returns the DNS helper to relay through, when probes are relayed.
func (r *Route) Via() (helper string, relay bool) {
	if r == nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.helper, r.mode == Relay
}

// judgeDirect turns the error of a direct probe into its verdict. Until
// the mode is decided, a probe that could not even connect (no route, or
// no answer to its dial) tells nothing about the pod — the controller may
// be unable to reach the network at all — so it gives no verdict: a
// controller starting in a container must not restart every pod whose
// liveness it cannot probe yet. A route that failed asks for a re-check.
func (r *Route) judgeDirect(err error) error {
	if r == nil || err == nil {
		return err
	}
	r.unreachable(err)
	r.mu.Lock()
	undecided := r.mode == Undecided && r.network != ""
	r.mu.Unlock()
	var op *net.OpError
	if undecided && errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: the instance network may not be reachable from here (probe route undecided): %v", podruntime.ErrNoVerdict, err)
	}
	return err
}

// noteEvent is told of every container event: the DNS helper starting
// while the mode is undecided queues the sweep that decides it. (A network
// a create makes outside a sweep queues a sweep itself: instanceNetwork.made.)
func (r *Route) NoteEvent(ev dockerx.Event) {
	if ev.Role != dockerx.RoleDNS || ev.Action != "start" {
		return
	}
	r.mu.Lock()
	undecided := r.mode == Undecided
	r.mu.Unlock()
	if undecided {
		r.sweep()
	}
}

// update is the sweep's: st is the instance network (nil: none to use),
// created whether this sweep created it, cs the instance's containers. It
// decides the mode when it must, dialing outside the lock.
func (r *Route) Update(ctx context.Context, st *store.NetworkStatus, created bool, cs []dockerx.Container) {
	helper := dnsHelper(r.instance, cs)
	r.mu.Lock()
	if st == nil {
		r.network, r.helper = "", helper
		r.setModeLocked(Direct, "no instance network")
		r.mu.Unlock()
		return
	}
	r.network, r.helper = st.Name, helper
	key := st.Name + " " + st.Subnet
	need := created || r.mode == Undecided || r.recheck || r.decidedFor != key
	if !need {
		r.mu.Unlock()
		return
	}
	if helper == "" {
		r.setModeLocked(Undecided, "no DNS helper runs yet: probes go directly until one does")
		r.mu.Unlock()
		return
	}
	r.recheck = false
	r.lastCheck = r.now()
	r.mu.Unlock()

	addr := net.JoinHostPort(st.DNSIP, "53")
	dctx, cancel := context.WithTimeout(ctx, reachTimeout)
	conn, err := r.Dial(dctx, "tcp", addr)
	cancel()
	mode, why := Direct, "the DNS server "+addr+" answers from here"
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		// Its helper started but does not listen yet: the refusal came
		// back over the network, which routes from here.
		why = "the DNS server " + addr + " refused the connection (not listening yet): the network routes from here"
	case err != nil:
		mode, why = Relay, fmt.Sprintf("the instance network is not reachable from here (%v): probes run in the DNS helper", err)
	default:
		conn.Close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		return // cut short by shutdown: decide nothing
	}
	r.decidedFor = key
	r.setModeLocked(mode, why)
}

func (r *Route) setModeLocked(mode, why string) {
	if r.mode == mode && r.announced {
		return
	}
	r.mode, r.announced = mode, true
	r.log.Info("probe route", "mode", mode, "network", r.network, "why", why)
	if r.obs != nil {
		r.obs.ProbeMode(mode)
	}
}

// unreachable is told of a direct probe's error: no route to the pod
// asks for a re-check at the next sweep (queued now), at most once per
// recheckEvery.
func (r *Route) unreachable(err error) {
	if r == nil || !(errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)) {
		return
	}
	r.mu.Lock()
	if r.recheck || r.network == "" || r.now().Sub(r.lastCheck) < recheckEvery {
		r.mu.Unlock()
		return
	}
	r.recheck = true
	r.mu.Unlock()
	r.sweep()
}

// relayLost is told that the DNS helper could not run a relayed probe:
// it is looked for again at the next sweep. Warned about at most once per
// recheckEvery (every probe of every pod meets it).
func (r *Route) relayLost(helper string, err error) {
	r.mu.Lock()
	warn := r.now().Sub(r.lastWarn) >= recheckEvery
	if warn {
		r.lastWarn = r.now()
	}
	requeue := r.helper == helper
	if requeue {
		r.helper = ""
	}
	r.mu.Unlock()
	if warn {
		r.log.Warn("probes cannot be relayed through the DNS helper; they are not counted until it runs again", "err", err)
	}
	if requeue {
		r.sweep()
	}
}

// dnsHelper returns the ID of the instance's running DNS helper in cs.
func dnsHelper(instance string, cs []dockerx.Container) string {
	for i := range cs {
		if c := &cs[i]; c.Role == dockerx.RoleDNS && c.Instance == instance && c.State == dockerx.StateRunning {
			return c.ID
		}
	}
	return ""
}

// relayCommand is the exec that runs one probe in a helper.
func relayCommand(spec helperapi.ProbeSpec) ([]string, error) {
	js, err := helperapi.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return []string{helperapi.Binary, "helper", helperapi.ModeProbe, "--spec", js}, nil
}

// relayVerdict maps the relay's exit code (and its one-line reason) to a
// probe outcome.
func relayVerdict(code int, out []byte, timeout time.Duration) error {
	reason := strings.TrimSpace(string(out))
	switch code {
	case helperapi.ExitOK:
		return nil
	case helperapi.ExitFailed:
		return fmt.Errorf("probe failed (run in the DNS helper): %s", reason)
	case helperapi.ExitTimeout:
		return fmt.Errorf("probe timed out after %v (run in the DNS helper): %s", timeout, reason)
	}
	return fmt.Errorf("%w: the probe relay exited %d: %s", podruntime.ErrNoVerdict, code, reason)
}
