package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/statefulset"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/reconciler/workloads"
	"github.com/dockctl/dockctl/store"
)

// shopYAML is a pod of two app containers and an init container.
const shopYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  labels: {app: shop}
spec:
  replicas: 2
  selector:
    matchLabels: {app: shop}
  template:
    metadata:
      labels: {app: shop, tier: front}
    spec:
      initContainers:
      - name: migrate
        image: dockctl-workload:dev
        command: [/workload, migrate]
      containers:
      - name: web
        image: dockctl-workload:dev
        ports: [{containerPort: 8080}]
        volumeMounts: [{name: cache, mountPath: /cache}]
      - name: log
        image: dockctl-workload:dev
        volumeMounts: [{name: cache, mountPath: /var/log/web, readOnly: true}]
      volumes:
      - name: cache
        emptyDir: {}
`

// jobsYAML is a pod with an init container, a native sidecar and two app
// containers: its replicas show every init state.
const jobsYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: jobs
spec:
  replicas: 8
  selector:
    matchLabels: {app: jobs}
  template:
    metadata:
      labels: {app: jobs}
      annotations: {kubectl.kubernetes.io/default-container: work}
    spec:
      initContainers:
      - name: migrate
        image: dockctl-workload:dev
      - name: proxy
        image: dockctl-workload:dev
        restartPolicy: Always
      containers:
      - name: work
        image: dockctl-workload:dev
      - name: log
        image: dockctl-workload:dev
`

// member is one container of a test pod: its template name ("" for the
// holder) and state ("exited:N" for an exit with code N).
type member struct {
	name, state string
	health      string
}

// testPod builds the containers of one pod of a deployment with a holder,
// labelled as pods.md has it: a holder (role holder, pod, pod-uid) and its
// members (role replica, pod, pod-uid, container), the template's labels on
// each. A member named in members is created; the holder is too unless
// noHolder.
func testPod(instance string, d *manifests.Deployment, ord int, age time.Duration, noHolder bool, members ...member) []dockerx.Container {
	hash := manifests.TemplateHash(&d.Spec.Template)
	dep := d.Metadata.Name
	base := dockerx.ContainerName(instance, "", dep, hash, ord)
	pod := dockerx.Hostname(dep, hash, ord)
	uid := fmt.Sprintf("%08x", 0xa0+ord)
	mk := func(name, role, cname string, m member) dockerx.Container {
		labels := maps.Clone(d.Spec.Template.Metadata.Labels)
		maps.Copy(labels, map[string]string{
			dockerx.LabelInstance: instance, dockerx.LabelDeployment: dep, dockerx.LabelTemplateHash: hash,
			dockerx.LabelRole: role, dockerx.LabelPod: pod, dockerx.LabelPodUID: uid,
		})
		if cname != "" {
			labels[dockerx.LabelContainer] = cname
		}
		state, code, status := m.state, 0, "Up 1 minute"
		if n, ok := strings.CutPrefix(state, "exited:"); ok {
			fmt.Sscan(n, &code)
			state, status = dockerx.StateExited, fmt.Sprintf("Exited (%d) 10 seconds ago", code)
		}
		return dockerx.Container{
			ID: testID(name), Name: name, Image: "dockctl-workload:dev", ImageID: "sha256:" + testID("image"),
			Labels: labels, Instance: instance, Deployment: dep, TemplateHash: hash,
			Role: role, Pod: pod, PodUID: uid, ContainerName: cname,
			State: state, Health: m.health, Status: status, ExitCode: code, Created: now.Add(-age),
		}
	}
	var out []dockerx.Container
	if !noHolder {
		// The holder runs the helper image and publishes the pod's ports.
		h := mk(base, dockerx.RoleHolder, "", member{state: dockerx.StateRunning})
		h.Image, h.ImageID = "dockctl-holder:"+instance+"-0123456789ab", "sha256:"+testID("holder")
		for _, c := range d.Spec.Template.Spec.AllContainers() {
			for _, p := range c.Ports {
				h.Ports = append(h.Ports, dockerx.Port{ContainerPort: uint16(p.ContainerPort), Protocol: strings.ToLower(p.Protocol)})
			}
		}
		out = append(out, h)
	}
	for _, m := range members {
		out = append(out, mk(dockerx.MemberName(base, m.name), dockerx.RoleReplica, m.name, m))
	}
	return out
}

// testID is a container ID that stays the same from run to run.
func testID(name string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(name))) }

// podKey is the reconciler's unit ID of a holder pod (where the controller
// keeps its stop deadline).
func podKey(c dockerx.Container) string { return "pod:" + c.Name + "/" + c.PodUID }

// podsFixture is the fixture of cli_test.go (three single-container
// replicas of web and an orphan) plus shop (two replicas of a pod of two
// app containers and an init container) and jobs (a replica in each init
// and crash state), with what the controller recorded of them.
func podsFixture(t *testing.T) *snapshot {
	t.Helper()
	snap, _ := fixture(t)
	shop, jobs := mustDecode(t, shopYAML), mustDecode(t, jobsYAML)
	run, created := dockerx.StateRunning, dockerx.StateCreated
	ok := member{state: "exited:0"}
	shop0 := testPod("default", shop, 0, 2*time.Hour, false, member{name: "migrate", state: "exited:0"}, member{name: "web", state: run}, member{name: "log", state: run})
	shop1 := testPod("default", shop, 1, 5*time.Minute, false, member{name: "migrate", state: "exited:0"}, member{name: "web", state: run},
		member{name: "log", state: run, health: dockerx.HealthUnhealthy})
	m := func(name, state string) member { return member{name: name, state: state} }
	with := func(base member, name string) member { base.name = name; return base }
	jobsPods := [][]dockerx.Container{
		testPod("default", jobs, 0, time.Hour, false, with(ok, "migrate"), m("proxy", run), m("work", run), m("log", run)),
		testPod("default", jobs, 1, 30*time.Second, false, m("migrate", run)),
		testPod("default", jobs, 2, 3*time.Minute, false, m("migrate", "exited:1")),
		testPod("default", jobs, 3, 40*time.Second, false, with(ok, "migrate"), m("proxy", run)),
		testPod("default", jobs, 4, 10*time.Minute, false, with(ok, "migrate"), m("proxy", run), m("work", "exited:2"), m("log", run)),
		testPod("default", jobs, 5, time.Hour, false, with(ok, "migrate"), m("proxy", run), m("work", run), m("log", run)),
		testPod("default", jobs, 6, 20*time.Second, false, with(ok, "migrate"), m("proxy", created)),
		testPod("default", jobs, 7, 20*time.Second, false, m("migrate", "exited:3")),
	}
	for i, cs := range append([][]dockerx.Container{shop0, shop1}, jobsPods...) {
		// Each holder on the instance network; shop's second one with
		// the static address of a pod that reads status.podIP.
		cs[0].Networks = map[string]string{dockerx.NetworkName("default"): fmt.Sprintf("10.222.0.%d", 10+i)}
		if i == 1 {
			cs[0].StaticIPv4 = cs[0].Networks
		}
		snap.containers = append(snap.containers, cs...)
	}
	withDetails(snap) // again: the containers added
	member := func(cs []dockerx.Container, name string) string {
		for _, c := range cs {
			if c.ContainerName == name {
				return c.ID
			}
		}
		t.Fatalf("no member %s", name)
		return ""
	}
	state := func(v map[string]any) json.RawMessage {
		b, err := json.Marshal(map[string]any{"rollout": map[string]any{}, "containers": v})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	later := now.Add(time.Minute).Format(time.RFC3339)
	snap.records = append(snap.records,
		&store.Record{Name: "shop", Generation: 1, CreatedAt: now.Add(-2 * time.Hour), Deployment: *shop,
			Revisions: []store.Revision{{Number: 1, Hash: manifests.TemplateHash(&shop.Spec.Template), Template: shop.Spec.Template}}},
		&store.Record{Name: "jobs", Generation: 1, CreatedAt: now.Add(-time.Hour), Deployment: *jobs})
	snap.statuses["default/shop"] = &store.Status{ObservedGeneration: 1, Extra: map[string]json.RawMessage{"controller": state(map[string]any{
		member(shop0, "web"): map[string]any{"restarts": 1},
	})}}
	snap.statuses["default/jobs"] = &store.Status{ObservedGeneration: 1, Extra: map[string]json.RawMessage{"controller": state(map[string]any{
		member(jobsPods[2], "migrate"): map[string]any{"restarts": 3, "notBefore": later},
		member(jobsPods[4], "work"):    map[string]any{"restarts": 5, "notBefore": later},
		podKey(jobsPods[5][0]):         map[string]any{"stopDeadline": later},
	})}}
	return snap
}

func TestRenderPods(t *testing.T) {
	for _, format := range []string{"table", "wide", "name"} {
		t.Run(format, func(t *testing.T) {
			snap := podsFixture(t)
			var buf bytes.Buffer
			if err := renderPods(&buf, snap, snap.allPods(), pr(t, format), false, false); err != nil {
				t.Fatal(err)
			}
			golden(t, "get-pods-"+format, buf.Bytes())
		})
	}
	// JSON: the pods of shop (two app containers and an init container)
	// and a single-container replica of web, as a v1 List of v1 Pods.
	t.Run("json", func(t *testing.T) {
		snap := podsFixture(t)
		var pods []podEntry
		for _, e := range snap.allPods() {
			if e.Owner.Name == "shop" || e.Name == dockerx.Hostname("web", e.Hash, 2) {
				pods = append(pods, e)
			}
		}
		if len(pods) != 3 {
			t.Fatalf("%d pods selected, want 3", len(pods))
		}
		var buf bytes.Buffer
		if err := renderPods(&buf, snap, pods, pr(t, "json"), false, false); err != nil {
			t.Fatal(err)
		}
		golden(t, "get-pods-json", buf.Bytes())
	})
}

func TestDescribePod(t *testing.T) {
	snap := podsFixture(t)
	for _, tc := range []struct{ golden, pod string }{
		{"describe-pod", dockerx.Hostname("shop", manifests.TemplateHash(&mustDecode(t, shopYAML).Spec.Template), 0)},
		{"describe-pod-single", dockerx.Hostname("web", manifests.TemplateHash(&mustDecode(t, webYAML).Spec.Template), 2)},
		{"describe-pod-crashloop", dockerx.Hostname("jobs", manifests.TemplateHash(&mustDecode(t, jobsYAML).Spec.Template), 4)},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			e, err := snap.pod(testGlobal, "default", tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			describePod(&buf, snap, e)
			golden(t, tc.golden, buf.Bytes())
		})
	}
}

// `get containers` still lists every container: a holder pod's holder and
// members, each with its own readiness, status and restarts.
func TestRenderPodContainers(t *testing.T) {
	snap := podsFixture(t)
	var objs []containerObject
	for _, c := range snap.containers {
		if c.Deployment == "shop" || c.Pod == dockerx.Hostname("jobs", c.TemplateHash, 4) {
			objs = append(objs, snap.containerObject(c))
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Name < objs[j].Name })
	var buf bytes.Buffer
	if err := renderContainers(&buf, snap, objs, pr(t, "wide"), false); err != nil {
		t.Fatal(err)
	}
	golden(t, "get-containers-pods-wide", buf.Bytes())
}

// describe deployment shows every container of the pod template, init
// containers (and sidecars) in their own section, as kubectl does.
func TestDescribeDeploymentOfPods(t *testing.T) {
	snap := podsFixture(t)
	var buf bytes.Buffer
	describe(&buf, snap, snap.deploymentObject(snap.record("default/jobs")), true)
	golden(t, "describe-deployment-pods", buf.Bytes())
}

// TestRemovedCompletedInitContainer: an init container removed by hand after
// the pod ran is shown as it ended — completed, ready, removed — and `logs
// -c` says its logs went with it, instead of calling it waiting to start.
func TestRemovedCompletedInitContainer(t *testing.T) {
	snap := podsFixture(t)
	shop := mustDecode(t, shopYAML)
	name := dockerx.Hostname("shop", manifests.TemplateHash(&shop.Spec.Template), 0)
	kept := snap.containers[:0]
	for _, c := range snap.containers {
		if c.Pod == name && c.ContainerName == "migrate" {
			continue // docker rm -f of the completed init container
		}
		kept = append(kept, c)
	}
	snap.containers = kept
	e, err := snap.pod(testGlobal, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range e.Containers {
		if pc.DisplayName() != "migrate" {
			continue
		}
		state, _ := e.ContainerState(pc)
		if state.Terminated == nil || state.Terminated.Reason != "Completed" || !e.ContainerReady(pc) {
			t.Errorf("removed completed init container: state %+v ready %v, want terminated Completed and ready", state, e.ContainerReady(pc))
		}
	}
	_, err = logStreams(testGlobal, snap, kindPod, name, &logsOptions{container: "migrate"})
	if err == nil || !strings.Contains(err.Error(), "was removed after it completed") {
		t.Errorf("logs -c migrate: %v", err)
	}
}

// A pod kubectl shows as Terminating is one whose metadata has a
// deletionTimestamp (kubectl's printer derives the STATUS "Terminating"
// from it; scripts select such pods with
// jsonpath='{.metadata.deletionTimestamp}' and wait on it). A pod dockctl's
// table says is Terminating has one in its object too (get -o json|yaml,
// the object wait --for=jsonpath judges): it tells the pod is going.
func TestGetPodsTerminatingHasDeletionTimestamp(t *testing.T) {
	snap := podsFixture(t)
	withDetails(snap)
	seen := false
	for _, e := range snap.allPods() {
		if e.Status != "Terminating" {
			continue
		}
		seen = true
		pod, err := e.podObject(snap)
		if err != nil {
			t.Fatal(err)
		}
		if pod.DeletionTimestamp == nil {
			t.Errorf("pod %s is Terminating in the table, but its object has no metadata.deletionTimestamp", e.Name)
		}
	}
	if !seen {
		t.Fatal("the fixture has no Terminating pod")
	}
}

// waitingFixture is a snapshot of deployment web (2 replicas) whose
// controller could not create its pods, as it records them in its status:
// one whose image cannot be pulled, one waiting its turn (slow start).
func waitingFixture(t *testing.T) *snapshot {
	t.Helper()
	d := mustDecode(t, webYAML)
	two := int32(2)
	d.Spec.Replicas = &two
	hash := manifests.TemplateHash(&d.Spec.Template)
	rec := &store.Record{Name: "web", Generation: 1, CreatedAt: now.Add(-time.Minute), Deployment: *d,
		Revisions: []store.Revision{{Number: 1, Hash: hash, Template: d.Spec.Template}}}
	state, err := json.Marshal(map[string]any{"rollout": map[string]any{}, "waiting": []podruntime.WaitingPod{
		{Name: dockerx.Hostname("web", hash, 0), Hash: hash, Reason: podruntime.WaitImagePullBackOff,
			Message: "image nginx:1.27: pull access denied, repository does not exist or may require authorization", Since: now.Add(-50 * time.Second)},
		{Name: dockerx.Hostname("web", hash, 1), Hash: hash, Reason: podruntime.WaitContainerCreating,
			Message: "waiting for an earlier create to succeed", Since: now.Add(-50 * time.Second)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := &store.Status{ObservedGeneration: 1, Extra: map[string]json.RawMessage{"controller": state}, Conditions: []manifests.DeploymentCondition{
		{Type: manifests.ConditionReplicaFailure, Status: "True", Reason: "ImagePullBackOff", Message: "image nginx:1.27: pull access denied"}}}
	return &snapshot{instance: "default", controllerRunning: true, records: []*store.Record{rec},
		statuses: map[string]*store.Status{"default/web": st}, tombstones: map[string]bool{}, now: now}
}

// A pod its controller could not create is listed with kubectl's status
// (ImagePullBackOff, ContainerCreating), and describe says why in its
// container's state; rollout status ends its waiting line with the reason.
func TestPodsTheControllerCouldNotCreate(t *testing.T) {
	snap := waitingFixture(t)
	pods := snap.allPods()
	if len(pods) != 2 {
		t.Fatalf("%d pods, want the 2 waiting ones", len(pods))
	}
	var buf bytes.Buffer
	if err := renderPods(&buf, snap, pods, pr(t, ""), false, false); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("---\n")
	describePod(&buf, snap, pods[0])
	golden(t, "pods-waiting", buf.Bytes())
	// kubectl's describe words a waiting state by its reason; the message
	// is in the pod's events (the controller's Failed event).
	for _, want := range []string{"ImagePullBackOff", "ContainerCreating", "Reason:"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	p := progressOf(snap.records[0], snap.statuses["default/web"], nil, nil, now)
	if want := `Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated... (ImagePullBackOff: image nginx:1.27: pull access denied, repository does not exist or may require authorization)`; p.message() != want {
		t.Errorf("rollout status says\n%s\nwant\n%s", p.message(), want)
	}
}

// A pod the generic workload controller runs (a Job's, docs/design.md
// §17) is listed under its own name with its owner, never as an orphan
// of a deployment of no name; describe, logs, exec and delete find it.
func TestWorkloadPodListedUnderItsName(t *testing.T) {
	name := dockerx.PodContainerName("default", "default", "migrate-abcde")
	c := dockerx.Container{ID: testID(name), Name: name, Namespace: "default", Image: "migrate:1",
		State: dockerx.StateRunning, Created: now.Add(-time.Minute),
		Labels: map[string]string{dockerx.LabelOwnerKind: manifests.KindJob, dockerx.LabelOwner: "migrate", "job-name": "migrate"}}
	snap := &snapshot{instance: "default", controllerRunning: true, statuses: map[string]*store.Status{},
		tombstones: map[string]bool{}, containers: []dockerx.Container{c}, now: now}
	pods := snap.allPods()
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1: %+v", len(pods), pods)
	}
	e := pods[0]
	if e.Name != "migrate-abcde" || e.orphan || e.Status != "Running" || e.Owner.Kind != manifests.KindJob || e.Owner.Name != "migrate" {
		t.Errorf("pod %q status %q orphan %v owner %+v, want migrate-abcde Running of Job migrate", e.Name, e.statusWord(), e.orphan, e.Owner)
	}
	if _, err := snap.pod(testGlobal, "default", "migrate-abcde"); err != nil {
		t.Errorf("pod lookup: %v", err)
	}
	if got, err := snap.podsOf(testGlobal, "default", podTarget{kind: kindJob, name: "migrate"}); err != nil || len(got) != 1 {
		t.Errorf("job/migrate selects %d pods, %v; want its one", len(got), err)
	}
	var buf bytes.Buffer
	if err := renderPods(&buf, snap, pods, pr(t, "yaml"), false, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "ownerReferences:") || !strings.Contains(buf.String(), "kind: Job") || !strings.Contains(buf.String(), "name: migrate\n") {
		t.Errorf("-o yaml lacks the Job's ownerReference:\n%s", buf.String())
	}
	buf.Reset()
	if err := renderPods(&buf, snap, pods, pr(t, "wide"), false, false); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(buf.String(), "\n"); !strings.HasSuffix(strings.TrimSpace(lines[0]), "OWNER") || !strings.HasSuffix(strings.TrimSpace(lines[1]), " Job/migrate") {
		t.Errorf("-o wide does not end with the pod's owner:\n%s", buf.String())
	}
}

// storedPod is a stored workload and the running container of one of
// its pods, as its controller made it.
type storedPod struct {
	st   *store.Store
	ref  store.ObjectRef
	obj  *store.StoredObject
	tmpl *manifests.PodTemplateSpec
	hash string
	id   string // the pod's container
}

// workloadPodOf adds to api the running container of pod of workload
// kind/name of namespace default, applied in state directory dir
// (instance t1), labelled with its owner and template as the controller
// labels it; the workload's "app" label is name.
func workloadPodOf(t *testing.T, api *dockerAPI, dir, kind, name, pod string) storedPod {
	t.Helper()
	return workloadPodIn(t, api, dir, kind, name, pod, "running")
}

// dbStatefulSet is StatefulSet db of one replica, its container's
// extra fields (indented eight spaces) added.
func dbStatefulSet(extra string) string {
	return `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: busybox
` + extra
}

// record writes the owner's status as its controller does: status, and
// the pods writer's recorded containers rec (none when nil).
func (w storedPod) record(t *testing.T, rec map[string]*podruntime.ContainerState, status map[string]any) {
	t.Helper()
	u := store.WorkloadUpdate{Status: status, Generation: w.obj.Generation}
	if rec != nil {
		var err error
		if u, err = workloads.RecordUpdate(workloads.WriterPods, rec); err != nil {
			t.Fatal(err)
		}
		u.Status, u.Generation = status, w.obj.Generation
	}
	if err := w.st.UpdateWorkloadStatus(w.ref, w.obj.Created, u); err != nil {
		t.Fatal(err)
	}
}

// podsRow is pod's row of `get pods`, split into its columns (nil: none).
func podsRow(run func(stdin string, args ...string) string, pod string) []string {
	var row []string
	for _, l := range strings.Split(run("", "get", "pods"), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[0] == pod {
			row = f
		}
	}
	return row
}

// workloadPodIn is workloadPodOf with the container in Docker state
// state ("running", "exited", …).
func workloadPodIn(t *testing.T, api *dockerAPI, dir, kind, name, pod, state string) storedPod {
	t.Helper()
	st, err := store.Open(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	w := storedPod{st: st, ref: store.ObjectRef{Kind: kind, Namespace: "default", Name: name}}
	if w.obj, err = st.LookupObject(w.ref); err != nil {
		t.Fatal(err)
	}
	w.tmpl, _ = w.obj.Object.(manifests.Workload).PodTemplate()
	w.hash = manifests.TemplateHash(w.tmpl)
	w.id = api.add(dockerx.PodContainerName("t1", "default", pod), state, map[string]string{
		dockerx.LabelInstance: "t1", dockerx.LabelNamespace: "default", dockerx.LabelRole: dockerx.RoleReplica,
		dockerx.LabelOwnerKind: kind, dockerx.LabelOwner: name, dockerx.LabelOwnerUID: w.obj.UID(),
		dockerx.LabelTemplateHash: w.hash, "app": name})
	return w
}

// A workload pod's container that exited and waits out its crash-loop
// backoff is shown as kubectl shows the kubelet's waiting reason,
// CrashLoopBackOff, from the backoff the controller records with the
// owner's status; once the backoff has passed it is shown as exited.
func TestWorkloadPodInBackoffShowsCrashLoopBackOff(t *testing.T) {
	db := dbStatefulSet("")
	for _, tc := range []struct {
		name       string
		notBefore  time.Duration // from now
		wantStatus string
	}{
		{"backing off", time.Minute, "CrashLoopBackOff"},
		{"backoff over", -time.Minute, "Completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := startFakeDaemon(t)
			dir := t.TempDir()
			run := runner(t, []string{"--state-dir", dir, "--instance", "t1"})
			run(db, "apply", "-f", "-")
			w := workloadPodIn(t, api, dir, store.KindStatefulSet, "db", "db-0", "exited") // "Exited (0)"
			rec := map[string]*podruntime.ContainerState{w.id: {Restarts: 3, NotBefore: time.Now().Add(tc.notBefore)}}
			w.record(t, rec, map[string]any{"replicas": 1})
			row := podsRow(run, "db-0")
			if len(row) < 4 || row[2] != tc.wantStatus || row[3] != "3" {
				t.Errorf("get pods row %q, want STATUS %s and 3 restarts", row, tc.wantStatus)
			}
		})
	}
}

// An orphan is shown as the template it was made from, which the
// controller keeps it by (docs/design.md §17.1), not as the deleted
// owner's later template: a ReplicaSet's pod of an earlier template (kept
// in its status) shows that template's readiness probe.
func TestOrphanIsShownByTheTemplateItWasMadeFrom(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	run := runner(t, base)
	const probed = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: w
        image: busybox
        readinessProbe: {tcpSocket: {port: 8080}}
`
	run(probed, "apply", "-f", "-")
	w := workloadPodOf(t, api, dir, store.KindReplicaSet, "web", "web-abcde")
	// The controller's status keeps the template its pod runs once the
	// ReplicaSet's template changes.
	status := map[string]any{"templates": []any{map[string]any{"hash": w.hash, "template": w.tmpl}}}
	if err := w.st.WriteWorkloadStatus(w.ref, w.obj.Created, w.obj.Generation, status); err != nil {
		t.Fatal(err)
	}
	run(strings.Replace(probed, "        readinessProbe: {tcpSocket: {port: 8080}}\n", "", 1), "apply", "-f", "-")
	run("", "delete", "replicaset", "web", "--cascade=orphan")
	if d := run("", "describe", "pod", "web-abcde"); !strings.Contains(d, "Readiness:") || strings.Contains(d, "Controlled By") {
		t.Errorf("describe of the orphan, want its own template's readiness probe and no controller:\n%s", d)
	}
}

// Each orphan of a StatefulSet is shown as its own pod was made: the
// template of its revision with its own identity (its pod-name label, its
// claim's volume), never another ordinal's that shares its revision.
func TestStatefulSetOrphanIsShownWithItsOwnClaim(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	run := runner(t, []string{"--state-dir", dir, "--instance", "t1"})
	run(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: d
        image: busybox
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`, "apply", "-f", "-")
	st, err := store.Open(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := st.LookupObject(store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	rev := statefulset.RevisionOf(obj.Object.(*manifests.StatefulSet))
	for _, pod := range []string{"db-0", "db-1"} {
		api.add(dockerx.PodContainerName("t1", "default", pod), "running", map[string]string{
			dockerx.LabelInstance: "t1", dockerx.LabelNamespace: "default", dockerx.LabelRole: dockerx.RoleReplica,
			dockerx.LabelOwnerKind: store.KindStatefulSet, dockerx.LabelOwner: "db", dockerx.LabelOwnerUID: obj.UID(),
			dockerx.LabelTemplateHash: rev.Hash, workload.RevisionLabel: rev.Name, "app": "db"})
	}
	run("", "delete", "statefulset", "db", "--cascade=orphan")
	for _, pod := range []string{"db-0", "db-1"} {
		other := map[string]string{"db-0": "data-db-1", "db-1": "data-db-0"}[pod]
		if d := run("", "describe", "pod", pod); !strings.Contains(d, "data-"+pod) || strings.Contains(d, other) {
			t.Errorf("describe of orphan %s, want its claim data-%s and not %s:\n%s", pod, pod, other, d)
		}
	}
}

// A workload's pod whose container has a readiness probe is judged by
// the verdict its controller recorded with the owner's status, as the
// controller judges it (docs/design.md §17.1): ready on a passing
// verdict, not on a failing one, nor on one given before the container's
// current run began (Docker's "Up 1 minute" starts after it: the
// container was started again since), nor without any.
func TestWorkloadPodReadinessFollowsTheRecordedVerdict(t *testing.T) {
	db := dbStatefulSet("        readinessProbe: {tcpSocket: {port: 5432}}\n")
	yes, no := true, false
	for _, tc := range []struct {
		name      string
		verdict   *bool
		since     time.Duration // before now: when it was first seen ready
		wantReady string
		wantCond  corev1.ConditionStatus
	}{
		{"passing verdict", &yes, 30 * time.Second, "1/1", corev1.ConditionTrue},
		{"failing verdict", &no, 0, "0/1", corev1.ConditionFalse},
		{"restarted after its verdict", &yes, 10 * time.Minute, "0/1", corev1.ConditionFalse},
		{"no verdict recorded", nil, 0, "0/1", corev1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := startFakeDaemon(t)
			dir := t.TempDir()
			run := runner(t, []string{"--state-dir", dir, "--instance", "t1"})
			run(db, "apply", "-f", "-")
			w := workloadPodOf(t, api, dir, store.KindStatefulSet, "db", "db-0") // "Up 1 minute"
			id := w.id
			// As the controller records it with the set's status.
			rec := map[string]*podruntime.ContainerState{id: {Restarts: 2, ProbeReady: tc.verdict}}
			if tc.verdict != nil && *tc.verdict {
				rec[id].ReadySince = time.Now().Add(-tc.since)
			}
			if tc.verdict == nil {
				rec = nil
			}
			w.record(t, rec, map[string]any{"replicas": 1, "readyReplicas": 1})

			row := podsRow(run, "db-0")
			if len(row) == 0 || row[1] != tc.wantReady {
				t.Errorf("get pods row %q, want READY %s", row, tc.wantReady)
			}
			if tc.verdict != nil && (len(row) < 4 || row[3] != "2") {
				t.Errorf("get pods row %q, want the 2 recorded restarts", row)
			}
			var pod corev1.Pod
			if err := json.Unmarshal([]byte(run("", "get", "pod", "db-0", "-o", "json")), &pod); err != nil {
				t.Fatal(err)
			}
			var cond corev1.ConditionStatus
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady {
					cond = c.Status
				}
			}
			if cond != tc.wantCond {
				t.Errorf("Ready condition %q, want %q: %+v", cond, tc.wantCond, pod.Status.Conditions)
			}
		})
	}
}

// BenchmarkGetPods1000 is `dockctl get pods -A` of 1,000 running pods in
// 200 Deployments (the scale goal's size, BENCHMARKS.md "get pods with
// 1,000 pods"; its target is 300 ms): the command's own cost, its list
// of Docker's containers answered by the in-process fake daemon.
func BenchmarkGetPods1000(b *testing.B) {
	const deployments, replicas = 200, 5
	api := startFakeDaemon(b)
	dir := b.TempDir()
	run := runner(b, []string{"--state-dir", dir, "--instance", "t1"})
	var docs []string
	for i := range deployments {
		docs = append(docs, strings.ReplaceAll(strings.Replace(webYAML, "replicas: 3", fmt.Sprintf("replicas: %d", replicas), 1), "web", fmt.Sprintf("web%d", i)))
	}
	run(strings.Join(docs, "---\n"), "apply", "-f", "-")
	for i := range deployments {
		d := mustDecode(b, docs[i])
		hash := manifests.TemplateHash(&d.Spec.Template)
		for r := range replicas {
			api.add(dockerx.ContainerName("t1", "default", d.Metadata.Name, hash, r), "running", map[string]string{
				dockerx.LabelInstance: "t1", dockerx.LabelDeployment: d.Metadata.Name, dockerx.LabelTemplateHash: hash,
				dockerx.LabelRole: dockerx.RoleReplica, "app": d.Metadata.Name})
		}
	}
	if rows := strings.Count(run("", "get", "pods", "-A"), "\n"); rows != deployments*replicas+1 {
		b.Fatalf("get pods printed %d lines, want a header and %d pods", rows, deployments*replicas)
	}
	b.ResetTimer()
	for range b.N {
		run("", "get", "pods", "-A")
	}
}
