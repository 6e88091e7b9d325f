package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/store"
)

// helperEngine is internal/dockerfake with helpers that behave as
// dockctl's do: a helper serves the config of its command, then what is
// pushed to it, refusing an older generation (ExitStale, with the one it
// holds) — and, for port conflicts, the daemon's other containers.
type helperEngine struct {
	*dockerfake.Engine
	mu      sync.Mutex
	served  map[string]string // container ID → config JSON served
	creates []dockerx.HelperRequest
	// exec, when set, answers a push instead of the helper.
	exec func(id string, cmd []string) (int, []byte)
	// journal records, in order, every config a helper applied ("push
	// ID CONFIG") and every stop signal ("stop ID").
	journal []string
	// daemon are containers of other owners (ListAllContainers).
	daemon []dockerx.Container
}

func newHelperEngine(t *testing.T, images ...string) *helperEngine {
	h := &helperEngine{Engine: dockerfake.New(images...), served: map[string]string{}}
	h.HandleExec(h.handle)
	if _, err := h.EnsureNetwork(context.Background(), dockerx.NetworkRequest{Instance: "i", Name: "dockctl_i",
		Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *helperEngine) CreateHelper(ctx context.Context, req dockerx.HelperRequest) (string, error) {
	id, err := h.Engine.CreateHelper(ctx, req)
	if err == nil {
		h.mu.Lock()
		h.creates = append(h.creates, req)
		h.served[id] = req.Cmd[len(req.Cmd)-1]
		h.mu.Unlock()
	}
	return id, err
}

func (h *helperEngine) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	h.mu.Lock()
	h.journal = append(h.journal, "stop "+id)
	h.mu.Unlock()
	return h.Engine.StopContainer(ctx, id, timeout)
}

func (h *helperEngine) entries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.journal)
}

func (h *helperEngine) ListAllContainers(context.Context) ([]dockerx.Container, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(h.Snapshot(), h.daemon...), nil
}

func (h *helperEngine) handle(id string, cmd []string) (int, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exec != nil {
		return h.exec(id, cmd)
	}
	if len(cmd) != 5 || cmd[1] != "helper" || cmd[2] != helperapi.ModePush {
		return helperapi.ExitUsage, nil
	}
	var in, held struct{ Generation int64 }
	if err := json.Unmarshal([]byte(cmd[4]), &in); err != nil {
		return helperapi.ExitFailed, nil
	}
	_ = json.Unmarshal([]byte(h.served[id]), &held)
	if in.Generation < held.Generation {
		ack, _ := json.Marshal(helperapi.Ack{Generation: held.Generation})
		return helperapi.ExitStale, ack
	}
	h.served[id] = cmd[4]
	h.journal = append(h.journal, "push "+id+" "+cmd[4])
	ack, _ := json.Marshal(helperapi.Ack{Generation: in.Generation})
	return helperapi.ExitOK, ack
}

// serving returns the ID of the helper of that name and decodes what it
// serves into v.
func (h *helperEngine) serving(name string, v any) (string, bool) {
	for _, c := range h.Snapshot() {
		if c.Name == name {
			h.mu.Lock()
			defer h.mu.Unlock()
			return c.ID, json.Unmarshal([]byte(h.served[c.ID]), v) == nil
		}
	}
	return "", false
}

func (h *helperEngine) createdHelpers() []dockerx.HelperRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.creates)
}

// writeCount counts the calls that change what Docker runs or serves.
func (h *helperEngine) writeCount() int {
	return h.WriteCalls() + h.Calls()["exec:output"] + h.Calls()["create:helper"]
}

// fakeSvcStore is an in-memory ServiceStore.
type fakeSvcStore struct {
	mu       sync.Mutex
	services map[string]*store.ServiceRecord
	statuses map[string]*store.ServiceStatus
	network  *store.NetworkStatus
	writes   int
}

func newFakeSvcStore() *fakeSvcStore {
	return &fakeSvcStore{services: map[string]*store.ServiceRecord{}, statuses: map[string]*store.ServiceStatus{},
		network: &store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1", DNSIP: "10.222.8.0"}}
}

func (s *fakeSvcStore) put(r *store.ServiceRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Generation++
	s.services[serviceKey(&r.Service)] = r
}

func (s *fakeSvcStore) ListServices() ([]*store.ServiceRecord, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*store.ServiceRecord
	for _, r := range s.services {
		cp := *r
		out = append(out, &cp)
	}
	sort.Slice(out, func(i, j int) bool { return serviceKey(&out[i].Service) < serviceKey(&out[j].Service) })
	return out, nil
}

func (s *fakeSvcStore) LookupService(ns, name string) (*store.ServiceRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.services[ns+"/"+name]
	if r == nil {
		return nil, fmt.Errorf("service %s/%s: %w", ns, name, store.ErrNotFound)
	}
	cp := *r
	return &cp, nil
}

func (s *fakeSvcStore) ReadServiceStatus(ns, name string) (*store.ServiceStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statuses[ns+"/"+name]
	if st == nil {
		return nil, nil
	}
	// A deep copy, as a file read gives.
	var out store.ServiceStatus
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &out)
	return &out, nil
}

func (s *fakeSvcStore) WriteServiceStatus(ns, name string, st *store.ServiceStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	var cp store.ServiceStatus
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &cp)
	s.statuses[ns+"/"+name] = &cp
	return nil
}

func (s *fakeSvcStore) ReadNetwork() (*store.NetworkStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.network == nil {
		return nil, nil
	}
	cp := *s.network
	return &cp, nil
}

func (s *fakeSvcStore) status(key string) store.ServiceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.statuses[key]; st != nil {
		return *st
	}
	return store.ServiceStatus{}
}

func (s *fakeSvcStore) writeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}
