package reconciler

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// recordingStore is the state directory with every status write recorded,
// so that a test sees each write (a condition that lasted one sync
// included) and can require that none happens.
type recordingStore struct {
	*store.Store
	mu     sync.Mutex
	writes map[string][]store.Status // by deployment, in order
}

func (r *recordingStore) WriteStatus(ns, name string, st *store.Status) error {
	r.mu.Lock()
	cp := *st
	cp.Conditions = append([]manifests.DeploymentCondition(nil), st.Conditions...)
	r.writes[name] = append(r.writes[name], cp)
	r.mu.Unlock()
	return r.Store.WriteStatus(ns, name, st)
}

// count returns how many status writes there were, for every deployment.
func (r *recordingStore) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ws := range r.writes {
		n += len(ws)
	}
	return n
}

// reasons returns the distinct successive reasons of condition typ that
// name's status writes carried ("" while it was absent), in order.
func (r *recordingStore) reasons(name, typ string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, w := range r.writes[name] {
		reason := ""
		for _, c := range w.Conditions {
			if c.Type == typ {
				reason = c.Reason
			}
		}
		if len(out) == 0 || out[len(out)-1] != reason {
			out = append(out, reason)
		}
	}
	return out
}

// recordStatus rebuilds the harness's controller (not yet started) on a
// recordingStore.
func (h *harness) recordStatus() *recordingStore {
	h.t.Helper()
	if h.cancel != nil {
		h.t.Fatal("recordStatus after start")
	}
	r := &recordingStore{Store: h.store, writes: map[string][]store.Status{}}
	h.ctrl = New(h.engine, r, h.opts)
	return r
}

// dump shows every recorded write, for a failure message.
func (r *recordingStore) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for name, ws := range r.writes {
		for i, w := range ws {
			j, _ := json.Marshal(w)
			fmt.Fprintf(&b, "\n%s #%d: %s", name, i, j)
		}
	}
	return b.String()
}
