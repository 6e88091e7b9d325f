package services

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Drain takes a pod out of every Service before its graceful stop begins
// (docs/design.md §8, §10): the stopper calls it (as its Drainer) before
// the stop signal, so that no proxy sends a new connection to a pod that
// is going. It marks the pod (namespace, name as `dockctl get pods` shows
// it) terminating and returns once every Service that selected it has a
// data plane that acknowledged a configuration without it — at once when
// no Service selects it — or ctx's error, wrapped, when ctx ends first.
// The mark holds while the pod's stop is in flight (Update keeps it), so a
// sync that listed before the stop began cannot put the pod back.
func (t *Tracker) Drain(ctx context.Context, namespace, pod string) error {
	ref := podRef{namespace, pod}
	t.loadStored()
	t.mu.Lock()
	var found []*PodEndpoint
	for _, pods := range t.byDeployment {
		if p := pods[pod]; p != nil && p.Namespace == namespace {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		t.mu.Unlock()
		return nil // never fed: no Service can have it
	}
	affected := map[string]bool{}
	for key, s := range t.services {
		if s.publishNotReady {
			continue // it keeps terminating pods: nothing to wait for
		}
		for _, p := range found {
			if s.selects(p) {
				affected[key] = true
			}
		}
	}
	t.draining[ref] = true
	changed := false
	for _, p := range found {
		changed = changed || !p.Terminating
		p.Terminating = true // pods are only read under mu
	}
	if changed {
		t.version++
	}
	want := t.version
	t.mu.Unlock()
	if len(affected) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(affected))
	t.queue(keys)
	for {
		t.mu.Lock()
		var waiting []string
		for _, k := range keys {
			if _, live := t.services[k]; live && t.acked[k] < want {
				waiting = append(waiting, k)
			}
		}
		ch := t.changed
		t.mu.Unlock()
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("drain pod %s/%s: not acknowledged by service %s: %w", namespace, pod, strings.Join(waiting, ", "), ctx.Err())
		}
	}
}
