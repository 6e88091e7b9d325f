package reconciler

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/store"
)

// TestControllerSetsServiceEnvVars: every container of a pod gets the
// variables of each Service of its namespace that has a cluster IP when
// it is created — one applied with the deployment in the same apply
// included, as the API server allocates a Service's address before any
// later pod exists — and not those of another namespace's nor a headless
// one; enableServiceLinks: false turns them off. The field is not part of
// the template hash: existing pods are not rolled out by an upgrade.
func TestControllerSetsServiceEnvVars(t *testing.T) {
	h, _ := newServiceHarness(t)
	envs := recordCreateEnvs(h)
	svc := func(ns, name, clusterIP string, ports ...manifests.ServicePort) *manifests.Service {
		return &manifests.Service{APIVersion: "v1", Kind: "Service", Metadata: manifests.ObjectMeta{Name: name, Namespace: ns},
			Spec: manifests.ServiceSpec{Selector: map[string]string{"app": name}, ClusterIP: clusterIP, Ports: ports}}
	}
	if _, err := h.store.Apply(store.Bundle{
		Namespaces: []*manifests.Namespace{{APIVersion: "v1", Kind: "Namespace", Metadata: manifests.ObjectMeta{Name: "team"}}},
		Services: []*manifests.Service{
			svc("", "redis-master", "", manifests.ServicePort{Name: "redis", Port: 6379}),
			svc("", "peers", manifests.ClusterIPNone, manifests.ServicePort{Port: 80}),
			svc("team", "elsewhere", "", manifests.ServicePort{Port: 80}),
		}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	h.start()
	var redisIP string
	h.waitFor("redis-master's address", func() bool {
		st, err := h.store.ReadServiceStatus("default", "redis-master")
		if err == nil && st != nil {
			redisIP = st.ClusterIP
		}
		return redisIP != ""
	})

	web := testDeployment("web", 1, "x")
	quiet := testDeployment("quiet", 1, "x")
	off := false
	quiet.Spec.Template.Spec.EnableServiceLinks = &off
	// A Service applied with the deployments: it exists before their pods.
	if _, err := h.store.Apply(store.Bundle{Services: []*manifests.Service{svc("", "api", "", manifests.ServicePort{Port: 8080})},
		Deployments: []*manifests.Deployment{web, quiet}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	webPods := h.waitReplicas("web", 1)
	quietPods := h.waitReplicas("quiet", 1)
	var apiIP string
	h.waitFor("api's address in its status", func() bool {
		st, err := h.store.ReadServiceStatus("default", "api")
		if err == nil && st != nil {
			apiIP = st.ClusterIP
		}
		return apiIP != ""
	})
	got := envs()
	webEnv, quietEnv := got[webPods[0].Name], got[quietPods[0].Name]
	for _, want := range []string{
		"REDIS_MASTER_SERVICE_HOST=" + redisIP, "REDIS_MASTER_SERVICE_PORT=6379", "REDIS_MASTER_SERVICE_PORT_REDIS=6379",
		"REDIS_MASTER_PORT=tcp://" + redisIP + ":6379", "REDIS_MASTER_PORT_6379_TCP=tcp://" + redisIP + ":6379",
		"REDIS_MASTER_PORT_6379_TCP_PROTO=tcp", "REDIS_MASTER_PORT_6379_TCP_PORT=6379", "REDIS_MASTER_PORT_6379_TCP_ADDR=" + redisIP,
		"API_SERVICE_HOST=" + apiIP, "API_SERVICE_PORT=8080", "V=x",
	} {
		if !slices.Contains(webEnv, want) {
			t.Errorf("web's environment lacks %s: %q", want, webEnv)
		}
	}
	for _, kv := range webEnv {
		if strings.HasPrefix(kv, "PEERS_") || strings.HasPrefix(kv, "ELSEWHERE_") {
			t.Errorf("web's environment has %s (a headless Service, another namespace's)", kv)
		}
	}
	if !slices.Equal(quietEnv, []string{"V=x"}) {
		t.Errorf("enableServiceLinks: false, environment %q, want [V=x]", quietEnv)
	}
	if got, want := quietPods[0].TemplateHash, manifests.TemplateHash(&testDeployment("quiet", 1, "x").Spec.Template); got != want {
		t.Errorf("enableServiceLinks changed the template hash: %s, want %s", got, want)
	}
}

// noNetworkStore is a ServiceStore whose instance network is never known:
// the Service reconciler gives no Service an address.
type noNetworkStore struct{ services.ServiceStore }

func (noNetworkStore) ReadNetwork() (*store.NetworkStatus, error) { return nil, store.ErrNotFound }

// TestServiceEnvWaitHoldsNoPodAddressLock: a create waiting for a
// Service's address holds no lock other creates need: the assignment of
// pod addresses (one at a time, for pods that read status.podIP) goes on
// for other deployments meanwhile.
func TestServiceEnvWaitHoldsNoPodAddressLock(t *testing.T) {
	h, eng := newServiceHarness(t)
	h.opts.ServiceStore = noNetworkStore{h.store}
	h.ctrl = New(eng, h.store, h.opts)
	h.ctrl.svc.SetEnvWait(time.Hour)
	if _, err := h.store.Apply(store.Bundle{Services: []*manifests.Service{{APIVersion: "v1", Kind: "Service",
		Metadata: manifests.ObjectMeta{Name: "api"},
		Spec:     manifests.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []manifests.ServicePort{{Port: 8080}}}}}},
		store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	readsIP := func(name string) *manifests.Deployment {
		d := testDeployment(name, 1, "x")
		d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, manifests.EnvVar{Name: "IP",
			ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: manifests.FieldStatusPodIP}}})
		return d
	}
	h.start()
	h.apply(readsIP("web")) // its create waits for api's address
	h.waitFor("web's create waiting for api's address", h.ctrl.svc.AddressAwaited)
	quiet := readsIP("quiet")
	off := false
	quiet.Spec.Template.Spec.EnableServiceLinks = &off
	h.apply(quiet)
	h.waitReplicas("quiet", 1)
}
