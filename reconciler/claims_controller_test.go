package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// fakeClaims is a ConfigStore holding claims only (and the claims' lister
// the sweep reads), changed by the test as `apply` and `delete pvc` would.
type fakeClaims struct {
	mu     sync.Mutex
	claims map[string]*store.ClaimRecord // by "namespace/name"
}

func (f *fakeClaims) LookupConfigMap(ns, name string) (*manifests.ConfigMap, error) {
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, store.ErrNotFound)
}

func (f *fakeClaims) LookupSecret(ns, name string) (*manifests.Secret, error) {
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, store.ErrNotFound)
}

func (f *fakeClaims) LookupClaim(ns, name string) (*manifests.PersistentVolumeClaim, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.claims[store.Key(ns, name)]
	if r == nil {
		return nil, false, fmt.Errorf("persistentvolumeclaim %s/%s: %w", ns, name, store.ErrNotFound)
	}
	cl := r.Object
	return &cl, r.Deleted, nil
}

func (f *fakeClaims) ListClaims() ([]*store.ClaimRecord, []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*store.ClaimRecord
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range f.claims {
			if !yield(k) {
				return
			}
		}
	}) {
		r := *f.claims[k]
		out = append(out, &r)
	}
	return out, nil
}

func (f *fakeClaims) set(ns, name string, deleted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claims == nil {
		f.claims = map[string]*store.ClaimRecord{}
	}
	f.claims[store.Key(ns, name)] = &store.ClaimRecord{Deleted: deleted, Object: manifests.PersistentVolumeClaim{
		APIVersion: "v1", Kind: manifests.KindPersistentVolumeClaim, Metadata: manifests.ObjectMeta{Name: name, Namespace: ns}}}
}

// claimTestDeployment mounts claim at /data.
func claimTestDeployment(name, claim string, replicas int32) *manifests.Deployment {
	d := testDeployment(name, replicas, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "store", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "store", MountPath: "/data"}}
	manifests.SetDefaults(d)
	return d
}

func (h *harness) replicaFailure(name string) string {
	st, err := h.store.ReadStatus("", name)
	if err != nil || st == nil {
		return ""
	}
	for _, c := range st.Conditions {
		if c.Type == manifests.ConditionReplicaFailure && c.Status == "True" {
			return c.Message
		}
	}
	return ""
}

func (h *harness) volume(name string) *dockerx.Volume {
	for _, v := range h.engine.Volumes() {
		if v.Name == name {
			return &v
		}
	}
	return nil
}

// mounters returns the names of the engine's containers (any instance)
// that mount volume.
func (h *harness) mounters(volume string) []string {
	cs, err := h.engine.ListContainers(context.Background(), "i")
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if slices.Contains(c.Volumes, volume) {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestClaimLifecycle follows a claim through the controller and the fake
// engine: a deployment whose claim is missing creates nothing and says so
// (ReplicaFailure naming it); the claim applied, its labelled volume is
// made and mounted; a replaced replica mounts the same volume; the claim
// deleted, its volume stays while a container uses it (pvc-protection);
// the deployment deleted, the volume goes.
func TestClaimLifecycle(t *testing.T) {
	claims := &fakeClaims{}
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: claims})
	h.apply(claimTestDeployment("db", "data", 2))
	h.start()
	const vol = "i_pvc_default.data"

	h.waitFor("ReplicaFailure naming the missing claim", func() bool {
		return strings.Contains(h.replicaFailure("db"), `persistentvolumeclaim "data" not found`)
	})
	if cs := h.ours("db"); len(cs) != 0 {
		t.Fatalf("containers created without their claim: %s", summary(cs))
	}
	if v := h.volume(vol); v != nil {
		t.Fatalf("volume made for a claim that does not exist: %+v", v)
	}

	claims.set("", "data", false)
	first := h.waitReplicas("db", 2)
	v := h.volume(vol)
	if v == nil || v.Role != dockerx.RoleClaim || v.Claim != "data" || v.Namespace != "default" || v.Instance != "i" {
		t.Fatalf("claim volume %+v", v)
	}
	h.waitFor("ReplicaFailure cleared", func() bool { return h.replicaFailure("db") == "" })
	if got := h.mounters(vol); len(got) != 2 {
		t.Fatalf("volume mounted by %v, want both replicas", got)
	}

	// A replica removed by hand is replaced; the new one mounts the same
	// volume, which is neither re-made nor touched.
	if err := h.engine.Remove(first[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor("replacement mounting the claim", func() bool {
		cs := h.ours("db")
		return len(cs) == 2 && !hasID(cs, first[0].ID) && len(h.mounters(vol)) == 2
	})

	// Deleted while in use: kept.
	claims.set("", "data", true)
	time.Sleep(300 * time.Millisecond) // several sweeps (resync 50ms)
	if h.volume(vol) == nil {
		t.Fatal("pvc-protection: the volume of a deleted claim went while containers use it")
	}
	if cs := h.ours("db"); len(cs) != 2 {
		t.Fatalf("running replicas touched by the claim's deletion: %s", summary(cs))
	}
	// A replica that must be replaced now cannot be: the claim is being
	// deleted, as the kubelet refuses a new pod.
	if err := h.engine.Remove(h.ours("db")[0].ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor("ReplicaFailure: claim being deleted", func() bool {
		return strings.Contains(h.replicaFailure("db"), `persistentvolumeclaim "data" is being deleted`)
	})
	// The removed replica may still be `removing` on a loaded machine
	// (its removal ends in a goroutine of the fake): only a container in
	// any other state would be a replacement.
	var kept []dockerx.Container
	for _, c := range h.ours("db") {
		if c.State != dockerx.StateRemoving {
			kept = append(kept, c)
		}
	}
	if len(kept) != 1 {
		t.Fatalf("replacement created on a claim being deleted: %s", summary(h.ours("db")))
	}

	if err := h.store.Delete("", "db"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("containers gone and the released volume removed", func() bool {
		return len(h.ours("db")) == 0 && h.volume(vol) == nil
	})
}

// TestClaimNeverAdopted: a volume of the claim's name that dockctl did not
// make for it is never mounted, adopted or removed; the deployment says
// why. A claim volume whose claim this state directory never knew stays,
// even with --prune-orphans.
func TestClaimNeverAdopted(t *testing.T) {
	claims := &fakeClaims{}
	claims.set("", "taken", false)
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: claims, PruneOrphans: true})
	h.engine.AddVolume("i_pvc_default.taken", map[string]string{"com.example.owner": "someone"})
	h.engine.AddVolume("i_pvc_default.ghost", dockerx.ClaimVolumeLabels(dockerx.ClaimVolumeRequest{Instance: "i", Claim: "ghost"}))
	h.apply(claimTestDeployment("db", "taken", 1))
	h.start()
	h.waitFor("ReplicaFailure: the volume is not the claim's", func() bool {
		m := h.replicaFailure("db")
		return strings.Contains(m, `persistentvolumeclaim "taken"`) && strings.Contains(m, "never adopts")
	})
	time.Sleep(300 * time.Millisecond) // several sweeps
	if cs := h.ours("db"); len(cs) != 0 {
		t.Fatalf("a container mounts a volume dockctl did not make: %s", summary(cs))
	}
	v := h.volume("i_pvc_default.taken")
	if v == nil || v.Labels["com.example.owner"] != "someone" || v.Labels[dockerx.LabelInstance] != "" {
		t.Fatalf("foreign volume changed: %+v", v)
	}
	if h.volume("i_pvc_default.ghost") == nil {
		t.Fatal("the volume of a claim never known was removed")
	}
}

// TestClaimFromStore: with the store as Options.Config and no periodic
// resync, applying the missing claim (its watch key) is what binds it and
// lets the waiting deployment create; deleting it (`delete pvc`) with no
// container left releases the volume.
func TestClaimFromStore(t *testing.T) {
	h := newHarness(t, Options{})
	h.ctrl = New(h.engine, h.store, func() Options { o := h.opts; o.Config = h.store; return o }())
	h.apply(claimTestDeployment("db", "data", 1))
	h.start()
	h.waitFor("ReplicaFailure naming the missing claim", func() bool {
		return strings.Contains(h.replicaFailure("db"), `persistentvolumeclaim "data" not found`)
	})
	claim := &manifests.PersistentVolumeClaim{APIVersion: "v1", Kind: manifests.KindPersistentVolumeClaim, Metadata: manifests.ObjectMeta{Name: "data"},
		Spec: manifests.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, Resources: manifests.VolumeResourceRequirements{
			Requests: map[string]resource.Quantity{"storage": resource.MustParse("1Gi")}}}}
	if _, err := h.store.Apply(store.Bundle{Claims: []*manifests.PersistentVolumeClaim{claim}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("db", 1)
	if v := h.volume("i_pvc_default.data"); v == nil || v.Claim != "data" {
		t.Fatalf("claim volume %+v", v)
	}
	if err := h.store.Delete("", "db"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("containers gone", func() bool { return len(h.ours("db")) == 0 })
	if h.volume("i_pvc_default.data") == nil {
		t.Fatal("the volume of a live claim went with the deployment")
	}
	if err := h.store.DeleteClaim("", "data"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the deleted claim's volume removed", func() bool { return h.volume("i_pvc_default.data") == nil })
}

// TestClaimInHolderPod: in a pod with a holder, every member that mounts
// the claim mounts its one volume; the holder does not (a claim's volume
// keeps its files without any container mounting it).
func TestClaimInHolderPod(t *testing.T) {
	claims := &fakeClaims{}
	claims.set("", "data", false)
	h := newHarness(t, Options{Config: claims})
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "store", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	mount := []manifests.VolumeMount{{Name: "store", MountPath: "/data"}}
	ps.Containers = []manifests.Container{{Name: "app", Image: testImage, VolumeMounts: mount}, {Name: "backup", Image: testImage, VolumeMounts: mount}}
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	const vol = "i_pvc_default.data"
	h.waitFor("both members mounting the claim", func() bool { return len(h.mounters(vol)) == 2 })
	cs := h.ours("web")
	hd := holderOf(cs)
	if hd == nil {
		t.Fatalf("no holder: %s", summary(cs))
	}
	for _, n := range h.mounters(vol) {
		if n == hd.Name {
			t.Errorf("the holder mounts the claim")
		}
	}
	if v := h.volume(vol); v == nil || v.Role != dockerx.RoleClaim {
		t.Fatalf("claim volume %+v", v)
	}
}

// TestMissingClaimCreatesNothingOfTheRevision: README: "A deployment
// naming a claim that does not exist creates nothing of that revision" -
// the pod's emptyDir volumes included: in a pod with a holder they are
// created in the wave before runCreates, which must not run while
// ensureClaims refuses the holder, on any retry (Kubernetes leaves a pod
// whose claim is missing Pending, with nothing made of it).
func TestMissingClaimCreatesNothingOfTheRevision(t *testing.T) {
	claims := &fakeClaims{}
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: claims})
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{
		{Name: "store", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: "data"}},
		{Name: "scratch", EmptyDir: &manifests.EmptyDirVolumeSource{}},
	}
	mounts := []manifests.VolumeMount{{Name: "store", MountPath: "/data"}, {Name: "scratch", MountPath: "/tmp/s"}}
	ps.Containers = []manifests.Container{{Name: "app", Image: testImage, VolumeMounts: mounts}, {Name: "side", Image: testImage}}
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	h.waitFor("ReplicaFailure naming the missing claim", func() bool {
		return strings.Contains(h.replicaFailure("web"), `persistentvolumeclaim "data" not found`)
	})
	time.Sleep(500 * time.Millisecond) // several retries
	if cs := h.ours("web"); len(cs) != 0 {
		t.Fatalf("containers created: %s", summary(cs))
	}
	var made []string
	for _, v := range h.engine.Volumes() {
		made = append(made, v.Name+"("+v.Role+")")
	}
	if n := h.engine.Calls()["volume:create"]; n > 0 || len(made) > 0 {
		t.Errorf("the revision is blocked on a missing claim, yet %d volume creates ran; volumes now %v", n, made)
	}
}

// racyClaims answers the sweep's ListClaims with the tombstone it holds,
// then — as `dockctl apply -f pvc.yaml` landing just after that read —
// makes the claim live again.
type racyClaims struct {
	*fakeClaims
	ns, name string
	flipped  bool
}

func (r *racyClaims) ListClaims() ([]*store.ClaimRecord, []error) {
	recs, errs := r.fakeClaims.ListClaims()
	if !r.flipped {
		r.flipped = true
		r.fakeClaims.set(r.ns, r.name, false)
	}
	return recs, errs
}

// TestReappliedClaimKeepsItsVolume: README: "Applying the claim again
// before the volume is gone binds the same volume, data included." The
// sweep decides to release from a snapshot of the records; it must look
// again before it removes the volume, or a claim re-applied between the
// read and the remove loses its data (and is re-bound to a new, empty
// volume).
func TestReappliedClaimKeepsItsVolume(t *testing.T) {
	fc := &fakeClaims{}
	fc.set("", "data", true) // `delete pvc data`: a tombstone, no user left
	claims := &racyClaims{fakeClaims: fc, ns: "", name: "data"}
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: claims})
	const vol = "i_pvc_default.data"
	l := dockerx.ClaimVolumeLabels(dockerx.ClaimVolumeRequest{Instance: "i", Claim: "data"})
	l["test.original"] = "yes" // stands for the data: a re-made volume lacks it
	h.engine.AddVolume(vol, l)
	h.start()
	time.Sleep(400 * time.Millisecond) // several sweeps
	if _, deleted, _ := claims.LookupClaim("", "data"); deleted {
		t.Fatal("test setup: the claim was not re-applied")
	}
	v := h.volume(vol)
	switch {
	case v == nil:
		t.Errorf("the volume of live (re-applied) claim data was removed")
	case v.Labels["test.original"] != "yes":
		t.Errorf("the volume of re-applied claim data was removed and re-made empty (%d removes): data lost; labels %v",
			h.engine.Calls()["volume:remove"], v.Labels)
	}
}

// gatedCreates is the fake engine whose first replica create waits at a
// gate: the time a create takes after runCreates's ensureClaims (slow
// start, a holder image, other pods of the wave).
type gatedCreates struct {
	*dockerfake.Engine
	once    sync.Once
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedCreates) CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.gate
	}
	return g.Engine.CreateContainer(ctx, req)
}

// TestClaimKeptUnderAnInFlightCreate: ensureClaim holds claimsMu only
// around the check and the volume create; the container that mounts the
// volume is created later. A `delete pvc` landing in between must not let
// the sweep see a deleted claim with no user and remove its volume: the
// create would go on, Docker would make a fresh, empty volume of that name
// for the mount, and the pod would run without the claim's data.
// Kubernetes' pvc-protection counts a pod from its creation, so the data
// stays until it ends.
func TestClaimKeptUnderAnInFlightCreate(t *testing.T) {
	fc := &fakeClaims{}
	fc.set("", "data", false)
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond, Config: fc})
	g := &gatedCreates{Engine: h.engine, entered: make(chan struct{}), gate: make(chan struct{})}
	h.ctrl = New(g, h.store, h.opts)
	h.apply(claimTestDeployment("web", "data", 1))
	h.start()
	const vol = "i_pvc_default.data"
	select {
	case <-g.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no create")
	}
	if h.volume(vol) == nil {
		t.Fatalf("ensureClaim made no volume %s before the create", vol)
	}
	removesBefore := h.engine.Calls()["volume:remove"]
	fc.set("", "data", true)           // `dockctl delete pvc data` while the create is in flight
	time.Sleep(400 * time.Millisecond) // several sweeps
	removed := h.engine.Calls()["volume:remove"] - removesBefore
	close(g.gate)
	h.waitFor("the replica created", func() bool { return len(h.ours("web")) == 1 })
	mounts := len(h.mounters(vol)) > 0
	if removed > 0 && mounts {
		t.Errorf("the sweep removed claim volume %s (%d removes) while a create ensureClaim had cleared was in flight; the replica then mounts %s anyway (a re-made, empty volume)", vol, removed, vol)
	}
	t.Logf("removes=%d mounts=%v volume now=%v", removed, mounts, h.volume(vol) != nil)
}
