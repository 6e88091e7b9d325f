package reconciler

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// filesWriterFake answers `helper files` execs in the fake engine, keeping
// the last payload written into each holder.
type filesWriterFake struct {
	mu      sync.Mutex
	written map[string]helperapi.FilesPayload // by holder ID
	writes  int
	// outside are the subPaths (VOLUME:SUBPATH) `helper files --subpath`
	// finds leading out of their volume; checks counts its runs.
	outside map[string]bool
	checks  int
}

func (f *filesWriterFake) handle(id string, cmd []string, stdin []byte) (int, []byte) {
	if len(cmd) < 3 || cmd[2] != helperapi.ModeFiles {
		return 0, nil
	}
	if len(cmd) > 3 && cmd[3] == "--subpath" {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.checks++
		for i := 3; i+1 < len(cmd); i += 2 {
			if f.outside[cmd[i+1]] {
				vol, sub, _ := strings.Cut(cmd[i+1], ":")
				return helperapi.ExitFailed, []byte(`subPath "` + sub + `" of volume ` + vol + ` leads out of the volume through a link`)
			}
		}
		return helperapi.ExitOK, nil
	}
	if len(cmd) > 3 && cmd[3] == "--check" {
		// The holder's volumes hold what was written into it, by this
		// controller or an earlier one.
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.written[id]; ok {
			return helperapi.ExitOK, nil
		}
		return helperapi.ExitFailed, nil
	}
	var p helperapi.FilesPayload
	if err := json.Unmarshal(stdin, &p); err != nil {
		return helperapi.ExitUsage, []byte("bad payload")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.written == nil {
		f.written = map[string]helperapi.FilesPayload{}
	}
	// As the writer: each volume of the payload replaced, the pod's other
	// volumes left as they are.
	merged := f.written[id]
	merged.Volumes = slices.Clone(merged.Volumes)
	for _, v := range p.Volumes {
		if i := slices.IndexFunc(merged.Volumes, func(m helperapi.FilesVolume) bool { return m.Name == v.Name }); i >= 0 {
			merged.Volumes[i] = v
		} else {
			merged.Volumes = append(merged.Volumes, v)
		}
	}
	f.written[id] = merged
	f.writes++
	return helperapi.ExitOK, []byte(`{"volumes":[]}`)
}

func (f *filesWriterFake) get(id string) (helperapi.FilesPayload, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.written[id]
	return p, ok
}

// filesHarness is a controller with the store as its ConfigStore and a
// writer fake answering its `helper files` execs.
func filesHarness(t *testing.T) (*harness, *filesWriterFake) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.opts.Config = h.store
	h.opts.FilesDocker = h.engine
	h.ctrl = New(h.engine, h.store, h.opts)
	w := &filesWriterFake{}
	h.engine.HandleExecInput(w.handle)
	return h, w
}

// configMapVolumeDeployment: one container mounting ConfigMap cm at /etc/app.
func configMapVolumeDeployment(name, cm string) *manifests.Deployment {
	d := testDeployment(name, 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: cm}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}
	manifests.SetDefaults(d)
	return d
}

func applyConfigMap(t *testing.T, st *store.Store, ns, name string, data map[string]string) {
	t.Helper()
	if _, err := st.Apply(store.Bundle{ConfigMaps: []*manifests.ConfigMap{{APIVersion: "v1", Kind: manifests.KindConfigMap,
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns}, Data: data}}}, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReviewFilesMissingConfigMapCreatesNothing: a Deployment whose
// configMap volume names a ConfigMap that does not exist must create
// nothing of that revision (DESIGN §11, as for env and claims) and say so
// in ReplicaFailure.
func TestReviewFilesMissingConfigMapCreatesNothing(t *testing.T) {
	h, _ := filesHarness(t)
	h.apply(configMapVolumeDeployment("web", "app"))
	h.start()
	h.waitFor("a ReplicaFailure naming the missing ConfigMap", func() bool {
		return strings.Contains(h.replicaFailure("web"), `"app"`)
	})
	time.Sleep(200 * time.Millisecond)
	if cs := h.ours("web"); len(cs) != 0 {
		t.Errorf("containers of the waiting revision were created: %s", summary(cs))
	}
	var vols []string
	for _, v := range h.engine.Volumes() {
		vols = append(vols, v.Name+"("+v.Role+")")
	}
	if len(vols) != 0 {
		t.Errorf("volumes of the waiting revision were created: %v", vols)
	}
	t.Logf("ReplicaFailure: %s", h.replicaFailure("web"))
}

// hostInfoEngine is the fake engine with a host of known capacity.
type hostInfoEngine struct{ *dockerfake.Engine }

func (hostInfoEngine) HostInfo(context.Context) (dockerx.HostInfo, error) {
	return dockerx.HostInfo{Name: "node1", CPUs: 4, Memory: 8 << 30}, nil
}

// hostFilesHarness is filesHarness on an engine that tells the host's
// capacity, with d applied.
func hostFilesHarness(t *testing.T, d *manifests.Deployment) (*harness, *filesWriterFake) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.opts.Config = h.store
	h.opts.FilesDocker = h.engine
	h.ctrl = New(hostInfoEngine{h.engine}, h.store, h.opts)
	w := &filesWriterFake{}
	h.engine.HandleExecInput(w.handle)
	h.apply(d)
	return h, w
}

func rvHolder(h *harness, name string) *dockerx.Container {
	for _, c := range h.ours(name) {
		if c.Role == dockerx.RoleHolder {
			c := c
			return &c
		}
	}
	return nil
}

func fileOf(p helperapi.FilesPayload, vol, path string) (string, bool) {
	for _, v := range p.Volumes {
		if v.Name != vol {
			continue
		}
		for _, f := range v.Files {
			if f.Path == path {
				return string(f.Data), true
			}
		}
	}
	return "", false
}

// TestReviewFilesConfigMapUpdateAndDelete: a change reaches the running
// pod's files within a resync; a deletion keeps the last content.
func TestReviewFilesConfigMapUpdateAndDelete(t *testing.T) {
	d := configMapVolumeDeployment("web", "app")
	d.Metadata.Namespace = "team"
	h, w := filesHarness(t)
	h.applyBundle([]string{"team"})
	applyConfigMap(t, h.store, "team", "app", map[string]string{"k": "v1"})
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "default-ns"})
	h.applyBundle(nil, d)
	h.start()
	var hid string
	h.waitFor("v1 written", func() bool {
		c := holderOfIn(h, "team", "web")
		if c == nil {
			return false
		}
		hid = c.ID
		p, ok := w.get(hid)
		s, _ := fileOf(p, "cfg", "k")
		return ok && s == "v1"
	})
	applyConfigMap(t, h.store, "team", "app", map[string]string{"k": "v2"})
	h.waitFor("v2 written", func() bool {
		p, _ := w.get(hid)
		s, _ := fileOf(p, "cfg", "k")
		return s == "v2"
	})
	if err := h.store.DeleteConfigMap("team", "app"); err != nil {
		t.Logf("delete: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	p, _ := w.get(hid)
	if s, _ := fileOf(p, "cfg", "k"); s != "v2" {
		t.Errorf("after the ConfigMap's deletion the pod's file is %q, want the last content v2", s)
	}
}

func holderOfIn(h *harness, ns, name string) *dockerx.Container {
	for _, c := range h.in(ns, name) {
		if c.Role == dockerx.RoleHolder {
			c := c
			return &c
		}
	}
	return nil
}

// TestReviewFilesDownwardAPILabelsHaveTemplateHash: a Deployment's pod
// carries the pod-template-hash label; the downward API (env, and a
// downwardAPI volume in Kubernetes) shows it. dockctl's env does; its
// volume must too.
func TestReviewFilesDownwardAPILabelsHaveTemplateHash(t *testing.T) {
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "info", DownwardAPI: &manifests.DownwardAPIVolumeSource{Items: []manifests.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "hash", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['pod-template-hash']"}},
	}}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}
	manifests.SetDefaults(d)
	hash := manifests.TemplateHash(&d.Spec.Template)
	h, w := hostFilesHarness(t, d)
	h.start()
	var p helperapi.FilesPayload
	h.waitFor("files written", func() bool {
		c := rvHolder(h, "web")
		if c == nil {
			return false
		}
		var ok bool
		p, ok = w.get(c.ID)
		return ok
	})
	labels, _ := fileOf(p, "info", "labels")
	got, _ := fileOf(p, "info", "hash")
	if got != hash || !strings.Contains(labels, `pod-template-hash="`+hash+`"`) {
		t.Errorf("downwardAPI volume: hash file %q, labels file %q; want pod-template-hash %s (as env fieldRef gives it)", got, labels, hash)
	}
}

// TestReviewFilesDownwardAPIResourceDefaultsToHost: a resourceFieldRef to
// a limit the container does not set reports the node's capacity
// (Kubernetes; dockctl's env does so from HostInfo). The volume's file
// reads 0.
func TestReviewFilesDownwardAPIResourceDefaultsToHost(t *testing.T) {
	d := testDeployment("web", 1, "1")
	ps := &d.Spec.Template.Spec
	ps.Volumes = []manifests.Volume{{Name: "info", DownwardAPI: &manifests.DownwardAPIVolumeSource{Items: []manifests.DownwardAPIVolumeFile{
		{Path: "mem", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "limits.memory"}},
		{Path: "cpu", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "limits.cpu"}},
	}}}}
	ps.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}
	manifests.SetDefaults(d)
	h, w := hostFilesHarness(t, d)
	h.start()
	var p helperapi.FilesPayload
	h.waitFor("files written", func() bool {
		c := rvHolder(h, "web")
		if c == nil {
			return false
		}
		var ok bool
		p, ok = w.get(c.ID)
		return ok
	})
	mem, _ := fileOf(p, "info", "mem")
	cpu, _ := fileOf(p, "info", "cpu")
	if mem != strconv.FormatInt(8<<30, 10) || cpu != "4" {
		t.Errorf("downwardAPI limits without limits: mem %q cpu %q; want the host's %d and 4", mem, cpu, int64(8<<30))
	}
}

// TestReviewFilesMemoryForgetsGonePods: the controller's memory of written
// payload hashes must not keep an entry per pod that ever existed
// (filesMemory.forget exists, nothing calls it): after rollouts only the
// live pods are remembered.
func TestReviewFilesMemoryForgetsGonePods(t *testing.T) {
	h, _ := filesHarness(t)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.start()
	for i := 0; i < 4; i++ {
		d := configMapVolumeDeployment("web", "app")
		d.Spec.Template.Spec.Containers[0].Env[0].Value = strconv.Itoa(i)
		h.apply(d)
		hash := manifests.TemplateHash(&d.Spec.Template)
		h.waitFor("the rollout to finish", func() bool {
			cs := h.ours("web")
			if len(cs) != 2 {
				return false
			}
			for _, c := range cs {
				if c.TemplateHash != hash || c.State != dockerx.StateRunning {
					return false
				}
			}
			return true
		})
	}
	time.Sleep(300 * time.Millisecond)
	h.ctrl.files.mu.Lock()
	n := 0
	for _, pods := range h.ctrl.files.written {
		n += len(pods)
	}
	h.ctrl.files.mu.Unlock()
	if n != 1 {
		t.Errorf("the files memory holds %d pods after 4 rollouts of a 1-replica deployment; want 1 (the live pod)", n)
	}
}

// TestReviewFilesDeletedConfigMapAfterRestartKeepsHealing: a running pod
// whose ConfigMap is deleted keeps its files (the kubelet keeps the last
// content) and keeps being repaired. After a controller restart, the same
// pod whose only container was `docker rm -f`'d is taken for one that
// never got its files: it is blocked for ever, though its holder still
// holds the files.
func TestReviewFilesDeletedConfigMapAfterRestartKeepsHealing(t *testing.T) {
	h, _ := filesHarness(t)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.apply(configMapVolumeDeployment("web", "app"))
	h.start()
	h.waitFor("the pod running", func() bool {
		cs := h.ours("web")
		return len(cs) == 2 && cs[0].State == dockerx.StateRunning && cs[1].State == dockerx.StateRunning
	})
	h.stop()
	if err := h.store.DeleteConfigMap("", "app"); err != nil {
		t.Fatal(err)
	}
	var holderID string
	for _, c := range h.ours("web") {
		if c.Role == dockerx.RoleHolder {
			holderID = c.ID
		} else if err := h.engine.Remove(c.ID); err != nil {
			t.Fatal(err)
		}
	}
	h.ctrl = New(h.engine, h.store, h.opts) // a restarted controller
	h.start()
	time.Sleep(500 * time.Millisecond)
	var member *dockerx.Container
	for _, c := range h.ours("web") {
		if c.Role != dockerx.RoleHolder {
			c := c
			member = &c
		}
	}
	if member == nil {
		t.Errorf("the pod (holder %s still running with its files) is not repaired after a controller restart; ReplicaFailure: %s",
			holderID[:12], h.replicaFailure("web"))
	}
}

// TestFilesRewrittenAfterEventGap: what happened while the event stream
// was down went unseen — a daemon restart restarts a holder with a fresh,
// empty tmpfs and no event need say so — so every pod's files are written
// once more after a gap, and only then. The subscription's first message
// is a gap too, and nothing orders it before the first sync (Run does not
// wait for it): a write made before it is rightly made again. So the
// deployment is applied only once that first gap has been handled.
func TestFilesRewrittenAfterEventGap(t *testing.T) {
	h, w := filesHarness(t)
	gaps := &gapRelay{Engine: h.engine, handled: make(chan struct{})}
	h.ctrl = New(gaps, h.store, h.opts)
	applyConfigMap(t, h.store, "", "app", map[string]string{"k": "v"})
	h.start()
	gaps.waitFirstHandled(t)
	h.apply(configMapVolumeDeployment("web", "app"))
	writes := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.writes
	}
	h.waitFor("the files written", func() bool { return writes() == 1 })
	time.Sleep(300 * time.Millisecond) // several resyncs: no write more
	if n := writes(); n != 1 {
		t.Fatalf("%d writes of a converged pod", n)
	}
	h.engine.DaemonDown()
	time.Sleep(100 * time.Millisecond)
	h.engine.DaemonUp()
	h.waitFor("the files written again after the gap", func() bool { return writes() == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := writes(); n != 2 {
		t.Errorf("%d writes after one gap, want 2", n)
	}
}

// gapRelay hands the fake engine's events to the controller one at a time
// and tells when the controller has handled the first one (the
// subscription's first gap): Run handles an event before it receives the
// next, so once a marker event sent after the gap is received, the gap
// has been handled. The marker is a port-forward session's event, which
// the controller maps to nothing.
type gapRelay struct {
	*dockerfake.Engine
	handled chan struct{}
}

func (g *gapRelay) Events(ctx context.Context, instance string) <-chan dockerx.Event {
	in := g.Engine.Events(ctx, instance)
	out := make(chan dockerx.Event)
	handled := g.handled
	go func() {
		defer close(out)
		first := true
		for ev := range in {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if first {
				first = false
				select {
				case out <- dockerx.Event{Role: dockerx.RolePortForward, Action: "start", Time: ev.Time}:
					close(handled)
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

func (g *gapRelay) waitFirstHandled(t *testing.T) {
	t.Helper()
	select {
	case <-g.handled:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller never handled the event subscription's first gap")
	}
}
