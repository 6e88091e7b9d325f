package workloads

import (
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/store"
)

// endpointsRecorder is the tracker as the frame sees it: the latest pods
// by owner key.
type endpointsRecorder struct {
	mu   sync.Mutex
	pods map[string][]services.PodEndpoint
}

func (r *endpointsRecorder) Update(key string, pods []services.PodEndpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[string][]services.PodEndpoint{}
	}
	r.pods[key] = slices.Clone(pods)
}

func (r *endpointsRecorder) Delete(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, key)
}

func (r *endpointsRecorder) of(key string) ([]services.PodEndpoint, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pods[key]
	return p, ok
}

func TestReplicaSetPodsFeedTheServicesTrackerUntilTheOwnerGoes(t *testing.T) {
	f := newFrame(t)
	var rec endpointsRecorder
	f.c.cfg.Endpoints = &rec
	f.apply(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: w
        image: busybox
        ports:
        - {name: http, containerPort: 8080}
`)
	key := Key(store.KindReplicaSet, "default", "web")
	f.sync(key)
	f.sync(key) // the pods created by the first sync, observed
	tk := services.OwnerKey(store.KindReplicaSet, "default", "web")
	pods, ok := rec.of(tk)
	if !ok || len(pods) != 2 {
		t.Fatalf("tracker has %+v under %q, want the 2 pods", pods, tk)
	}
	// The readiness a Service follows is the one the status counts.
	var st appsv1.ReplicaSetStatus
	ref := store.ObjectRef{Kind: store.KindReplicaSet, Namespace: "default", Name: "web"}
	obj, err := f.st.LookupObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ReadWorkloadStatus(ref, obj.Created, &st); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, p := range pods {
		if p.Ready {
			ready++
		}
		if p.Terminating || p.Labels["app"] != "web" || p.Namespace != "default" || p.UnitID == "" {
			t.Errorf("endpoint %+v: want not terminating, app=web, in default, with its container", p)
		}
		if len(p.Containers) != 1 || len(p.Containers[0].Ports) != 1 || p.Containers[0].Ports[0].Name != "http" {
			t.Errorf("endpoint %s serves %+v, want the template's named port", p.Pod, p.Containers)
		}
	}
	if int32(ready) != st.ReadyReplicas {
		t.Errorf("%d ready endpoints, the status counts %d ready replicas", ready, st.ReadyReplicas)
	}
	if _, err := f.st.DeleteObjects([]store.ObjectRef{ref}); err != nil {
		t.Fatal(err)
	}
	f.sync(key)
	if pods, ok := rec.of(tk); ok {
		t.Errorf("after the owner's delete the tracker still has %+v", pods)
	}
}

func TestStandalonePodFeedsItsHostnameAndSubdomain(t *testing.T) {
	f := newFrame(t)
	var rec endpointsRecorder
	f.c.cfg.Endpoints = &rec
	f.apply(`apiVersion: v1
kind: Pod
metadata:
  name: db
  labels: {app: db}
spec:
  hostname: db-main
  subdomain: dbs
  containers:
  - name: db
    image: busybox
`)
	key := Key(store.KindPod, "default", "db")
	f.sync(key)
	f.sync(key)
	pods, _ := rec.of(services.OwnerKey(store.KindPod, "default", "db"))
	if len(pods) != 1 || pods[0].Hostname != "db-main" || pods[0].Subdomain != "dbs" || pods[0].Labels["app"] != "db" {
		t.Errorf("tracker has %+v, want pod db with hostname db-main, subdomain dbs, app=db", pods)
	}
}

func TestLivenessRestartKeepsThePodNotTerminating(t *testing.T) {
	f := newFrame(t)
	var rec endpointsRecorder
	f.c.cfg.Endpoints = &rec
	f.apply(replicaSetWeb(1))
	key := Key(store.KindReplicaSet, "default", "web")
	f.sync(key)
	cs := f.running(store.KindReplicaSet, "web")
	if len(cs) != 1 {
		t.Fatalf("%d pods, want 1", len(cs))
	}
	// A liveness restart in flight: the container ignores its stop
	// signal until the test lets the kill come.
	release := make(chan time.Time)
	f.d.IgnoresStop = func(dockerx.Container) bool { return true }
	f.d.After = func(time.Duration) <-chan time.Time { return release }
	t.Cleanup(func() { close(release) })
	f.c.runtime.Stopper().Submit(key, podruntime.StopRequest{Kind: podruntime.StopRestart, ContainerID: cs[0].ID, Name: cs[0].Name,
		Grace: 30 * time.Second}, f.clock())
	f.sync(key)
	// The kubelet restarts a container in place: its pod is no
	// Terminating pod, so the ReplicaSet makes no replacement and the
	// Services keep it (not ready, not terminating).
	if n := len(f.owned(store.KindReplicaSet, "web")); n != 1 {
		t.Errorf("%d pods during a liveness restart, want the one pod (no replacement)", n)
	}
	eps, _ := rec.of(services.OwnerKey(store.KindReplicaSet, "default", "web"))
	if len(eps) != 1 || eps[0].Terminating {
		t.Errorf("endpoints %+v during a liveness restart, want the pod, not terminating", eps)
	}
}
