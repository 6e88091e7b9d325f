//go:build e2e

package e2e

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestGetWatch: `get pods -w` against a running controller streams the
// pod a scale adds, first as it starts and then Running, as kubectl's get
// -w does, and an interrupt (Ctrl-C) ends it with status 1, as kubectl's
// interrupt handler ends it.
func TestGetWatch(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.apply(webManifest(1, "one"))
	e.startController()
	e.waitRunning("web", 1, "")

	cmd := exec.Command(dockctlBin, "--instance", e.instance, "--state-dir", e.stateDir, "get", "pods", "-w")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	// next waits for a line matching re; the deadline is generous, the
	// machine being shared.
	next := func(what, re string) []string {
		t.Helper()
		rx := regexp.MustCompile(re)
		deadline := time.After(90 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("%s: get -w ended; output:\n%s\nstderr: %s", what, strings.Join(seen, "\n"), stderr.String())
				}
				seen = append(seen, l)
				if m := rx.FindStringSubmatch(l); m != nil {
					return m
				}
			case <-deadline:
				t.Fatalf("%s: no line matching %s; output:\n%s\nstderr: %s", what, re, strings.Join(seen, "\n"), stderr.String())
			}
		}
	}
	next("header", `^NAME +READY +STATUS +RESTARTS +AGE$`)
	first := next("the running pod", `^(web-\S+) +1/1 +Running +0 +\S+$`)[1]

	e.mustDockctl("", "scale", "deployment", "web", "--replicas", "2")
	added := next("the new pod", `^(web-\S+) +\d/1 +\S+ +\d+ +\S+$`)[1]
	if added == first {
		t.Fatalf("the pod that was there printed again after the scale:\n%s", strings.Join(seen, "\n"))
	}
	// The line CI scripts have, woken by Docker's events while the new pod
	// starts: the pod named, then both by their label, sorted by name.
	if out := e.mustDockctl("", "wait", "--for=condition=Ready", "pod/"+added, "--timeout=90s"); out != "pod/"+added+" condition met\n" {
		t.Errorf("wait for the new pod printed %q", out)
	}
	pods := []string{first, added}
	sort.Strings(pods)
	if out, want := e.mustDockctl("", "wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=90s"),
		"pod/"+pods[0]+" condition met\npod/"+pods[1]+" condition met\n"; out != want {
		t.Errorf("wait -l app=web printed %q, want %q", out, want)
	}
	next("the new pod running", `^`+regexp.QuoteMeta(added)+` +1/1 +Running +0 +\S+$`)

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines { // the rest, until get -w closes its output
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("get -w on an interrupt: %v (want exit status 1); stderr: %s", err, stderr.String())
	}
	t.Logf("get pods -w printed:\n%s", strings.Join(seen, "\n"))
	for _, l := range seen[1:] {
		if strings.HasPrefix(l, "NAME ") {
			t.Errorf("the header printed again:\n%s", strings.Join(seen, "\n"))
		}
	}
}
