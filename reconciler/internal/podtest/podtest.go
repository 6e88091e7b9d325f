// Package podtest is test support shared by the tests of package
// reconciler (its Deployment controller) and package podruntime (the pod
// runtime they drive): probe runners and probes whose behaviour a test
// decides, and a wait on a condition. Only _test.go files import it.
//
// Invariant: nothing here waits on time for a verdict: a runner answers
// when the test says so (GateRunner), and WaitFor waits on a condition.
package podtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

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
