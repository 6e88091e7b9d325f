package services

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// keyRecorder collects the Service keys a tracker queues.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (r *keyRecorder) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, k)
}

// take returns the keys queued since the last take, sorted, de-duplicated.
func (r *keyRecorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := slices.Compact(slices.Sorted(slices.Values(r.keys)))
	r.keys = nil
	return strings.Join(k, " ")
}

func pe(ns, dep, pod, ip string, ready bool, labels map[string]string, ports ...manifests.ContainerPort) PodEndpoint {
	return PodEndpoint{Namespace: ns, Deployment: dep, Pod: pod, IP: ip, Ready: ready, Labels: labels, UnitID: "id-" + pod,
		Containers: []manifests.Container{{Name: "app", Ports: ports}}}
}

func app(name string) map[string]string { return map[string]string{"app": name} }

// watched returns a defaulted Service and registers it with the tracker,
// as a Service sync does.
func watched(t *Tracker, ns, name string, selector map[string]string, ports ...manifests.ServicePort) *manifests.Service {
	s := defaultService(&manifests.Service{Metadata: manifests.ObjectMeta{Name: name, Namespace: ns},
		Spec: manifests.ServiceSpec{Selector: selector, Ports: ports}})
	t.watch(serviceKey(s), s)
	return s
}

// render sums endpoints up: "pod@ip:name=port/proto,…".
func render(eps []store.EndpointStatus) string {
	var out []string
	for _, e := range eps {
		var ps []string
		for _, p := range e.Ports {
			ps = append(ps, fmt.Sprintf("%s=%d/%s", p.Name, p.Port, p.Protocol))
		}
		out = append(out, fmt.Sprintf("%s@%s:%s", e.Pod, e.IP, strings.Join(ps, ",")))
	}
	return strings.Join(out, " ")
}

func TestTrackerEndpoints(t *testing.T) {
	var rec keyRecorder
	tr := NewTracker(rec.add, nil)
	web := watched(tr, "", "web", app("web"), manifests.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		manifests.ServicePort{Name: "metrics", Port: 9100, TargetPort: intstr.FromInt32(9100)})
	other := watched(tr, "shop", "web", app("web"), manifests.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)})

	http := manifests.ContainerPort{Name: "http", ContainerPort: 8080}
	tr.Update("default/web", []PodEndpoint{
		pe("default", "web", "web-a-0", "10.0.0.2", true, app("web"), http),
		pe("default", "web", "web-a-1", "10.0.0.3", false, app("web"), http),
		pe("default", "web", "web-a-2", "", true, app("web"), http), // no address yet: not ready
	})
	tr.Update("default/old", []PodEndpoint{
		// No port named http: that port is left out.
		pe("default", "old", "old-b-0", "10.0.0.4", true, app("web"), manifests.ContainerPort{Name: "web", ContainerPort: 80}),
	})
	tr.Update("default/db", []PodEndpoint{pe("default", "db", "db-c-0", "10.0.0.5", true, app("db"))})
	tr.Update("shop/web", []PodEndpoint{pe("shop", "web", "web-d-0", "10.0.0.6", true, app("web"))})
	// The first pod also queues the DNS server, which runs while any does.
	if got := rec.take(); got != "default/web dns/ shop/web" {
		t.Errorf("queued %q, want the Services that select the new pods, and the DNS server", got)
	}

	ready, notReady := tr.Endpoints(web)
	if got, want := render(ready), "old-b-0@10.0.0.4:metrics=9100/TCP web-a-0@10.0.0.2:http=8080/TCP,metrics=9100/TCP"; got != want {
		t.Errorf("ready %s\nwant  %s", got, want)
	}
	if got, want := render(notReady), "web-a-1@10.0.0.3:http=8080/TCP,metrics=9100/TCP web-a-2@:http=8080/TCP,metrics=9100/TCP"; got != want {
		t.Errorf("not ready %s\nwant      %s", got, want)
	}
	// Namespaces are apart: the same selector in shop sees shop's pod only.
	if ready, _ := tr.Endpoints(other); render(ready) != "web-d-0@10.0.0.6:http=8080/TCP" {
		t.Errorf("shop/web: %s", render(ready))
	}

	// A readiness flip queues the Services of that pod only.
	tr.Update("default/web", []PodEndpoint{
		pe("default", "web", "web-a-0", "10.0.0.2", false, app("web"), http),
		pe("default", "web", "web-a-1", "10.0.0.3", false, app("web"), http),
		pe("default", "web", "web-a-2", "", true, app("web"), http),
	})
	if got := rec.take(); got != "default/web" {
		t.Errorf("after a readiness flip queued %q, want default/web", got)
	}
	// The same view again changes nothing and queues nothing.
	tr.Update("default/db", []PodEndpoint{pe("default", "db", "db-c-0", "10.0.0.5", true, app("db"))})
	if got := rec.take(); got != "" {
		t.Errorf("an unchanged update queued %q", got)
	}

	// A pod relabelled from web to db: both Services hear of it, before
	// and after.
	db := watched(tr, "", "db", app("db"), manifests.ServicePort{Port: 5432})
	tr.Update("default/old", []PodEndpoint{pe("default", "old", "old-b-0", "10.0.0.4", true, app("db"))})
	if got := rec.take(); got != "default/db default/web" {
		t.Errorf("relabel queued %q, want both Services", got)
	}
	if ready, _ := tr.Endpoints(db); render(ready) != "db-c-0@10.0.0.5:=5432/TCP old-b-0@10.0.0.4:=5432/TCP" {
		t.Errorf("db: %s", render(ready))
	}

	// A selector change is the Service's own sync: its endpoints follow.
	web = watched(tr, "", "web", map[string]string{"app": "web", "tier": "x"}, web.Spec.Ports...)
	if ready, notReady := tr.Endpoints(web); len(ready)+len(notReady) != 0 {
		t.Errorf("no pod has tier=x, got %s / %s", render(ready), render(notReady))
	}

	// Terminating pods leave the endpoints, ready or not; a deleted
	// deployment's pods go with it.
	tr.Update("default/db", []PodEndpoint{{Namespace: "default", Deployment: "db", Pod: "db-c-0", IP: "10.0.0.5", Ready: true, Terminating: true, Labels: app("db")}})
	tr.Delete("default/old")
	if ready, notReady := tr.Endpoints(db); len(ready)+len(notReady) != 0 {
		t.Errorf("db after terminating and delete: %s / %s", render(ready), render(notReady))
	}
	if got := rec.take(); got != "default/db" {
		t.Errorf("queued %q", got)
	}
}

func TestTrackerSeedNeverOverwrites(t *testing.T) {
	tr := NewTracker(nil, nil)
	svc := watched(tr, "", "web", app("web"), manifests.ServicePort{Port: 80})
	tr.Update("default/web", []PodEndpoint{pe("default", "web", "web-a-0", "10.0.0.2", false, app("web"))})
	// A sweep's older snapshot said ready: the sync's view stays.
	tr.Seed("default/web", []PodEndpoint{pe("default", "web", "web-a-0", "10.0.0.2", true, app("web"))})
	if ready, _ := tr.Endpoints(svc); len(ready) != 0 {
		t.Errorf("seed overwrote a sync's view: %s", render(ready))
	}
	tr.Seed("default/api", []PodEndpoint{pe("default", "api", "api-a-0", "10.0.0.3", true, app("web"))})
	if ready, _ := tr.Endpoints(svc); render(ready) != "api-a-0@10.0.0.3:=80/TCP" {
		t.Errorf("seed of an unknown deployment: %s", render(ready))
	}
	if tr.Synced() {
		t.Error("synced before markSynced")
	}
	called := 0
	tr.onSynced = func() { called++ }
	tr.MarkSynced()
	tr.MarkSynced()
	if !tr.Synced() || called != 1 {
		t.Errorf("Synced %v, onSynced ran %d times; want true, once", tr.Synced(), called)
	}
}

// TestPublishNotReadyAddresses: a Service with publishNotReadyAddresses
// lists every pod it selects that has an address as ready, not-ready and
// terminating ones included: Kubernetes' endpoints controller keeps such a
// pod in `addresses` (ShouldPodBeInEndpoints with includeTerminating =
// publishNotReadyAddresses) and the EndpointSlice controller marks it ready
// ("ready := service.Spec.PublishNotReadyAddresses || (serving &&
// !terminating)"), so that peers find each other before they are ready. A
// pod with no address is never an endpoint address.
func TestPublishNotReadyAddresses(t *testing.T) {
	ready := pe("default", "web", "web-a-0", "10.0.0.2", true, app("web"))
	unready := pe("default", "web", "web-a-1", "10.0.0.3", false, app("web"))
	terminating := pe("default", "web", "web-a-2", "10.0.0.4", true, app("web"))
	terminating.Terminating = true
	noIP := pe("default", "web", "web-a-3", "", false, app("web"))
	for _, tc := range []struct {
		name                string
		publish             bool
		wantReady, wantNotR string
	}{
		{name: "ignored when unset", wantReady: "web-a-0@10.0.0.2:=80/TCP", wantNotR: "web-a-1@10.0.0.3:=80/TCP web-a-3@:=80/TCP"},
		{name: "not-ready and terminating pods published", publish: true,
			wantReady: "web-a-0@10.0.0.2:=80/TCP web-a-1@10.0.0.3:=80/TCP web-a-2@10.0.0.4:=80/TCP", wantNotR: "web-a-3@:=80/TCP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(nil, nil)
			svc := watched(tr, "", "web", app("web"), manifests.ServicePort{Port: 80})
			svc.Spec.PublishNotReadyAddresses = tc.publish
			tr.Update("default/web", []PodEndpoint{ready, unready, terminating, noIP})
			r, nr := tr.Endpoints(svc)
			if render(r) != tc.wantReady || render(nr) != tc.wantNotR {
				t.Errorf("ready %q, not ready %q\nwant  %q, %q", render(r), render(nr), tc.wantReady, tc.wantNotR)
			}
		})
	}
}

// TestPublishNotReadyAddressesReachesProxyAndDNS: the proxy of a ClusterIP
// Service and the DNS name of a headless one with publishNotReadyAddresses
// take its not-ready pods (CoreDNS answers them: coredns/coredns#6210).
func TestPublishNotReadyAddressesReachesProxyAndDNS(t *testing.T) {
	r := newSvcRig(t)
	r.feed(webPods(3, 1))
	web := webService("", 0)
	web.Service.Spec.PublishNotReadyAddresses = true
	r.svcs.put(web)
	peers := webService("", 0)
	peers.Service.Metadata.Name = "peers"
	peers.Service.Spec.ClusterIP = manifests.ClusterIPNone
	peers.Service.Spec.PublishNotReadyAddresses = true
	r.svcs.put(peers)
	r.reconcile("default/web")
	r.reconcile("default/peers")
	r.reconcile(DNSKey)
	if pods, _ := r.proxyPods("i_web.default_svc"); pods != "web-a-0=10.222.0.2:8080 web-a-1=10.222.0.3:8080 web-a-2=10.222.0.4:8080" {
		t.Errorf("proxy serves %s, want the three pods, ready or not", pods)
	}
	var cfg helperapi.DNSConfig
	if _, ok := r.docker.Serving("i_dns", &cfg); !ok {
		t.Fatal("no DNS server")
	}
	for _, rec := range cfg.Records {
		if rec.Name == "peers.default.svc.cluster.local" {
			if got := strings.Join(rec.IPs, " "); got != "10.222.0.2 10.222.0.3 10.222.0.4" {
				t.Errorf("headless name answers %s, want the three pods", got)
			}
			return
		}
	}
	t.Errorf("no record of the headless Service: %+v", cfg.Records)
}

// TestEndpointHostnameIsItsSubdomainService's: an endpoint carries its
// pod's hostname only for the Service its subdomain names, in its
// namespace, and only when the pod names its hostname (Kubernetes'
// endpoints controllers, ShouldSetHostname).
func TestEndpointHostnameIsItsSubdomainService(t *testing.T) {
	named := func(pod, ip, host, sub string) PodEndpoint {
		p := pe("default", "", pod, ip, true, app("db"))
		p.Hostname, p.Subdomain = host, sub
		return p
	}
	tr := NewTracker(nil, nil)
	tr.Update("StatefulSet:default/db", []PodEndpoint{
		named("db-0", "10.0.0.2", "db-0", "db"),
		named("db-1", "10.0.0.3", "db-1", "other"),
		named("db-2", "10.0.0.4", "", "db"),
	})
	for _, tc := range []struct{ service, want string }{
		{"db", "db-0=db-0 db-1= db-2="},
		{"other", "db-0= db-1=db-1 db-2="},
	} {
		ready, _ := tr.Endpoints(watched(tr, "", tc.service, app("db")))
		var got []string
		for _, ep := range ready {
			got = append(got, ep.Pod+"="+ep.Hostname)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("Service %s: hostnames %q, want %q", tc.service, strings.Join(got, " "), tc.want)
		}
	}
}

// TestTrackerFollowsPodsOfAnyOwner: pods a workload controller runs
// through the pod runtime (labelled io.dockctl.owner-kind, not
// io.dockctl.deployment) are endpoints as a Deployment's are, keyed by
// their owner (OwnerKey), with their labels, hostname and subdomain read
// from their container; a Service selecting the statefulset.kubernetes.io
// /pod-name label selects one pod.
func TestTrackerFollowsPodsOfAnyOwner(t *testing.T) {
	const instance = "i"
	network := dockerx.NetworkName(instance)
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "db",
		Ports: []manifests.ContainerPort{{Name: "sql", ContainerPort: 5432}}}}}}
	ctr := func(pod, ip string) *dockerx.Container {
		return &dockerx.Container{ID: "id-" + pod, Name: dockerx.PodContainerName(instance, "shop", pod), State: dockerx.StateRunning,
			Networks: map[string]string{network: ip},
			Labels: map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": pod, dockerx.LabelInstance: instance,
				dockerx.LabelOwnerKind: "StatefulSet", dockerx.LabelOwner: "db", dockerx.LabelNamespace: "shop",
				dockerx.LabelHostname: pod, dockerx.LabelSubdomain: "db"}}
	}
	pods := OwnedPodEndpoints(instance, "", []OwnedPod{
		{Namespace: "shop", Name: "db-0", Template: tmpl, Container: ctr("db-0", "10.222.0.2"), Ready: true},
		{Namespace: "shop", Name: "db-1", Template: tmpl, Container: ctr("db-1", "10.222.0.3"), Ready: true, Terminating: true},
		{Namespace: "shop", Name: "db-2", Template: tmpl}, // not created yet: no endpoint
	})
	if len(pods) != 2 {
		t.Fatalf("endpoints %+v, want the two created pods", pods)
	}
	want := PodEndpoint{Namespace: "shop", Pod: "db-0", IP: "10.222.0.2", Ready: true, UnitID: "id-db-0", Hostname: "db-0", Subdomain: "db",
		Labels: map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": "db-0"}, Containers: tmpl.Spec.ServingContainers()}
	if !samePod(&pods[0], &want) || pods[0].Hostname != want.Hostname || pods[0].Subdomain != want.Subdomain {
		t.Errorf("endpoint %+v\nwant     %+v", pods[0], want)
	}
	if !pods[1].Terminating {
		t.Errorf("a pod being stopped is not terminating: %+v", pods[1])
	}

	var rec keyRecorder
	tr := NewTracker(rec.add, nil)
	one := watched(tr, "shop", "db-0", map[string]string{"statefulset.kubernetes.io/pod-name": "db-0"},
		manifests.ServicePort{Port: 5432, TargetPort: intstr.FromString("sql")})
	all := watched(tr, "shop", "db", app("db"), manifests.ServicePort{Port: 5432, TargetPort: intstr.FromString("sql")})
	key := OwnerKey("StatefulSet", "shop", "db")
	tr.Update(key, pods)
	if got := rec.take(); got != "dns/ shop/db shop/db-0" {
		t.Errorf("queued %q, want both Services and the DNS server (the first pod)", got)
	}
	if ready, _ := tr.Endpoints(one); render(ready) != "db-0@10.222.0.2:=5432/TCP" {
		t.Errorf("the pod-name Service: %s, want db-0 alone", render(ready))
	}
	if ready, _ := tr.Endpoints(all); render(ready) != "db-0@10.222.0.2:=5432/TCP" {
		t.Errorf("the set's Service: %s, want db-0 (db-1 terminating)", render(ready))
	}
	// The owner deleted: its pods go.
	tr.Delete(key)
	if ready, notReady := tr.Endpoints(all); len(ready)+len(notReady) != 0 {
		t.Errorf("after the owner's delete: %s / %s", render(ready), render(notReady))
	}
}

// TestTrackerQueuesDNSAtFirstAndLastPod: the DNS server runs while any pod
// is tracked, so the tracker queues it when the first pod comes and when
// the last one goes, and not for the changes between.
func TestTrackerQueuesDNSAtFirstAndLastPod(t *testing.T) {
	var rec keyRecorder
	tr := NewTracker(rec.add, nil)
	steps := []struct {
		name  string
		apply func()
		want  string
		pods  bool
	}{
		{"first pod", func() { tr.Update("default/a", []PodEndpoint{pe("default", "a", "a-0", "10.0.0.2", true, app("a"))}) }, "dns/", true},
		{"second owner", func() { tr.Update("default/b", []PodEndpoint{pe("default", "b", "b-0", "10.0.0.3", true, app("b"))}) }, "", true},
		{"one owner gone", func() { tr.Delete("default/a") }, "", true},
		{"last pod gone", func() { tr.Update("default/b", nil) }, "dns/", false},
		{"nothing again", func() { tr.Delete("default/b") }, "", false},
	}
	for _, s := range steps {
		s.apply()
		if got := rec.take(); got != s.want {
			t.Errorf("%s: queued %q, want %q", s.name, got, s.want)
		}
		if got := tr.HasPods(); got != s.pods {
			t.Errorf("%s: HasPods %v, want %v", s.name, got, s.pods)
		}
	}
}
