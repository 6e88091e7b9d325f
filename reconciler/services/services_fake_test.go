package services

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/dockctl/dockctl/store"
)

// fakeSvcStore is an in-memory ServiceStore.
type fakeSvcStore struct {
	mu       sync.Mutex
	services map[string]*store.ServiceRecord
	statuses map[string]*store.ServiceStatus
	network  *store.NetworkStatus
	gateway  *store.GatewayStatus
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

func (s *fakeSvcStore) ReadGateway() (*store.GatewayStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gateway == nil {
		return nil, nil
	}
	cp := *s.gateway
	cp.HostHeld = slices.Clone(cp.HostHeld)
	return &cp, nil
}

func (s *fakeSvcStore) WriteGateway(g *store.GatewayStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *g
	cp.HostHeld = slices.Clone(cp.HostHeld)
	s.gateway = &cp
	return nil
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
