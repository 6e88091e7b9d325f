package podruntime_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// TestRuntimeRunsPodsOfAnyOwner: an owner no workload package knows
// (kind "TestOwner") hands the runtime its pods; the runtime creates each
// under its own name (dockerx.PodContainerName) labelled with the owner,
// restarts a crashed OnFailure pod after its backoff, keeps a pod that
// finished (Succeeded, Failed) and stops gracefully, then removes, a pod
// the owner no longer asks for (docs/design.md §17).
func TestRuntimeRunsPodsOfAnyOwner(t *testing.T) {
	const instance, ns, img = "t", "shop", "img:1"
	e := dockerfake.New(img)
	stopped := make(chan error, 4)
	backoff := podruntime.Backoff{Base: time.Minute, Max: time.Hour}
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: backoff,
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler), Done: func(_ string, err error) { stopped <- err }}})
	defer rt.Stop()
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "batch", UID: "u1"}
	pod := func(name, policy string) podruntime.PodSpec {
		tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "main", Image: img}}}}
		return podruntime.PodSpec{Namespace: ns, Name: name, Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl), RestartPolicy: policy}
	}
	specs := []podruntime.PodSpec{
		pod("crashes", manifests.RestartOnFailure),
		pod("succeeds", manifests.RestartOnFailure),
		pod("fails", manifests.RestartNever),
		pod("dropped", manifests.RestartAlways),
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.SetNow(func() time.Time { return t0 })
	ctx := context.Background()
	sync := func(specs []podruntime.PodSpec, now time.Time) podruntime.SyncResult {
		t.Helper()
		rt.Stopper().Listing("TestOwner/batch")
		cs, err := e.ListContainers(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: "TestOwner/batch", Namespace: ns, Owner: owner, Pods: specs, Observed: cs, Now: now})
		if err != nil {
			t.Fatalf("sync at %s: %v", now.Sub(t0), err)
		}
		return res
	}
	byPod := func() map[string]dockerx.Container {
		out := map[string]dockerx.Container{}
		for _, c := range e.Snapshot() {
			out[c.Name] = c
		}
		return out
	}
	name := func(pod string) string { return dockerx.PodContainerName(instance, ns, pod) }

	res := sync(specs, t0)
	cs := byPod()
	for _, s := range specs {
		c, ok := cs[name(s.Name)]
		switch {
		case !ok:
			t.Fatalf("pod %s: no container %s among %v", s.Name, name(s.Name), cs)
		case c.State != dockerx.StateRunning:
			t.Errorf("pod %s: %s, want running", s.Name, c.State)
		case c.Labels[dockerx.LabelOwnerKind] != "TestOwner" || c.Labels[dockerx.LabelOwner] != "batch" || c.Labels[dockerx.LabelDeployment] != "" || c.Labels[dockerx.LabelNamespace] != ns:
			t.Errorf("pod %s: labels %v, want owner TestOwner/batch in %s and no deployment", s.Name, c.Labels, ns)
		}
		if got := res.Pods[s.Name].Phase; got != corev1.PodRunning {
			t.Errorf("pod %s: phase %s, want Running", s.Name, got)
		}
	}

	// Exits within the crash window: the OnFailure pod that failed waits
	// out its backoff, the others finished.
	for pod, code := range map[string]int{"crashes": 1, "succeeds": 0, "fails": 1} {
		if err := e.Exit(cs[name(pod)].ID, code); err != nil {
			t.Fatal(err)
		}
	}
	t1 := t0.Add(time.Second)
	res = sync(specs, t1)
	if res.RequeueAfter != backoff.Base {
		t.Errorf("requeue after %s, want the backoff %s", res.RequeueAfter, backoff.Base)
	}
	if c := byPod()[name("crashes")]; c.State != dockerx.StateExited {
		t.Errorf("crashed OnFailure pod: %s within its backoff, want exited", c.State)
	}
	for pod, want := range map[string]corev1.PodPhase{"succeeds": corev1.PodSucceeded, "fails": corev1.PodFailed} {
		if got := res.Pods[pod].Phase; got != want {
			t.Errorf("pod %s: phase %s, want %s", pod, got, want)
		}
	}

	res = sync(specs, t1.Add(backoff.Base))
	cs = byPod()
	if c := cs[name("crashes")]; c.State != dockerx.StateRunning || res.Pods["crashes"].Restarts != 1 {
		t.Errorf("crashed OnFailure pod after its backoff: %s with %d restarts, want running, restarted once", c.State, res.Pods["crashes"].Restarts)
	}
	for _, pod := range []string{"succeeds", "fails"} {
		if c, ok := cs[name(pod)]; !ok || c.State != dockerx.StateExited {
			t.Errorf("finished pod %s: %+v, want kept, exited", pod, c)
		}
	}

	// The owner no longer wants "dropped": stopped, then removed.
	e.ResetCalls()
	e.HoldRemovals(true) // the test, not a timer, ends the removal
	sync(specs[:3], t1.Add(backoff.Base+time.Second))
	if err := <-stopped; err != nil {
		t.Fatalf("stop of the dropped pod: %v", err)
	}
	if n := e.FinishRemovals(); n != 1 {
		t.Errorf("%d removals in progress once the stop ended, want the dropped pod's", n)
	}
	if _, ok := byPod()[name("dropped")]; ok {
		t.Errorf("dropped pod still has its container")
	}
	if calls := e.Calls(); calls["stop"] != 1 {
		t.Errorf("calls %v, want one graceful stop before the removal", calls)
	}
	if _, ok := byPod()[name("fails")]; !ok {
		t.Errorf("the failed Never pod was not kept")
	}
}
