package services

import (
	"maps"
	"slices"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/reconcile"
)

// Helpers after pods (docs/design.md §10, a new instance's first apply):
// a Service's proxy and the DNS server that do not run yet wait to be
// created while pods are being created and started, at most
// helperDeferMax, so that on an engine that creates and starts a few
// containers a second the pods — and the publisher, which is never
// deferred, serving their host ports straight to them — come first. A
// proxy serves the ClusterIP only and the DNS server names only; neither
// is on the path of a published port. Kubernetes does not order pods
// after CoreDNS or kube-proxy either: a pod started before them resolves
// and reaches a ClusterIP once they serve. A Service's address is still
// allocated at once (the pods' Service variables wait for it, Env), its
// status and published ports written; only the helper's create waits. A
// helper that runs (a push, a replacement) never waits, nor one when no
// pod is starting.

// helperDeferMax bounds how long a helper's create waits for the pods
// being started.
const helperDeferMax = 3 * time.Second

// deferCreate reports how long key's helper create, which plan holds,
// waits for the pods being started: 0 (it runs now) unless no helper of
// key is observed, plan creates one and pods are being started, within
// helperDeferMax of its first wait.
func (s *Controller) deferCreate(key string, plan HelperPlan, observed []dockerx.Container) time.Duration {
	if s.cfg.PodsStarting == nil {
		return 0
	}
	now := s.cfg.Now()
	s.mu.Lock()
	// A helper that ran before (pushed: a config it acknowledged) is
	// replaced at once: its ClusterIP or names are down until it is.
	if len(observed) > 0 || s.pushed[key] != nil || !slices.ContainsFunc(plan.Ops, func(op HelperOp) bool { return op.Kind == HelperCreate }) {
		delete(s.deferred, key)
		s.mu.Unlock()
		return 0
	}
	since, waited := s.deferred[key]
	if !waited {
		since = now
		s.deferred[key] = now
	}
	s.mu.Unlock()
	// Asked after the key is noted: PodsStarted, once the last pod is
	// started, queues every key noted before it.
	left := since.Add(helperDeferMax).Sub(now)
	if left <= 0 || !s.cfg.PodsStarting() {
		s.mu.Lock()
		delete(s.deferred, key)
		s.mu.Unlock()
		return 0
	}
	if !waited {
		s.log.Info("helper's create waits for the pods being started", "service", key, "atMost", helperDeferMax)
	}
	return left
}

// PodsStarted is told that no pod is being created or started any more:
// the helpers whose create waited are created now.
func (s *Controller) PodsStarted() {
	s.mu.Lock()
	keys := slices.Collect(maps.Keys(s.deferred))
	s.mu.Unlock()
	for _, k := range keys {
		s.loop.Add(reconcile.Request{Key: k})
	}
}
