package services

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Service environment variables, as the kubelet sets them
// (getServiceEnvVarMap, pkg/kubelet/envvars FromServices): every container
// of a pod gets, for each Service of its namespace that has a cluster IP
// when the container is created, {SVC}_SERVICE_HOST, {SVC}_SERVICE_PORT
// and a {SVC}_SERVICE_PORT_{NAME} per named port, and Docker's link
// variables {SVC}_PORT and {SVC}_PORT_{PORT}_{PROTO}{,_PROTO,_PORT,_ADDR};
// unless its pod sets enableServiceLinks: false. They are part of the
// create request only, never of the template hash — as the kubelet keeps
// them out of a container's hash — so that a Service added or changed
// restarts nothing: containers created later see it. (Kubernetes also
// gives every pod the "kubernetes" Service of the default namespace, the
// API server's: dockctl has none.)

// serviceEnvWait bounds how long a container's create waits for a Service
// of its namespace the Service reconciler has not given an address yet (a
// Service applied with the deployment, or the first sync after a start),
// as the kubelet waits for its Service informer to have synced once.
const serviceEnvWait = 5 * time.Second

// serviceLink is what a Service's variables say of it.
type serviceLink struct {
	Name      string
	ClusterIP string // "" none (yet), ClusterIPNone headless: no variables
	Ports     []manifests.ServicePort
}

// serviceEnvVars returns the variables of the Services links, by name.
func serviceEnvVars(links []serviceLink) map[string]string {
	out := map[string]string{}
	for _, s := range links {
		if s.ClusterIP == "" || s.ClusterIP == manifests.ClusterIPNone || len(s.Ports) == 0 {
			continue // IsServiceIPSet; a Service with a cluster IP has ports
		}
		prefix := envVarName(s.Name)
		out[prefix+"_SERVICE_HOST"] = s.ClusterIP
		out[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Ports[0].Port))
		for _, p := range s.Ports {
			if p.Name != "" {
				out[prefix+"_SERVICE_PORT_"+envVarName(p.Name)] = strconv.Itoa(int(p.Port))
			}
		}
		// Docker's link variables (makeLinkVariables).
		for i, p := range s.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = "TCP"
			}
			url := fmt.Sprintf("%s://%s", strings.ToLower(proto), net.JoinHostPort(s.ClusterIP, strconv.Itoa(int(p.Port))))
			if i == 0 {
				out[prefix+"_PORT"] = url
			}
			pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
			out[pp] = url
			out[pp+"_PROTO"] = strings.ToLower(proto)
			out[pp+"_PORT"] = strconv.Itoa(int(p.Port))
			out[pp+"_ADDR"] = s.ClusterIP
		}
	}
	return out
}

// envVarName is the kubelet's makeEnvVariableName: upper case, '-' as '_'.
func envVarName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

// Env returns the Service variables of a container created now in
// namespace ns: the live Services of the namespace with the address
// the Service reconciler gave them. One it has not synced yet is waited
// for, up to serviceEnvWait for them all (awaitAddress).
func (s *Controller) Env(ctx context.Context, ns string) map[string]string {
	recs, errs := s.store.ListServices()
	if len(errs) > 0 {
		s.log.Warn("Services unreadable: their environment variables are left out", "namespace", ns, "err", errs[0])
	}
	var links []serviceLink
	until := time.Now().Add(s.envWait) // one bound for all of them
	for _, r := range recs {
		svc := defaultService(&r.Service)
		if r.Deleted || svc.Metadata.NamespaceOrDefault() != ns || svc.Spec.ClusterIP == manifests.ClusterIPNone {
			continue
		}
		if ip, ok := s.awaitAddress(ctx, serviceKey(svc), until); ok {
			links = append(links, serviceLink{Name: svc.Metadata.Name, ClusterIP: ip, Ports: svc.Spec.Ports})
		}
	}
	return serviceEnvVars(links)
}

// awaitAddress returns a Service's address, waiting for its sync to give
// it one until the Service's wait ends: until, as the first create that
// waited for it set it. Every create shares that one window — the kubelet
// waits once, for its informer's first sync — so a Service that gets no
// address holds up a scale-up once, not each of its creates in turn.
func (s *Controller) awaitAddress(ctx context.Context, key string, until time.Time) (string, bool) {
	for {
		ip, ok, next := s.alloc.addressOf(s.store, key)
		if ok {
			return ip, true
		}
		left := time.Until(s.alloc.envDeadline(key, until))
		if left <= 0 {
			return "", false // waited for already: left out
		}
		t := time.NewTimer(left)
		select {
		case <-next:
			t.Stop()
			continue
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
			s.log.Warn("Service has no address yet: its environment variables are left out", "service", key)
		}
		return "", false
	}
}

// envDeadline returns until when creates wait for key's address: at the
// first call, until (kept until the Service is given its address).
func (a *allocator) envDeadline(key string, until time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d, ok := a.envUntil[key]; ok {
		return d
	}
	if a.envUntil == nil {
		a.envUntil = map[string]time.Time{}
	}
	a.envUntil[key] = until
	return until
}

// addressOf returns the Service's address as its last sync gave it (or
// its status kept across a restart); ok false when it has none and no
// sync of this controller could allocate one yet (the instance network
// not known yet: a new instance's first apply) — then wait is closed at
// the next assignment of any Service.
func (a *allocator) addressOf(st ServiceStore, key string) (ip string, ok bool, wait <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(st)
	if h := a.held[key]; a.assigned[key] || (h.ClusterIP != "" && h.ClusterIP != manifests.ClusterIPNone) {
		return h.ClusterIP, true, nil
	}
	if a.next == nil {
		a.next = make(chan struct{})
	}
	return "", false, a.next
}

// noteAssignedLocked records that key was given its address, and wakes
// the creates waiting for one.
func (a *allocator) noteAssignedLocked(key string) {
	if a.assigned == nil {
		a.assigned = map[string]bool{}
	}
	a.assigned[key] = true
	delete(a.envUntil, key)
	if a.next != nil {
		close(a.next)
		a.next = nil
	}
}

// SetEnvWait sets how long creates wait for the addresses of their
// namespace's Services (default serviceEnvWait, as the kubelet waits for
// its informer's first sync). It must be set before the controller runs.
func (s *Controller) SetEnvWait(d time.Duration) { s.envWait = d }

// AddressAwaited reports whether a create waits for a Service's address
// that no sync has given since.
func (s *Controller) AddressAwaited() bool {
	s.alloc.mu.Lock()
	defer s.alloc.mu.Unlock()
	return s.alloc.next != nil
}
