package services

import (
	"context"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/netlayout"
	"github.com/dockctl/dockctl/store"
)

// TestServiceEnvVars: the variables of a pod's Services, named as the
// kubelet's envvars.FromServices names them: {SVC}_SERVICE_HOST,
// {SVC}_SERVICE_PORT (the first port), {SVC}_SERVICE_PORT_{NAME} per
// named port, and Docker's link variables {SVC}_PORT (the first port),
// {SVC}_PORT_{PORT}_{PROTO} with _PROTO, _PORT and _ADDR per port; names
// upper-cased with '-' as '_', the protocol TCP by default, lower-cased in
// values. A Service without a cluster IP (headless, or none yet) gives
// none (IsServiceIPSet).
func TestServiceEnvVars(t *testing.T) {
	tests := []struct {
		name  string
		links []serviceLink
		want  map[string]string
	}{
		{"one unnamed port", []serviceLink{{Name: "web", ClusterIP: "10.222.8.1", Ports: []manifests.ServicePort{{Port: 80}}}},
			map[string]string{
				"WEB_SERVICE_HOST": "10.222.8.1", "WEB_SERVICE_PORT": "80",
				"WEB_PORT": "tcp://10.222.8.1:80", "WEB_PORT_80_TCP": "tcp://10.222.8.1:80",
				"WEB_PORT_80_TCP_PROTO": "tcp", "WEB_PORT_80_TCP_PORT": "80", "WEB_PORT_80_TCP_ADDR": "10.222.8.1",
			}},
		{"named ports, dashes, UDP", []serviceLink{{Name: "redis-master", ClusterIP: "10.222.8.2", Ports: []manifests.ServicePort{
			{Name: "redis", Port: 6379, Protocol: "TCP"}, {Name: "dns-udp", Port: 53, Protocol: "UDP"}}}},
			map[string]string{
				"REDIS_MASTER_SERVICE_HOST": "10.222.8.2", "REDIS_MASTER_SERVICE_PORT": "6379",
				"REDIS_MASTER_SERVICE_PORT_REDIS": "6379", "REDIS_MASTER_SERVICE_PORT_DNS_UDP": "53",
				"REDIS_MASTER_PORT":          "tcp://10.222.8.2:6379",
				"REDIS_MASTER_PORT_6379_TCP": "tcp://10.222.8.2:6379", "REDIS_MASTER_PORT_6379_TCP_PROTO": "tcp",
				"REDIS_MASTER_PORT_6379_TCP_PORT": "6379", "REDIS_MASTER_PORT_6379_TCP_ADDR": "10.222.8.2",
				"REDIS_MASTER_PORT_53_UDP": "udp://10.222.8.2:53", "REDIS_MASTER_PORT_53_UDP_PROTO": "udp",
				"REDIS_MASTER_PORT_53_UDP_PORT": "53", "REDIS_MASTER_PORT_53_UDP_ADDR": "10.222.8.2",
			}},
		{"headless or not allocated: none", []serviceLink{
			{Name: "peers", ClusterIP: manifests.ClusterIPNone, Ports: []manifests.ServicePort{{Port: 80}}},
			{Name: "pending", Ports: []manifests.ServicePort{{Port: 80}}}}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := serviceEnvVars(tt.links)
			if !maps.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestServiceEnvWaitsForAnAddress: a create does not miss a Service of its
// namespace the Service reconciler has not synced yet (one applied in the
// same apply as the deployment): it waits for the address, as the kubelet
// waits for its Service informer's first sync and as the API server gives
// a Service its address before a later pod exists.
func TestServiceEnvWaitsForAnAddress(t *testing.T) {
	h := newEnvRig(t)
	if _, err := h.store.Apply(store.Bundle{Services: []*manifests.Service{{APIVersion: "v1", Kind: "Service",
		Metadata: manifests.ObjectMeta{Name: "api"},
		Spec:     manifests.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []manifests.ServicePort{{Port: 8080}}}}}},
		store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan map[string]string, 1)
	go func() {
		got <- h.svc.Env(context.Background(), "default")
	}()
	a := &h.svc.alloc
	h.waitFor("the create waiting for api's address", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.next != nil
	})
	select {
	case env := <-got:
		t.Fatalf("the create went on before api had an address: %v", env)
	default:
	}
	// The Service reconciler's sync gives it its address.
	a.mu.Lock()
	a.held["default/api"] = serviceAllocation{Key: "default/api", ClusterIP: "10.222.8.9"}
	a.noteAssignedLocked("default/api")
	a.mu.Unlock()
	if env := <-got; env["API_SERVICE_HOST"] != "10.222.8.9" || env["API_SERVICE_PORT"] != "8080" {
		t.Errorf("environment %v, want api's variables", env)
	}
}

// TestServiceAddressKnownOnlyWithTheNetwork: before the instance network
// exists (a new instance's first apply) a Service's sync can allocate no
// address; a create must keep waiting for it then, not take the Service
// for one without an address.
func TestServiceAddressKnownOnlyWithTheNetwork(t *testing.T) {
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	svc := defaultService(&manifests.Service{APIVersion: "v1", Kind: "Service", Metadata: manifests.ObjectMeta{Name: "api"},
		Spec: manifests.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []manifests.ServicePort{{Port: 8080}}}})
	a := &allocator{held: map[string]serviceAllocation{}, waiting: map[string]bool{}}
	a.assign(st, allocInput{Key: "default/api", Service: svc})
	if ip, ok, wait := a.addressOf(st, "default/api"); ok || wait == nil {
		t.Fatalf("without the network: address %q, known %v", ip, ok)
	}
	_, _, wait := a.addressOf(st, "default/api")
	l, err := netlayout.FromStatus(&store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21",
		Gateway: "10.222.0.1", DNSIP: "10.222.8.0"})
	if err != nil {
		t.Fatal(err)
	}
	a.assign(st, allocInput{Key: "default/api", Service: svc, Layout: &l})
	select {
	case <-wait:
	default:
		t.Fatal("the allocation with the network did not wake the waiting creates")
	}
	if ip, ok, _ := a.addressOf(st, "default/api"); !ok || ip == "" {
		t.Errorf("with the network: address %q, known %v", ip, ok)
	}
}

// applyServices applies Services of the default namespace, one port each.
func applyServices(t *testing.T, st *store.Store, names ...string) {
	t.Helper()
	var svcs []*manifests.Service
	for _, n := range names {
		svcs = append(svcs, &manifests.Service{APIVersion: "v1", Kind: "Service", Metadata: manifests.ObjectMeta{Name: n},
			Spec: manifests.ServiceSpec{Selector: map[string]string{"app": n}, Ports: []manifests.ServicePort{{Port: 8080}}}})
	}
	if _, err := st.Apply(store.Bundle{Services: svcs}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serviceEnvAsync runs Env as a create would, its result on the
// channel.
func serviceEnvAsync(h *envRig, ctx context.Context) <-chan map[string]string {
	got := make(chan map[string]string, 1)
	go func() { got <- h.svc.Env(ctx, "default") }()
	return got
}

// receive waits for the create's environment.
func receive(h *envRig, what string, got <-chan map[string]string) map[string]string {
	h.t.Helper()
	var env map[string]string
	h.waitFor(what, func() bool {
		select {
		case env = <-got:
			return true
		default:
			return false
		}
	})
	return env
}

// TestServiceEnvWaitIsBoundedForEveryService: the wait for Services
// without an address is bounded as a whole, however many there are: the
// kubelet never holds a container's start for its Service variables
// beyond its informer's first sync, and a create must not hang on the
// second of two Services that get no address.
func TestServiceEnvWaitIsBoundedForEveryService(t *testing.T) {
	h := newEnvRig(t)
	h.svc.envWait = 20 * time.Millisecond
	applyServices(t, h.store, "api", "db") // never synced: no address
	env := receive(h, "the create to go on without api's and db's variables", serviceEnvAsync(h, context.Background()))
	if len(env) != 0 {
		t.Errorf("environment %v, want none", env)
	}
}

// TestServiceEnvWaitsOnceForAServiceWithoutAddress: a Service that gets no
// address is waited for once, by the first creates, not by every create
// after them (a scale from 0 to 50 would wait the bound 50 times over,
// each slow-start wave in turn); a Service applied later is waited for
// on its own, and one given its address is seen again.
func TestServiceEnvWaitsOnceForAServiceWithoutAddress(t *testing.T) {
	h := newEnvRig(t)
	h.svc.envWait = 20 * time.Millisecond
	applyServices(t, h.store, "api")
	receive(h, "the first create, after its wait for api", serviceEnvAsync(h, context.Background()))

	h.svc.envWait = time.Hour // a create that waited for api again would hang
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if env := receive(h, "a later create, without waiting for api again", serviceEnvAsync(h, ctx)); len(env) != 0 {
		t.Errorf("environment %v, want none", env)
	}

	// api gets its address late, before the next create: that create
	// has its variables, and waits for db, a new Service, all the same.
	applyServices(t, h.store, "api", "db")
	a := &h.svc.alloc
	a.mu.Lock()
	a.held["default/api"] = serviceAllocation{Key: "default/api", ClusterIP: "10.222.8.8"}
	a.noteAssignedLocked("default/api")
	a.mu.Unlock()
	got := serviceEnvAsync(h, ctx)
	h.waitFor("the create waiting for db, a new Service", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, waiting := a.envUntil["default/db"]
		return waiting
	})
	a.mu.Lock()
	a.held["default/db"] = serviceAllocation{Key: "default/db", ClusterIP: "10.222.8.7"}
	a.noteAssignedLocked("default/db")
	a.mu.Unlock()
	env := receive(h, "the create, once db has its address", got)
	if env["DB_SERVICE_HOST"] != "10.222.8.7" || env["API_SERVICE_HOST"] != "10.222.8.8" {
		t.Errorf("environment %v, want db's and api's variables", env)
	}
}

// TestServiceEnvForgetsADeletedService: a Service deleted and applied
// again is a new Service with no address yet: a create waits for it as
// for any new one, rather than taking the old one's assignment for its
// own and leaving its variables out.
func TestServiceEnvForgetsADeletedService(t *testing.T) {
	h := newEnvRig(t)
	applyServices(t, h.store, "api")
	a := &h.svc.alloc
	a.mu.Lock()
	a.held["default/api"] = serviceAllocation{Key: "default/api", ClusterIP: "10.222.8.9"}
	a.noteAssignedLocked("default/api")
	a.mu.Unlock()
	h.svc.forget("default/api") // its deletion's sync
	if ip, ok, _ := a.addressOf(h.store, "default/api"); ok {
		t.Errorf("a deleted Service still counts as given its address (%q)", ip)
	}
}

// envRig is a Service controller whose loop never runs, on a state
// directory with the instance network recorded: a test gives Services
// their addresses by hand (the allocator), as their syncs would.
type envRig struct {
	t     *testing.T
	store *store.Store
	svc   *Controller
}

func newEnvRig(t *testing.T) *envRig {
	t.Helper()
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteNetwork(&store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21",
		Gateway: "10.222.0.1", DNSIP: "10.222.8.0"}); err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Instance: "i", Address: "127.0.0.1", Store: st, Deployments: st, Tracker: NewTracker(func(string) {}, nil),
		Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(svc.Loop().ShutDown)
	return &envRig{t: t, store: st, svc: svc}
}

// waitFor waits (generously: the machine may be loaded) for cond.
func (h *envRig) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
