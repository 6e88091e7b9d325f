package reconciler

import "time"

// Observer receives what the controller does, for metrics. Its methods must
// be cheap and must not block: they run on the sync path. A deployment is
// named by its namespace ("default" included) and name.
type Observer interface {
	// SyncDone reports one sync of a deployment and its outcome.
	SyncDone(namespace, deployment string, took time.Duration, err error)
	// DeploymentObserved reports a deployment's counts after a sync.
	DeploymentObserved(namespace, deployment string, desired, actual, ready, available int)
	// DeploymentForgotten reports that a deployment was deleted and its
	// containers are gone: its per-deployment series can be dropped.
	DeploymentForgotten(namespace, deployment string)
	// EventStreamGap reports a broken and re-established event stream.
	EventStreamGap()
}

type nopObserver struct{}

func (nopObserver) SyncDone(string, string, time.Duration, error)         {}
func (nopObserver) DeploymentObserved(string, string, int, int, int, int) {}
func (nopObserver) DeploymentForgotten(string, string)                    {}
func (nopObserver) EventStreamGap()                                       {}
