package store

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// drain discards events until none arrives for a moment, returning them.
func drain(ch <-chan string) []string {
	var got []string
	for {
		select {
		case n := <-ch:
			got = append(got, n)
		case <-time.After(200 * time.Millisecond):
			return got
		}
	}
}

func TestWatch(t *testing.T) {
	s := openTemp(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name string
		do   func() error
		want []string // every key, in any order, and nothing else
	}{
		{"apply creates", func() error { _, err := s.Apply(deps(dep("web")), ApplyOptions{}); return err }, []string{"default/web"}},
		{"apply configures", func() error { _, err := s.Apply(deps(dep("web", replicas(2))), ApplyOptions{}); return err }, []string{"default/web"}},
		{"delete tombstones", func() error { return s.Delete("", "web") }, []string{"default/web"}},
		{"other name", func() error { _, err := s.Apply(deps(dep("api")), ApplyOptions{}); return err }, []string{"default/api"}},
		{"service", func() error { _, err := s.Apply(Bundle{Services: svcs(svc("", "web"))}, ApplyOptions{}); return err }, []string{"service:default/web"}},
		// A namespace's directories appear with its first objects: they are
		// watched from then on, and what they hold already is reported.
		{"new namespace with objects", func() error {
			_, err := s.Apply(Bundle{Namespaces: nss("team"), Services: svcs(svc("team", "web")), Deployments: []*manifests.Deployment{depIn("team", "web")}}, ApplyOptions{})
			return err
		}, []string{"namespace:team", "service:team/web", "team/web"}},
		{"later write in that namespace", func() error {
			_, err := s.Apply(Bundle{Deployments: []*manifests.Deployment{depIn("team", "api")}}, ApplyOptions{})
			return err
		}, []string{"team/api"}},
		{"delete namespace", func() error { return s.DeleteNamespace("team") }, []string{"namespace:team", "service:team/web", "team/web", "team/api"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); err != nil {
				t.Fatal(err)
			}
			expectKeys(t, ch, st.want)
		})
	}

	// Unchanged applies and status writes do not touch deployments/.
	if _, err := s.Apply(deps(dep("api")), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteStatus("", "api", &Status{ObservedGeneration: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteServiceStatus("", "web", &ServiceStatus{ClusterIP: "10.222.8.2"}); err != nil {
		t.Fatal(err)
	}
	if extra := drain(ch); len(extra) > 0 {
		t.Errorf("events without a record change: %v", extra)
	}

	cancel()
	select {
	case _, ok := <-ch:
		for ok {
			_, ok = <-ch
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel not closed after cancel")
	}
}

// expectKeys waits (generously) for every key of want, in any order, and
// fails on any other.
func expectKeys(t *testing.T, ch <-chan string, want []string) {
	t.Helper()
	wanted := map[string]bool{}
	for _, k := range want {
		wanted[k] = true
	}
	missing := maps.Clone(wanted)
	deadline := time.After(5 * time.Second)
	for len(missing) > 0 {
		select {
		case k := <-ch:
			if !wanted[k] {
				t.Fatalf("watch sent %q, want only %v", k, want)
			}
			delete(missing, k)
		case <-deadline:
			t.Fatalf("no watch event for %v", slices.Collect(maps.Keys(missing)))
		}
	}
	for _, extra := range drain(ch) {
		if !wanted[extra] {
			t.Errorf("unexpected extra event %q", extra)
		}
	}
}

// WatchStatus reports what the controller writes, which Watch leaves out,
// in namespaces created after it began too; a write that changes nothing
// and a record's change send nothing.
func TestWatchStatus(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Apply(Bundle{Deployments: []*manifests.Deployment{dep("web")}, Services: svcs(svc("", "web"))}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.WatchStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		name string
		do   func() error
		want []string
	}{
		{"deployment status", func() error { return s.WriteStatus("", "web", &Status{ObservedGeneration: 1}) }, []string{"default/web"}},
		{"same status again", func() error { return s.WriteStatus("", "web", &Status{ObservedGeneration: 1}) }, nil},
		{"service status", func() error { return s.WriteServiceStatus("", "web", &ServiceStatus{ClusterIP: "10.222.8.2"}) }, []string{"service:default/web"}},
		{"manifests report", func() error { return s.WriteSourceStatus([]SourceStatus{{Path: "/m", Ready: true}}) }, []string{ManifestsStatusKey}},
		{"a record changes", func() error { _, err := s.Apply(deps(dep("web", replicas(2))), ApplyOptions{}); return err }, nil},
		{"status in a new namespace", func() error {
			if _, err := s.Apply(Bundle{Namespaces: nss("team"), Deployments: []*manifests.Deployment{depIn("team", "api")}}, ApplyOptions{}); err != nil {
				return err
			}
			return s.WriteStatus("team", "api", &Status{ObservedGeneration: 1})
		}, []string{"team/api"}},
		{"service status there", func() error {
			if _, err := s.Apply(Bundle{Services: svcs(svc("team", "db"))}, ApplyOptions{}); err != nil {
				return err
			}
			return s.WriteServiceStatus("team", "db", &ServiceStatus{ClusterIP: "10.222.8.3"})
		}, []string{"service:team/db"}},
	} {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); err != nil {
				t.Fatal(err)
			}
			expectKeys(t, ch, st.want)
		})
	}
	cancel()
	for range ch {
	}
}

// A read-only store of a state directory nothing was written to yet (get
// -w, events -w before the first apply) is watched, from its nearest
// existing parent, without creating anything; what is written once the
// directory appears is reported, the first records too.
func TestWatchMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parent", "state")
	ro, err := OpenReadOnly(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	records, err := ro.Watch(ctx)
	if err != nil {
		t.Fatalf("Watch of a missing directory: %v", err)
	}
	status, err := ro.WatchStatus(ctx)
	if err != nil {
		t.Fatalf("WatchStatus of a missing directory: %v", err)
	}
	events, err := ro.WatchEvents(ctx)
	if err != nil {
		t.Fatalf("WatchEvents of a missing directory: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("watching created %s (%v): a read-only store writes nothing", filepath.Dir(dir), err)
	}
	s, err := Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(Bundle{Deployments: []*manifests.Deployment{dep("web")}, Namespaces: nss("team"), Services: svcs(svc("team", "db"))}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteStatus("", "web", &Status{ObservedGeneration: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordEvents([]Event{ev("Pod", "", "p", EventNormal, "Started", "m", time.Now())}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		ch   <-chan string
		want []string
	}{
		{"records", records, []string{"default/web", "namespace:team", "service:team/db"}},
		{"status", status, []string{"default/web"}},
		{"events", events, []string{"default"}},
	} {
		waitKeys(t, w.name, w.ch, w.want)
	}
}

// waitKeys waits until ch has sent every key of want ("" stands for any).
func waitKeys(t *testing.T, name string, ch <-chan string, want []string) {
	t.Helper()
	missing := map[string]bool{}
	for _, k := range want {
		missing[k] = true
	}
	deadline := time.After(30 * time.Second)
	for len(missing) > 0 {
		select {
		case k := <-ch:
			if k == "" {
				clear(missing)
			}
			delete(missing, k)
		case <-deadline:
			t.Fatalf("%s: never reported %v", name, slices.Sorted(maps.Keys(missing)))
		}
	}
}
