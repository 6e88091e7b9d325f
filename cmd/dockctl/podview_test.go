package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// fakeDetails answers a snapshot's details as Docker would for its
// containers: the host's name, and each container's start (a second
// after its creation; never for one only created) and, once exited, its
// end. It counts the calls.
type fakeDetails struct {
	host     string
	cs       []dockerx.Container
	infos    int
	inspects []string
}

func (f *fakeDetails) HostInfo(context.Context) (dockerx.HostInfo, error) {
	f.infos++
	return dockerx.HostInfo{Name: f.host, CPUs: 2, Memory: 4 << 30}, nil
}

func (f *fakeDetails) InspectContainer(_ context.Context, id string) (dockerx.ContainerDetails, error) {
	f.inspects = append(f.inspects, id)
	for _, c := range f.cs {
		if c.ID != id {
			continue
		}
		d := dockerx.ContainerDetails{ID: c.ID, Name: c.Name, State: c.State, ExitCode: c.ExitCode}
		if c.State != dockerx.StateCreated {
			d.StartedAt = c.Created.Add(time.Second)
		}
		if c.State == dockerx.StateExited {
			d.FinishedAt = c.Created.Add(5 * time.Second)
		}
		return d, nil
	}
	return dockerx.ContainerDetails{}, dockerx.ErrNotFound
}

// withDetails gives snap a Docker host (docker-host, 10.222.0.1 on the
// instance network) that answers for its containers.
func withDetails(snap *snapshot) *fakeDetails {
	f := &fakeDetails{host: "docker-host", cs: snap.containers}
	snap.hostIP = "10.222.0.1"
	snap.details = func(run func(context.Context, dockerDetails) error) error { return run(context.Background(), f) }
	return f
}

// storeYAML is a pod template with everything get -o yaml and describe
// show of a container: resources, the three probes, named and published
// ports, environment from literals, a Secret, a ConfigMap and the pod's
// address, and volume mounts.
const storeYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: store
spec:
  replicas: 1
  selector:
    matchLabels: {app: store}
  template:
    metadata:
      labels: {app: store}
    spec:
      containers:
      - name: api
        image: dockctl-workload:dev
        args: [serve, --port=8080]
        ports:
        - {name: http, containerPort: 8080}
        - {containerPort: 9090, hostPort: 19090, hostIP: 127.0.0.1}
        env:
        - {name: MODE, value: fast}
        - name: PASSWORD
          valueFrom:
            secretKeyRef: {name: db, key: password}
        - name: LEVEL
          valueFrom:
            configMapKeyRef: {name: app-config, key: level, optional: true}
        - name: POD_IP
          valueFrom:
            fieldRef: {fieldPath: status.podIP}
        resources:
          limits: {cpu: 500m, memory: 128Mi}
          requests: {cpu: 250m, memory: 64Mi}
        readinessProbe:
          httpGet: {path: /ready, port: http}
          periodSeconds: 5
        livenessProbe:
          exec:
            command: [/workload, check]
          initialDelaySeconds: 3
        startupProbe:
          tcpSocket: {port: 8080}
          failureThreshold: 30
        volumeMounts:
        - {name: creds, mountPath: /etc/creds, readOnly: true}
        - {name: data, mountPath: /data}
      volumes:
      - name: creds
        secret: {secretName: db}
      - name: data
        emptyDir: {}
`

// storeFixture is a snapshot of store's one pod, running for an hour:
// its holder has the static address of a pod that reads status.podIP.
func storeFixture(t *testing.T) (*snapshot, *fakeDetails) {
	t.Helper()
	d := mustDecode(t, storeYAML)
	cs := testPod("default", d, 0, time.Hour, false, member{name: "api", state: dockerx.StateRunning})
	network := dockerx.NetworkName("default")
	cs[0].Networks, cs[0].StaticIPv4 = map[string]string{network: "10.222.15.254"}, map[string]string{network: "10.222.15.254"}
	rec := &store.Record{Name: "store", Generation: 1, CreatedAt: now.Add(-time.Hour), Deployment: *d,
		Revisions: []store.Revision{{Number: 1, Hash: manifests.TemplateHash(&d.Spec.Template), Template: d.Spec.Template}}}
	snap := &snapshot{instance: "default", controllerRunning: true, records: []*store.Record{rec},
		statuses: map[string]*store.Status{"default/store": {ObservedGeneration: 1}}, tombstones: map[string]bool{},
		containers: cs, now: now}
	return snap, withDetails(snap)
}

// get pod -o yaml shows the spec as the API server shows a pod's — the
// template's containers whole, env as written (valueFrom references,
// never a value resolved from a Secret) — with the node, the pod's and
// the host's addresses, and when each container started.
func TestPodObjectSpec(t *testing.T) {
	snap, _ := storeFixture(t)
	var buf bytes.Buffer
	if err := renderPods(&buf, snap, snap.allPods(), pr(t, "yaml"), true, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "get-pods-yaml", buf.Bytes())
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(buf.Bytes(), &pod); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if c.Resources.Limits.Cpu().String() != "500m" || c.Resources.Requests.Memory().String() != "64Mi" ||
		c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil || len(c.Ports) != 2 || len(c.VolumeMounts) != 2 {
		t.Errorf("the container's spec lacks what the template says: %+v", c)
	}
	for _, e := range c.Env {
		if e.Name == "PASSWORD" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("a Secret's variable is not its reference: %+v", e)
		}
	}
	st := pod.Status
	if st.PodIP != "10.222.15.254" || len(st.PodIPs) != 1 || st.HostIP != "10.222.0.1" || pod.Spec.NodeName != "docker-host" {
		t.Errorf("podIP %q podIPs %v hostIP %q nodeName %q", st.PodIP, st.PodIPs, st.HostIP, pod.Spec.NodeName)
	}
	if r := st.ContainerStatuses[0].State.Running; r == nil || !r.StartedAt.Equal(&metav1.Time{Time: now.Add(-time.Hour + time.Second)}) {
		t.Errorf("state %+v, want running since an hour ago", st.ContainerStatuses[0].State)
	}
}

// describe shows the template's limits, requests and probes in kubectl's
// words, and a pod its node, addresses and start times.
func TestDescribeLimitsAndProbes(t *testing.T) {
	snap, _ := storeFixture(t)
	var buf bytes.Buffer
	describe(&buf, snap, snap.deploymentObject(snap.records[0]), true)
	golden(t, "describe-deployment-probes", buf.Bytes())
	buf.Reset()
	describePod(&buf, snap, snap.allPods()[0])
	golden(t, "describe-pod-probes", buf.Bytes())
}

// Docker is asked only what the format shows: nothing for a table, the
// host's name once for -o wide, and for the objects the host and an
// inspect of each container of the pods printed, once.
func TestPodDetailsAsked(t *testing.T) {
	for _, tt := range []struct {
		output  string
		single  bool
		infos   int
		inspect int // containers inspected
	}{
		{"table", false, 0, 0},
		{"name", false, 0, 0},
		{"wide", false, 1, 0},
		{"json", false, 1, -1},
		{"jsonpath={.items[*].status.podIP}", false, 1, -1},
		{"yaml", true, 1, 3}, // one pod's: its three containers (not its holder)
	} {
		t.Run(tt.output, func(t *testing.T) {
			snap := podsFixture(t)
			f := withDetails(snap)
			pods := snap.allPods()
			want := tt.inspect
			if tt.single {
				pods = snap.podsNamed("default", dockerx.Hostname("shop", manifests.TemplateHash(&mustDecode(t, shopYAML).Spec.Template), 0))
			}
			if want < 0 {
				want = 0
				for _, e := range pods {
					for _, pc := range e.Containers {
						if pc.Container != nil {
							want++
						}
					}
				}
			}
			if err := renderPods(io.Discard, snap, pods, pr(t, tt.output), tt.single, false); err != nil {
				t.Fatal(err)
			}
			if f.infos != tt.infos || len(f.inspects) != want || len(slices.Compact(slices.Sorted(slices.Values(f.inspects)))) != want {
				t.Errorf("%d host calls and %d inspects (%d containers), want %d and %d each once", f.infos, len(f.inspects),
					len(slices.Compact(slices.Sorted(slices.Values(f.inspects)))), tt.infos, want)
			}
		})
	}
}

// A pod's address is its network owner's (holder, or only container) on
// the instance network, Docker's or the static one dockctl gave it (kept
// while it is stopped), else on another network, the host's with the
// host's network, none when it has none.
func TestPodIP(t *testing.T) {
	instance := dockerx.NetworkName("default")
	running := func(nets map[string]string) *dockerx.Container {
		return &dockerx.Container{ID: "c1", State: dockerx.StateRunning, Networks: nets, NetworkMode: instance}
	}
	stopped := func(static map[string]string) *dockerx.Container {
		return &dockerx.Container{ID: "c1", State: dockerx.StateExited, Networks: map[string]string{instance: ""}, StaticIPv4: static}
	}
	host := &dockerx.Container{ID: "c1", State: dockerx.StateRunning, NetworkMode: "host", Networks: map[string]string{"host": ""}}
	hostNet := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{HostNetwork: true}}
	member := &dockerx.Container{ID: "m1", PodUID: "0000000a", State: dockerx.StateRunning, NetworkMode: "container:h1"}
	for _, tt := range []struct {
		name     string
		holder   *dockerx.Container
		c        *dockerx.Container
		template *manifests.PodTemplateSpec
		want     string
	}{
		{"the instance network", nil, running(map[string]string{instance: "10.222.0.7"}), nil, "10.222.0.7"},
		{"the instance network before another", nil, running(map[string]string{"a-net": "172.20.0.2", instance: "10.222.0.7"}), nil, "10.222.0.7"},
		{"another network only", nil, running(map[string]string{"bridge": "172.17.0.3"}), nil, "172.17.0.3"},
		{"the first other network that has one", nil, running(map[string]string{"b": "172.21.0.2", "a": "", "c": "172.22.0.2"}), nil, "172.21.0.2"},
		{"stopped, static", nil, stopped(map[string]string{instance: "10.222.15.250"}), nil, "10.222.15.250"},
		{"stopped, dynamic", nil, stopped(nil), nil, ""},
		{"host network by the template", nil, running(nil), hostNet, "10.222.0.1"},
		{"host network by Docker's mode", nil, host, nil, "10.222.0.1"},
		{"a holder's", &dockerx.Container{ID: "h1", PodUID: "0000000a", State: dockerx.StateRunning, Networks: map[string]string{instance: "10.222.0.9"}}, member, nil, "10.222.0.9"},
		{"the holder gone", nil, member, nil, ""},
		{"no container", nil, nil, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := podEntry{template: tt.template}
			e.Holder = tt.holder
			e.Containers = []podruntime.PodContainer{{Name: "app", Container: tt.c}}
			snap := &snapshot{instance: "default", hostIP: "10.222.0.1"}
			if got := e.podIP(snap); got != tt.want {
				t.Errorf("podIP %q, want %q", got, tt.want)
			}
		})
	}
}

// Through the command line and the real client: get pods -o wide asks
// Docker for the node, the object formats and describe for the start
// times too (each from a client of their own: the listing's is closed).
func TestPodDetailsThroughDocker(t *testing.T) {
	d := startFakeDaemon(t)
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	if _, errOut, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	id := d.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	d.mu.Lock()
	started := time.Unix(d.ctrs[id].summary.Created, 0)
	d.mu.Unlock()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"get", "pods", "-o", "wide"}, []string{" NODE ", " " + fakeHostName + " "}},
		{[]string{"get", "pods", "-o", "custom-columns=NODE:.spec.nodeName,STARTED:.status.containerStatuses[0].state.running.startedAt"},
			[]string{fakeHostName + "   " + started.UTC().Format(time.RFC3339)}},
		{[]string{"describe", "pod", "web-abc-0"}, []string{"Node:         " + fakeHostName + "\n", "      Started:      " + started.Format(time.RFC1123Z) + "\n"}},
	} {
		out, errOut, err := run(t, "", append(base, tt.args...)...)
		if err != nil {
			t.Fatalf("%v: %v %s", tt.args, err, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v:\n%s\nlacks %q", tt.args, out, w)
			}
		}
	}
}
