package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Promises of the README that no test held: version, logs, apply --wait,
// run end to end against the fake Engine API of dockerapi_test.go.

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

// `logs` prints every replica's log (stdout and stderr), each line prefixed
// with its container, and passes --tail to the daemon.
func TestLogs(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("t1_web-abc-1", "t1", "web", nil)
	f.addContainer("t1_web-abc-0", "t1", "web", nil)
	f.addContainer("t1_api-abc-0", "t1", "api", nil)
	f.setLogs("t1_web-abc-0", logLine{1, "zero one"}, logLine{2, "zero err"}, logLine{1, "zero two"})
	f.setLogs("t1_web-abc-1", logLine{1, "one one"})
	f.setLogs("t1_api-abc-0", logLine{1, "api"})
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	out, errOut, err := run(t, "", append(base, "logs", "deployment/web", "--tail", "5")...)
	if err != nil {
		t.Fatalf("%v (stderr %q)", err, errOut)
	}
	// Replicas stream concurrently: each one's lines keep their order.
	var zero, one []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "[t1_web-abc-0] "):
			zero = append(zero, strings.TrimPrefix(line, "[t1_web-abc-0] "))
		case strings.HasPrefix(line, "[t1_web-abc-1] "):
			one = append(one, strings.TrimPrefix(line, "[t1_web-abc-1] "))
		default:
			t.Fatalf("unexpected line %q in\n%s", line, out)
		}
	}
	if strings.Join(zero, "|") != "zero one|zero err|zero two" || strings.Join(one, "|") != "one one" {
		t.Fatalf("logs:\n%s", out)
	}
	if tails := strings.Join(f.tails(), " "); tails != "5 5" {
		t.Fatalf("tail parameters %q, want \"5 5\"", tails)
	}
	if _, _, err := run(t, "", append(base, "logs", "deployment/nope")...); err == nil || !strings.Contains(err.Error(), `deployment "nope" has no containers`) {
		t.Fatalf("logs of a deployment without containers: %v", err)
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
	rec, err := st.Get("web")
	if err != nil {
		t.Fatal(err)
	}
	hash := manifests.TemplateHash(&rec.Deployment.Spec.Template)
	for i := range 3 {
		f.addContainer(fmt.Sprintf("t1_web-%s-%d", hash, i), "t1", "web", map[string]string{"io.dockctl.template-hash": hash})
	}
	if err := st.WriteStatus("web", &store.Status{ObservedGeneration: rec.Generation}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, webYAML, append(base, "apply", "-f", "-", "--wait", "--timeout", "30s")...)
	if err != nil || out != "deployment/web unchanged\ndeployment \"web\" successfully rolled out\n" {
		t.Fatalf("wait: %v %q\n%s", err, errOut, out)
	}
}
