package store

import (
	"context"
	"maps"
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
			want := map[string]bool{}
			for _, k := range st.want {
				want[k] = true
			}
			missing := maps.Clone(want)
			deadline := time.After(5 * time.Second)
			for len(missing) > 0 {
				select {
				case k := <-ch:
					if !want[k] {
						t.Fatalf("watch sent %q, want only %v", k, st.want)
					}
					delete(missing, k)
				case <-deadline:
					t.Fatalf("no watch event for %v", slices.Collect(maps.Keys(missing)))
				}
			}
			for _, extra := range drain(ch) {
				if !want[extra] {
					t.Errorf("unexpected extra event %q", extra)
				}
			}
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

func TestWatchMissingDirectory(t *testing.T) {
	s, err := OpenReadOnly(t.TempDir()+"/missing", "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Watch(t.Context()); err == nil {
		t.Error("Watch of a missing directory succeeded")
	}
}
