package reconciler

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// recordCreateEnvs makes h's engine keep the environment of each
// container created, by name; the function returned copies them.
func recordCreateEnvs(h *harness) func() map[string][]string {
	var (
		mu   sync.Mutex
		envs = map[string][]string{}
	)
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		mu.Lock()
		envs[req.Name] = req.Env
		mu.Unlock()
		return nil
	}
	return func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(envs)
	}
}

// envDeployment refers to ConfigMap app, Secret db and the pod.
func envDeployment() *manifests.Deployment {
	d := testDeployment("web", 1, "x")
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env,
		manifests.EnvVar{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}},
		manifests.EnvVar{Name: "PW", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "password"}}},
		manifests.EnvVar{Name: "OPT", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "nope", Key: "k", Optional: ptrBool(true)}}},
		manifests.EnvVar{Name: "POD", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		manifests.EnvVar{Name: "POD_IP", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		manifests.EnvVar{Name: "HASH", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['pod-template-hash']"}}},
	)
	c.EnvFrom = []manifests.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "app"}}}
	return d
}

func TestControllerWaitsForConfigThenCreates(t *testing.T) {
	h := newHarness(t, Options{})
	h.opts.Config = h.store
	h.ctrl = New(h.engine, h.store, h.opts)
	envs := recordCreateEnvs(h)
	d := envDeployment()
	h.apply(d)
	h.start()

	h.waitFor("a ReplicaFailure naming the missing ConfigMap and Secret", func() bool {
		st, _ := h.store.ReadStatus("", "web")
		if st == nil {
			return false
		}
		c := find(st.Conditions, manifests.ConditionReplicaFailure)
		return c != nil && strings.Contains(c.Message, "ConfigMap default/app not found") &&
			strings.Contains(c.Message, `Secret default/db not found (container "web", env PW)`)
	})
	st, _ := h.store.ReadStatus("", "web")
	if c := find(st.Conditions, manifests.ConditionReplicaFailure); strings.Contains(c.Message, "nope") {
		t.Errorf("an optional reference is named as missing: %s", c.Message)
	}
	if n := h.engine.Calls()["create"]; n != 0 {
		t.Fatalf("%d creates while the references are missing", n)
	}

	// The Secret alone: still waiting, now for the ConfigMap only.
	if _, err := h.store.Apply(store.Bundle{Secrets: []*manifests.Secret{{APIVersion: "v1", Kind: manifests.KindSecret,
		Metadata: manifests.ObjectMeta{Name: "db"}, Type: manifests.SecretTypeOpaque, Data: map[string][]byte{"password": []byte(secretValue)}}}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the ReplicaFailure to name the ConfigMap only", func() bool {
		st, _ := h.store.ReadStatus("", "web")
		c := find(st.Conditions, manifests.ConditionReplicaFailure)
		return c != nil && strings.Contains(c.Message, "ConfigMap default/app") && !strings.Contains(c.Message, "Secret")
	})
	// The ConfigMap: the change requeues the deployment (the resync is an
	// hour away), which creates its replica.
	if _, err := h.store.Apply(store.Bundle{ConfigMaps: []*manifests.ConfigMap{{APIVersion: "v1", Kind: manifests.KindConfigMap,
		Metadata: manifests.ObjectMeta{Name: "app"}, Data: map[string]string{"mode": "fast", "level": "3"}}}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := h.waitReplicas("web", 1)
	h.waitFor("the ReplicaFailure to clear", func() bool {
		st, _ := h.store.ReadStatus("", "web")
		return st != nil && find(st.Conditions, manifests.ConditionReplicaFailure) == nil
	})
	st, _ = h.store.ReadStatus("", "web")
	if b, _ := json.Marshal(st); strings.Contains(string(b), secretValue) {
		t.Errorf("a Secret's value is in the status: %s", b)
	}
	env := envs()[cs[0].Name]
	hash := manifests.TemplateHash(&d.Spec.Template)
	pod := dockerx.Hostname("web", hash, 0)
	for _, want := range []string{"CFG_level=3", "CFG_mode=fast", "V=x", "MODE=fast", "PW=" + secretValue, "POD=" + pod, "HASH=" + hash} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	// status.podIP: assigned before the create, and the address the
	// replica has on the instance network.
	var podIP string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "POD_IP="); ok {
			podIP = v
		}
	}
	var onNet []string
	listed, err := h.engine.ListContainers(context.Background(), "i")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range listed {
		if c.ID == cs[0].ID {
			for _, ip := range c.Networks {
				onNet = append(onNet, ip)
			}
		}
	}
	if podIP == "" || !slices.Contains(onNet, podIP) {
		t.Errorf("POD_IP = %q, the replica's addresses %q", podIP, onNet)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "OPT=") {
			t.Errorf("an optional missing reference is set: %q", kv)
		}
	}
}

func TestPlanWaitsForConfig(t *testing.T) {
	d := testDeployment("web", 2, "x")
	hash := manifests.TemplateHash(&d.Spec.Template)
	in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash,
		Waiting: map[string]string{hash: "revision " + hash + ": waiting for ConfigMap default/app not found (container \"web\", env MODE)"}}
	plan := ComputePlan(in)
	for _, op := range plan.Ops {
		if op.Kind == OpCreate {
			t.Errorf("planned %s", op.Line())
		}
	}
	if len(plan.Blocked) != 1 || !strings.Contains(plan.Blocked[0], "ConfigMap default/app") {
		t.Errorf("Blocked = %q", plan.Blocked)
	}
	// An existing stopped replica is still started: its environment was
	// resolved when it was created.
	name := dockerx.ContainerName("i", "", "web", hash, 0)
	in.Containers = []dockerx.Container{{ID: "c0", Name: name, Instance: "i", Deployment: "web", TemplateHash: hash, State: dockerx.StateExited}}
	in.State.Sizes = map[string]int32{hash: 2}
	plan = ComputePlan(in)
	var kinds []string
	for _, op := range plan.Ops {
		kinds = append(kinds, string(op.Kind)+" "+op.Name)
	}
	if !slices.Equal(kinds, []string{"start " + name}) || len(plan.Blocked) != 1 {
		t.Errorf("plan = %q, blocked %q", kinds, plan.Blocked)
	}
}

func TestReadsPodIP(t *testing.T) {
	d := testDeployment("web", 1, "x")
	if podruntime.ReadsPodIP(&d.Spec.Template.Spec) {
		t.Error("a template without fieldRefs reads its address")
	}
	if !podruntime.ReadsPodIP(&envDeployment().Spec.Template.Spec) {
		t.Error("status.podIP not seen")
	}
}

// In a pod with a holder, the holder gets the address and every member
// reads it as status.podIP, with its own environment resolved.
func TestControllerPodIPOfHolderPod(t *testing.T) {
	h := newHarness(t, Options{})
	h.opts.Config = h.store
	h.ctrl = New(h.engine, h.store, h.opts)
	var (
		mu   sync.Mutex
		reqs []dockerx.CreateRequest
	)
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		return nil
	}
	d := testDeployment("pod", 1, "x")
	ps := &d.Spec.Template.Spec
	podIP := manifests.EnvVar{Name: "POD_IP", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "status.podIP"}}}
	ps.Containers[0].Env = append(ps.Containers[0].Env, podIP)
	ps.Containers = append(ps.Containers, manifests.Container{Name: "side", Image: testImage, Env: []manifests.EnvVar{podIP,
		{Name: "CPU", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "pod", Resource: "requests.cpu", Divisor: ptrQuantity("1m")}}}}})
	manifests.SetDefaults(d)
	h.apply(d)
	h.start()
	h.waitFor("the pod's holder and two members", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reqs) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	var holderIP string
	members := map[string][]string{}
	for _, r := range reqs {
		if r.Role == dockerx.RoleHolder {
			if r.Network == nil || r.Network.IPv4 == "" {
				t.Fatalf("the holder has no assigned address: %+v", r.Network)
			}
			holderIP = r.Network.IPv4
			continue
		}
		members[r.Container] = r.Env
	}
	for _, m := range []string{"pod", "side"} {
		if !slices.Contains(members[m], "POD_IP="+holderIP) {
			t.Errorf("member %s: env %q, want POD_IP=%s", m, members[m], holderIP)
		}
	}
	if !slices.Contains(members["side"], "CPU=0") {
		t.Errorf("side: env %q, want CPU=0 (no request, no limit)", members["side"])
	}
}

func ptrQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// TestEnvFromKeysNamedByTheRelaxedRuleArePassedWithoutEvent: since
// Kubernetes 1.34 (RelaxedEnvironmentVariableValidation, GA) a variable's
// name is any printable ASCII but '=', so every ConfigMap or Secret key
// ("1st", "log.level", "9lives") reaches the container from envFrom, as
// the 1.34 kubelet's makeEnvironmentVariables passes it, and no Warning
// InvalidEnvironmentVariableNames is recorded on the pod (older kubelets
// skipped such keys and reported them so).
func TestEnvFromKeysNamedByTheRelaxedRuleArePassedWithoutEvent(t *testing.T) {
	m := &memRecorder{}
	h := newHarness(t, Options{Recorder: m})
	h.opts.Config = h.store
	h.ctrl = New(h.engine, h.store, h.opts)
	envs := recordCreateEnvs(h)
	if _, err := h.store.Apply(store.Bundle{
		ConfigMaps: []*manifests.ConfigMap{
			{APIVersion: "v1", Kind: manifests.KindConfigMap, Metadata: manifests.ObjectMeta{Name: "app"},
				Data: map[string]string{"mode": "fast", "log.level": "x", "1st": "y"}},
		},
		Secrets: []*manifests.Secret{{APIVersion: "v1", Kind: manifests.KindSecret, Metadata: manifests.ObjectMeta{Name: "db"},
			Type: manifests.SecretTypeOpaque, Data: map[string][]byte{"9lives": []byte(secretValue), "user": []byte("admin")}}},
	}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Spec.Containers[0].EnvFrom = []manifests.EnvFromSource{
		{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "app"}},
		{Prefix: "db-", SecretRef: &manifests.SecretEnvSource{Name: "db"}},
	}
	h.apply(d)
	h.start()
	pods := h.waitReplicas("web", 1)
	var env []string
	for _, e := range envs() {
		env = e
	}
	for _, want := range []string{"1st=y", "log.level=x", "mode=fast", "db-9lives=" + secretValue, "db-user=admin"} {
		if !slices.Contains(env, want) {
			t.Errorf("container env lacks %q: %q", want, env)
		}
	}
	// The environment is resolved before the create: an event would be
	// recorded by the time the replica exists.
	if strings.Contains(m.Dump(), podruntime.ReasonInvalidEnvNames) {
		t.Errorf("pod %s: an InvalidEnvironmentVariableNames event for valid names:\n%s", podName("web", &pods[0]), m.Dump())
	}
}

const secretValue = "s3cr3t-value"

func ptrBool(b bool) *bool { return &b }

// TestRevisionWaitingForConfigMapKeepsOldReplicas: a rollout to a template
// whose env refers to a ConfigMap that does not exist creates nothing of
// the new revision, and the old one keeps replicas - maxUnavailable
// running, as a Deployment keeps its old ReplicaSet while the new pods sit
// in CreateContainerConfigError (it may scale it down by maxUnavailable,
// never further). Then the ConfigMap is applied and the rollout proceeds.
func TestRevisionWaitingForConfigMapKeepsOldReplicas(t *testing.T) {
	h := newHarness(t, Options{})
	h.opts.Config = h.store
	h.ctrl = New(h.engine, h.store, h.opts)
	d := testDeployment("web", 4, "x")
	h.apply(d)
	h.start()
	old := h.waitReplicas("web", 4)
	oldHash := old[0].TemplateHash

	d2 := testDeployment("web", 4, "y")
	d2.Spec.Template.Spec.Containers[0].Env = append(d2.Spec.Template.Spec.Containers[0].Env,
		manifests.EnvVar{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}})
	h.apply(d2)
	h.waitFor("a ReplicaFailure naming the ConfigMap", func() bool { return h.failureSays("web", "ConfigMap default/app not found") })
	time.Sleep(500 * time.Millisecond) // let the rollout settle
	running := 0
	for _, c := range h.ours("web") {
		if c.TemplateHash == oldHash && c.State == dockerx.StateRunning {
			running++
		}
		if c.TemplateHash != oldHash {
			t.Errorf("a container of the waiting revision exists: %s (%s)", c.Name, c.State)
		}
	}
	if running < 3 {
		t.Errorf("%d of 4 old replicas (maxUnavailable 1) run while the new revision waits for its ConfigMap: %s", running, summary(h.ours("web")))
	}
	if _, err := h.store.Apply(store.Bundle{ConfigMaps: []*manifests.ConfigMap{{APIVersion: "v1", Kind: manifests.KindConfigMap,
		Metadata: manifests.ObjectMeta{Name: "app"}, Data: map[string]string{"mode": "fast"}}}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReplicas("web", 4)
}

// hostAsker is a Docker that only tells the host, counting the asks.
type hostAsker struct {
	Docker
	mu   sync.Mutex
	asks int
}

func (h *hostAsker) HostInfo(context.Context) (dockerx.HostInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asks++
	return dockerx.HostInfo{Name: "node1", CPUs: 2, Memory: 1 << 30}, nil
}

// A create's environment asks Docker for the host (spec.nodeName, unset
// limits) only for a container the template has: a create the template
// refuses fails before any Docker call, as the kubelet validates the
// container before it builds its environment.
func TestResolveEnvAsksTheHostOnlyForATemplatesContainer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		container string
		wantErr   string
		wantAsks  int
	}{
		{name: "the template's container", container: "app", wantAsks: 1},
		{name: "a container the template lacks", container: "gone", wantErr: `create web-x: no container "gone" in the template`, wantAsks: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := &hostAsker{}
			c := &Controller{docker: host, log: slog.New(slog.DiscardHandler), opts: Options{Recorder: NopRecorder{}}}
			d := testDeployment("web", 1, "x")
			d.Spec.Template.Spec.Containers[0].Name = "app"
			op := Op{Kind: OpCreate, Name: "web-x", Hash: "h1", Container: tc.container, From: dockerx.TemplateOf(d)}
			in := PlanInput{Instance: "i", Name: "web", Now: time.Unix(0, 0)}
			_, err := c.resolveEnv(context.Background(), in, op, dockerx.CreateRequest{Name: "web-x", From: op.From}, "", nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if host.asks != tc.wantAsks {
				t.Fatalf("host asked %d times, want %d", host.asks, tc.wantAsks)
			}
		})
	}
}
