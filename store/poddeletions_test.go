package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

func grace(s int64) *int64 { return &s }

// A deployment's pod-deletion requests: recorded, read back, merged per
// pod (a second delete only ever shortens the grace), cleared once done
// (a request recorded or changed since stays), the file removed with the
// last one.
func TestPodDeletions(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := PodDeletion{Pod: "web-aaaa-0", Containers: []string{"c0"}, RequestedAt: at}
	b := PodDeletion{Pod: "web-aaaa-1", UID: "u1", Containers: []string{"h1", "m1"}, GracePeriodSeconds: grace(5), RequestedAt: at}
	tests := []struct {
		name   string
		before [][]PodDeletion // requests recorded in turn
		clear  []PodDeletion
		want   []PodDeletion // what PodDeletions returns after
	}{
		{name: "recorded and read back", before: [][]PodDeletion{{a, b}}, want: []PodDeletion{a, b}},
		{name: "same pod again, later, no grace: keeps the earlier grace",
			before: [][]PodDeletion{{b}, {withAt(b, at.Add(time.Second), nil)}},
			want:   []PodDeletion{withAt(b, at.Add(time.Second), grace(5))}},
		{name: "same pod again with a shorter grace: shortened",
			before: [][]PodDeletion{{b}, {withAt(b, at, grace(0))}}, want: []PodDeletion{withAt(b, at, grace(0))}},
		{name: "same pod again with a longer grace: not lengthened",
			before: [][]PodDeletion{{b}, {withAt(b, at, grace(30))}}, want: []PodDeletion{b}},
		{name: "a newer pod of the same name is another request",
			before: [][]PodDeletion{{a}, {{Pod: a.Pod, Containers: []string{"c9"}, RequestedAt: at}}},
			want:   []PodDeletion{a, {Pod: a.Pod, Containers: []string{"c9"}, RequestedAt: at}}},
		{name: "cleared", before: [][]PodDeletion{{a, b}}, clear: []PodDeletion{a}, want: []PodDeletion{b}},
		{name: "a request changed since it was read stays",
			before: [][]PodDeletion{{b}, {withAt(b, at, grace(0))}}, clear: []PodDeletion{b}, want: []PodDeletion{withAt(b, at, grace(0))}},
		{name: "the last one cleared removes the file", before: [][]PodDeletion{{a}}, clear: []PodDeletion{a}},
	}
	for _, tt := range tests {
		for _, ns := range []string{"", "team"} {
			t.Run(tt.name+"/"+orDefault(ns), func(t *testing.T) {
				s := openTemp(t)
				if ns != "" {
					mustApplyBundle(t, s, Bundle{Namespaces: nss(ns), Deployments: []*manifests.Deployment{depIn(ns, "web")}})
				}
				for _, reqs := range tt.before {
					if err := s.RequestPodDeletions(ns, "web", reqs); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.ClearPodDeletions(ns, "web", tt.clear); err != nil {
					t.Fatal(err)
				}
				got, err := s.PodDeletions(ns, "web")
				if err != nil {
					t.Fatal(err)
				}
				if !slices.EqualFunc(got, tt.want, PodDeletion.equal) {
					t.Fatalf("PodDeletions = %+v, want %+v", got, tt.want)
				}
				path := filepath.Join(s.Dir(), podDeletionsPath(ns, "web"))
				fi, err := os.Stat(path)
				switch {
				case len(tt.want) == 0 && !errors.Is(err, fs.ErrNotExist):
					t.Errorf("%s left behind with no request: %v", path, err)
				case len(tt.want) > 0 && (err != nil || fi.Mode().Perm() != filePerm):
					t.Errorf("%s: %v %v", path, fi, err)
				}
				if other, err := s.PodDeletions(ns, "api"); err != nil || len(other) != 0 {
					t.Errorf("another deployment's requests: %v %v", other, err)
				}
			})
		}
	}
}

func withAt(d PodDeletion, at time.Time, g *int64) PodDeletion {
	d.RequestedAt, d.GracePeriodSeconds = at, g
	return d
}

// What the CLI's reading commands open read-only never writes a request,
// nor creates a directory; names that cannot be paths are refused; a file
// of a newer format is refused, a garbled one replaced by the next request.
func TestPodDeletionsSafety(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	ro, err := OpenReadOnly(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	req := []PodDeletion{{Pod: "web-aaaa-0", Containers: []string{"c0"}}}
	if err := ro.RequestPodDeletions("", "web", req); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only RequestPodDeletions: %v, want ErrReadOnly", err)
	}
	if err := ro.ClearPodDeletions("", "web", req); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only ClearPodDeletions: %v, want ErrReadOnly", err)
	}
	if got, err := ro.PodDeletions("", "web"); err != nil || got != nil {
		t.Fatalf("read-only PodDeletions of a missing directory: %v %v", got, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read-only store created %s: %v", dir, err)
	}

	s := openTemp(t)
	for _, bad := range []struct{ ns, name string }{{"", "../web"}, {"../x", "web"}, {"", "Web"}} {
		if err := s.RequestPodDeletions(bad.ns, bad.name, req); err == nil {
			t.Errorf("RequestPodDeletions(%q, %q) accepted", bad.ns, bad.name)
		}
	}
	if err := s.RequestPodDeletions("", "web", []PodDeletion{{Pod: "web-aaaa-0"}}); err == nil {
		t.Error("a request naming no container nor uid was accepted: it could never be matched, nor cleared")
	}
	path := filepath.Join(s.Dir(), podDeletionsPath("", "web"))
	if err := os.WriteFile(path, []byte(`{"version": 99, "requests": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PodDeletions("", "web"); err == nil {
		t.Error("a file of a newer format was read")
	}
	if err := os.WriteFile(path, []byte(`{garbled`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PodDeletions("", "web"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("garbled file: %v, want ErrCorrupt", err)
	}
	if err := s.RequestPodDeletions("", "web", req); err != nil {
		t.Fatalf("a garbled file is replaced by the next request: %v", err)
	}
	if got, err := s.PodDeletions("", "web"); err != nil || len(got) != 1 {
		t.Errorf("after replacing a garbled file: %v %v", got, err)
	}
}

// Watch sends a deployment's pod-deletion key when its requests change,
// in the default namespace and in one whose directory appears later.
func TestWatchPodDeletions(t *testing.T) {
	s := openTemp(t)
	ch, err := s.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	req := []PodDeletion{{Pod: "web-aaaa-0", Containers: []string{"c0"}}}
	if err := s.RequestPodDeletions("", "web", req); err != nil {
		t.Fatal(err)
	}
	expectKeys(t, ch, []string{PodDeletionKey("", "web")})
	got, _ := s.PodDeletions("", "web")
	if err := s.ClearPodDeletions("", "web", got); err != nil {
		t.Fatal(err)
	}
	expectKeys(t, ch, []string{PodDeletionKey("", "web")})

	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), Deployments: []*manifests.Deployment{depIn("team", "api")}})
	expectKeys(t, ch, []string{NamespaceKey("team"), Key("team", "api")})
	if err := s.RequestPodDeletions("team", "api", req); err != nil {
		t.Fatal(err)
	}
	expectKeys(t, ch, []string{PodDeletionKey("team", "api")})
	if kind, ns, name := ParseWatchKey(PodDeletionKey("team", "api")); kind != KindPodDeletion || ns != "team" || name != "api" {
		t.Errorf("ParseWatchKey = %q %q %q", kind, ns, name)
	}
}
