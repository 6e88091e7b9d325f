package workloads

import (
	"slices"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func agentYAML(v string) string {
	return `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: a
        image: busybox
        env: [{name: V, value: "` + v + `"}]
`
}

// converge syncs the owner until its one pod runs the template of hash
// want and no other container of it is left, advancing the fake clock
// between syncs (graceful stops, backoffs); the fake Engine removes in the
// background, so a bounded number of rounds is given.
func (f *frame) converge(kind, name, want string) {
	f.t.Helper()
	key := Key(kind, "default", name)
	for range 500 {
		f.sync(key)
		run := f.running(kind, name)
		if len(run) == 1 && run[0].TemplateHash == want && len(f.owned(kind, name)) == 1 {
			return
		}
		f.advance(time.Second)
		time.Sleep(time.Millisecond)
	}
	f.t.Fatalf("%s %s never ran only template %s: %+v", kind, name, want, f.owned(kind, name))
}

// rollout undo of a DaemonSet (the CLI writes the previous revision's
// template back into the stored object, an update by rollout) brings its
// pod back to the earlier template through the controller, as the
// ControllerRevision's rollback does; the restored template is the newest
// revision of the record.
func TestDaemonSetUndoRollsItsPodBackToTheEarlierTemplate(t *testing.T) {
	f := newFrame(t)
	ref := store.ObjectRef{Kind: store.KindDaemonSet, Namespace: "default", Name: "agent"}
	f.apply(agentYAML("1"))
	o, err := f.st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	first := o.Object.(*manifests.DaemonSet).TemplateHash()
	f.converge(store.KindDaemonSet, "agent", first)

	f.apply(agentYAML("2"))
	if o, err = f.st.LookupObject(ref); err != nil {
		t.Fatal(err)
	}
	second := o.Object.(*manifests.DaemonSet).TemplateHash()
	f.converge(store.KindDaemonSet, "agent", second)

	// What `rollout undo daemonset/agent` stores.
	if len(o.Revisions) != 2 || o.Revisions[0].Hash != first {
		t.Fatalf("revisions %+v, want the two templates", o.Revisions)
	}
	ds := o.Object.(*manifests.DaemonSet)
	ds.Metadata.Generation, ds.Metadata.CreationTimestamp = 0, nil
	ds.Spec.Template = o.Revisions[0].Template
	if _, err := f.st.Apply(store.Bundle{DaemonSets: []*manifests.DaemonSet{ds}}, store.ApplyOptions{Updater: "rollout"}); err != nil {
		t.Fatal(err)
	}
	f.converge(store.KindDaemonSet, "agent", first)
	if o, err = f.st.LookupObject(ref); err != nil {
		t.Fatal(err)
	}
	if n := len(o.Revisions); n != 2 || o.Revisions[1].Hash != first || o.Revisions[1].Number != 3 {
		t.Errorf("revisions after undo %+v, want the first template as revision 3", o.Revisions)
	}
}

// onDeleteAgentYAML is DaemonSet agent under OnDelete whose pod runs
// containers (busybox each).
func onDeleteAgentYAML(containers ...string) string {
	y := `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  updateStrategy: {type: OnDelete}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
`
	for _, c := range containers {
		y += "      - {name: " + c + ", image: busybox}\n"
	}
	return y
}

// A DaemonSet's pod of an earlier revision is kept from its own
// revision's template (the record's revisions, as Kubernetes' pod keeps
// the spec it was made from): under OnDelete a template change replaces
// nothing, and no container of the new template is added to the old pod
// nor is the old pod made again.
func TestDaemonSetPodOfAnEarlierRevisionIsKeptAtItsOwnTemplate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     []string
		after      []string
		containers int
	}{
		{"one container, then two", []string{"a"}, []string{"a", "b"}, 1},
		{"two containers, then three", []string{"a", "b"}, []string{"a", "b", "c"}, 3}, // a holder and its two members
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			key := Key(store.KindDaemonSet, "default", "agent")
			f.apply(onDeleteAgentYAML(tc.before...))
			for range 5 {
				f.sync(key)
				f.advance(time.Second)
			}
			before := f.owned(store.KindDaemonSet, "agent")
			if len(before) != tc.containers {
				t.Fatalf("%d containers before the change, want %d: %+v", len(before), tc.containers, before)
			}
			f.apply(onDeleteAgentYAML(tc.after...))
			for range 10 {
				f.sync(key)
				f.advance(time.Second)
				time.Sleep(time.Millisecond) // the fake removes in the background
			}
			after := f.owned(store.KindDaemonSet, "agent")
			ids := func(cs []dockerx.Container) []string {
				var out []string
				for _, c := range cs {
					out = append(out, c.ID+"@"+c.TemplateHash+"/"+string(c.State))
				}
				slices.Sort(out)
				return out
			}
			if got, want := ids(after), ids(before); !slices.Equal(got, want) {
				t.Errorf("containers after the template change %q, want the old pod's untouched %q", got, want)
			}
		})
	}
}
