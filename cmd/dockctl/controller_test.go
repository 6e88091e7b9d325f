package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/metrics"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workloads"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// `dockctl controller --manifests /srv/k8s --manifests /srv/k8s/apps`:
// checkManifestPaths refuses only the same path twice, so every file under
// /srv/k8s/apps is read through both paths. Either the overlap is refused
// when the controller starts, or a file read through two paths is one file;
// it must not be refused as "also defined in" itself, which would leave its
// objects never created nor updated, and deletion off for good.
func TestControllerNestedManifestsPathsApplyEachFileOnce(t *testing.T) {
	root := filepath.Join(t.TempDir(), "k8s")
	apps := filepath.Join(root, "apps")
	if err := os.MkdirAll(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(apps, "web.yaml"), []byte(webYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{root, apps}
	if err := checkManifestPaths(paths); err != nil {
		return // refused at start: fine
	}
	st, err := store.Open(t.TempDir(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sourcedir.New(st, sourcedir.Options{Paths: paths}).Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("", "web"); err != nil {
		ss, _ := st.ReadSourceStatus()
		t.Errorf("overlapping --manifests paths accepted, and web (in both) is never applied: %v; status %+v", err, ss)
	}
}

// A git repository of manifests commonly holds kinds dockctl refuses (an
// Ingress, a CronJob). `apply -f DIR --skip-unsupported` and `diff
// --manifests DIR --skip-unsupported` (which previews the controller "as
// the controller sees them") skip them, so `dockctl controller` must take
// --skip-unsupported too: without it, its sync refuses the file for ever,
// and since any refused file turns deletion off, nothing that leaves the
// directory is ever deleted — a deletion the preview promises.
func TestControllerSkipsUnsupportedKindsAsDiffPreviews(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const ingress = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web
spec:
  defaultBackend:
    service: {name: web, port: {number: 80}}
`
	for name, content := range map[string]string{"web.yaml": webYAML, "api.yaml": apiYAML, "ingress.yaml": ingress} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(state, "t1")
	if err != nil {
		t.Fatal(err)
	}
	// The controller's sync, with the options `dockctl controller` can
	// give it (controller.go sets no SkipUnsupported): ingress.yaml is
	// refused, the rest applied.
	sync := func() {
		t.Helper()
		if _, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync(); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	if err := os.Remove(filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	sync()
	if r, err := st.Lookup("", "api"); err != nil || r.Deleted {
		t.Fatalf("api: %v %v", r, err)
	}
	t.Log("api left the directory and is still live: ingress.yaml, refused, turns deletion off for good")
	out, errOut, err := run(t, "", "--state-dir", state, "--instance", "t1", "diff", "--manifests", dir, "--skip-unsupported")
	if exitCode(err) != 1 || !strings.Contains(out, "live/api") {
		t.Fatalf("diff --manifests --skip-unsupported: exit %d, want 1 with the deletion of api (%v)\n%s%s", exitCode(err), err, out, errOut)
	}
	// The controller must be able to do what the preview shows.
	if _, errOut, err := run(t, "", "controller", "--manifests", dir, "--skip-unsupported", "--help"); err != nil {
		t.Errorf("dockctl controller --manifests DIR --skip-unsupported: %v %s(diff --manifests --skip-unsupported previews a deletion the controller, refusing ingress.yaml, never does)", err, errOut)
	}
}

// An unknown --log-format is a typo to report, not text logs
// silently (every other controller flag refuses a bad value).
func TestControllerRefusesUnknownLogFormat(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newControllerCommand(&globalOptions{stateDir: notADir, instance: "rev"})
	cmd.SetArgs([]string{"--log-format", "jsn", "--metrics-addr", ""})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("err = %v, want a refusal naming --log-format", err)
	}
}

// A controller flag with a value that means nothing (no workers, a
// resync period or backoff of zero or less, a negative settle time, a
// backoff cap below its base) is refused naming the flag, as --max-replicas
// is, instead of silently replaced by a default.
func TestControllerRefusesMeaninglessFlags(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--workers", "0"}, {"--workers", "-2"},
		{"--resync-period", "0s"}, {"--resync-period", "-1s"},
		{"--crash-backoff-base", "0s"}, {"--crash-backoff-max", "-1s"},
		{"--crash-backoff-max", "1s", "--crash-backoff-base", "2s"},
		{"--settle-time", "-1s"},
		{"--stale-port-forward-after", "0s"},
	} {
		cmd := newControllerCommand(&globalOptions{stateDir: notADir, instance: "rev"})
		cmd.SetArgs(append(args, "--metrics-addr", ""))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err = %v, want a refusal naming %s", args, err, args[0])
		}
	}
}

// The workload frame's Docker, as the controller builds it, makes holder
// pods: the metrics' decorator alone lacks the files writer's calls, and
// every StatefulSet or Job pod with a configMap volume or two containers
// failed with "this runtime's Docker cannot make holder pods".
func TestWorkloadDockerMakesHolderPods(t *testing.T) {
	fake := dockerfake.New()
	var d workloads.Docker = workloadDocker{metrics.New().InstrumentDocker(fake), fake, nil}
	if _, ok := d.(podruntime.HolderDocker); !ok {
		t.Fatalf("%T is no podruntime.HolderDocker", d)
	}
}
