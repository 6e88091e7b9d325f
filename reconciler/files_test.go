package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/store"
)

// The sweep's assessment of a deployment (needsSync) only decides whether
// to queue its sync: it must not act. Its snapshot was listed before it
// ran, possibly before a sync of the same deployment created a pod and
// wrote its files; forgetting what it does not see would drop the memory
// of that write, and the next sync would write the converged pod's files
// once more (the rare "2 writes of a converged pod" of
// TestFilesRewrittenAfterEventGap). Only a deployment's own sync, whose
// list follows every write it made, forgets the pods it no longer sees.
func TestFilesMemoryKeptBySweepOfOlderSnapshot(t *testing.T) {
	h, w := filesHarness(t)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.apply(configMapVolumeDeployment("web", "app"))
	h.start()
	remembered := func() int {
		h.ctrl.files.mu.Lock()
		defer h.ctrl.files.mu.Unlock()
		return len(h.ctrl.files.written[store.Key("", "web")])
	}
	h.waitFor("the files written and remembered", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.writes == 1 && remembered() == 1
	})
	h.stop() // nothing but the call below touches the memory now
	if n := remembered(); n != 1 {
		t.Fatalf("the files memory holds %d pods of web once its controller stopped, want 1", n)
	}
	rec, err := h.store.Lookup("", "web")
	if err != nil || rec == nil {
		t.Fatalf("lookup web: %v", err)
	}
	// A sweep whose list was taken before the pod was created.
	h.ctrl.needsSync(rec, nil, nil, h.ctrl.opts.Now())
	if n := remembered(); n != 1 {
		t.Errorf("the files memory holds %d pods of web after a sweep assessed an older snapshot, want 1: the next sync writes the converged pod again", n)
	}
}
