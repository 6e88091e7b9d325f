package workloads

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/statefulset"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/store"
)

func setYAML(replicas, policy, retention string) string {
	return `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: ` + replicas + `
  podManagementPolicy: ` + policy + `
` + retention + `
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: busybox
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
`
}

// pods are the names of the running pods of the set, sorted.
func (f *frame) setPods(name string) []string {
	var out []string
	for _, c := range f.running(store.KindStatefulSet, name) {
		if p, ok := dockerx.PodOfContainerName(instance, "", c.Name); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// claims are the names of the live claims of the default namespace.
func (f *frame) claims() []string {
	objs, errs := f.st.ListObjects(store.KindPersistentVolumeClaim)
	if len(errs) > 0 {
		f.t.Fatal(errs)
	}
	var out []string
	for _, o := range objs {
		if !o.Deleted {
			out = append(out, o.Meta.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestOrderedReadyStatefulSetCreatesOrdinalZeroAndItsClaimFirst(t *testing.T) {
	f := newFrame(t)
	f.apply(setYAML("3", "OrderedReady", ""))
	key := Key(store.KindStatefulSet, "default", "db")
	// Each sync sees the pods the previous one made; a pod without a
	// readiness probe is Ready once running (the kubelet's rule), so
	// OrderedReady adds one ordinal per sync, each with its claim first.
	for i, want := range []struct{ pods, claims string }{
		{"db-0", "data-db-0"},
		{"db-0 db-1", "data-db-0 data-db-1"},
		{"db-0 db-1 db-2", "data-db-0 data-db-1 data-db-2"},
	} {
		f.sync(key)
		if got := f.setPods("db"); strings.Join(got, " ") != want.pods {
			t.Errorf("after sync %d: pods %v, want %s", i+1, got, want.pods)
		}
		if got := f.claims(); strings.Join(got, " ") != want.claims {
			t.Errorf("after sync %d: claims %v, want %s", i+1, got, want.claims)
		}
	}
}

func TestParallelStatefulSetScaleDownRemovesTheHighestOrdinalAndRetainsItsClaim(t *testing.T) {
	f := newFrame(t)
	f.apply(setYAML("3", "Parallel", ""))
	key := Key(store.KindStatefulSet, "default", "db")
	f.sync(key)
	f.sync(key)
	if got := f.setPods("db"); strings.Join(got, " ") != "db-0 db-1 db-2" {
		t.Fatalf("pods %v, want db-0 db-1 db-2", got)
	}
	if got := f.claims(); strings.Join(got, " ") != "data-db-0 data-db-1 data-db-2" {
		t.Fatalf("claims %v, want one per pod", got)
	}
	f.apply(setYAML("2", "Parallel", ""))
	f.sync(key)
	for len(f.setPods("db")) == 3 { // the stopper removes in the background
		f.sync(key)
	}
	if got := f.setPods("db"); strings.Join(got, " ") != "db-0 db-1" {
		t.Errorf("pods after scale down %v, want db-0 db-1", got)
	}
	if got := f.claims(); strings.Join(got, " ") != "data-db-0 data-db-1 data-db-2" {
		t.Errorf("claims after scale down %v, want data-db-2 retained", got)
	}
}

func TestDeletingAStatefulSetFollowsItsClaimRetentionPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, retention, want string
	}{
		{"retain keeps the claims", "", "data-db-0 data-db-1"},
		{"whenDeleted Delete removes them", "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(setYAML("2", "Parallel", tc.retention))
			key := Key(store.KindStatefulSet, "default", "db")
			f.sync(key)
			if got := f.claims(); len(got) != 2 {
				t.Fatalf("claims %v, want 2", got)
			}
			if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}}); err != nil {
				t.Fatal(err)
			}
			f.sync(key)
			if got := f.claims(); strings.Join(got, " ") != tc.want {
				t.Errorf("claims after delete %v, want %q", got, tc.want)
			}
		})
	}
}

func TestClaimDeletedWhileItsVolumeExistsStaysTerminatingAndIsNotCreatedAgain(t *testing.T) {
	f := newFrame(t)
	f.apply(setYAML("1", "Parallel", ""))
	key := Key(store.KindStatefulSet, "default", "db")
	f.sync(key)
	if got := f.setPods("db"); strings.Join(got, " ") != "db-0" {
		t.Fatalf("pods %v, want db-0", got)
	}
	if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindPersistentVolumeClaim, Namespace: "default", Name: "data-db-0"}}); err != nil {
		t.Fatal(err)
	}
	deleted := func() bool {
		t.Helper()
		_, deleted, err := f.st.LookupClaim("default", "data-db-0")
		if err != nil {
			t.Fatal(err)
		}
		return deleted
	}
	// The pod goes while its claim is being deleted; the claim's volume is
	// still there (released by the claims sweep once no container uses
	// it): the claim is Terminating (pvc-protection), and the StatefulSet
	// controller neither stores it again nor makes the pod on it
	// (createPersistentVolumeClaims: "pvc is being deleted").
	for _, c := range f.owned(store.KindStatefulSet, "db") {
		if err := f.d.Remove(c.ID); err != nil {
			t.Fatal(err)
		}
	}
	for len(f.owned(store.KindStatefulSet, "db")) != 0 { // the fake removes in the background
		time.Sleep(time.Millisecond)
	}
	f.sync(key)
	f.sync(key)
	if !deleted() {
		t.Fatalf("claim data-db-0 was stored again while its volume is still there; want it Terminating")
	}
	if got := f.setPods("db"); len(got) != 0 {
		t.Errorf("pods %v made on a Terminating claim, want none", got)
	}
	// Its volume released, the claim is gone: the pod's claim is made
	// anew, and the pod with it.
	vol := dockerx.ClaimVolumeName(instance, "default", "data-db-0")
	if err := f.d.RemoveVolume(context.Background(), vol); err != nil {
		t.Fatal(err)
	}
	f.sync(key)
	f.sync(key)
	if deleted() {
		t.Errorf("claim data-db-0 still deleted once its volume is gone; want it made anew")
	}
	if got := f.setPods("db"); strings.Join(got, " ") != "db-0" {
		t.Errorf("pods %v, want db-0 on its new claim", got)
	}
}

func partitionedSetYAML(version string) string {
	return `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  podManagementPolicy: Parallel
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {partition: 1}
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: busybox
        env:
        - {name: VERSION, value: "` + version + `"}
`
}

// replaceDB1 syncs set db (its key) until its pod db-1, at the partition,
// runs a revision other than old.
func (f *frame) replaceDB1(key, old string) {
	f.t.Helper()
	for i := 0; f.podRevision("db-1") == old || f.podRevision("db-1") == ""; i++ {
		if i > 100 {
			f.t.Fatalf("db-1 never replaced: at %q", f.podRevision("db-1"))
		}
		f.sync(key)
	}
}

// setStatus is the stored status of StatefulSet db.
func (f *frame) setStatus() appsv1.StatefulSetStatus {
	f.t.Helper()
	ref := store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}
	obj, err := f.st.LookupObject(ref)
	if err != nil {
		f.t.Fatal(err)
	}
	var st appsv1.StatefulSetStatus
	if _, err := f.st.ReadWorkloadStatus(ref, obj.Created, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

// podRevision is the revision label of the running container of pod.
func (f *frame) podRevision(pod string) string {
	for _, c := range f.running(store.KindStatefulSet, "db") {
		if p, ok := dockerx.PodOfContainerName(instance, "", c.Name); ok && p == pod {
			return c.Labels[workload.RevisionLabel]
		}
	}
	return ""
}

func TestPartitionedStatefulSetKeepsAndRecreatesPodsBelowThePartitionAtTheCurrentRevision(t *testing.T) {
	f := newFrame(t)
	f.apply(partitionedSetYAML("1"))
	key := Key(store.KindStatefulSet, "default", "db")
	f.sync(key)
	f.sync(key)
	old := f.setStatus().UpdateRevision
	if f.podRevision("db-0") != old || f.podRevision("db-1") != old {
		t.Fatalf("pods at %q, %q, want both at %s", f.podRevision("db-0"), f.podRevision("db-1"), old)
	}
	f.apply(partitionedSetYAML("2"))
	// db-1, at the partition, is replaced; db-0, below it, is not.
	f.replaceDB1(key, old)
	f.sync(key)
	st := f.setStatus()
	if st.CurrentRevision != old || st.UpdateRevision == old || st.CurrentReplicas != 1 || st.UpdatedReplicas != 1 {
		t.Errorf("status current %s (%d), update %s (%d); want current %s with db-0, update with db-1",
			st.CurrentRevision, st.CurrentReplicas, st.UpdateRevision, st.UpdatedReplicas, old)
	}
	if got := f.podRevision("db-0"); got != old {
		t.Errorf("db-0 at %q, want kept at %s below the partition", got, old)
	}
	// db-0 is deleted: made again at the current revision, from its
	// template (newVersionedStatefulSetPod), not the update's.
	for _, c := range f.owned(store.KindStatefulSet, "db") {
		if p, _ := dockerx.PodOfContainerName(instance, "", c.Name); p == "db-0" {
			if err := f.d.Remove(c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; f.podRevision("db-0") == ""; i++ {
		if i > 100 {
			t.Fatal("db-0 never made again")
		}
		f.sync(key)
	}
	if got := f.podRevision("db-0"); got != old {
		t.Errorf("db-0 made again at %q, want the current revision %s", got, old)
	}
}

func TestStatefulSetPodIsKeptAtItsRevisionOnlyWhenItsTemplateHashIsThatRevisions(t *testing.T) {
	decode := func(yaml string) *manifests.StatefulSet {
		docs, err := manifests.Decode("t.yaml", []byte(yaml))
		if err != nil || len(docs) != 1 || docs[0].StatefulSet == nil {
			t.Fatalf("decode: %v", err)
		}
		return docs[0].StatefulSet
	}
	old, set := decode(partitionedSetYAML("1")), decode(partitionedSetYAML("2"))
	oldRev, update := statefulset.RevisionOf(old), statefulset.RevisionOf(set)
	recorded := []workload.Revision{oldRev, update} // the record's revisions, oldest first
	keep := StatefulSetKind().keep
	for _, tc := range []struct {
		name, label, hash, want string
	}{
		{"its own revision", oldRev.Name, oldRev.Hash, oldRev.Hash},
		{"a label naming a revision it was not made from", oldRev.Name, "0000000000", update.Hash},
		{"an unknown revision", "db-gone", oldRev.Hash, update.Hash},
		{"the update revision", update.Name, update.Hash, update.Hash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := dockerx.Container{TemplateHash: tc.hash, Labels: map[string]string{workload.RevisionLabel: tc.label}}
			spec, ok := keep(set, nil, recorded, "db-0", ct)
			if !ok {
				t.Fatal("db-0 not kept as the set's pod")
			}
			if spec.TemplateHash != tc.want || spec.Template.Metadata.Labels[workload.RevisionLabel] == "" {
				t.Errorf("kept at hash %s (labels %v), want %s", spec.TemplateHash, spec.Template.Metadata.Labels, tc.want)
			}
			if spec.Identity.Hostname != "db-0" {
				t.Errorf("kept with identity %+v, want hostname db-0", spec.Identity)
			}
		})
	}
}

// holderSetYAML is a set of 2 whose pods need a holder: an init
// container before the app, and a ConfigMap volume beside the claim
// template's.
const holderSetYAML = `apiVersion: v1
kind: ConfigMap
metadata: {name: db-conf}
data: {db.conf: "port 6379"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      initContainers:
      - {name: setup, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}
      containers:
      - name: main
        image: busybox
        volumeMounts:
        - {name: data, mountPath: /data}
        - {name: conf, mountPath: /etc/db}
      volumes:
      - name: conf
        configMap: {name: db-conf}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// A StatefulSet's holder pod gets its members in later syncs than its
// holder (the init container, then the app once it exited): each member
// is created once, from the pod's own spec — its claim's volume, its
// identity — never from the bare template, which has no volume of the
// claim template's name (newStatefulSetPod, updateIdentity,
// updateStorage: the pod's spec is the revision's template plus its
// identity and storage, whether it is being created or kept).
func TestStatefulSetHolderPodsMembersAreCreatedOnceWithTheirClaimAndIdentity(t *testing.T) {
	f := newFrame(t)
	created := f.recordCreates()
	f.apply(holderSetYAML)
	key := Key(store.KindStatefulSet, "default", "db")
	for range 50 {
		if f.setStatus().ReadyReplicas == 2 {
			break
		}
		f.sync(key)
		for _, c := range f.running(store.KindStatefulSet, "db") {
			if c.ContainerName == "setup" {
				if err := f.d.Exit(c.ID, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.advance(time.Second)
	}
	if st := f.setStatus(); st.ReadyReplicas != 2 {
		t.Fatalf("status %+v, want 2 ready replicas", st)
	}
	// Steady: more syncs create nothing.
	for range 3 {
		f.sync(key)
		f.advance(time.Second)
	}
	members := map[string]bool{}
	for name, reqs := range created() {
		if n := len(reqs); n != 1 {
			t.Errorf("container %s created %d times, want once", name, n)
		}
		req := reqs[len(reqs)-1]
		if req.Container == "" {
			continue
		}
		pod := req.Pod.Name
		members[pod+"/"+req.Container] = true
		claim := ""
		for _, v := range req.From.Template.Spec.Volumes {
			if v.Name == "data" && v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		if want := "data-" + pod; claim != want {
			t.Errorf("member %s created with volumes %+v, want data from claim %s", name, req.From.Template.Spec.Volumes, want)
		}
		if l := req.From.Template.Metadata.Labels[statefulset.PodNameLabel]; l != pod {
			t.Errorf("member %s created with pod-name label %q, want %s", name, l, pod)
		}
	}
	for _, want := range []string{"db-0/setup", "db-0/main", "db-1/setup", "db-1/main"} {
		if !members[want] {
			t.Errorf("member %s never created; created %v", want, members)
		}
	}
	for _, c := range f.running(store.KindStatefulSet, "db") {
		pod, _ := dockerx.PodOfContainerName(instance, "", podBase(c))
		if c.Labels[dockerx.LabelHostname] != pod || c.Labels[dockerx.LabelSubdomain] != "db" {
			t.Errorf("container %s hostname %q, subdomain %q; want %s, db", c.Name, c.Labels[dockerx.LabelHostname], c.Labels[dockerx.LabelSubdomain], pod)
		}
	}
	evs, err := f.st.Events("default", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(e.Message, "no volume of that name") {
			t.Errorf("event %s: %s", e.Reason, e.Message)
		}
	}
}

// A StatefulSet's revisions are its record's (as its ControllerRevisions
// are their own objects), and its status is v1 StatefulSetStatus only: a
// status file of an earlier release that kept the revisions there too is
// read (that field ignored) and the controller's next status names the
// revisions without a copy of them.
func TestStatefulSetStatusOfAnEarlierReleaseWithRevisionsIsReadAndTheRevisionsLeftOut(t *testing.T) {
	f := newFrame(t)
	f.apply(partitionedSetYAML("1"))
	ref := store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}
	obj, err := f.st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	rev := "db-" + obj.Object.(*manifests.StatefulSet).TemplateHash()
	earlier := map[string]any{"replicas": 2, "currentRevision": rev, "updateRevision": rev,
		"revisions": []map[string]any{{"name": rev, "hash": "0123456789", "template": map[string]any{"metadata": map[string]any{}}}}}
	if err := f.st.WriteWorkloadStatus(ref, obj.Created, obj.Generation, earlier); err != nil {
		t.Fatal(err)
	}
	key := Key(store.KindStatefulSet, "default", "db")
	f.sync(key)
	f.sync(key)
	if st := f.setStatus(); st.CurrentRevision != rev || st.UpdateRevision != rev || st.Replicas != 2 {
		t.Errorf("status current %s update %s replicas %d, want both %s and 2", st.CurrentRevision, st.UpdateRevision, st.Replicas, rev)
	}
	var raw map[string]json.RawMessage
	if _, err := f.st.ReadWorkloadStatus(ref, obj.Created, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["revisions"]; ok {
		t.Errorf("status still holds the revisions: %s", raw["revisions"])
	}
	if got := f.podRevision("db-0"); got != rev {
		t.Errorf("db-0 at %q, want %s", got, rev)
	}
}

// A StatefulSet applied again over orphans its selector does not match
// leaves them running and, as the StatefulSet controller fails on a pod
// of its name it cannot adopt, creates no pod under their names: it says
// why in a FailedCreate event (pod names are a set's identity).
func TestStatefulSetAppliedAgainLeavesOrphansItsSelectorMisses(t *testing.T) {
	f := newFrame(t)
	f.now = time.Now() // events older than their time to live are not read back
	f.apply(setYAML("2", "Parallel", ""))
	pods := f.runPods(store.KindStatefulSet, "db", 2)
	key := f.orphanDelete(store.KindStatefulSet, "db")
	f.sync(key)
	f.advance(time.Second)
	f.d.ResetCalls()
	f.apply(strings.ReplaceAll(setYAML("2", "Parallel", ""), "{app: db}", "{app: db2}"))
	f.settle(key)
	f.untouched(store.KindStatefulSet, "db", pods, "after the apply")
	if n := len(f.owned(store.KindStatefulSet, "db")); n != 2 {
		t.Errorf("%d containers, want the 2 orphans and no pod of their names", n)
	}
	evs, err := f.st.Events("default", true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e store.Event) bool {
		return e.Reason == "FailedCreate" && strings.Contains(e.Message, "pod db-0 exists and is not controlled by StatefulSet db")
	}) {
		t.Errorf("no FailedCreate event naming db-0: %+v", evs)
	}
}

// The gates judge every revision a pod is made or started from, not the
// set's template alone (docs/design.md §13: "whatever its revision"): a
// pod kept below the partition at an earlier revision that needs a flag
// the controller no longer has is neither made again nor started again.
func TestStatefulSetEarlierRevisionNeedingAFlagRunsNoPodWithoutIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lose is what happens to db-0's container under the controller
		// without the flag.
		lose func(f *frame, c dockerx.Container) error
	}{
		{"removed", func(f *frame, c dockerx.Container) error { return f.d.Remove(c.ID) }},
		{"exited", func(f *frame, c dockerx.Container) error { return f.d.Exit(c.ID, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrameWith(t, func(c *Config) { c.Allow.Privileged = true })
			privileged := strings.Replace(partitionedSetYAML("1"), "        env:\n", "        securityContext: {privileged: true}\n        env:\n", 1)
			if privileged == partitionedSetYAML("1") {
				t.Fatal("fixture: no securityContext added")
			}
			f.apply(privileged)
			key := Key(store.KindStatefulSet, "default", "db")
			for i := 0; len(f.setPods("db")) != 2; i++ {
				if i > 100 {
					t.Fatalf("pods %v, want 2 under --allow-privileged", f.setPods("db"))
				}
				f.sync(key)
			}
			old := f.setStatus().UpdateRevision
			// The controller restarts without --allow-privileged; the set
			// is updated to an unprivileged template, db-0 stays below the
			// partition at the privileged revision.
			f.c.runtime.Stop()
			f.c = New(Config{Instance: instance, Docker: f.d, Store: f.st, Kinds: Kinds(), Now: f.clock})
			t.Cleanup(f.c.runtime.Stop)
			f.apply(partitionedSetYAML("2"))
			f.replaceDB1(key, old)
			for _, c := range f.owned(store.KindStatefulSet, "db") {
				if p, _ := dockerx.PodOfContainerName(instance, "", c.Name); p == "db-0" {
					if err := tc.lose(f, c); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 20 {
				f.sync(key)
				f.advance(time.Minute)
			}
			if got := f.podRevision("db-0"); got != "" {
				t.Errorf("db-0 runs at revision %s (privileged) under a controller without --allow-privileged", got)
			}
		})
	}
}

// A deleted set's claims go once, as the garbage collector deletes what
// the set owned: a claim applied later under one of their names — a new
// claim, no set's — outlives every later sync of the deleted set's
// tombstone (a resync, a controller restart).
func TestDeletedStatefulSetsLaterSyncsKeepAClaimAppliedAfterItsDelete(t *testing.T) {
	for _, tc := range []struct{ name, retention string }{
		{"whenDeleted Delete", "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}"},
		{"whenScaled Delete past the range", "  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(setYAML("2", "Parallel", tc.retention))
			key := Key(store.KindStatefulSet, "default", "db")
			f.sync(key)
			if got := f.claims(); len(got) != 2 {
				t.Fatalf("claims %v, want 2", got)
			}
			if tc.name != "whenDeleted Delete" {
				// Scaled to 1 by hand in the store, its pod db-1 gone:
				// data-db-1 is past the range.
				f.apply(strings.Replace(setYAML("2", "Parallel", tc.retention), "replicas: 2", "replicas: 1", 1))
				for i := 0; slices.Contains(f.claims(), "data-db-1"); i++ {
					if i > 100 {
						t.Fatalf("claims %v, want data-db-1 gone", f.claims())
					}
					f.sync(key)
					time.Sleep(time.Millisecond)
				}
			}
			if _, err := f.st.DeleteObjects([]store.ObjectRef{{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}}); err != nil {
				t.Fatal(err)
			}
			f.sync(key)
			f.advance(time.Minute)
			f.apply(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-1}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`)
			if !slices.Contains(f.claims(), "data-db-1") {
				t.Fatalf("claims %v: fixture: data-db-1 not applied", f.claims())
			}
			f.advance(time.Minute)
			f.sync(key) // the tombstone's resync
			if !slices.Contains(f.claims(), "data-db-1") {
				t.Errorf("claims %v: the claim data-db-1 applied after the set's delete was deleted by the set's tombstone", f.claims())
			}
		})
	}
}

// A StatefulSet deleted with --cascade=orphan leaves its claims whatever
// its persistentVolumeClaimRetentionPolicy says, as the garbage collector
// orphans every dependent (its claims lose their ownerReference): through
// later syncs of its tombstone and a controller restart; the set applied
// again adopts its pods on them.
func TestStatefulSetOrphanedKeepsItsClaimsWhateverItsRetentionPolicy(t *testing.T) {
	for _, tc := range []struct{ name, retention string }{
		{"whenDeleted Delete", "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}"},
		{"whenDeleted Delete, whenScaled Delete", "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrame(t)
			f.apply(setYAML("2", "Parallel", tc.retention))
			pods := f.runPods(store.KindStatefulSet, "db", 2)
			claims := f.claims()
			key := f.orphanDelete(store.KindStatefulSet, "db")
			f.settle(key)
			f.restart()
			f.settle(key)
			if got := f.claims(); !slices.Equal(got, claims) {
				t.Errorf("claims %v after the orphaning delete, want %v kept", got, claims)
			}
			f.apply(setYAML("2", "Parallel", tc.retention))
			f.settle(key)
			f.untouched(store.KindStatefulSet, "db", pods, "after the apply")
			if got := f.claims(); !slices.Equal(got, claims) {
				t.Errorf("claims %v after the apply, want %v kept", got, claims)
			}
		})
	}
}
