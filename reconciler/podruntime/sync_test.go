package podruntime_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// TestRuntimeRunsPodsOfAnyOwner: an owner no workload package knows
// (kind "TestOwner") hands the runtime its pods; the runtime creates each
// under its own name (dockerx.PodContainerName) labelled with the owner,
// restarts a crashed OnFailure pod after its backoff, keeps a pod that
// finished (Succeeded, Failed) and stops gracefully, then removes, a pod
// the owner no longer asks for (docs/design.md §17).
func TestRuntimeRunsPodsOfAnyOwner(t *testing.T) {
	const instance, ns, img = "t", "shop", "img:1"
	e := dockerfake.New(img)
	stopped := make(chan error, 4)
	backoff := podruntime.Backoff{Base: time.Minute, Max: time.Hour}
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: backoff,
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler), Done: func(_ string, err error) { stopped <- err }}})
	defer rt.Stop()
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "batch", UID: "u1"}
	pod := func(name, policy string) podruntime.PodSpec {
		tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "main", Image: img}}}}
		return podruntime.PodSpec{Namespace: ns, Name: name, Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl), RestartPolicy: policy}
	}
	specs := []podruntime.PodSpec{
		pod("crashes", manifests.RestartOnFailure),
		pod("succeeds", manifests.RestartOnFailure),
		pod("fails", manifests.RestartNever),
		pod("dropped", manifests.RestartAlways),
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.SetNow(func() time.Time { return t0 })
	ctx := context.Background()
	sync := func(specs []podruntime.PodSpec, now time.Time) podruntime.SyncResult {
		t.Helper()
		rt.Stopper().Listing("TestOwner/batch")
		cs, err := e.ListContainers(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: "TestOwner/batch", Namespace: ns, Owner: owner, Pods: specs, Observed: cs, Now: now})
		if err != nil {
			t.Fatalf("sync at %s: %v", now.Sub(t0), err)
		}
		return res
	}
	byPod := func() map[string]dockerx.Container {
		out := map[string]dockerx.Container{}
		for _, c := range e.Snapshot() {
			out[c.Name] = c
		}
		return out
	}
	name := func(pod string) string { return dockerx.PodContainerName(instance, ns, pod) }

	res := sync(specs, t0)
	cs := byPod()
	for _, s := range specs {
		c, ok := cs[name(s.Name)]
		switch {
		case !ok:
			t.Fatalf("pod %s: no container %s among %v", s.Name, name(s.Name), cs)
		case c.State != dockerx.StateRunning:
			t.Errorf("pod %s: %s, want running", s.Name, c.State)
		case c.Labels[dockerx.LabelOwnerKind] != "TestOwner" || c.Labels[dockerx.LabelOwner] != "batch" || c.Labels[dockerx.LabelDeployment] != "" || c.Labels[dockerx.LabelNamespace] != ns:
			t.Errorf("pod %s: labels %v, want owner TestOwner/batch in %s and no deployment", s.Name, c.Labels, ns)
		}
		if got := res.Pods[s.Name].Phase; got != corev1.PodRunning {
			t.Errorf("pod %s: phase %s, want Running", s.Name, got)
		}
	}

	// Exits within the crash window: the OnFailure pod that failed waits
	// out its backoff, the others finished.
	for pod, code := range map[string]int{"crashes": 1, "succeeds": 0, "fails": 1} {
		if err := e.Exit(cs[name(pod)].ID, code); err != nil {
			t.Fatal(err)
		}
	}
	t1 := t0.Add(time.Second)
	res = sync(specs, t1)
	if res.RequeueAfter != backoff.Base {
		t.Errorf("requeue after %s, want the backoff %s", res.RequeueAfter, backoff.Base)
	}
	if c := byPod()[name("crashes")]; c.State != dockerx.StateExited {
		t.Errorf("crashed OnFailure pod: %s within its backoff, want exited", c.State)
	}
	for pod, want := range map[string]corev1.PodPhase{"succeeds": corev1.PodSucceeded, "fails": corev1.PodFailed} {
		if got := res.Pods[pod].Phase; got != want {
			t.Errorf("pod %s: phase %s, want %s", pod, got, want)
		}
	}

	res = sync(specs, t1.Add(backoff.Base))
	cs = byPod()
	if c := cs[name("crashes")]; c.State != dockerx.StateRunning || res.Pods["crashes"].Restarts != 1 {
		t.Errorf("crashed OnFailure pod after its backoff: %s with %d restarts, want running, restarted once", c.State, res.Pods["crashes"].Restarts)
	}
	for _, pod := range []string{"succeeds", "fails"} {
		if c, ok := cs[name(pod)]; !ok || c.State != dockerx.StateExited {
			t.Errorf("finished pod %s: %+v, want kept, exited", pod, c)
		}
	}

	// The owner no longer wants "dropped": stopped, then removed.
	e.ResetCalls()
	e.HoldRemovals(true) // the test, not a timer, ends the removal
	sync(specs[:3], t1.Add(backoff.Base+time.Second))
	if err := <-stopped; err != nil {
		t.Fatalf("stop of the dropped pod: %v", err)
	}
	if n := e.FinishRemovals(); n != 1 {
		t.Errorf("%d removals in progress once the stop ended, want the dropped pod's", n)
	}
	if _, ok := byPod()[name("dropped")]; ok {
		t.Errorf("dropped pod still has its container")
	}
	if calls := e.Calls(); calls["stop"] != 1 {
		t.Errorf("calls %v, want one graceful stop before the removal", calls)
	}
	if _, ok := byPod()[name("fails")]; !ok {
		t.Errorf("the failed Never pod was not kept")
	}
}

// syncConfig is the ConfigStore of a Sync test: ConfigMaps and live claims
// by "namespace/name".
type syncConfig struct {
	cms    map[string]*manifests.ConfigMap
	claims map[string]bool
}

func (s syncConfig) LookupConfigMap(ns, name string) (*manifests.ConfigMap, error) {
	if cm, ok := s.cms[store.Key(ns, name)]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, store.ErrNotFound)
}

func (s syncConfig) LookupSecret(ns, name string) (*manifests.Secret, error) {
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, store.ErrNotFound)
}

func (s syncConfig) LookupClaim(ns, name string) (*manifests.PersistentVolumeClaim, bool, error) {
	if s.claims[store.Key(ns, name)] {
		return &manifests.PersistentVolumeClaim{Metadata: manifests.ObjectMeta{Name: name, Namespace: ns}}, false, nil
	}
	return nil, false, fmt.Errorf("claim %s/%s: %w", ns, name, store.ErrNotFound)
}

// TestRuntimeRunsHolderPodsOfAnyOwner: a pod that needs a holder, of an
// owner no workload package knows (kind "TestOwner"), runs through Sync
// as the Deployment controller's pods do (docs/design.md §9, §11, §12,
// §17): its holder and file volume first, its files written, its init
// container run to its successful exit before any app container is
// created, its app containers created with their environment from a
// ConfigMap, a missing image pulled and the claim's volume made; under restartPolicy OnFailure a
// container that failed is restarted after its backoff and one that
// succeeded is kept, and the pod's phase goes Pending, Running, Succeeded;
// once the owner no longer wants it, the pod is stopped and removed, and
// its file volume with it.
func TestRuntimeRunsHolderPodsOfAnyOwner(t *testing.T) {
	const instance, ns, img, key = "t", "shop", "img:1", "TestOwner/batch"
	e := dockerfake.New(img)
	var mu sync.Mutex
	var created []string         // member containers, in create order
	env := map[string][]string{} // by template container
	var written []string         // files payloads the writer got
	e.OnCreate = func(req dockerx.CreateRequest) error {
		mu.Lock()
		defer mu.Unlock()
		if req.Role != dockerx.RoleHolder {
			created = append(created, req.Container)
			env[req.Container] = req.Env
		}
		return nil
	}
	e.HandleExecInput(func(_ string, _ []string, stdin []byte) (int, []byte) {
		mu.Lock()
		defer mu.Unlock()
		written = append(written, string(stdin))
		return 0, nil
	})
	cfg := syncConfig{
		cms:    map[string]*manifests.ConfigMap{store.Key(ns, "app"): {Metadata: manifests.ObjectMeta{Name: "app", Namespace: ns}, Data: map[string]string{"mode": "fast", "app.conf": "level=3"}}},
		claims: map[string]bool{store.Key(ns, "data"): true},
	}
	backoff := podruntime.Backoff{Base: time.Minute, Max: time.Hour}
	stopped := make(chan error, 1)
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: backoff, Config: cfg,
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler), Done: func(_ string, err error) { stopped <- err }}})
	defer rt.Stop()
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "batch", UID: "u1"}
	const remote = "registry.example/report:1" // pulled at its create
	e.AddRemoteImage(remote)
	app := func(name, image string) manifests.Container {
		return manifests.Container{Name: name, Image: image, ImagePullPolicy: manifests.PullIfNotPresent,
			Env:          []manifests.EnvVar{{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}}},
			VolumeMounts: []manifests.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}, {Name: "data", MountPath: "/data"}}}
	}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{
		InitContainers: []manifests.Container{{Name: "setup", Image: img}},
		Containers:     []manifests.Container{app("work", img), app("report", remote)},
		Volumes: []manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
			{Name: "data", PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	}}
	specs := []podruntime.PodSpec{{Namespace: ns, Name: "job-0", Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl),
		RestartPolicy: manifests.RestartOnFailure}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	e.SetNow(func() time.Time { return now })
	ctx := context.Background()
	sync := func(at time.Duration) podruntime.PodStatus {
		t.Helper()
		now = t0.Add(at)
		rt.Stopper().Listing(key)
		cs, err := e.ListContainers(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: key, Namespace: ns, Owner: owner, Pods: specs, Observed: cs, Now: now})
		if err != nil {
			t.Fatalf("sync at %s: %v", at, err)
		}
		return res.Pods["job-0"]
	}
	holder := dockerx.PodContainerName(instance, ns, "job-0")
	member := func(name string) dockerx.Container {
		for _, c := range e.Snapshot() {
			if c.Name == dockerx.MemberName(holder, name) {
				return c
			}
		}
		return dockerx.Container{}
	}
	createdNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(created)
	}

	if st := sync(0); st.Phase != corev1.PodPending {
		t.Errorf("new pod: phase %s, want Pending", st.Phase)
	}
	var h dockerx.Container
	for _, c := range e.Snapshot() {
		if c.Name == holder {
			h = c
		}
	}
	if h.Role != dockerx.RoleHolder || h.State != dockerx.StateRunning || h.Labels[dockerx.LabelOwnerKind] != "TestOwner" || h.Labels[dockerx.LabelOwner] != "batch" {
		t.Fatalf("holder %+v, want a running holder of TestOwner/batch", h)
	}
	if got := createdNow(); !slices.Equal(got, []string{"setup"}) {
		t.Fatalf("members created with the pod: %v, want the init container alone", got)
	}
	mu.Lock()
	if len(written) != 1 || !strings.Contains(written[0], base64.StdEncoding.EncodeToString([]byte("level=3"))) {
		t.Errorf("files written %q, want one write holding the ConfigMap's app.conf", written)
	}
	mu.Unlock()

	// The init container still runs: nothing else is created.
	if st := sync(time.Second); st.Phase != corev1.PodPending || len(createdNow()) != 1 {
		t.Errorf("while the init container runs: phase %s, members %v; want Pending, the init container alone", st.Phase, createdNow())
	}
	if err := e.Exit(member("setup").ID, 0); err != nil {
		t.Fatal(err)
	}
	sync(2 * time.Second)
	if got := createdNow(); !slices.Equal(got, []string{"setup", "work", "report"}) {
		t.Fatalf("members created %v, want the init container, then the app containers in order", got)
	}
	mu.Lock()
	for _, c := range []string{"work", "report"} {
		if !slices.Contains(env[c], "MODE=fast") {
			t.Errorf("container %s: env %v, want MODE=fast from the ConfigMap", c, env[c])
		}
	}
	mu.Unlock()
	if calls := e.Calls(); calls["pull"] != 1 {
		t.Errorf("%d pulls, want one of %s, the image missing", calls["pull"], remote)
	}
	claimVolume := dockerx.ClaimVolumeName(instance, ns, "data")
	if !slices.ContainsFunc(e.Volumes(), func(v dockerx.Volume) bool { return v.Name == claimVolume }) {
		t.Errorf("volumes %v, want the claim's %s", e.Volumes(), claimVolume)
	}
	if st := sync(3 * time.Second); st.Phase != corev1.PodRunning {
		t.Errorf("app containers running: phase %s, want Running", st.Phase)
	}

	// OnFailure: "work" fails and is restarted after its backoff; "report"
	// succeeds and is kept.
	if err := e.Exit(member("work").ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.Exit(member("report").ID, 0); err != nil {
		t.Fatal(err)
	}
	sync(4 * time.Second)
	if c := member("work"); c.State != dockerx.StateExited {
		t.Errorf("failed container within its backoff: %s, want exited", c.State)
	}
	st := sync(4*time.Second + backoff.Base)
	if c := member("work"); c.State != dockerx.StateRunning {
		t.Errorf("failed container after its backoff: %s, want running", c.State)
	}
	if c := member("report"); c.State != dockerx.StateExited {
		t.Errorf("succeeded container under OnFailure: %s, want kept exited", c.State)
	}
	if st.Phase != corev1.PodRunning {
		t.Errorf("a container restarting: phase %s, want Running", st.Phase)
	}
	if err := e.Exit(member("work").ID, 0); err != nil {
		t.Fatal(err)
	}
	if st := sync(5*time.Second + backoff.Base); st.Phase != corev1.PodSucceeded || st.Restarts != 1 {
		t.Errorf("every app container succeeded: phase %s with %d restarts, want Succeeded, 1", st.Phase, st.Restarts)
	}
	if got := createdNow(); len(got) != 3 {
		t.Errorf("members created %v: a finished pod is kept, nothing made again", got)
	}
	// Finished, its holder is stopped (the kubelet stops the sandbox of
	// a terminal pod), its containers kept.
	if err := <-stopped; err != nil {
		t.Fatalf("stop of the finished pod's holder: %v", err)
	}
	for _, c := range e.Snapshot() {
		if (c.Name == holder || c.Pod == "job-0") && c.State != dockerx.StateExited {
			t.Errorf("container %s of the finished pod: %s, want kept, exited", c.Name, c.State)
		}
	}

	// The owner no longer wants the pod: stopped as a pod, then removed.
	specs = nil
	e.HoldRemovals(true) // the test, not a timer, ends the removals
	sync(6*time.Second + backoff.Base)
	if err := <-stopped; err != nil {
		t.Fatalf("stop of the pod: %v", err)
	}
	if n := e.FinishRemovals(); n != 4 {
		t.Errorf("%d removals in progress once the stop ended, want the pod's 4 containers'", n)
	}
	// Its file volume goes with it at the next sync; the claim's stays.
	vols, err := e.ListVolumes(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(vols, func(v dockerx.Volume) bool { return v.Role == dockerx.RoleFiles }) {
		t.Fatalf("volumes %v: the pod's file volume is missing before its collection", vols)
	}
	cs, err := e.ListContainers(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: key, Namespace: ns, Owner: owner, Observed: cs, Volumes: vols, Now: now}); err != nil {
		t.Fatalf("sync collecting the volumes: %v", err)
	}
	var left []string
	for _, v := range e.Volumes() {
		left = append(left, v.Name)
	}
	if !slices.Equal(left, []string{claimVolume}) {
		t.Errorf("volumes %v once the pod is gone, want the claim's %s alone", left, claimVolume)
	}
	for _, c := range e.Snapshot() {
		if c.Name == holder || c.Pod == "job-0" {
			t.Errorf("container %s (%s) of the pod no longer wanted is left", c.Name, c.State)
		}
	}
}

// recordingDocker keeps the create requests Sync makes.
type recordingDocker struct {
	*dockerfake.Engine
	reqs map[string]dockerx.CreateRequest
}

func (r *recordingDocker) CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error) {
	r.reqs[req.Name] = req
	return r.Engine.CreateContainer(ctx, req)
}

// TestSyncGivesPodsTheirIdentity: a pod's hostname is its identity's,
// else its template's spec.hostname, else its name; an identity's
// subdomain (a StatefulSet's serviceName) or the template's gives it the
// domain SUBDOMAIN.NS.svc.cluster.local; and its container is labelled
// with the hostname and subdomain its spec names, which the Service
// controller reads (docs/design.md §4, §10, §17).
func TestSyncGivesPodsTheirIdentity(t *testing.T) {
	const instance, ns, img = "t", "shop", "img:1"
	tmpl := func(host, sub string) *manifests.PodTemplateSpec {
		return &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Hostname: host, Subdomain: sub,
			Containers: []manifests.Container{{Name: "main", Image: img}}}}
	}
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "db", UID: "u1"}
	for _, tt := range []struct {
		name                string
		spec                podruntime.PodSpec
		host, domain        string
		hostLabel, subLabel string
	}{
		{name: "an identity's hostname and subdomain", spec: podruntime.PodSpec{Name: "db-0", Template: tmpl("", ""),
			Identity: podruntime.Identity{Ordinal: 0, HasOrdinal: true, Hostname: "db-0", Subdomain: "db"}},
			host: "db-0", domain: "db.shop.svc.cluster.local", hostLabel: "db-0", subLabel: "db"},
		{name: "an identity's hostname alone: the template's subdomain", spec: podruntime.PodSpec{Name: "job-3-abcde", Template: tmpl("", "workers"),
			Identity: podruntime.Identity{Hostname: "job-3"}},
			host: "job-3", domain: "workers.shop.svc.cluster.local", hostLabel: "job-3", subLabel: "workers"},
		{name: "the template's hostname and subdomain", spec: podruntime.PodSpec{Name: "p-x7k2p", Template: tmpl("front", "web")},
			host: "front", domain: "web.shop.svc.cluster.local", hostLabel: "front", subLabel: "web"},
		{name: "neither: its name, unlabelled", spec: podruntime.PodSpec{Name: "p-x7k2p", Template: tmpl("", "")}, host: "p-x7k2p"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &recordingDocker{Engine: dockerfake.New(img), reqs: map[string]dockerx.CreateRequest{}}
			rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: podruntime.Backoff{Base: time.Minute, Max: time.Hour},
				Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler)}})
			defer rt.Stop()
			spec := tt.spec
			spec.Namespace, spec.Owner, spec.TemplateHash = ns, owner, manifests.TemplateHash(spec.Template)
			before := manifests.TemplateHash(spec.Template)
			if _, err := rt.Sync(context.Background(), e, podruntime.SyncInput{Instance: instance, Key: "TestOwner/db", Namespace: ns, Owner: owner,
				Pods: []podruntime.PodSpec{spec}, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
				t.Fatal(err)
			}
			if manifests.TemplateHash(spec.Template) != before {
				t.Errorf("Sync changed the owner's template")
			}
			req, ok := e.reqs[dockerx.PodContainerName(instance, ns, spec.Name)]
			if !ok {
				t.Fatalf("no create of pod %s among %v", spec.Name, e.reqs)
			}
			if req.TemplateHash != spec.TemplateHash {
				t.Errorf("created with hash %s, want the spec's %s", req.TemplateHash, spec.TemplateHash)
			}
			cfg, _, _, err := dockerx.BuildConfig(req)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Hostname != tt.host || cfg.Domainname != tt.domain {
				t.Errorf("hostname %q domain %q, want %q %q", cfg.Hostname, cfg.Domainname, tt.host, tt.domain)
			}
			if h, s := cfg.Labels[dockerx.LabelHostname], cfg.Labels[dockerx.LabelSubdomain]; h != tt.hostLabel || s != tt.subLabel {
				t.Errorf("labels hostname %q subdomain %q, want %q %q", h, s, tt.hostLabel, tt.subLabel)
			}
		})
	}
}

// A create Docker refuses (a full disk, an engine limit) stops the pass's
// creates, as Kubernetes' slowStartBatch and the Deployment controller's
// SlowStart do: 400 wanted pods cost one failed Docker call, not 400; the
// next Sync tries again.
func TestSyncStopsCreatingAtTheFirstRefusedCreate(t *testing.T) {
	const instance, ns, img = "t", "default", "img:1"
	e := dockerfake.New(img)
	var creates atomic.Int32
	e.OnCreate = func(dockerx.CreateRequest) error { creates.Add(1); return errors.New("no space left on device") }
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler)}})
	defer rt.Stop()
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "many"}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "main", Image: img}}}}
	var specs []podruntime.PodSpec
	for i := range 400 {
		specs = append(specs, podruntime.PodSpec{Namespace: ns, Name: fmt.Sprintf("many-%d", i), Owner: owner, Template: tmpl})
	}
	_, err := rt.Sync(context.Background(), e, podruntime.SyncInput{Instance: instance, Key: "TestOwner/many", Namespace: ns, Owner: owner, Pods: specs, Now: time.Now()})
	if err == nil {
		t.Fatal("Sync reported no error though every create failed")
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d create calls after the first failed, want 1", n)
	}
}

// verdictRunner is a ProbeRunner whose attempts at a container wait for
// the verdict the test posts for it (pass, fail); with the Prober's fake
// clock no later attempt is made.
type verdictRunner struct {
	mu       sync.Mutex
	verdicts map[string]chan error
}

func (r *verdictRunner) ch(id string) chan error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.verdicts == nil {
		r.verdicts = map[string]chan error{}
	}
	if r.verdicts[id] == nil {
		r.verdicts[id] = make(chan error, 1)
	}
	return r.verdicts[id]
}

func (r *verdictRunner) Run(ctx context.Context, t podruntime.ProbeTarget, _ *manifests.Probe) error {
	select {
	case err := <-r.ch(t.ContainerID):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func podReady(st podruntime.PodStatus) (ready, containersReady bool) {
	for _, c := range st.Conditions {
		switch c.Type {
		case corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue
		case corev1.ContainersReady:
			containersReady = c.Status == corev1.ConditionTrue
		}
	}
	return ready, containersReady
}

// TestSyncJudgesPodsByTheirProbes: Sync registers its pods' running
// containers with the Prober, as the Deployment controller does
// (docs/design.md §17): a pod of one container, or a holder pod, whose
// container has a readinessProbe is not Ready until its probe passes,
// and its owner is queued (the Prober's Notify, with SyncInput.Key) when
// the verdict comes; a pod without probes is Ready once it runs; a failed
// livenessProbe stops the container, and a later sync starts it again
// after its backoff, as restartPolicy Always says.
func TestSyncJudgesPodsByTheirProbes(t *testing.T) {
	const instance, ns, key = "t", "shop", "TestOwner/web"
	e := dockerfake.New(podtest.Image)
	runner := &verdictRunner{}
	notified := make(chan string, 64)
	stopped := make(chan error, 4)
	backoff := podruntime.Backoff{Base: time.Minute, Max: time.Hour}
	log := slog.New(slog.DiscardHandler)
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: backoff,
		Prober: podruntime.ProberConfig{Docker: e, Runner: runner, Log: log, Notify: func(k string) {
			select {
			case notified <- k:
			default:
			}
		}},
		Stopper: podruntime.StopperConfig{Docker: e, Log: log, Done: func(_ string, err error) { stopped <- err }}})
	defer rt.Stop()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rt.Prober().SetClock(clocktesting.NewFakeClock(t0)) // one attempt per probe: the test's verdict
	now := t0
	e.SetNow(func() time.Time { return now })
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "web", UID: "u1"}
	pod := func(name string, cs ...manifests.Container) podruntime.PodSpec {
		tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: cs}}
		return podruntime.PodSpec{Namespace: ns, Name: name, Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl),
			RestartPolicy: manifests.RestartAlways}
	}
	web := manifests.Container{Name: "web", Image: podtest.Image, ReadinessProbe: podtest.FastProbe()}
	specs := []podruntime.PodSpec{
		pod("probed", web),
		pod("plain", manifests.Container{Name: "web", Image: podtest.Image}),
		pod("live", manifests.Container{Name: "web", Image: podtest.Image, LivenessProbe: podtest.TCPProbe(1, 1)}),
		pod("duo", web, manifests.Container{Name: "side", Image: podtest.Image}),
	}
	ctx := context.Background()
	sync := func(at time.Duration) map[string]podruntime.PodStatus {
		t.Helper()
		now = t0.Add(at)
		rt.Stopper().Listing(key)
		cs, err := e.ListContainers(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: key, Namespace: ns, Owner: owner, Pods: specs, Observed: cs, Now: now})
		if err != nil {
			t.Fatalf("sync at %s: %v", at, err)
		}
		return res.Pods
	}
	id := func(name string) string {
		for _, c := range e.Snapshot() {
			if c.Name == name {
				return c.ID
			}
		}
		t.Fatalf("no container %s", name)
		return ""
	}
	awaitNotify := func(n int) {
		t.Helper()
		for range n {
			select {
			case k := <-notified:
				if k != key {
					t.Fatalf("prober queued %q, want the Sync's key %q", k, key)
				}
			case <-time.After(30 * time.Second): // a bound on a hang, not a timing assertion
				t.Fatal("the owner was never queued by the prober")
			}
		}
	}
	wantReady := func(pods map[string]podruntime.PodStatus, want map[string]bool) {
		t.Helper()
		for name, w := range want {
			ready, cready := podReady(pods[name])
			if ready != w || cready != w {
				t.Errorf("pod %s: Ready %v, ContainersReady %v, want %v (%+v)", name, ready, cready, w, pods[name])
			}
		}
	}

	sync(0)
	// The containers run: the probes begin.
	wantReady(sync(time.Second), map[string]bool{"probed": false, "plain": true, "live": true, "duo": false})
	probed := id(dockerx.PodContainerName(instance, ns, "probed"))
	duoWeb := id(dockerx.MemberName(dockerx.PodContainerName(instance, ns, "duo"), "web"))
	runner.ch(probed) <- nil
	runner.ch(duoWeb) <- nil
	awaitNotify(2)
	wantReady(sync(2*time.Second), map[string]bool{"probed": true, "plain": true, "live": true, "duo": true})

	// The liveness probe fails: the container is stopped, then started
	// again once its backoff passed.
	live := id(dockerx.PodContainerName(instance, ns, "live"))
	runner.ch(live) <- errors.New("connection refused")
	awaitNotify(1)
	sync(3 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatalf("liveness restart: %v", err)
	}
	sync(4 * time.Second) // its exit seen: it backs off
	pods := sync(4*time.Second + backoff.Base)
	var c dockerx.Container
	for _, x := range e.Snapshot() {
		if x.ID == live {
			c = x
		}
	}
	if c.State != dockerx.StateRunning || pods["live"].Restarts != 1 {
		t.Errorf("after its liveness probe failed: %s with %d restarts, want running again, restarted once", c.State, pods["live"].Restarts)
	}
}

// TestRuntimeForgetsOwnersWithNothingLeft: owners come and go (Jobs of a
// CronJob); once an owner has no pod wanted and no container left, the
// runtime keeps no memory of it, so its maps do not grow with every owner
// there ever was.
func TestRuntimeForgetsOwnersWithNothingLeft(t *testing.T) {
	const instance, ns, img = "t", "shop", "img:1"
	e := dockerfake.New(img)
	done := make(chan string, 256)
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler), Done: func(owner string, _ error) { done <- owner }}})
	defer rt.Stop()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.SetNow(func() time.Time { return now })
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "main", Image: img}}}}
	sync := func(owner string, pods []podruntime.PodSpec) {
		t.Helper()
		rt.Stopper().Listing(owner)
		all, err := e.ListContainers(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		var cs []dockerx.Container
		for _, c := range all {
			if c.Labels[dockerx.LabelOwner] == owner {
				cs = append(cs, c)
			}
		}
		if _, err := rt.Sync(ctx, e, podruntime.SyncInput{Instance: instance, Key: owner, Namespace: ns,
			Owner: podruntime.OwnerRef{Kind: "Job", Name: owner}, Pods: pods, Observed: cs, Now: now}); err != nil {
			t.Fatalf("sync %s: %v", owner, err)
		}
	}
	left := func(owner string) int {
		n := 0
		for _, c := range e.Snapshot() {
			if c.Labels[dockerx.LabelOwner] == owner {
				n++
			}
		}
		return n
	}
	const owners = 40
	for i := range owners {
		owner := fmt.Sprintf("job-%d", i)
		sync(owner, []podruntime.PodSpec{{Namespace: ns, Name: owner + "-x", Owner: podruntime.OwnerRef{Kind: "Job", Name: owner},
			Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl), RestartPolicy: manifests.RestartNever}})
		now = now.Add(time.Second)
		sync(owner, nil) // deleted: its pod is stopped and removed
		<-done
		// The fake removes in the background, as Docker may: the
		// stopper's completion queues the owner until its list is empty.
		for left(owner) > 0 {
			time.Sleep(time.Millisecond)
		}
		sync(owner, nil)
	}
	// Every stop has ended (a second one of a container already gone
	// included); a last sync of each owner sees nothing left.
	for rt.OwnersRemembered()["inflight"] > 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range owners {
		sync(fmt.Sprintf("job-%d", i), nil)
	}
	for what, n := range rt.OwnersRemembered() {
		if n != 0 {
			t.Errorf("%s remembers %d entries after %d owners came and went, want 0", what, n, owners)
		}
	}
}

// A pod is created on SyncInput.Network with its resolver, as the
// Deployment controller creates its pods (docs/design.md §10, §17): its
// container, or its holder (the members join the holder's network); a
// host-network pod keeps the host's.
func TestSyncCreatesPodsOnTheNetwork(t *testing.T) {
	const instance, ns, img = "t", "shop", "img:1"
	pn := &dockerx.PodNetwork{Name: "dockctl_t", DNS: []string{"10.0.0.2"}, DNSSearch: []string{"shop.svc.cluster.local"}, DNSOptions: []string{"ndots:5"}}
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "db", UID: "u1"}
	one := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "main", Image: img}}}}
	host := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{HostNetwork: true, Containers: []manifests.Container{{Name: "main", Image: img}}}}
	two := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: "a", Image: img}, {Name: "b", Image: img}}}}
	e := &recordingDocker{Engine: dockerfake.New(img), reqs: map[string]dockerx.CreateRequest{}}
	if err := e.AddNetwork(dockerx.Network{ID: "n1", Name: pn.Name, Subnet: "10.0.0.0/24"}); err != nil {
		t.Fatal(err)
	}
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: podruntime.Backoff{Base: time.Minute, Max: time.Hour},
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler)}})
	defer rt.Stop()
	var pods []podruntime.PodSpec
	for name, tmpl := range map[string]*manifests.PodTemplateSpec{"one": one, "host": host, "two": two} {
		pods = append(pods, podruntime.PodSpec{Name: name, Namespace: ns, Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl)})
	}
	in := podruntime.SyncInput{Instance: instance, Key: "TestOwner/db", Namespace: ns, Owner: owner, Pods: pods,
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Network: pn}
	if _, err := rt.Sync(context.Background(), e, in); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]*dockerx.PodNetwork{
		dockerx.PodContainerName(instance, ns, "one"):  pn,
		dockerx.PodContainerName(instance, ns, "host"): nil,
		dockerx.PodContainerName(instance, ns, "two"):  pn, // the holder
	} {
		req, ok := e.reqs[name]
		if !ok {
			t.Errorf("no create of %s among %v", name, slices.Collect(maps.Keys(e.reqs)))
			continue
		}
		if req.Network != want {
			t.Errorf("%s created on network %+v, want %+v", name, req.Network, want)
		}
	}
	for name, req := range e.reqs {
		if req.Role != dockerx.RoleHolder && req.Pod != nil && req.Network != nil {
			t.Errorf("member %s created on network %+v: it joins its holder's", name, req.Network)
		}
	}
}

// A holder pod's file volumes come from the owner's config store,
// SyncInput.Config, as its environment does: the workload frame's
// runtime has none of its own, and a StatefulSet's configMap volume was
// "not found" while its env from the same store resolved.
func TestSyncWritesFilesFromTheOwnersConfigStore(t *testing.T) {
	const instance, ns, img = "t", "shop", "img:1"
	e := dockerfake.New(img)
	var mu sync.Mutex
	var written []string
	e.HandleExecInput(func(_ string, _ []string, stdin []byte) (int, []byte) {
		mu.Lock()
		defer mu.Unlock()
		written = append(written, string(stdin))
		return 0, nil
	})
	cfg := syncConfig{cms: map[string]*manifests.ConfigMap{store.Key(ns, "app"): {Metadata: manifests.ObjectMeta{Name: "app", Namespace: ns},
		Data: map[string]string{"app.conf": "level=3"}}}}
	rt := podruntime.NewRuntime(podruntime.RuntimeConfig{Backoff: podruntime.Backoff{Base: time.Minute, Max: time.Hour},
		Stopper: podruntime.StopperConfig{Docker: e, Log: slog.New(slog.DiscardHandler)}})
	defer rt.Stop()
	owner := podruntime.OwnerRef{Kind: "TestOwner", Name: "db", UID: "u1"}
	tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{
		Containers: []manifests.Container{{Name: "main", Image: img, VolumeMounts: []manifests.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}}},
		Volumes:    []manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}}},
	}}
	specs := []podruntime.PodSpec{{Namespace: ns, Name: "db-0", Owner: owner, Template: tmpl, TemplateHash: manifests.TemplateHash(tmpl)}}
	if _, err := rt.Sync(context.Background(), e, podruntime.SyncInput{Instance: instance, Key: "TestOwner/db", Namespace: ns, Owner: owner,
		Pods: specs, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Config: cfg}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(written) != 1 || !strings.Contains(written[0], base64.StdEncoding.EncodeToString([]byte("level=3"))) {
		t.Errorf("files written %q, want one write holding the ConfigMap's app.conf", written)
	}
}
