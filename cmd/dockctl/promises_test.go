package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Promises of the README that no test held: version, apply --wait (logs:
// TestLogsAgainstEngine), run end to end against the fake Engine API of dockerapi_test.go.

// `version` prints dockctl's version and asks the daemon for its own.
func TestVersion(t *testing.T) {
	startFakeDaemon(t)
	out, _, err := run(t, "", "version")
	want := "dockctl dev (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\ndocker engine: " + fakeEngineVersion + " (API " + fakeAPIVersion + ")\n"
	if err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
	// An unreachable daemon is reported, not an error: the client's own
	// version is still worth printing.
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	out, _, err = run(t, "", "version")
	if err != nil || !strings.HasPrefix(out, "dockctl dev (") || !strings.Contains(out, "docker engine: unreachable") || !strings.Contains(out, "/nonexistent/docker.sock") {
		t.Fatalf("unreachable: %q, %v", out, err)
	}
}

// `apply --wait` returns once the controller has observed the generation
// and the rollout is complete, and times out (naming the controller) when
// it never is.
func TestApplyWait(t *testing.T) {
	f := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	if _, _, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	// Nothing runs yet, and no controller observed the deployment.
	out, _, err := run(t, webYAML, append(base, "apply", "-f", "-", "--wait", "--timeout", "1s")...)
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "dockctl controller") ||
		!strings.Contains(out, `Waiting for deployment "web" spec update to be observed...`) {
		t.Fatalf("wait without a controller: %v\n%s", err, out)
	}
	// What a controller would have done: three replicas, generation observed.
	st, err := store.Open(dir, "t1")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	for i := range 3 {
		f.addContainer(fmt.Sprintf("t1_web-%s-%d", hash, i), "t1", "web", map[string]string{"io.dockctl.template-hash": hash})
	}
	if err := st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, webYAML, append(base, "apply", "-f", "-", "--wait", "--timeout", "30s")...)
	if err != nil || out != "deployment/web unchanged\ndeployment \"web\" successfully rolled out\n" {
		t.Fatalf("wait: %v %q\n%s", err, errOut, out)
	}
}
