package reconciler

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// bindSources returns the host paths Docker mounts for a create request,
// reading the legacy Binds as Docker's Linux parser does (source:target
// [:mode], split at every colon).
func bindSources(t *testing.T, req dockerx.CreateRequest) []string {
	t.Helper()
	_, hc, _, err := dockerx.BuildConfig(req)
	if err != nil {
		return nil
	}
	var out []string
	for _, b := range hc.Binds {
		if arr := strings.SplitN(b, ":", 4); len(arr) == 2 || len(arr) == 3 {
			out = append(out, arr[0])
		}
	}
	for _, m := range hc.Mounts {
		if m.Source != "" {
			out = append(out, m.Source)
		}
	}
	return out
}

// setTemplate replaces a record's template, and its current revision's,
// with t and its hash, as whoever writes the state directory can.
func setTemplate(t *testing.T, rec map[string]any, tmpl manifests.PodTemplateSpec) {
	t.Helper()
	data, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	mapAt(rec, "deployment", "spec")["template"] = m
	revs := rec["revisions"].([]any)
	cur := revs[len(revs)-1].(map[string]any)
	cur["template"] = m
	cur["hash"] = manifests.TemplateHash(&tmpl)
}

// A hostPath with a colon is judged as one cleaned path, but the legacy
// Binds string DirectoryOrCreate uses is split by Docker at every colon:
// "/etc:/../ALLOWED/d" with an empty (or "rw") mountPath — an error that
// only makes a record "merely invalid" — is judged as ALLOWED/d yet mounts
// the host's /etc read-write. No container may be created with a host
// path outside the allowed prefix.
func TestControllerRefusesColonBindOutsidePrefix(t *testing.T) {
	allowed, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{ResyncPeriod: 20 * time.Millisecond, Allow: manifests.Policy{
		HostPaths: []string{allowed}, Host: manifests.Host{Resolve: filepath.EvalSymlinks},
	}})
	var mu sync.Mutex
	var sources []string
	h.engine.OnCreate = func(req dockerx.CreateRequest) error {
		mu.Lock()
		defer mu.Unlock()
		sources = append(sources, bindSources(t, req)...)
		return nil
	}
	h.apply(testDeployment("web", 1, "x"))
	h.editRecord("web", func(rec map[string]any) {
		var tmpl manifests.PodTemplateSpec
		data, _ := json.Marshal(mapAt(rec, "deployment", "spec", "template"))
		if err := json.Unmarshal(data, &tmpl); err != nil {
			t.Fatal(err)
		}
		tmpl.Spec.Volumes = []manifests.Volume{{Name: "v", HostPath: &manifests.HostPathVolumeSource{
			Path: "/etc:/.." + allowed + "/d", Type: "DirectoryOrCreate"}}}
		tmpl.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "v", MountPath: ""}}
		setTemplate(t, rec, tmpl)
	})
	h.start()
	h.waitFor("a create or a refusal", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return h.engine.Calls()["create"] > 0 || len(sources) > 0 || h.condition("web", manifests.ConditionReplicaFailure) != nil
	})
	h.waitResyncs(3)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sources {
		if !manifests.Within(filepath.Clean(s), allowed) {
			t.Fatalf("a container was created mounting host path %s, outside the only allowed prefix %s", s, allowed)
		}
	}
}

// The status file is the controller's memory, not a trusted input: a
// crash count that is negative, or at the top of int, must not panic the
// sync (a negative shift) every time the container fails to start, which
// would leave the deployment retried in a panic loop with no backoff
// recorded.
func TestRecordStartFailuresOddCrashCount(t *testing.T) {
	c := &Controller{opts: Options{CrashBackoffBase: time.Second, CrashBackoffMax: time.Minute}}
	for _, n := range []int{-1, -5, int(^uint(0) >> 1)} {
		s := deploymentState{Containers: map[string]*containerState{"id": {CrashCount: n}}}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("crashCount %d in the status file: panic %v", n, r)
				}
			}()
			c.recordStartFailures(&s, Plan{}, &startError{id: "id", name: "web", err: errors.New("refused")}, t0)
		}()
		if d := s.Containers["id"].NotBefore.Sub(t0); d < time.Second || d > time.Minute {
			t.Errorf("crashCount %d: backoff %v, want between the base and the maximum", n, d)
		}
	}
}
