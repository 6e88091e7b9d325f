package main

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/events"

	"github.com/dockctl/dockctl/manifests"
)

// rollingSection names the section both rolling-update figures (dockctl's
// and Swarm's) are recorded under, so the ratio can pair them.
const rollingSection = "rolling update"

// benchRollingDockctl times a template change (an env value) on a
// 20-replica deployment with maxSurge 25% / maxUnavailable 0, from `dockctl
// apply` to the moment every old container has died and 20 containers of
// the new template hash have started. Whether dockctl rolls (5 at a time)
// or replaces everything at once, this is the figure a user sees; the
// controller log says which it did.
func benchRollingDockctl(ctx context.Context, e *env, s settings, rep *report) error {
	n := s.RollingReplicas
	figure := fmt.Sprintf("dockctl, %d replicas, maxSurge 25%%, maxUnavailable 0", n)
	d, err := measureDockctlRolling(ctx, e, "rolling", n, "25%", "0")
	if err != nil {
		rep.na(rollingSection, figure, err.Error())
		return err
	}
	rep.duration(rollingSection, figure, d)
	if s.Quick {
		return nil
	}
	// The rolling figure compared with Swarm: 10 replicas at Kubernetes'
	// default 25%/25%, next to Swarm at --update-parallelism 3 (measured in
	// the Swarm section).
	d, err = measureDockctlRolling(ctx, e, "rolling10", 10, "25%", "25%")
	if err != nil {
		rep.na(rollingSection, rolling10Figure, err.Error())
		return err
	}
	rep.duration(rollingSection, rolling10Figure, d)
	return nil
}

const (
	rolling10Figure      = "dockctl, 10 replicas, maxSurge 25%, maxUnavailable 25%"
	rolling10SwarmFigure = "swarm, 10 replicas, --update-parallelism 3 --update-order start-first"
)

func measureDockctlRolling(ctx context.Context, e *env, name string, n int, surge, unavailable string) (time.Duration, error) {
	c, err := e.startController(ctx, name, 30*time.Second, "")
	if err != nil {
		return 0, err
	}
	defer c.stop()
	if err := c.apply(ctx, e.manifestWith(name, n, "v1", surge, unavailable)); err != nil {
		return 0, err
	}
	oldIDs, err := e.waitRunning(ctx, n, 2*time.Minute, "io.dockctl.deployment="+name)
	if err != nil {
		return 0, err
	}
	time.Sleep(settle)

	next := e.manifestWith(name, n, "v2", surge, unavailable)
	hash, err := templateHash(next)
	if err != nil {
		return 0, err
	}
	w := e.hub.watch()
	defer w.close()
	t0 := time.Now()
	if err := c.apply(ctx, next); err != nil {
		return 0, err
	}
	t1, err := w.until(ctx, 2*time.Minute, replaced(oldIDs, n, "io.dockctl.template-hash", hash))
	if err != nil {
		return 0, err
	}
	// Confirm with a list: exactly n containers, all of the new template.
	if _, err := e.waitRunning(ctx, n, 30*time.Second, "io.dockctl.deployment="+name, "io.dockctl.template-hash="+hash); err != nil {
		return 0, err
	}
	logf("  dockctl rolling update of %d: %s", n, t1.Sub(t0).Round(time.Millisecond))
	return t1.Sub(t0), nil
}

// replaced is done once every old container has died (removed by dockctl,
// or shut down by Swarm, which keeps task history) and n new containers
// whose label key has the value want have started.
func replaced(oldIDs []string, n int, key, want string) func(events.Message) bool {
	old := map[string]bool{}
	for _, id := range oldIDs {
		old[id] = true
	}
	died := map[string]bool{}
	started := map[string]bool{}
	return func(m events.Message) bool {
		switch {
		case m.Action == events.ActionDie && old[m.Actor.ID]:
			died[m.Actor.ID] = true
		case m.Action == events.ActionStart && !old[m.Actor.ID] && (key == "" || m.Actor.Attributes[key] == want):
			started[m.Actor.ID] = true
		}
		return len(died) == len(old) && len(started) >= n
	}
}

// templateHash computes the hash dockctl will label the new containers
// with, through the same decoding and defaulting `dockctl apply` uses.
func templateHash(manifest string) (string, error) {
	docs, err := manifests.Decode("bench.yaml", []byte(manifest))
	if err != nil {
		return "", err
	}
	return manifests.TemplateHash(&docs[0].Deployment.Spec.Template), nil
}
