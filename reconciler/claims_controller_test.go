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
	if len(h.ours("db")) != 1 {
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
