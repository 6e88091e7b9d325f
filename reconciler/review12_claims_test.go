package reconciler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
)

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

// Review 12: ensureClaim holds claimsMu only around the check and the
// volume create; the container that mounts the volume is created later.
// A `delete pvc` landing in between lets the sweep see a deleted claim
// with no user and remove its volume; the create then goes on, and
// Docker makes a fresh, empty volume of that name for the mount. The
// pod runs without the claim's data, which the sweep removed while a
// pod using it was being made (Kubernetes' pvc-protection counts a pod
// from its creation, so the data would stay until it ends).
func TestReview12ClaimReleasedUnderAnInFlightCreate(t *testing.T) {
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
