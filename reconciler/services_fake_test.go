package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/store"
)

// fakeSvcDocker is a small in-memory ServiceDocker with Docker's
// semantics for what the Service reconcilers use (409 on a name in use,
// 404 on a missing container), and helpers that serve what they are
// created or pushed with, refusing older generations as the real ones do.
type fakeSvcDocker struct {
	mu      sync.Mutex
	seq     int
	ctrs    map[string]*dockerx.Container
	served  map[string]string // container ID → config JSON it serves
	creates []HelperRequest
	writes  int
	// exec, when set, answers a push instead of the helper.
	exec func(id string, cmd []string) (int, []byte)
	// daemon are other containers of the daemon (ListAllContainers).
	daemon []dockerx.Container
}

func newFakeSvcDocker() *fakeSvcDocker {
	return &fakeSvcDocker{ctrs: map[string]*dockerx.Container{}, served: map[string]string{}}
}

func (f *fakeSvcDocker) ListContainers(_ context.Context, instance string) ([]dockerx.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []dockerx.Container
	for _, c := range f.ctrs {
		if c.Instance == instance {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fakeSvcDocker) ListAllContainers(ctx context.Context) ([]dockerx.Container, error) {
	f.mu.Lock()
	out := append([]dockerx.Container(nil), f.daemon...)
	f.mu.Unlock()
	for _, c := range f.ctrs {
		out = append(out, *c)
	}
	return out, nil
}

func (f *fakeSvcDocker) CreateHelper(_ context.Context, req HelperRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	for _, c := range f.ctrs {
		if c.Name == req.Name {
			return "", fmt.Errorf("create %s: %w", req.Name, dockerx.ErrConflict)
		}
	}
	f.seq++
	id := fmt.Sprintf("helper%04d", f.seq)
	labels := map[string]string{dockerx.LabelInstance: req.Instance, dockerx.LabelRole: req.Role, LabelConfigHash: req.ConfigHash}
	if req.Namespace != "" {
		labels[LabelNamespace] = req.Namespace
	}
	if req.Service != "" {
		labels[LabelService] = req.Service
	}
	f.ctrs[id] = &dockerx.Container{ID: id, Name: req.Name, Image: req.Image, Instance: req.Instance, Role: req.Role, Labels: labels, State: dockerx.StateCreated}
	f.creates = append(f.creates, req)
	if n := len(req.Cmd); n > 0 {
		f.served[id] = req.Cmd[n-1]
	}
	return id, nil
}

func (f *fakeSvcDocker) EnsureHelperImage(context.Context, string) (string, error) {
	return "dockctl-helper:i-0123456789ab", nil
}

func (f *fakeSvcDocker) setState(id, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	c := f.ctrs[id]
	if c == nil {
		return fmt.Errorf("container %s: %w", id, dockerx.ErrNotFound)
	}
	c.State = state
	return nil
}

func (f *fakeSvcDocker) StartContainer(_ context.Context, id string) error {
	return f.setState(id, dockerx.StateRunning)
}

func (f *fakeSvcDocker) UnpauseContainer(_ context.Context, id string) error {
	return f.setState(id, dockerx.StateRunning)
}

func (f *fakeSvcDocker) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.ctrs[id] == nil {
		return fmt.Errorf("container %s: %w", id, dockerx.ErrNotFound)
	}
	delete(f.ctrs, id)
	delete(f.served, id)
	return nil
}

func (f *fakeSvcDocker) ExecOutput(_ context.Context, id string, cmd []string, _ time.Duration) (int, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	c := f.ctrs[id]
	if c == nil || c.State != dockerx.StateRunning {
		return 0, nil, fmt.Errorf("exec in %s: %w", id, dockerx.ErrConflict)
	}
	if f.exec != nil {
		code, out := f.exec(id, cmd)
		return code, out, nil
	}
	if len(cmd) != 5 || cmd[1] != "helper" || cmd[2] != helperapi.ModePush {
		return helperapi.ExitUsage, []byte("usage"), nil
	}
	var in, held struct{ Generation int64 }
	if err := json.Unmarshal([]byte(cmd[4]), &in); err != nil {
		return helperapi.ExitFailed, []byte(err.Error()), nil
	}
	_ = json.Unmarshal([]byte(f.served[id]), &held)
	if in.Generation < held.Generation {
		ack, _ := json.Marshal(helperapi.Ack{Generation: held.Generation})
		return helperapi.ExitStale, ack, nil
	}
	f.served[id] = cmd[4]
	ack, _ := json.Marshal(helperapi.Ack{Generation: in.Generation})
	return helperapi.ExitOK, ack, nil
}

// serving returns what the helper of that name serves, decoded into v.
func (f *fakeSvcDocker) serving(name string, v any) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.ctrs {
		if c.Name == name {
			return id, json.Unmarshal([]byte(f.served[id]), v) == nil
		}
	}
	return "", false
}

func (f *fakeSvcDocker) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// fakeSvcStore is an in-memory ServiceStore.
type fakeSvcStore struct {
	mu       sync.Mutex
	services map[string]*ServiceRecord
	statuses map[string]*ServiceStatus
	network  *NetworkStatus
	writes   int
}

func newFakeSvcStore() *fakeSvcStore {
	return &fakeSvcStore{services: map[string]*ServiceRecord{}, statuses: map[string]*ServiceStatus{},
		network: &NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1", DNSIP: "10.222.8.0"}}
}

func (s *fakeSvcStore) put(r *ServiceRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Generation++
	s.services[serviceKey(&r.Service)] = r
}

func (s *fakeSvcStore) ListServices() ([]*ServiceRecord, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*ServiceRecord
	for _, r := range s.services {
		cp := *r
		out = append(out, &cp)
	}
	sort.Slice(out, func(i, j int) bool { return serviceKey(&out[i].Service) < serviceKey(&out[j].Service) })
	return out, nil
}

func (s *fakeSvcStore) LookupService(ns, name string) (*ServiceRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.services[ns+"/"+name]
	if r == nil {
		return nil, fmt.Errorf("service %s/%s: %w", ns, name, store.ErrNotFound)
	}
	cp := *r
	return &cp, nil
}

func (s *fakeSvcStore) ReadServiceStatus(ns, name string) (*ServiceStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statuses[ns+"/"+name]
	if st == nil {
		return nil, nil
	}
	// A deep copy, as a file read gives.
	var out ServiceStatus
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &out)
	return &out, nil
}

func (s *fakeSvcStore) WriteServiceStatus(ns, name string, st *ServiceStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	var cp ServiceStatus
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &cp)
	s.statuses[ns+"/"+name] = &cp
	return nil
}

func (s *fakeSvcStore) ReadNetwork() (*NetworkStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.network == nil {
		return nil, nil
	}
	cp := *s.network
	return &cp, nil
}

func (s *fakeSvcStore) status(key string) ServiceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.statuses[key]; st != nil {
		return *st
	}
	return ServiceStatus{}
}

func (s *fakeSvcStore) writeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}
