package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// mergeStep is one step of TestApplyMerges: an apply of b (as `apply -f`
// stores it: SaveConfig, unless legacy, an earlier release's apply that
// records no last-applied configuration), or an updater's change.
type mergeStep struct {
	b          *Bundle
	keepPaused bool // the file leaves spec.paused of deployment web out
	legacy     bool
	update     func(t *testing.T, s *Store)
	want       Action // the apply's action on its last object
}

func applyOf(b Bundle, want Action) mergeStep { return mergeStep{b: &b, want: want} }

func depApply(d *manifests.Deployment, want Action) mergeStep {
	return applyOf(Deployments(d), want)
}

var webRef = ref(KindDeployment, "default", "web")

func labeled(r ObjectRef, k, v string) func(*testing.T, *Store) {
	return func(t *testing.T, s *Store) {
		t.Helper()
		if _, err := s.UpdateMetadataAs("label", r, setLabel(k, v)); err != nil {
			t.Fatal(err)
		}
	}
}

func updated(updater string, fn func(*manifests.Deployment)) func(*testing.T, *Store) {
	return func(t *testing.T, s *Store) {
		t.Helper()
		if _, err := s.UpdateRecordAs(updater, "", "web", func(_ *Record, d *manifests.Deployment) error { fn(d); return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func restarted(d *manifests.Deployment) {
	d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationRestartedAt: "2026-12-04T18:00:00Z"}
}

func webOf(t *testing.T, s *Store) *Record {
	t.Helper()
	r, err := s.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func secretOf(t *testing.T, s *Store) *SecretRecord {
	t.Helper()
	r, err := s.LookupSecretRecord("", "sec")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An apply merges the file with the live object as kubectl apply does
// (merge.go): what the file sets wins, what the previous apply set and
// the file no longer does goes, what neither set stays; without a
// last-applied configuration the file replaces the object, as before.
func TestApplyMerges(t *testing.T) {
	env := func(names ...string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			c := &d.Spec.Template.Spec.Containers[0]
			c.Env = nil
			for _, n := range names {
				c.Env = append(c.Env, manifests.EnvVar{Name: n, Value: "v"})
			}
		}
	}
	paused := func(d *manifests.Deployment) { d.Spec.Paused = true }
	secret := func(data map[string]string) *Bundle {
		return &Bundle{Secrets: []*manifests.Secret{secretObj("", "sec", "", data)}}
	}
	tests := []struct {
		name  string
		steps []mergeStep
		check func(t *testing.T, s *Store)
	}{
		{
			name: "a label of dockctl label is kept",
			steps: []mergeStep{
				depApply(dep("web"), Created),
				{update: labeled(webRef, "tier", "front")},
				depApply(dep("web"), Unchanged),
			},
			check: func(t *testing.T, s *Store) {
				if got := webOf(t, s).Deployment.Metadata.Labels["tier"]; got != "front" {
					t.Errorf("label tier = %q, want front", got)
				}
			},
		},
		{
			name: "the restartedAt of rollout restart is kept: no second rollout",
			steps: []mergeStep{
				depApply(dep("web"), Created),
				{update: updated("rollout", restarted)},
				depApply(dep("web"), Unchanged),
			},
			check: func(t *testing.T, s *Store) {
				r := webOf(t, s)
				if r.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" || r.CurrentRevision().Number != 2 || r.Generation != 2 {
					t.Errorf("template annotations %v, revision %d, generation %d; want the restart's, 2, 2",
						r.Deployment.Spec.Template.Metadata.Annotations, r.CurrentRevision().Number, r.Generation)
				}
			},
		},
		{
			name: "a label removed from the file is removed, one of dockctl label is kept",
			steps: []mergeStep{
				depApply(dep("web", label("tier", "front")), Created),
				{update: labeled(webRef, "owner", "me")},
				depApply(dep("web"), Configured),
			},
			check: func(t *testing.T, s *Store) {
				if got, want := webOf(t, s).Deployment.Metadata.Labels, map[string]string{"app": "web", "owner": "me"}; !reflect.DeepEqual(got, want) {
					t.Errorf("labels %v, want %v", got, want)
				}
			},
		},
		{
			name: "replicas after scale are kept when the file leaves them out",
			steps: []mergeStep{
				depApply(dep("web", unsetReplicas), Created),
				{update: updated("scale", replicas(4))},
				depApply(dep("web", unsetReplicas, label("tier", "front")), Configured),
			},
			check: func(t *testing.T, s *Store) {
				if got := webOf(t, s).Deployment.Replicas(); got != 4 {
					t.Errorf("replicas %d, want the scale's 4", got)
				}
			},
		},
		{
			name: "replicas the file no longer sets go back to the default",
			steps: []mergeStep{
				depApply(dep("web", replicas(3)), Created),
				depApply(dep("web", unsetReplicas), Configured),
			},
			check: func(t *testing.T, s *Store) {
				if got := webOf(t, s).Deployment.Replicas(); got != manifests.DefaultReplicas {
					t.Errorf("replicas %d, want the default", got)
				}
			},
		},
		{
			name: "the file's image wins over set image",
			steps: []mergeStep{
				depApply(dep("web"), Created),
				{update: updated("set image", image("nginx:1.28"))},
				depApply(dep("web"), Configured),
			},
			check: func(t *testing.T, s *Store) {
				if got := webOf(t, s).Deployment.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.27" {
					t.Errorf("image %s, want the file's nginx:1.27", got)
				}
			},
		},
		{
			name: "lists are replaced whole: a container and an env var another command added go",
			steps: []mergeStep{
				depApply(dep("web", env("A")), Created),
				{update: updated("patch", func(d *manifests.Deployment) {
					env("A", "B")(d)
					d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, manifests.Container{Name: "side", Image: "busybox"})
				})},
				depApply(dep("web", env("A")), Configured),
			},
			check: func(t *testing.T, s *Store) {
				cs := webOf(t, s).Deployment.Spec.Template.Spec.Containers
				if len(cs) != 1 || len(cs[0].Env) != 1 || cs[0].Env[0].Name != "A" {
					t.Errorf("containers %+v, want the file's one, with env A alone", cs)
				}
			},
		},
		{
			name: "a pause is kept when the file leaves paused out; paused: false wins",
			steps: []mergeStep{
				{b: &Bundle{Deployments: []*manifests.Deployment{dep("web")}}, keepPaused: true, want: Created},
				{update: updated("rollout", paused)},
				{b: &Bundle{Deployments: []*manifests.Deployment{dep("web")}}, keepPaused: true, want: Unchanged},
				{update: func(t *testing.T, s *Store) {
					if !webOf(t, s).Deployment.Spec.Paused {
						t.Fatal("the pause was not kept")
					}
				}},
				depApply(dep("web"), Configured), // paused: false, set
			},
			check: func(t *testing.T, s *Store) {
				if webOf(t, s).Deployment.Spec.Paused {
					t.Error("still paused, the file says paused: false")
				}
			},
		},
		{
			name: "paused: true removed from the file unpauses",
			steps: []mergeStep{
				depApply(dep("web", paused), Created),
				{b: &Bundle{Deployments: []*manifests.Deployment{dep("web")}}, keepPaused: true, want: Configured},
			},
			check: func(t *testing.T, s *Store) {
				if webOf(t, s).Deployment.Spec.Paused {
					t.Error("still paused")
				}
			},
		},
		{
			name: "no last-applied configuration (an earlier release's object): the file replaces it, and is recorded",
			steps: []mergeStep{
				{b: &Bundle{Deployments: []*manifests.Deployment{dep("web", unsetReplicas)}}, legacy: true, want: Created},
				{update: labeled(webRef, "tier", "front")},
				{update: updated("scale", replicas(3))},
				{update: func(t *testing.T, s *Store) {
					if len(webOf(t, s).LastApplied) != 0 {
						t.Fatal("an apply without SaveConfig recorded a last-applied configuration")
					}
				}},
				// As before: the label goes, the scale stays.
				depApply(dep("web", unsetReplicas), Configured),
				{update: func(t *testing.T, s *Store) {
					r := webOf(t, s)
					if r.Deployment.Metadata.Labels["tier"] != "" || r.Deployment.Replicas() != 3 || len(r.LastApplied) == 0 {
						t.Fatalf("labels %v, replicas %d, last applied %s; want no tier, 3, recorded", r.Deployment.Metadata.Labels, r.Deployment.Replicas(), r.LastApplied)
					}
				}},
				{update: labeled(webRef, "tier", "front")},
				depApply(dep("web", unsetReplicas), Unchanged),
			},
			check: func(t *testing.T, s *Store) {
				if got := webOf(t, s).Deployment.Metadata.Labels["tier"]; got != "front" {
					t.Errorf("label tier = %q once the last-applied configuration is recorded, want front", got)
				}
			},
		},
		{
			name: "Secret data: the file's keys win, a key removed from it goes, a key of patch stays",
			steps: []mergeStep{
				{b: secret(map[string]string{"a": "1", "b": "2"}), want: Created},
				{update: func(t *testing.T, s *Store) {
					o := secretOf(t, s).Object
					o.Data = map[string][]byte{"a": []byte("changed"), "b": []byte("2"), "c": []byte("3")}
					if _, err := s.Apply(Bundle{Secrets: []*manifests.Secret{&o}}, ApplyOptions{Updater: "patch"}); err != nil {
						t.Fatal(err)
					}
				}},
				{b: secret(map[string]string{"a": "1", "b": "2"}), want: Configured},
				{b: secret(map[string]string{"a": "1"}), want: Configured},
			},
			check: func(t *testing.T, s *Store) {
				got := map[string]string{}
				for k, v := range secretOf(t, s).Object.Data {
					got[k] = string(v)
				}
				if want := map[string]string{"a": "1", "c": "3"}; !reflect.DeepEqual(got, want) {
					t.Errorf("data %v, want %v", got, want)
				}
			},
		},
		{
			name: "a Service's, a ConfigMap's and a Namespace's labels of dockctl label are kept",
			steps: []mergeStep{
				applyOf(Bundle{Namespaces: nss("team"), ConfigMaps: []*manifests.ConfigMap{cmObj("team", "cfg", map[string]string{"k": "v"})}, Services: svcs(svc("team", "web"))}, Created),
				{update: labeled(ref(KindNamespace, "", "team"), "tier", "front")},
				{update: labeled(ref(KindConfigMap, "team", "cfg"), "tier", "front")},
				{update: labeled(ref(KindService, "team", "web"), "tier", "front")},
				applyOf(Bundle{Namespaces: nss("team"), ConfigMaps: []*manifests.ConfigMap{cmObj("team", "cfg", map[string]string{"k": "v2"})}, Services: svcs(svc("team", "web"))}, Unchanged),
			},
			check: func(t *testing.T, s *Store) {
				ns, err := s.LookupNamespace("team")
				if err != nil {
					t.Fatal(err)
				}
				cm, err := s.LookupConfigMapRecord("team", "cfg")
				if err != nil {
					t.Fatal(err)
				}
				sv, err := s.LookupService("team", "web")
				if err != nil {
					t.Fatal(err)
				}
				for what, l := range map[string]map[string]string{"namespace": ns.Namespace.Metadata.Labels, "configmap": cm.Object.Metadata.Labels, "service": sv.Service.Metadata.Labels} {
					if l["tier"] != "front" {
						t.Errorf("%s: labels %v, want tier=front kept", what, l)
					}
				}
				if cm.Object.Data["k"] != "v2" {
					t.Errorf("configmap data %v, want the file's k=v2", cm.Object.Data)
				}
			},
		},
		{
			// kubectl records the file as written, hostNetwork: false
			// included: a later file that drops the field removes what an
			// edit set since (the default, false), as any field the
			// previous apply set and the file no longer does.
			name: "a zero the file set is its last-applied value: a file that drops it removes an edit",
			steps: []mergeStep{
				applyOf(Bundle{Deployments: []*manifests.Deployment{dep("web")},
					Zeros: map[ObjectRef]map[string]any{webRef: {"spec.template.spec.hostNetwork": false}}}, Created),
				{update: updated("patch", func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true })},
				depApply(dep("web"), Configured),
			},
			check: func(t *testing.T, s *Store) {
				if webOf(t, s).Deployment.Spec.Template.Spec.HostNetwork {
					t.Errorf("hostNetwork still true: the file that set it false, then dropped it, must remove the patch's")
				}
			},
		},
		{
			name: "an update stores its object whole: what it lacks was removed",
			steps: []mergeStep{
				depApply(dep("web", unsetReplicas), Created),
				{update: updated("scale", replicas(4))},
				{update: updated("rollout", paused)},
				{update: func(t *testing.T, s *Store) {
					d := webOf(t, s).Deployment.DeepCopy()
					d.Spec.Paused, d.Spec.Replicas = false, nil
					if _, err := s.Apply(Deployments(d), ApplyOptions{Updater: "patch", KeepPaused: map[string]bool{Key("", "web"): true}}); err != nil {
						t.Fatal(err)
					}
				}},
			},
			check: func(t *testing.T, s *Store) {
				if d := webOf(t, s).Deployment; d.Spec.Paused || d.Replicas() != manifests.DefaultReplicas {
					t.Errorf("paused %v, replicas %d; want unpaused, the default", d.Spec.Paused, d.Replicas())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			for i, st := range tt.steps {
				if st.update != nil {
					st.update(t, s)
					continue
				}
				opts := ApplyOptions{SaveConfig: !st.legacy}
				if st.keepPaused {
					opts.KeepPaused = map[string]bool{Key("", "web"): true}
				}
				res, err := s.Apply(*st.b, opts)
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				if got := res[len(res)-1].Action; got != st.want {
					t.Fatalf("step %d: %s %s, want %s", i+1, res[len(res)-1].ObjectRef, got, st.want)
				}
			}
			tt.check(t, s)
		})
	}
}

// Preview returns what Apply then stores: the file merged with the live
// object (diff shows it).
func TestPreviewIsWhatApplyStores(t *testing.T) {
	s := openTemp(t)
	mustApply(t, s, ApplyOptions{SaveConfig: true}, dep("web", unsetReplicas))
	labeled(webRef, "tier", "front")(t, s)
	updated("scale", replicas(3))(t, s)
	next := dep("web", unsetReplicas, image("nginx:1.28"))
	res, stored, err := s.Preview(Deployments(next), ApplyOptions{SaveConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Action != Configured || len(stored.Deployments) != 1 {
		t.Fatalf("preview %v, %d deployments", res, len(stored.Deployments))
	}
	p := stored.Deployments[0]
	if p.Metadata.Labels["tier"] != "front" || p.Replicas() != 3 || p.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("preview labels %v, replicas %d, image %s; want the label and the scale kept, the file's image", p.Metadata.Labels, p.Replicas(), p.Spec.Template.Spec.Containers[0].Image)
	}
	if webOf(t, s).Deployment.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatal("Preview wrote")
	}
	mustApply(t, s, ApplyOptions{SaveConfig: true}, next)
	got := webOf(t, s).Deployment.DeepCopy()
	got.Metadata.Generation, got.Metadata.CreationTimestamp = 0, nil
	if !reflect.DeepEqual(got, p) {
		t.Errorf("Apply stored\n%+v\nPreview showed\n%+v", got, p)
	}
}

// A tombstone keeps no last-applied configuration: a deleted Secret's
// values are gone from its record, and a revival starts afresh (the file
// replaces what an updater left, nothing of it is merged).
func TestTombstoneForgetsLastApplied(t *testing.T) {
	s := openTemp(t)
	b := Bundle{Secrets: []*manifests.Secret{secretObj("", "sec", "", map[string]string{"k": secretValue})}, Deployments: []*manifests.Deployment{dep("web")}}
	if _, err := s.Apply(b, ApplyOptions{SaveConfig: true}); err != nil {
		t.Fatal(err)
	}
	if len(secretOf(t, s).LastApplied) == 0 || len(webOf(t, s).LastApplied) == 0 {
		t.Fatal("no last-applied configuration recorded")
	}
	if err := s.DeleteSecret("", "sec"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(), secretKind.path("", "sec")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "lastAppliedConfiguration") || strings.Contains(string(data), "aHVudGVy") || strings.Contains(string(data), secretValue) {
		t.Errorf("the tombstone keeps the values:\n%s", data)
	}
	rec, err := s.Lookup("", "web")
	if err != nil || len(rec.LastApplied) != 0 {
		t.Errorf("tombstone %v: last applied %s", err, rec.LastApplied)
	}
}

// An apply that changes nothing but the last-applied configuration (the
// first apply over an object an earlier release stored) writes it, and
// reports unchanged; one that changes nothing at all writes nothing.
func TestLastAppliedRecordedOnUnchanged(t *testing.T) {
	s := openTemp(t)
	mustApply(t, s, ApplyOptions{}, dep("web"))
	before := webOf(t, s)
	if res := mustApply(t, s, ApplyOptions{SaveConfig: true}, dep("web")); res[0].Action != Unchanged {
		t.Fatalf("%v", res)
	}
	after := webOf(t, s)
	if len(after.LastApplied) == 0 || !after.UpdatedAt.Equal(before.UpdatedAt) || after.Generation != before.Generation {
		t.Fatalf("last applied %s, updated %v -> %v, generation %d -> %d", after.LastApplied, before.UpdatedAt, after.UpdatedAt, before.Generation, after.Generation)
	}
	snap := snapshot(t, s.Dir())
	mustApply(t, s, ApplyOptions{SaveConfig: true}, dep("web"))
	if !reflect.DeepEqual(snap, snapshot(t, s.Dir())) {
		t.Error("an unchanged apply rewrote the state")
	}
}
