package reconciler

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/testfs"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// addMainReplicas adds running replicas of d as `main` (before pods) made
// them: main's containerLabels copies every template label, then sets
// instance, deployment and template-hash — no role, no pod labels of its
// own.
func addMainReplicas(t *testing.T, h *harness, d *manifests.Deployment, n int) []string {
	t.Helper()
	hash := manifests.TemplateHash(&d.Spec.Template)
	var ids []string
	for i := 0; i < n; i++ {
		l := maps.Clone(d.Spec.Template.Metadata.Labels)
		l[dockerx.LabelInstance] = "i"
		l[dockerx.LabelDeployment] = d.Metadata.Name
		l[dockerx.LabelTemplateHash] = hash
		id, err := h.engine.Add(dockerx.Container{Name: dockerx.ContainerName("i", "", d.Metadata.Name, hash, i), Image: testImage,
			State: dockerx.StateRunning, Labels: l, Created: time.Now().Add(-time.Hour)}, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Upgrade: containers made by main must keep running untouched. A plain
// main container is left alone (control case). But main copied every
// template label onto its containers, and did not reserve dockctl's label
// keys; a template label io.dockctl.pod-uid (or io.dockctl.pod) that main
// accepted and put on its containers makes this branch's podruntime.GroupPods read a
// single-container replica as a member of a holder pod without holder: the
// pod is "dead" and the replica is removed and re-created. Pod membership
// is judged by the container's own template, which needs no holder.
func TestReviewUpgradeMainContainersUntouched(t *testing.T) {
	for _, tt := range []struct {
		name   string
		labels map[string]string
	}{
		{"plain", nil},
		{"template label io.dockctl.pod-uid", map[string]string{dockerx.LabelPodUID: "v1"}},
		// A namespace label copied from the template must not move main's
		// replica into another namespace, where it would be an orphan and
		// default/web would replace it.
		{"template label io.dockctl.namespace", map[string]string{dockerx.LabelNamespace: "team"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond})
			d := testDeployment("web", 2, "x")
			maps.Copy(d.Spec.Template.Metadata.Labels, tt.labels)
			// main accepted such a template; apply now refuses it, but a
			// record main stored keeps running.
			if errs := manifests.Validate(d); (errs != nil) != (tt.labels != nil) {
				t.Fatalf("Validate = %v", errs)
			}
			h.apply(d)
			ids := addMainReplicas(t, h, d, 2)
			h.start()
			h.waitResyncs(10)
			if n := h.engine.WriteCalls(); n != 0 {
				t.Errorf("%d write calls (%v) on main's running replicas; want none", n, h.engine.Calls())
			}
			for _, id := range ids {
				if !hasID(h.engine.Snapshot(), id) {
					t.Errorf("main's replica %s was removed; containers now: %s", id[len(id)-6:], summary(h.engine.Snapshot()))
				}
			}
		})
	}
}

// mainDocker is what Docker showed, after main's controller stopped, of
// the containers and volumes it made for the state directory
// store/testdata/main-state (see there): a deployment of single-container
// pods after a rollout restart, and a pod with a holder, an init container,
// a sidecar and an emptyDir volume.
type mainDocker struct {
	Containers []struct {
		Name, Image, State string
		ExitCode           int
		Created            time.Time
		Labels             map[string]string
	}
	Volumes []struct {
		Name   string
		Labels map[string]string
	}
}

const mainInstance = "upgrade-7c1d"

// Upgrade (docs/design.md §16), the contract of namespaces: the state directory and
// the containers main made keep running under this release without one
// Docker call that writes — nothing recreated, renamed or relabelled — and
// a deployment of the same name in another namespace runs next to them.
func TestUpgradeMainStateAndContainers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "main-docker.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx mainDocker
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(testfs.CopyState(t, filepath.Join("..", "store", "testdata", "main-state")), mainInstance)
	if err != nil {
		t.Fatal(err)
	}
	engine := dockerfake.New()
	for _, v := range fx.Volumes {
		engine.AddVolume(v.Name, v.Labels)
	}
	ids := map[string]string{} // name → ID
	for _, c := range fx.Containers {
		engine.AddImage(c.Image)
		id, err := engine.Add(dockerx.Container{Name: c.Name, Image: c.Image, State: c.State, ExitCode: c.ExitCode, Created: c.Created, Labels: c.Labels}, "")
		if err != nil {
			t.Fatal(err)
		}
		ids[c.Name] = id
	}
	if len(ids) != 6 || len(fx.Volumes) != 1 {
		t.Fatalf("fixture: %d containers, %d volumes; want 6 and 1", len(ids), len(fx.Volumes))
	}
	opts := Options{Instance: mainInstance, ResyncPeriod: 20 * time.Millisecond, SettleTime: 20 * time.Millisecond, Logger: quietLog()}
	h := &harness{t: t, engine: engine, store: st, opts: opts, ctrl: New(engine, st, opts)}
	h.ctrl.prober.SetRunner(&switchRunner{fail: map[string]bool{}}) // every probe passes, as under main
	h.start()
	h.waitResyncs(10)
	if n := engine.WriteCalls(); n != 0 {
		t.Errorf("%d write calls (%v) on main's containers; want none", n, engine.Calls())
	}
	snap := engine.Snapshot()
	for name, id := range ids {
		if !hasID(snap, id) {
			t.Errorf("main's %s was removed; containers now: %s", name, summary(snap))
		}
	}
	for _, c := range snap {
		if ids[c.Name] != c.ID || c.Namespace != "default" {
			t.Errorf("%s (%s): not main's, or not in default (%q)", c.Name, c.ID, c.Namespace)
		}
	}
	for _, name := range []string{"web", "web-sidecar"} {
		rec, err := st.Get("", name)
		if err != nil {
			t.Fatal(err)
		}
		h.waitFor(name+" observed", func() bool {
			s, err := st.ReadStatus("", name)
			return err == nil && s.ObservedGeneration == rec.Generation
		})
	}

	// Another namespace's deployment of the same name runs beside them.
	team := inNamespace("team", testDeployment("web", 1, "x"))
	h.applyBundle([]string{"team"}, team)
	engine.AddImage(testImage)
	created := h.waitIn("team", "web", 1)
	if want := mainInstance + "_web.team-" + manifests.TemplateHash(&team.Spec.Template) + "-0"; created[0].Name != want {
		t.Errorf("team/web's container is %s, want %s", created[0].Name, want)
	}
	h.waitResyncs(3)
	for name, id := range ids {
		if !hasID(engine.Snapshot(), id) {
			t.Errorf("main's %s was removed once team/web ran", name)
		}
	}
}
