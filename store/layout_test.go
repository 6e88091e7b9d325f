package store

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/layout")

// layoutClock makes every time stamp the store writes reproducible: each
// reading of the clock is one second after the previous one.
func layoutClock(t *testing.T) {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prev := storeNow
	storeNow = func() time.Time { at = at.Add(time.Second); return at }
	t.Cleanup(func() { storeNow = prev })
}

// The state directory's layout and file formats (docs/design.md, state
// layout) are what an upgrade reads in place: a sequence of applies,
// updates, prunes and deletes of every stored kind — namespaces,
// ownership (apply and manifests directories), last-applied
// configurations, deployment revisions, tombstones, statuses — must leave
// exactly the files testdata/layout holds: same paths, modes and bytes,
// and the same results. The goldens were written by the code before the
// kinds became registrations; regenerate them (go test -run
// TestStateLayoutIsStable ./store/ -update) only for a deliberate format
// change, which then needs an upgrade path.
func TestStateLayoutIsStable(t *testing.T) {
	layoutClock(t)
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir, "layout")
	if err != nil {
		t.Fatal(err)
	}
	// The implicit default namespace's creation time is the instance
	// file's.
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, instanceFile), fixed, fixed); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	step := func(name string, results any, err error) {
		t.Helper()
		fmt.Fprintf(&log, "== %s\n", name)
		if err != nil {
			fmt.Fprintf(&log, "error: %v\n", err)
			return
		}
		if drs, ok := results.([]DeleteResult); ok {
			for _, r := range drs {
				fmt.Fprintf(&log, "%s %s/%s: %v\n", r.Kind, r.Namespace, r.Name, r.Err)
			}
			return
		}
		b, merr := json.Marshal(results)
		if merr != nil {
			t.Fatal(merr)
		}
		fmt.Fprintf(&log, "%s\n", b)
	}
	applyOpts := ApplyOptions{SaveConfig: true}
	lastApplied := func(c *manifests.ConfigMap) {
		c.Metadata.Annotations = map[string]string{lastAppliedAnnotation: `{"data":{"k":"v"}}`, "note": "kept"}
	}
	secretAnnotated := func(s *manifests.Secret) {
		s.Metadata.Annotations = map[string]string{lastAppliedAnnotation: `{"stringData":{"password":"x"}}`}
	}
	nodePort := func(s *manifests.Service) { s.Spec.Type = manifests.ServiceTypeNodePort }
	teamLabel := func(s *manifests.Service) { s.Metadata.Labels = map[string]string{"tier": "front"} }
	first := Bundle{
		Namespaces: []*manifests.Namespace{nsObj("team", "tier", "front"), nsObj("ops")},
		ConfigMaps: []*manifests.ConfigMap{
			cmObj("", "settings", map[string]string{"k": "v"}, lastApplied),
			cmObj("team", "frozen.conf", map[string]string{"a": "b"}, immutable, cmLabel),
		},
		Secrets: []*manifests.Secret{
			secretObj("", "db", "", map[string]string{"password": "x"}, secretAnnotated),
			secretObj("team", "tls", manifests.SecretTypeOpaque, map[string]string{"key": "y"}),
		},
		Claims:      []*manifests.PersistentVolumeClaim{claimObj("", "data", "1Gi"), claimObj("team", "cache", "2Gi")},
		Services:    []*manifests.Service{svc("", "web", nodePort), svc("team", "api", teamLabel)},
		Deployments: []*manifests.Deployment{dep("web"), depIn("team", "api", label("tier", "front")), depIn("team", "worker")},
	}
	res, err := s.Apply(first, applyOpts)
	step("apply every kind", res, err)

	second := first
	second.Namespaces = []*manifests.Namespace{nsObj("team", "tier", "back"), nsObj("ops")}
	second.ConfigMaps = []*manifests.ConfigMap{cmObj("", "settings", map[string]string{"k": "w"}, lastApplied), first.ConfigMaps[1]}
	second.Services = []*manifests.Service{svc("", "web", nodePort, func(s *manifests.Service) { s.Metadata.Labels = map[string]string{"x": "y"} }), first.Services[1]}
	second.Deployments = []*manifests.Deployment{dep("web", image("nginx:1.28")), first.Deployments[1], depIn("team", "worker", replicas(3))}
	res, err = s.Apply(second, applyOpts)
	step("apply changes: a revision, data, metadata only", res, err)

	res, err = s.Apply(Bundle{ConfigMaps: []*manifests.ConfigMap{cmObj("", "settings", map[string]string{"k": "x"})}}, ApplyOptions{Manager: dirA})
	step("conflict with another manager", res, err)

	dir1 := Bundle{
		Namespaces:  []*manifests.Namespace{nsObj("dirns")},
		ConfigMaps:  []*manifests.ConfigMap{cmObj("dirns", "conf", map[string]string{"a": "1"})},
		Secrets:     []*manifests.Secret{secretObj("dirns", "cred", "", map[string]string{"p": "q"})},
		Claims:      []*manifests.PersistentVolumeClaim{claimObj("dirns", "vol", "1Gi")},
		Services:    []*manifests.Service{svc("dirns", "front")},
		Deployments: []*manifests.Deployment{depIn("dirns", "front"), depIn("ops", "job")},
	}
	o := dirOpts(dirA)
	o.SaveConfig = true
	res, err = s.Apply(dir1, o)
	step("manifests directory apply", res, err)

	step("deployment status", nil, s.WriteStatus("team", "api", &Status{ObservedGeneration: 1, Message: "ok",
		Extra: map[string]json.RawMessage{controllerStateKey: json.RawMessage(`{"rollout":{"sizes":{}}}`)}}))
	step("deployment status default", nil, s.WriteStatus("", "web", &Status{ObservedGeneration: 2}))
	step("service status", nil, s.WriteServiceStatus("", "web", &ServiceStatus{ObservedGeneration: 1, ClusterIP: "10.0.0.7",
		NodePorts: []NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 30080}}}))
	step("pod deletion", nil, s.RequestPodDeletions("team", "api", []PodDeletion{{Pod: "api-abc", UID: "u-1"}}))

	act, err := s.UpdateMetadataAs("label", ref(KindConfigMap, "team", "frozen.conf"), setLabel("x", "1"))
	step("label configmap", act, err)
	act, err = s.UpdateMetadataAs("annotate", ref(KindService, "team", "api"), setLabel("y", "2"))
	step("label service", act, err)
	act, err = s.UpdateMetadataAs("label", ref(KindNamespace, "", "ops"), setLabel("z", "3"))
	step("label namespace", act, err)
	act, err = s.UpdateMetadataAs("label", ref(KindSecret, "", "db"), setLabel("z", "3"))
	step("label secret", act, err)
	act, err = s.UpdateMetadataAs("label", ref(KindPersistentVolumeClaim, "", "data"), setLabel("z", "3"))
	step("label claim", act, err)
	act, err = s.UpdateMetadataAs("label", ref(KindDeployment, "team", "worker"), setLabel("z", "3"))
	step("label deployment", act, err)
	rec, err := s.UpdateRecordAs("scale", "team", "worker", func(_ *Record, d *manifests.Deployment) error { d.Spec.Replicas = new(int32); return nil })
	if err == nil {
		step("scale", rec.Generation, nil)
	} else {
		step("scale", nil, err)
	}

	dres, err := s.DeleteObjects([]ObjectRef{
		ref(KindDeployment, "", "web"), ref(KindService, "", "web"), ref(KindConfigMap, "", "settings"),
		ref(KindSecret, "", "db"), ref(KindPersistentVolumeClaim, "", "data"), ref(KindDeployment, "", "missing"),
		ref(KindNamespace, "", manifests.DefaultNamespace),
	})
	step("delete one of each", dres, err)

	res, err = s.Apply(Bundle{Deployments: []*manifests.Deployment{depIn("team", "api", label("tier", "front"))}},
		ApplyOptions{SaveConfig: true, Prune: true, PruneSelector: mustSelector(t, "app")})
	step("prune a namespace with a selector", res, err)

	res, err = s.Apply(Bundle{Deployments: []*manifests.Deployment{dep("web", image("nginx:1.29"))}, Services: []*manifests.Service{svc("", "web")},
		ConfigMaps: []*manifests.ConfigMap{cmObj("", "settings", map[string]string{"k": "revived"})}}, applyOpts)
	step("revive", res, err)

	res, err = s.Apply(Bundle{Deployments: []*manifests.Deployment{depIn("ops", "job")}}, o)
	step("manifests directory prunes what left it", res, err)

	res, err = s.Apply(Bundle{}, dirOpts(dirB))
	step("a second path of the same directory controller prunes what the first applied", res, err)

	dres, err = s.DeleteObjects([]ObjectRef{ref(KindNamespace, "", "team"), ref(KindConfigMap, "team", "frozen.conf"), ref(KindNamespace, "", "nowhere")})
	step("delete a namespace with everything in it", dres, err)

	res, err = s.Apply(Bundle{Namespaces: []*manifests.Namespace{nsObj("team")}, Deployments: []*manifests.Deployment{depIn("team", "api")}}, applyOpts)
	step("revive the namespace", res, err)

	step("status after the revival", nil, s.WriteStatus("team", "api", &Status{ObservedGeneration: 3, Message: "revived"}))

	got := map[string]string{
		"results.txt": log.String(),
		"tree.txt":    layoutTree(t, dir),
	}
	for _, name := range []string{"results.txt", "tree.txt"} {
		golden := filepath.Join("testdata", "layout", name)
		if *updateGolden {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got[name] != string(want) {
			t.Errorf("%s differs from %s:\n%s", name, golden, firstDiff(string(want), got[name]))
		}
	}
}

// layoutTree is every entry of the state directory, sorted by path: its
// mode, and a file's bytes (the lock files' only their size: the flock
// writes nothing).
func layoutTree(t *testing.T, dir string) string {
	t.Helper()
	type entry struct{ path, text string }
	var out []entry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		text := fmt.Sprintf("== %s %v\n", rel, fi.Mode())
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			text += string(b)
		}
		out = append(out, entry{rel, text})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	var b strings.Builder
	for _, e := range out {
		b.WriteString(e.text)
	}
	return b.String()
}

// firstDiff shows where two texts start to differ, line by line.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}
