package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// requestDeletion records a pod deletion as `dockctl delete pod` does.
func requestDeletion(t *testing.T, h *harness, c dockerx.Container, grace *int64) {
	t.Helper()
	req := store.PodDeletion{Pod: podName("web", &c), Containers: []string{c.ID}, GracePeriodSeconds: grace, RequestedAt: time.Now()}
	if err := h.store.RequestPodDeletions("", "web", []store.PodDeletion{req}); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) pendingDeletions() []store.PodDeletion {
	h.t.Helper()
	reqs, err := h.store.PodDeletions("", "web")
	if err != nil {
		h.t.Fatal(err)
	}
	return reqs
}

func has(cs []dockerx.Container, id string) bool {
	for _, c := range cs {
		if c.ID == id {
			return true
		}
	}
	return false
}

// A deleted pod, end to end through the fake engine, woken by the state
// directory's watch alone (no resync): it is stopped gracefully (Killing),
// shows as terminating, and its replacement is created while it still
// stops (maxSurge 1 of 2 replicas); it is removed once its grace ends,
// and the request is cleared.
func TestControllerDeletesPod(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	release := make(chan time.Time)
	stops := ignoreStops(h, func(time.Duration) <-chan time.Time { return release }, "web")
	h.apply(withGrace(testDeployment("web", 2, "x"), 20))
	h.start()
	victim := h.waitReplicas("web", 2)[0]
	pod := podName("web", &victim)

	requestDeletion(t, h, victim, nil)
	waitLong(t, h, "a replacement running beside the stopping pod", func() bool {
		cs := h.ours("web")
		running := 0
		for _, c := range cs {
			if c.ID != victim.ID && c.State == dockerx.StateRunning {
				running++
			}
		}
		return running == 2 && has(cs, victim.ID)
	})
	// The stopper sends the stop on its own goroutine, after the plan that
	// created the replacement: wait for it rather than assume it was sent.
	waitLong(t, h, "the stop of the deleted pod sent", func() bool { return len(stops.asked()) > 0 })
	if g := stops.asked(); len(g) != 1 || g[0] != 20*time.Second {
		t.Fatalf("stops asked %v, want one with the pod's grace of 20s", g)
	}
	waitEvent(t, h, m, "Pod/"+pod+" Normal Killing", "Stopping container web")
	waitLong(t, h, "the deleted pod recorded as terminating", func() bool { return terminating(h, "web", victim.ID) })
	if n := len(h.pendingDeletions()); n != 1 {
		t.Fatalf("%d requests pending while the pod stops, want 1", n)
	}

	close(release) // its grace ends: killed
	waitLong(t, h, "the deleted pod removed", func() bool { return !has(h.ours("web"), victim.ID) })
	h.waitReplicas("web", 2)
	waitLong(t, h, "the request cleared", func() bool { return len(h.pendingDeletions()) == 0 })
}

// --grace-period=0 --force on a pod whose stop is under way (a stuck
// Terminating pod) shortens its stop to the kubelet's least grace of 2s;
// a request for a pod that no longer exists changes nothing and is
// cleared; one recorded while no controller ran is carried out when one
// starts.
func TestControllerPodDeletionRequests(t *testing.T) {
	t.Run("force while terminating", func(t *testing.T) {
		h := newHarness(t, Options{})
		// It ignores its stop signal: killed when a stop of a few seconds
		// ends, never within the test by the first one.
		stops := ignoreStops(h, func(d time.Duration) <-chan time.Time {
			if d <= podruntime.MinPodGrace {
				return time.After(d)
			}
			return nil
		}, "web")
		h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
		h.start()
		victim := h.waitReplicas("web", 2)[0]
		requestDeletion(t, h, victim, nil)
		waitLong(t, h, "its stop under way", func() bool { return len(stops.asked()) == 1 })
		requestDeletion(t, h, victim, new(int64))
		waitLong(t, h, "the stuck pod killed within 2s", func() bool { return !has(h.ours("web"), victim.ID) })
		h.waitReplicas("web", 2)
		waitLong(t, h, "the request cleared", func() bool { return len(h.pendingDeletions()) == 0 })
	})
	t.Run("pod gone", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.apply(testDeployment("web", 2, "x"))
		h.start()
		before := h.waitReplicas("web", 2)
		h.engine.ResetCalls()
		gone := before[0]
		gone.ID = "a-predecessor-of-the-same-name"
		requestDeletion(t, h, gone, nil)
		waitLong(t, h, "the request cleared", func() bool { return len(h.pendingDeletions()) == 0 })
		if w := h.engine.WriteCalls(); w != 0 {
			t.Fatalf("%d Docker writes for a pod that is gone", w)
		}
		if after := h.ours("web"); len(after) != 2 || !has(after, before[0].ID) || !has(after, before[1].ID) {
			t.Fatalf("containers changed: %s", summary(after))
		}
	})
	t.Run("recorded while no controller ran", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.apply(withGrace(testDeployment("web", 2, "x"), 0))
		h.start()
		victim := h.waitReplicas("web", 2)[0]
		h.stop()
		requestDeletion(t, h, victim, nil)
		h.ctrl = New(h.engine, h.store, h.opts)
		h.start()
		waitLong(t, h, "the deleted pod removed", func() bool { return !has(h.ours("web"), victim.ID) })
		h.waitReplicas("web", 2)
		waitLong(t, h, "the request cleared", func() bool { return len(h.pendingDeletions()) == 0 })
	})
}

// TestShorterGraceWhileStoppingKillsSooner: a pod deleted again with a
// shorter grace period while its stop is under way (kubectl delete pod
// --now / --grace-period=N on a pod stuck Terminating) is killed when the
// shorter grace ends, as the kubelet cancels a termination whose grace was
// shortened and kills sooner. The store keeps the shorter grace ("only
// ever shortens"); the stop in flight must heed it rather than the first
// stop's grace (here the 5-minute bound).
func TestShorterGraceWhileStoppingKillsSooner(t *testing.T) {
	h := newHarness(t, Options{})
	// The container ignores its stop signal; a stop of a few seconds is
	// killed when it ends, a longer one never within the test.
	stops := ignoreStops(h, func(d time.Duration) <-chan time.Time {
		if d <= 5*time.Second {
			return time.After(d)
		}
		return nil
	}, "web")
	h.apply(withGrace(testDeployment("web", 2, "x"), 3600))
	h.start()
	victim := h.waitReplicas("web", 2)[0]
	requestDeletion(t, h, victim, nil)
	waitLong(t, h, "its stop under way with the pod's own grace", func() bool { return len(stops.asked()) == 1 })

	one := int64(1) // --now
	requestDeletion(t, h, victim, &one)
	if reqs := h.pendingDeletions(); len(reqs) != 1 || reqs[0].GracePeriodSeconds == nil || *reqs[0].GracePeriodSeconds != 1 {
		t.Fatalf("requests %+v, want one with the shortened grace of 1s", reqs)
	}
	waitLong(t, h, "the pod killed once its shortened grace of 1s ended", func() bool { return !has(h.ours("web"), victim.ID) })
}

// TestDeletePodOfRefusedDeployment: a pod of a deployment the controller
// refuses (here a privilege it was restarted without: its running pods
// are left as they are) is still deleted on request: the refusal must not
// skip the deletions with the plan, or `delete pod` prints `pod "…"
// deleted`, then waits out its timeout and fails with no word of why, and
// the request lingers to be carried out whenever the refusal ends.
// Kubernetes deletes a pod whatever its ReplicaSet's state; a user's
// delete only removes.
func TestDeletePodOfRefusedDeployment(t *testing.T) {
	yes := true
	h := newHarness(t, Options{Allow: manifests.Policy{Privileged: true}})
	d := testDeployment("web", 2, "x")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{Privileged: &yes}
	h.apply(d)
	h.start()
	victim := h.waitReplicas("web", 2)[0]
	h.stop()
	// Restarted without --allow-privileged: the deployment is refused,
	// its running pods kept.
	h.opts.Allow = manifests.Policy{}
	h.ctrl = New(h.engine, h.store, h.opts)
	h.start()
	h.waitFor("the refusal", func() bool {
		c := h.condition("web", manifests.ConditionReplicaFailure)
		return c != nil && strings.Contains(c.Message, "--allow-privileged")
	})
	requestDeletion(t, h, victim, nil)
	waitLong(t, h, "the deleted pod of the refused deployment removed", func() bool { return !has(h.ours("web"), victim.ID) })
}
