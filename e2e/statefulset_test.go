//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// StatefulSets on the pod runtime (docs/design.md §17.2), end to end:
// what Docker shows — the order in which the pods' containers are
// created and removed, the claims' volumes and the files in them — and
// what the pods see of each other through DNS (§10).

// podEvents records, from Docker's event stream, the create, start and
// destroy of the containers matching labels, in the order Docker reports
// them, each as "ACTION POD" (the pod's name, from the container's
// INSTANCE_POD.NS_pod name). It is read live: Docker keeps too few past
// events to ask afterwards on a shared daemon.
type podEvents struct {
	mu     sync.Mutex
	seen   []string
	cancel context.CancelFunc
	done   chan struct{}
}

func watchPodEvents(t testing.TB, instance string, labels ...string) *podEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podEvents{cancel: cancel, done: make(chan struct{})}
	f := filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "create"),
		filters.Arg("event", "start"), filters.Arg("event", "destroy"))
	for _, l := range labels {
		f.Add("label", l)
	}
	msgs, errs := dockerCli.Events(ctx, events.ListOptions{Filters: f})
	go func() {
		defer close(w.done)
		for {
			select {
			case m := <-msgs:
				name := strings.TrimPrefix(m.Actor.Attributes["name"], instance+"_")
				pod, _, _ := strings.Cut(name, ".")
				w.mu.Lock()
				w.seen = append(w.seen, string(m.Action)+" "+pod)
				w.mu.Unlock()
			case <-errs:
				return
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *podEvents) stop() {
	w.cancel()
	<-w.done
}

// events returns the events seen so far.
func (w *podEvents) events() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

// before reports whether event a was seen, and before event b if b was.
func before(evs []string, a, b string) bool {
	ia, ib := -1, -1
	for i, ev := range evs {
		if ev == a && ia < 0 {
			ia = i
		}
		if ev == b && ib < 0 {
			ib = i
		}
	}
	return ia >= 0 && (ib < 0 || ia < ib)
}

// statefulSetManifest is the headless Service web and StatefulSet web of
// replicas pods (OrderedReady, RollingUpdate), each serving and writing
// to its claim data (at /data/hostname) "POD VERSION": its own name, from
// the downward API, and version.
func statefulSetManifest(replicas int, version string) string {
	return strings.NewReplacer("IMAGE", workloadImage, "REPLICAS", fmt.Sprint(replicas), "VERSION", version).Replace(`apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - {name: http, port: 8080, targetPort: http}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: REPLICAS
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: IMAGE
        args: ["--message=$(POD_NAME) VERSION", "--write-file=/data/hostname"]
        env:
        - name: POD_NAME
          valueFrom:
            fieldRef: {fieldPath: metadata.name}
        ports:
        - {name: http, containerPort: 8080}
        readinessProbe:
          httpGet: {path: /readyz, port: http}
          periodSeconds: 1
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 64Mi}
`)
}

// setPods returns the containers of StatefulSet web by pod name, any
// state (a pod stopped is there until it is removed).
func (e *env) setPods() map[string]container.Summary {
	out := map[string]container.Summary{}
	for _, c := range containers(e.t, "io.dockctl.instance="+e.instance, "io.dockctl.owner-kind=StatefulSet", "io.dockctl.owner=web") {
		name := strings.TrimPrefix(strings.TrimPrefix(c.Names[0], "/"), e.instance+"_")
		pod, _, _ := strings.Cut(name, ".")
		out[pod] = c
	}
	return out
}

// waitSet waits until StatefulSet web has exactly the pods given, running
// version (their args say so), every other one removed, and its status
// counts them all ready and updated.
func (e *env) waitSet(version string, pods ...string) map[string]container.Summary {
	e.t.Helper()
	var cs map[string]container.Summary
	eventually(e.t, 90*time.Second, fmt.Sprintf("pods %v of web at %s, ready and updated", pods, version), func() (bool, string) {
		cs = e.setPods()
		state := fmt.Sprintf("%d pods", len(cs))
		if len(cs) != len(pods) {
			return false, state
		}
		for _, p := range pods {
			c, ok := cs[p]
			if !ok || c.State != "running" {
				return false, state + ", not " + p + " running"
			}
			info := inspect(e.t, c.ID)
			if !strings.Contains(strings.Join(info.Args, " "), "$(POD_NAME) "+version) && !strings.Contains(strings.Join(info.Args, " "), p+" "+version) {
				return false, fmt.Sprintf("%s: %s args %v", state, p, info.Args)
			}
		}
		out, err := e.dockctl("", "get", "statefulset", "web", "-o", "jsonpath={.status.readyReplicas} {.status.updatedReplicas} {.status.currentRevision} {.status.updateRevision}")
		f := strings.Fields(out)
		n := fmt.Sprint(len(pods))
		return err == nil && len(f) == 4 && f[0] == n && f[1] == n && f[2] == f[3], state + ", status " + out
	})
	return cs
}

// copyInto writes a file into a container (the archive API: there is no
// shell in the workload image).
func copyInto(t testing.TB, id, dir, name, content string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dockerCli.CopyToContainer(ctx, id, dir, &buf, container.CopyToContainerOptions{}); err != nil {
		t.Fatalf("copy %s into %s: %v", name, id[:12], err)
	}
}

// TestStatefulSetLifecycle: a StatefulSet of three under OrderedReady with
// a headless Service and a volumeClaimTemplate. Its pods are created in
// order, each once the one before runs; each writes its name to its own
// claim; they find each other by their stable DNS names; pod 1 removed
// with `docker rm -f` comes back on the same claim with its data; a
// template change rolls out from the highest ordinal down, and
// re-applying the earlier manifest rolls back to it; scaling down to 1
// removes web-2, then web-1, and keeps their claims; deleted with
// --cascade=orphan and applied again, it adopts web-0 as it runs.
func TestStatefulSetLifecycle(t *testing.T) {
	independent(t)
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t))
	ev := watchPodEvents(t, e.instance, "io.dockctl.instance="+e.instance, "io.dockctl.owner-kind=StatefulSet", "io.dockctl.owner=web")
	start := time.Now()
	e.apply(statefulSetManifest(3, "v1") + "---\n" + clientDeployment("").manifest())
	pods := e.waitSet("v1", "web-0", "web-1", "web-2")
	t.Logf("3 pods ready %s after apply", time.Since(start).Round(time.Millisecond))

	// OrderedReady: web-i is created only once web-(i-1) runs.
	evs := ev.events()
	if got := podsOf(evs, "create"); strings.Join(got, " ") != "web-0 web-1 web-2" {
		t.Errorf("pods created in the order %v, want web-0 web-1 web-2 (events %v)", got, evs)
	}
	if !before(evs, "start web-0", "create web-1") || !before(evs, "start web-1", "create web-2") {
		t.Errorf("a pod was created before the one below it started: %v", evs)
	}
	for _, p := range []string{"web-0", "web-1", "web-2"} {
		if got := strings.TrimSpace(readFile(t, pods[p].ID, "/data/hostname")); got != p+" v1" {
			t.Errorf("%s wrote %q to its claim, want %q", p, got, p+" v1")
		}
		if v := e.claimVolume("data-" + p); v == nil {
			t.Errorf("no volume of claim data-%s", p)
		}
	}

	// Stable names, from a client of the instance and from a pod of the
	// set (whose resolver must be the instance's DNS server, as a
	// Deployment's pods': its own name alone is in its /etc/hosts).
	client := e.waitPodsRunning("default", "client", 1)[0].ID
	for _, p := range []string{"web-0", "web-1", "web-2"} {
		e.answers(client, fmt.Sprintf("http://%s.web.default.svc.cluster.local:8080/whoami", p), p)
	}
	eventually(t, 30*time.Second, "web-0 to reach web-1 by its stable name", func() (bool, string) {
		code, out, errOut := execOutput(t, pods["web-0"].ID, "/workload", "probe", "http://web-1.web.default.svc.cluster.local:8080/readyz")
		return code == 0, out + errOut
	})

	// docker rm -f of pod 1: it comes back, same name, same claim, with
	// what was written there.
	copyInto(t, pods["web-1"].ID, "/data", "marker", "written before the removal\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dockerCli.ContainerRemove(ctx, pods["web-1"].ID, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "web-1 to come back", func() (bool, string) {
		c, ok := e.setPods()["web-1"]
		return ok && c.ID != pods["web-1"].ID, fmt.Sprint(ev.events())
	})
	pods = e.waitSet("v1", "web-0", "web-1", "web-2")
	if got := readFile(t, pods["web-1"].ID, "/data/marker"); got != "written before the removal\n" {
		t.Errorf("web-1's claim after its re-creation holds marker %q", got)
	}
	if got := strings.TrimSpace(readFile(t, pods["web-1"].ID, "/data/hostname")); got != "web-1 v1" {
		t.Errorf("web-1 wrote %q, want web-1 v1", got)
	}
	assertMountsClaim(t, pods["web-1"].ID, e.instance+"_pvc_default.data-web-1")

	// A template change rolls out from the highest ordinal down, one pod
	// at a time.
	mark := len(ev.events())
	e.apply(statefulSetManifest(3, "v2"))
	pods = e.waitSet("v2", "web-0", "web-1", "web-2")
	roll := ev.events()[mark:]
	if got := podsOf(roll, "destroy"); strings.Join(got, " ") != "web-2 web-1 web-0" {
		t.Errorf("rollout removed %v, want web-2 web-1 web-0 (events %v)", got, roll)
	}
	if !before(roll, "start web-2", "destroy web-1") || !before(roll, "start web-1", "destroy web-0") {
		t.Errorf("rollout replaced a pod before the one above it was back: %v", roll)
	}
	e.answers(client, "http://web-0.web.default.svc.cluster.local:8080/", "web-0 v2")

	// Rollback: the earlier manifest applied again.
	mark = len(ev.events())
	e.apply(statefulSetManifest(3, "v1"))
	pods = e.waitSet("v1", "web-0", "web-1", "web-2")
	if got := podsOf(ev.events()[mark:], "destroy"); strings.Join(got, " ") != "web-2 web-1 web-0" {
		t.Errorf("rollback removed %v, want web-2 web-1 web-0", got)
	}
	e.answers(client, "http://web-2.web.default.svc.cluster.local:8080/", "web-2 v1")
	if got := readFile(t, pods["web-2"].ID, "/data/hostname"); strings.TrimSpace(got) != "web-2 v1" {
		t.Errorf("web-2 after the rollback wrote %q", got)
	}

	// Scale down: web-2, then web-1; every claim stays.
	mark = len(ev.events())
	e.apply(statefulSetManifest(1, "v1"))
	e.waitSet("v1", "web-0")
	down := ev.events()[mark:]
	if got := podsOf(down, "destroy"); strings.Join(got, " ") != "web-2 web-1" {
		t.Errorf("scale down removed %v, want web-2 web-1 (events %v)", got, down)
	}
	out := e.mustDockctl("", "get", "pvc", "--no-headers")
	for _, p := range []string{"web-0", "web-1", "web-2"} {
		if !strings.Contains(out, "data-"+p) {
			t.Errorf("get pvc has no data-%s after the scale down:\n%s", p, out)
		}
		if e.claimVolume("data-"+p) == nil {
			t.Errorf("the volume of claim data-%s is gone after the scale down", p)
		}
	}

	// delete --cascade=orphan: the set goes, web-0 keeps running without
	// owner; the set applied again adopts it (its selector matches) and
	// re-creates nothing, the classic way to change what an update may
	// not (docs/design.md §17.1).
	kept := e.setPods()["web-0"].ID
	mark = len(ev.events())
	e.mustDockctl("", "delete", "statefulset", "web", "--cascade=orphan")
	eventually(t, 30*time.Second, "web-0 listed without owner", func() (bool, string) {
		out, err := e.dockctl("", "get", "pod", "web-0", "-o", "jsonpath={.metadata.ownerReferences}")
		return err == nil && out == "", out
	})
	e.apply(statefulSetManifest(1, "v1"))
	if pods = e.waitSet("v1", "web-0"); pods["web-0"].ID != kept {
		t.Errorf("web-0 was re-created (%s, was %s): the set applied again must adopt it", pods["web-0"].ID[:12], kept[:12])
	}
	if got := e.mustDockctl("", "get", "pod", "web-0", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}"); got != "StatefulSet/web" {
		t.Errorf("web-0's owner after the apply %q, want StatefulSet/web", got)
	}
	if orphaned := ev.events()[mark:]; len(podsOf(orphaned, "destroy"))+len(podsOf(orphaned, "create"))+len(podsOf(orphaned, "start")) > 0 {
		t.Errorf("the orphaning delete and the adoption touched pods: %v", orphaned)
	}
	assertMountsClaim(t, kept, e.instance+"_pvc_default.data-web-0")

	t.Logf("done %s after apply", time.Since(start).Round(time.Millisecond))
}

// podsOf returns the pod names of the events of one action, in order.
func podsOf(evs []string, action string) []string {
	var out []string
	for _, ev := range evs {
		if pod, ok := strings.CutPrefix(ev, action+" "); ok {
			out = append(out, pod)
		}
	}
	return out
}

// assertMountsClaim checks that container id mounts volume at /data.
func assertMountsClaim(t testing.TB, id, volume string) {
	t.Helper()
	for _, m := range inspect(t, id).Mounts {
		if m.Destination == "/data" {
			if m.Name != volume {
				t.Errorf("/data of %s is volume %q, want %q", id[:12], m.Name, volume)
			}
			return
		}
	}
	t.Errorf("%s mounts nothing at /data", id[:12])
}
