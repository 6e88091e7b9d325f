// Package workloadtest holds the fixtures the tests of the workload
// decision packages (job, cronjob, statefulset, daemonset, replicaset)
// share: a pod as the pod runtime reports it, and readers of a decision's
// pods and events.
//
// Invariants:
//   - Only tests import it; nothing here reads a clock: every time is the
//     caller's.
//   - A pod built here is ready exactly when it is given a ready-since
//     time, as podruntime reports a pod (ReadySince zero while not ready),
//     so workload.ObservedPod's Ready and Available read it as the
//     controllers would.
package workloadtest

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// ReadyCondition is a pod's Ready condition, true or false.
func ReadyCondition(ready bool) []corev1.PodCondition {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
}

// Pod is an observed pod NAME in phase, ready since readySince when that
// is not zero, not ready otherwise. Labels, creation and containers are
// the caller's to set.
func Pod(name string, phase corev1.PodPhase, readySince time.Time) workload.ObservedPod {
	return workload.ObservedPod{Name: name,
		Status: podruntime.PodStatus{Phase: phase, Conditions: ReadyCondition(!readySince.IsZero()), ReadySince: readySince}}
}

// Terminating is p being stopped to be removed.
func Terminating(p workload.ObservedPod) workload.ObservedPod {
	p.Status.Terminating = true
	return p
}

// PodNames are the names of the pods a decision creates, in its order.
func PodNames(ps []podruntime.PodSpec) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// Reasons are the reasons of the events a decision records, in its
// order.
func Reasons(es []workload.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Reason)
	}
	return out
}

// Equal reports got differing from want as an error on what.
func Equal(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}
