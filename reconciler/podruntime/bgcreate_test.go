package podruntime_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// A pod created in the background is the owner's until a list begun after
// its create ended shows it: a Sync on a list taken before that neither
// creates it again nor removes it as unwanted, and reports it in
// Creating; the Sync after Listing takes it in (its start recorded) and
// reports it no more. A create that succeeded is not told to
// RuntimeConfig.Created (the container's start event tells its owner).
func TestBackgroundCreateIsTheOwnersUntilAListShowsIt(t *testing.T) {
	const instance, ns, img, key = "t", "default", "img:1", "TestOwner/bg"
	e := dockerfake.New(img)
	var mu sync.Mutex
	var ended []string
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler)},
		Created: func(k string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				k += ": " + err.Error()
			}
			ended = append(ended, k)
		},
	})
	defer rt.Stop()
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "bg", UID: "u1"}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "main", Image: img}}}}
	spec := podruntime.PodSpec{Namespace: ns, Name: "bg-1", Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl), RestartPolicy: manifests.RestartNever}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	list := func() []dockerx.Container {
		t.Helper()
		cs, err := e.ListContainers(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	syncOn := func(observed []dockerx.Container, pods ...podruntime.PodSpec) podruntime.SyncResult {
		t.Helper()
		res, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: key, Namespace: ns, Owner: owner,
			Pods: pods, Observed: observed, Now: now, CreateInBackground: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the pod is handed over, not waited for", func(t *testing.T) {
			rt.Listing(key)
			res := syncOn(list(), spec)
			if st := res.Pods["bg-1"]; st.Phase != "Pending" {
				t.Errorf("status of the pod being created %+v, want Pending", st)
			}
			rt.WaitCreates()
		}},
		{"a list taken before its end shows none: kept, not created again", func(t *testing.T) {
			res := syncOn(nil)
			if len(res.Creating) != 1 || res.Creating[0].Spec.Name != "bg-1" || res.Creating[0].Status.Phase != "Pending" {
				t.Errorf("Creating = %+v, want bg-1, Pending", res.Creating)
			}
			res = syncOn(nil, spec)
			if calls := e.Calls(); calls["create"] != 1 || calls["start"] != 1 {
				t.Errorf("%d creates and %d starts, want 1 and 1", calls["create"], calls["start"])
			}
			if len(res.Creating) != 1 {
				t.Errorf("Creating = %+v, want the pod still being created", res.Creating)
			}
		}},
		{"the list after its end takes it in", func(t *testing.T) {
			rt.Listing(key)
			res := syncOn(list(), spec)
			if len(res.Creating) != 0 {
				t.Errorf("Creating = %+v after a list showed the pod, want none", res.Creating)
			}
			if st := res.Pods["bg-1"]; st.Phase != "Running" {
				t.Errorf("status %+v, want Running", st)
			}
			if calls := e.Calls(); calls["create"] != 1 || calls["start"] != 1 || calls["remove"] != 0 {
				t.Errorf("calls %v, want the one create and start, no removal", calls)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ended) != 0 {
				t.Errorf("Created was told %v, want nothing for a create that succeeded", ended)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}
