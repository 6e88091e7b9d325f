package store

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

const orphansSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: w
        image: busybox
`

func applySet(t *testing.T, s *Store) *StoredObject {
	t.Helper()
	docs, err := manifests.Decode("s.yaml", []byte(orphansSetYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(Bundle{StatefulSets: []*manifests.StatefulSet{docs[0].StatefulSet}}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	return lookupSet(t, s)
}

func lookupSet(t *testing.T, s *Store) *StoredObject {
	t.Helper()
	o, err := s.LookupObject(ObjectRef{Kind: KindStatefulSet, Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The incarnations a pod of a StatefulSet's name may be labelled with,
// across delete --cascade=orphan, apply, delete: the tombstone of an
// orphaning deletion makes its pods nobody's, the object applied over it
// adopts those its selector matches, and a background deletion takes
// what it adopted and leaves the orphans it did not.
func TestPodOwnerAcrossOrphaningDeleteAndApply(t *testing.T) {
	s := openTemp(t)
	first := applySet(t, s)
	ref := ObjectRef{Kind: KindStatefulSet, Namespace: "default", Name: "web"}
	if _, err := s.DeleteObjectsWith([]ObjectRef{ref}, DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	orphaned := lookupSet(t, s)
	if !orphaned.Deleted || !slices.Equal(orphaned.Orphaned, []string{first.UID()}) || !orphaned.OrphanedOnDeletion() {
		t.Fatalf("tombstone deleted %v orphaned %v, want the first incarnation %s", orphaned.Deleted, orphaned.Orphaned, first.UID())
	}
	time.Sleep(time.Millisecond) // another creation time, another uid
	second := applySet(t, s)
	if second.UID() == first.UID() || !slices.Equal(second.Orphaned, orphaned.Orphaned) {
		t.Fatalf("applied again: uid %s orphaned %v, want a new uid carrying %v", second.UID(), second.Orphaned, orphaned.Orphaned)
	}
	if _, err := s.DeleteObjects([]ObjectRef{ref}); err != nil {
		t.Fatal(err)
	}
	gone := lookupSet(t, s)
	match, other := map[string]string{"app": "web"}, map[string]string{"app": "old"}
	for _, tc := range []struct {
		name   string
		obj    *StoredObject
		uid    string
		labels map[string]string
		want   PodOwnership
	}{
		{"its own pod", first, first.UID(), match, PodOwned},
		{"a pod labelled before uids is its own", first, "", match, PodOwned},
		{"an earlier incarnation's pod is stale", second, "0", match, PodStale},
		{"after the orphaning delete its pod is nobody's", orphaned, first.UID(), match, PodOrphan},
		{"after the orphaning delete an unlabelled pod is nobody's", orphaned, "", match, PodOrphan},
		{"the next incarnation adopts a matching orphan", second, first.UID(), match, PodOwned},
		{"the next incarnation leaves an orphan its selector misses", second, first.UID(), other, PodOrphan},
		{"its background deletion takes what it adopted", gone, first.UID(), match, PodOwned},
		{"its background deletion leaves what it did not adopt", gone, first.UID(), other, PodOrphan},
		{"its background deletion takes its own", gone, second.UID(), match, PodOwned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.obj.PodOwner(tc.uid, tc.labels); got != tc.want {
				t.Errorf("PodOwner(%q, %v) = %d, want %d", tc.uid, tc.labels, got, tc.want)
			}
		})
	}
}

// An orphaning deletion of a CronJob leaves its Jobs without the
// ownerReference naming it, as the garbage collector removes it from the
// dependents it orphans; a Job is not a pod owner of the CronJob's kind.
// A deployment deleted in the same call orphans its pods.
func TestOrphaningDeletionReleasesStoredDependents(t *testing.T) {
	s := openTemp(t)
	b := decodeBundle(t, workloadsYAML) // Job migrate, controlled by CronJob nightly
	docs, err := manifests.Decode("c.yaml", []byte(`apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: m, image: busybox}]
`))
	if err != nil {
		t.Fatal(err)
	}
	b.CronJobs = []*manifests.CronJob{docs[0].CronJob}
	b.Deployments = []*manifests.Deployment{{APIVersion: "apps/v1", Kind: "Deployment", Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.DeploymentSpec{Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "web"}},
				Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "w", Image: "busybox"}}}}}}}
	if _, err := s.Apply(b, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	cron := ObjectRef{Kind: KindCronJob, Namespace: "default", Name: "nightly"}
	dep := ObjectRef{Kind: KindDeployment, Namespace: "default", Name: "web"}
	res, err := s.DeleteObjectsWith([]ObjectRef{cron, dep}, DeleteOptions{Orphan: true})
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("orphaning delete: %v %+v", err, res)
	}
	if d, err := s.LookupObject(dep); err != nil || !d.OrphanedOnDeletion() {
		t.Fatalf("the deployment's tombstone %+v (%v): want it deleted with --cascade=orphan", d, err)
	}
	job, err := s.LookupObject(ObjectRef{Kind: KindJob, Namespace: "default", Name: "migrate"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Deleted || len(job.Meta.OwnerReferences) != 0 {
		t.Errorf("job after its CronJob's orphaning delete: deleted %v, ownerReferences %+v; want live, none", job.Deleted, job.Meta.OwnerReferences)
	}
	if cj, _ := s.LookupObject(cron); len(cj.Orphaned) != 0 {
		t.Errorf("the CronJob's tombstone lists orphaned pods %v: it owns none", cj.Orphaned)
	}
}

// Deleting a namespace deletes every pod in it, as Kubernetes' namespace
// controller deletes all its pods, those an orphaning deletion left
// ownerless included: no pod of the name's incarnations is nobody's any
// more, so that the controller removes them.
func TestNamespaceDeletionTakesTheOrphansInIt(t *testing.T) {
	tests := []struct {
		name       string
		applyAgain bool
		labels     map[string]string
	}{
		{"the orphans of a tombstone", false, map[string]string{"app": "web"}},
		{"an orphan the object applied again adopted", true, map[string]string{"app": "web"}},
		{"an orphan the object applied again did not adopt", true, map[string]string{"app": "old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			docs, err := manifests.Decode("s.yaml", []byte(orphansSetYAML))
			if err != nil {
				t.Fatal(err)
			}
			set := docs[0].StatefulSet
			set.Metadata.Namespace = "team"
			apply := func() {
				t.Helper()
				if _, err := s.Apply(Bundle{Namespaces: nss("team"), StatefulSets: []*manifests.StatefulSet{set}}, ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			apply()
			r := ObjectRef{Kind: KindStatefulSet, Namespace: "team", Name: "web"}
			first, err := s.LookupObject(r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.DeleteObjectsWith([]ObjectRef{r}, DeleteOptions{Orphan: true}); err != nil {
				t.Fatal(err)
			}
			if tt.applyAgain {
				time.Sleep(time.Millisecond) // another creation time, another uid
				apply()
			}
			if _, err := s.DeleteObjects([]ObjectRef{{Kind: KindNamespace, Name: "team"}}); err != nil {
				t.Fatal(err)
			}
			o, err := s.LookupObject(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.PodOwner(first.UID(), tt.labels); got == PodOrphan {
				t.Errorf("after the namespace's deletion PodOwner = PodOrphan (left running), want the pod removed with its namespace")
			}
		})
	}
}

// orphansDeploymentYAML is orphansSetYAML's pods under a Deployment.
var orphansDeploymentYAML = strings.Replace(orphansSetYAML, "kind: StatefulSet", "kind: Deployment", 1)

func applyDeployment(t *testing.T, s *Store, ns string) *Record {
	t.Helper()
	docs, err := manifests.Decode("d.yaml", []byte(orphansDeploymentYAML))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Deployment
	d.Metadata.Namespace = ns
	b := Bundle{Deployments: []*manifests.Deployment{d}}
	if ns != "" {
		b.Namespaces = nss(ns)
	}
	if _, err := s.Apply(b, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	return lookupDeployment(t, s, ns)
}

func lookupDeployment(t *testing.T, s *Store, ns string) *Record {
	t.Helper()
	r, err := s.Lookup(ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A Deployment orphans as the generic kinds do (Kubernetes orphans its
// ReplicaSets, which keep the pods): the tombstone lists the deleted
// incarnation, written with it; the deployment applied again over it
// carries the list and adopts the pods its selector matches; a
// background deletion of the adopter takes what it adopted.
func TestDeploymentPodOwnerAcrossOrphaningDeleteAndApply(t *testing.T) {
	s := openTemp(t)
	first := applyDeployment(t, s, "")
	if len(first.Orphaned) != 0 {
		t.Fatalf("a new deployment lists orphaned incarnations %v", first.Orphaned)
	}
	ref := ObjectRef{Kind: KindDeployment, Namespace: "default", Name: "web"}
	if _, err := s.DeleteObjectsWith([]ObjectRef{ref}, DeleteOptions{Orphan: true}); err != nil {
		t.Fatal(err)
	}
	tomb := lookupDeployment(t, s, "")
	uid := OwnerUID(first.CreatedAt)
	if !tomb.Deleted || !slices.Equal(tomb.Orphaned, []string{uid}) || !tomb.Stored().OrphanedOnDeletion() {
		t.Fatalf("tombstone deleted %v orphaned %v, want the first incarnation %s", tomb.Deleted, tomb.Orphaned, uid)
	}
	time.Sleep(time.Millisecond) // another creation time, another uid
	second := applyDeployment(t, s, "")
	if second.CreatedAt.Equal(first.CreatedAt) || !slices.Equal(second.Orphaned, tomb.Orphaned) {
		t.Fatalf("applied again: created %v orphaned %v, want a new incarnation carrying %v", second.CreatedAt, second.Orphaned, tomb.Orphaned)
	}
	if _, err := s.DeleteObjects([]ObjectRef{ref}); err != nil {
		t.Fatal(err)
	}
	gone := lookupDeployment(t, s, "")
	if !slices.Equal(gone.Orphaned, tomb.Orphaned) || gone.Stored().OrphanedOnDeletion() {
		t.Fatalf("background tombstone orphaned %v, orphaned on deletion %v; want the list kept, not orphaned", gone.Orphaned, gone.Stored().OrphanedOnDeletion())
	}
	own := OwnerUID(second.CreatedAt)
	match, other := map[string]string{"app": "web"}, map[string]string{"app": "old"}
	for _, tc := range []struct {
		name   string
		rec    *Record
		uid    string
		labels map[string]string
		want   PodOwnership
	}{
		{"its own pod", first, uid, match, PodOwned},
		{"a pod made before deployments' pods were labelled is its own", first, "", match, PodOwned},
		{"after the orphaning delete its pod is nobody's", tomb, uid, match, PodOrphan},
		{"after the orphaning delete an unlabelled pod is nobody's", tomb, "", match, PodOrphan},
		{"the next incarnation adopts a matching orphan", second, uid, match, PodOwned},
		{"the next incarnation leaves an orphan its selector misses", second, uid, other, PodOrphan},
		{"the next incarnation's own pod", second, own, match, PodOwned},
		{"its background deletion takes what it adopted", gone, uid, match, PodOwned},
		{"its background deletion leaves what it did not adopt", gone, uid, other, PodOrphan},
		{"its background deletion takes its own", gone, own, match, PodOwned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Stored().PodOwner(tc.uid, tc.labels); got != tc.want {
				t.Errorf("PodOwner(%q, %v) = %d, want %d", tc.uid, tc.labels, got, tc.want)
			}
		})
	}
}

// Deleting a namespace takes the orphans a deployment of it left, as the
// namespace controller deletes every pod in it: no list survives.
func TestNamespaceDeletionTakesADeploymentsOrphans(t *testing.T) {
	for _, applyAgain := range []bool{false, true} {
		t.Run("applied again "+strconv.FormatBool(applyAgain), func(t *testing.T) {
			s := openTemp(t)
			applyDeployment(t, s, "team")
			ref := ObjectRef{Kind: KindDeployment, Namespace: "team", Name: "web"}
			if _, err := s.DeleteObjectsWith([]ObjectRef{ref}, DeleteOptions{Orphan: true}); err != nil {
				t.Fatal(err)
			}
			if applyAgain {
				time.Sleep(time.Millisecond)
				applyDeployment(t, s, "team")
			}
			if _, err := s.DeleteObjects([]ObjectRef{{Kind: KindNamespace, Name: "team"}}); err != nil {
				t.Fatal(err)
			}
			if r := lookupDeployment(t, s, "team"); !r.Deleted || len(r.Orphaned) != 0 {
				t.Errorf("after the namespace's deletion: deleted %v orphaned %v, want a tombstone listing none", r.Deleted, r.Orphaned)
			}
		})
	}
}

// A Deployment's container made by a release that did not label its
// pods with their incarnation is read as the incarnation it was made
// under: the record's own when made since it was created, else the
// latest orphaned incarnation created before it, or the first of them
// for one made before them all (a state directory resumed from Docker).
func TestRecordPodUIDOfUnlabelledContainers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	u0, u1 := OwnerUID(t0), OwnerUID(t1)
	live := &Record{CreatedAt: t2.Add(time.Hour), Orphaned: []string{u0, u1}}
	for _, tc := range []struct {
		name    string
		rec     *Record
		label   string
		created time.Time
		want    string
	}{
		{"a label is the incarnation", live, "abc", t0, "abc"},
		{"a record listing no orphans owns an unlabelled container", &Record{CreatedAt: t2}, "", t0, ""},
		{"made since the record was created: its own", live, "", live.CreatedAt.Add(time.Minute), ""},
		{"made in the second the record was created: its own", live, "", live.CreatedAt.Truncate(time.Second), ""},
		{"made under the first orphaned incarnation", live, "", t0.Add(time.Minute), u0},
		{"made under the second orphaned incarnation", live, "", t2, u1},
		{"made before any listed incarnation: the first's, which took it over", live, "", t0.Add(-time.Minute), u0},
		{"no creation time: the record's", live, "", time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.PodUID(tc.label, tc.created); got != tc.want {
				t.Errorf("PodUID(%q, %v) = %q, want %q", tc.label, tc.created, got, tc.want)
			}
		})
	}
}

// ContainerOwner reads a Deployment's unlabelled container as PodUID
// does (the incarnation it was made under), so that the Deployment
// controller and the orphan keeper, which both ask it, agree; any other
// kind's reads the label as it is. A Deployment's record carries its
// revisions, the templates its orphans were made from.
func TestContainerOwnerReadsADeploymentsUnlabelledContainers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	u0 := OwnerUID(t0)
	rec := &Record{CreatedAt: t1, Orphaned: []string{u0}, Revisions: []Revision{{Number: 1, Hash: "abc"}}}
	obj := rec.Stored()
	if len(obj.Revisions) != 1 || obj.Revisions[0].Hash != "abc" {
		t.Errorf("stored deployment revisions %+v, want its record's", obj.Revisions)
	}
	other := map[string]string{"app": "old"}
	for _, tc := range []struct {
		name    string
		label   string
		created time.Time
		want    PodOwnership
	}{
		{"unlabelled, made under the orphaned incarnation: nobody's", "", t0.Add(time.Minute), PodOrphan},
		{"unlabelled, made since the record was created: its own", "", t1.Add(time.Minute), PodOwned},
		{"labelled with the orphaned incarnation: nobody's", u0, t1.Add(time.Minute), PodOrphan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := obj.ContainerOwner(tc.label, tc.created, other); got != tc.want {
				t.Errorf("ContainerOwner(%q, %v) = %d, want %d", tc.label, tc.created, got, tc.want)
			}
		})
	}
	// Another kind's object reads an unlabelled container as its own.
	plain := &StoredObject{Created: t1, Orphaned: rec.Orphaned}
	if got := plain.ContainerOwner("", t0.Add(time.Minute), other); got != PodOwned {
		t.Errorf("a workload's unlabelled container: %d, want its own", got)
	}
}
