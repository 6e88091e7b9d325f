package store

import (
	"context"
	"testing"
	"time"
)

// expectName waits for name on ch and fails on anything else: temporary
// files and other names must not show up.
func expectName(t *testing.T, ch <-chan string, name string) {
	t.Helper()
	select {
	case got, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		if got != name {
			t.Fatalf("watch sent %q, want %q", got, name)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no watch event for %q", name)
	}
}

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
		want string
	}{
		{"apply creates", func() error { _, err := s.Apply(deps(dep("web")), ApplyOptions{}); return err }, "web"},
		{"apply configures", func() error { _, err := s.Apply(deps(dep("web", replicas(2))), ApplyOptions{}); return err }, "web"},
		{"delete tombstones", func() error { return s.Delete("web") }, "web"},
		{"other name", func() error { _, err := s.Apply(deps(dep("api")), ApplyOptions{}); return err }, "api"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); err != nil {
				t.Fatal(err)
			}
			expectName(t, ch, st.want)
			for _, extra := range drain(ch) {
				if extra != st.want {
					t.Errorf("unexpected extra event %q", extra)
				}
			}
		})
	}

	// Unchanged applies and status writes do not touch deployments/.
	if _, err := s.Apply(deps(dep("api")), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteStatus("api", &Status{ObservedGeneration: 1}); err != nil {
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
