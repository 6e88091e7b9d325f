package job

import (
	"time"

	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// The pod failure backoff, as Kubernetes' Job controller computes it
// (backoff_utils.go) but from the pods themselves, which dockctl keeps
// when they finish: the failures since the last success, and the last
// one's time, decide how long a new pod waits.

// podFailureBackoff is the Job controller's pod failure backoff in the
// pod runtime's one implementation of a doubling backoff
// (podruntime.Backoff): PodFailureBackoff doubled per failure, capped at
// MaxPodFailureBackoff.
var podFailureBackoff = podruntime.Backoff{Base: PodFailureBackoff, Max: MaxPodFailureBackoff}

// backoffDelay is the wait after n failures in a row: PodFailureBackoff
// doubled n-1 times, capped at MaxPodFailureBackoff; none for n = 0.
func backoffDelay(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return podFailureBackoff.Delay(n)
}

// failureRun is a run of failures: how many since the last success and
// when the last one happened.
type failureRun struct {
	n    int
	last time.Time
}

// remaining is how long a new pod must still wait at now.
func (r failureRun) remaining(now time.Time) time.Duration {
	if r.n == 0 {
		return 0
	}
	return max(0, backoffDelay(r.n)-now.Sub(r.last))
}

// runOf returns the failures that finished after the last success among
// the given finished pods (counted failures and successes).
func runOf(failures, successes []*workload.ObservedPod) failureRun {
	var lastSuccess time.Time
	for _, p := range successes {
		if t := p.FinishTime(); t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	var r failureRun
	for _, p := range failures {
		t := p.FinishTime()
		if !lastSuccess.IsZero() && !t.After(lastSuccess) {
			continue
		}
		r.n++
		if t.After(r.last) {
			r.last = t
		}
	}
	return r
}
