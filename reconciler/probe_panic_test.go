package reconciler

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// panickingRunner panics on every probe, as a bug in a probe's handling of
// an odd response or setting would.
type panickingRunner struct{ calls atomic.Int32 }

func (r *panickingRunner) Run(context.Context, podruntime.ProbeTarget, *manifests.Probe) error {
	r.calls.Add(1)
	panic("probe bug")
}

// A probe that panics must not take the controller down: the probe counts
// as failed (not ready), and every other deployment keeps being synced.
func TestProbePanicIsAFailedProbe(t *testing.T) {
	h := newHarness(t, Options{})
	runner := &panickingRunner{}
	h.ctrl.prober.SetRunner(runner)
	probed := testDeployment("web", 1, "x")
	probed.Spec.Template.Spec.Containers[0].ReadinessProbe = fastProbe()
	h.apply(probed)
	h.start()
	h.waitFor("the probe to run (and panic) twice", func() bool { return runner.calls.Load() >= 2 })
	h.apply(testDeployment("api", 2, "x"))
	h.waitReplicas("api", 2)
	rec, err := h.store.Lookup("", "web")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := h.store.ReadStatus("", "web")
	cs := h.ours("web")
	_, views := View(rec, st, nil, cs, h.ctrl.opts.Now())
	for _, c := range cs {
		if views[c.ID].Ready {
			t.Fatalf("container %s is ready although its probe panicked", c.Name)
		}
	}
}
