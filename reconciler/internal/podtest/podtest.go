// Package podtest is test support shared by the tests of package
// reconciler (its Deployment controller) and package podruntime (the pod
// runtime they drive): probe runners, dials and probes whose behaviour a test
// decides, and a wait on a condition. Only _test.go files import it.
//
// Invariant: nothing here waits on time for a verdict: a runner answers
// when the test says so (GateRunner), and WaitFor waits on a condition.
package podtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// T0 is the planner's "now" in tests.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// MemRecorder records events in memory, as "Kind/name Type Reason:
// message".
type MemRecorder struct {
	mu  sync.Mutex
	evs []string
}

// Event records an event.
func (m *MemRecorder) Event(obj store.InvolvedObject, typ, reason, msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evs = append(m.evs, fmt.Sprintf("%s/%s %s %s: %s", obj.Kind, obj.Name, typ, reason, msg))
}

// Has reports whether an event starts with prefix and contains contains.
func (m *MemRecorder) Has(prefix, contains string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.evs {
		if strings.HasPrefix(e, prefix) && strings.Contains(e, contains) {
			return true
		}
	}
	return false
}

// Dump is every event recorded, one a line.
func (m *MemRecorder) Dump() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.evs, "\n")
}

// Events is a copy of the events recorded so far.
func (m *MemRecorder) Events() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.evs...)
}

// Image is the image the fake engines of these tests hold.
const Image = "img:1"

// GateRunner is a podruntime.ProbeRunner whose probes wait: each succeeds
// once Open is closed, or, for the container FailID, fails once Failed is
// closed, or ends with its context.
type GateRunner struct {
	Open, Failed chan struct{}
	FailID       string
}

// Run waits for the gate.
func (g GateRunner) Run(ctx context.Context, t podruntime.ProbeTarget, _ *manifests.Probe) error {
	failed := g.Failed
	if t.ContainerID != g.FailID {
		failed = nil // never
	}
	select {
	case <-g.Open:
		return nil
	case <-failed:
		return errors.New("probe failed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// FastProbe is an httpGet probe that runs every second and judges on one
// result.
func FastProbe() *manifests.Probe {
	return &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
}

// TCPProbe is a tcpSocket probe of port 80 every period seconds, failing
// after failures in a row.
func TCPProbe(period, failures int32) *manifests.Probe {
	return &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(80)}, PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: failures}
}

// WaitFor waits until cond holds, failing t after 10 s.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// ScriptedDial answers the probe route's reachability dial: ok (a
// connection already closed at its far end), or Err.
type ScriptedDial struct {
	mu    sync.Mutex
	Err   error
	dials []string
}

// Dial records addr and answers.
func (d *ScriptedDial) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = append(d.dials, addr)
	if d.Err != nil {
		return nil, d.Err
	}
	c1, c2 := net.Pipe()
	c2.Close()
	return c1, nil
}

// Dials lists the addresses dialed, in order.
func (d *ScriptedDial) Dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...)
}

// Count is how many dials were made.
func (d *ScriptedDial) Count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.dials)
}
