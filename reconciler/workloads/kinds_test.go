package workloads

import (
	"testing"
	"time"

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
