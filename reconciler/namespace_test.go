package reconciler

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// inNamespace is testDeployment in namespace ns.
func inNamespace(ns string, d *manifests.Deployment) *manifests.Deployment {
	d.Metadata.Namespace = ns
	return d
}

// applyBundle stores namespaces and deployments at once.
func (h *harness) applyBundle(namespaces []string, ds ...*manifests.Deployment) {
	h.t.Helper()
	b := store.Bundle{Deployments: ds}
	for _, n := range namespaces {
		b.Namespaces = append(b.Namespaces, &manifests.Namespace{APIVersion: "v1", Kind: "Namespace", Metadata: manifests.ObjectMeta{Name: n}})
	}
	if _, err := h.store.Apply(b, store.ApplyOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// in returns the engine's containers of deployment name of namespace ns
// (of the controller's instance).
func (h *harness) in(ns, name string) []dockerx.Container {
	var out []dockerx.Container
	for _, c := range h.engine.Snapshot() {
		if c.Instance == h.ctrl.opts.Instance && c.Deployment == name && c.Namespace == ns {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// waitIn waits for exactly n running containers of ns/name.
func (h *harness) waitIn(ns, name string, n int) []dockerx.Container {
	h.t.Helper()
	var cs []dockerx.Container
	h.waitFor(ns+"/"+name+" running", func() bool {
		cs = h.in(ns, name)
		for _, c := range cs {
			if c.State != dockerx.StateRunning {
				return false
			}
		}
		return len(cs) == n
	})
	return cs
}

func names(cs []dockerx.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, " ")
}

// Two deployments of one name in two namespaces run side by side under one
// instance: names, labels, statuses and deletions of their own.
func TestNamespacesSideBySide(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	web := testDeployment("web", 2, "x")
	hash := manifests.TemplateHash(&web.Spec.Template)
	h.applyBundle([]string{"team"}, web, inNamespace("team", testDeployment("web", 2, "x")))
	h.start()
	def := h.waitIn("default", "web", 2)
	team := h.waitIn("team", "web", 2)
	for _, tt := range []struct {
		cs   []dockerx.Container
		want string
		ns   string
	}{
		{def, "i_web-" + hash + "-0 i_web-" + hash + "-1", "default"},
		{team, "i_web.team-" + hash + "-0 i_web.team-" + hash + "-1", "team"},
	} {
		if got := names(tt.cs); got != tt.want {
			t.Errorf("names %s, want %s", got, tt.want)
		}
		for _, c := range tt.cs {
			if c.Labels[dockerx.LabelNamespace] != tt.ns {
				t.Errorf("%s: namespace label %q, want %q", c.Name, c.Labels[dockerx.LabelNamespace], tt.ns)
			}
		}
	}
	h.waitFor("a status per namespace", func() bool {
		a, _ := h.store.ReadStatus("", "web")
		b, _ := h.store.ReadStatus("team", "web")
		return a.ObservedGeneration == 1 && b.ObservedGeneration == 1
	})

	// A change in one namespace leaves the other alone.
	if _, err := h.store.Update("team", "web", func(d *manifests.Deployment) error { *d.Spec.Replicas = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	h.waitIn("team", "web", 3)
	if got := names(h.in("default", "web")); got != names(def) {
		t.Errorf("default/web changed with team/web: %s", got)
	}

	// Deleting team/web removes its containers only.
	if err := h.store.Delete("team", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("team/web's containers gone", func() bool { return len(h.in("team", "web")) == 0 })
	h.waitResyncs(3)
	for _, c := range def {
		if !hasID(h.engine.Snapshot(), c.ID) {
			t.Errorf("default/web's %s was removed with team/web", c.Name)
		}
	}
}

// Deleting a namespace removes the containers of everything in it.
func TestDeleteNamespaceRemovesContainers(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.applyBundle([]string{"team"}, testDeployment("web", 1, "x"),
		inNamespace("team", testDeployment("web", 1, "x")), inNamespace("team", testDeployment("api", 2, "x")))
	h.start()
	keep := h.waitIn("default", "web", 1)
	h.waitIn("team", "web", 1)
	h.waitIn("team", "api", 2)
	if err := h.store.DeleteNamespace("team"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("team's containers gone", func() bool { return len(h.in("team", "web"))+len(h.in("team", "api")) == 0 })
	h.waitResyncs(3)
	if !hasID(h.engine.Snapshot(), keep[0].ID) {
		t.Error("default/web's container was removed with namespace team")
	}
}

// A container of a namespace whose deployment this state directory never
// knew is an orphan, even when a deployment of its name exists in another
// namespace: reported and left running, removed only with PruneOrphans.
func TestOrphanOfAnotherNamespace(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(map[bool]string{false: "left running", true: "pruned"}[prune], func(t *testing.T) {
			h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, PruneOrphans: prune})
			d := testDeployment("web", 1, "x")
			hash := manifests.TemplateHash(&d.Spec.Template)
			h.apply(d)
			ghost, err := h.engine.Add(dockerx.Container{Name: dockerx.ContainerName("i", "ghost", "web", hash, 0), Image: testImage, State: dockerx.StateRunning,
				Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web", dockerx.LabelNamespace: "ghost",
					dockerx.LabelTemplateHash: hash, "app": "web"}}, "")
			if err != nil {
				t.Fatal(err)
			}
			h.start()
			h.waitIn("default", "web", 1)
			h.waitResyncs(5)
			if got := hasID(h.engine.Snapshot(), ghost); got == prune {
				t.Errorf("ghost/web's container present = %v with PruneOrphans %v", got, prune)
			}
			if n := len(h.in("default", "web")); n != 1 {
				t.Errorf("default/web has %d containers, want 1: another namespace's container is not its replica", n)
			}
		})
	}
}
