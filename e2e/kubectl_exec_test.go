//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// portForward is a `dockctl port-forward` running as a subprocess.
type portForward struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout strings.Builder
	stderr strings.Builder
	ports  chan string // the local port of each "Forwarding from 127.0.0.1:N -> R" line
	exited chan error
}

// startPortForward starts `dockctl port-forward args…` for this test's
// instance and returns once it has printed its first forwarding line.
func (e *env) startPortForward(args ...string) (*portForward, string) {
	e.t.Helper()
	full := append([]string{"--instance", e.instance, "--state-dir", e.stateDir, "port-forward"}, args...)
	pf := &portForward{cmd: exec.Command(dockctlBin, full...), ports: make(chan string, 8), exited: make(chan error, 1)}
	stdout, err := pf.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stderr, err := pf.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := pf.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if pf.cmd.ProcessState == nil {
			pf.cmd.Process.Kill()
			<-pf.exited
		}
	})
	forwarding := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> \d+$`)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			pf.mu.Lock()
			pf.stdout.WriteString(sc.Text() + "\n")
			pf.mu.Unlock()
			if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
				pf.ports <- m[1]
			}
		}
	}()
	go func() {
		defer wg.Done()
		b := make([]byte, 4096)
		for {
			n, err := stderr.Read(b)
			pf.mu.Lock()
			pf.stderr.Write(b[:n])
			pf.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		wg.Wait() // the pipes first: Wait closes them
		pf.exited <- pf.cmd.Wait()
	}()
	select {
	case port := <-pf.ports:
		return pf, port
	case err := <-pf.exited:
		e.t.Fatalf("port-forward %v exited: %v\nstdout: %s\nstderr: %s", args, err, pf.out(), pf.errOut())
	case <-time.After(2 * time.Minute):
		e.t.Fatalf("port-forward %v printed no forwarding line\nstdout: %s\nstderr: %s", args, pf.out(), pf.errOut())
	}
	return nil, ""
}

func (pf *portForward) out() string {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.stdout.String()
}

func (pf *portForward) errOut() string {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.stderr.String()
}

// get returns the body of GET url through a forward, on a connection of
// its own.
func get(url string) (string, error) {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// exitCode runs dockctl and returns its exit status, stdout and stderr.
func (e *env) exitCode(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	full := append([]string{"--instance", e.instance, "--state-dir", e.stateDir}, args...)
	cmd := exec.Command(dockctlBin, full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errOut.String()
	}
	e.t.Fatalf("dockctl %v: %v", args, err)
	return 0, "", ""
}

// exec and port-forward against the real daemon: a command's output, exit
// status and stdin; port-forward of a deployment (random local port, a
// refused port reported while the others are served) and of a Service
// (its port to the targetPort), its helper in the pod's network
// namespace, removed when the session ends — even when it is SIGKILLed.
func TestExecAndPortForward(t *testing.T) {
	began := time.Now()
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t))
	e.apply(bundle(svcDeployment{name: "web", app: "web", replicas: 1, probePath: "/readyz"}.manifest(),
		serviceManifest("", "web", "web", httpPort80)))
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	pods := e.waitPodsRunning("default", "web", 1)
	replica := pods[0]
	t.Logf("ready after %s", time.Since(began).Round(time.Millisecond))

	// exec: output, exit status, stdin, a command that cannot start.
	code, out, errOut := e.exitCode("", "exec", "deploy/web", "--", "/workload", "cat", "/etc/hostname")
	if code != 0 || !regexp.MustCompile(`^web-\w+-0\n$`).MatchString(out) || errOut != "" {
		t.Fatalf("exec cat /etc/hostname: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = e.exitCode("", "exec", "deploy/web", "--", "/workload", "cat")
	if code != 2 || out != "" || errOut != "usage: workload cat FILE\ncommand terminated with exit code 2\n" {
		t.Fatalf("exec of a failing command: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = e.exitCode("hello\nfrom stdin\n", "exec", "-i", "deploy/web", "--", "/workload", "cat", "/dev/stdin")
	if code != 0 || out != "hello\nfrom stdin\n" || errOut != "" {
		t.Fatalf("exec -i: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = e.exitCode("", "exec", "deploy/web", "--", "/nosuch")
	if code != 126 || out != "" || !regexp.MustCompile(`^error: container "app" of pod "web-\w+-0": [^\n]*/nosuch[^\n]*\n$`).MatchString(errOut) {
		t.Fatalf("exec of a missing executable: exit %d, %q, %q", code, out, errOut)
	}
	t.Logf("exec done after %s", time.Since(began).Round(time.Millisecond))

	// port-forward of the deployment: a random local port to 8080, and
	// one to a port nobody listens on.
	pf, port := e.startPortForward("deploy/web", ":8080", ":9999")
	refused := <-pf.ports
	if body, err := get("http://127.0.0.1:" + port + "/"); err != nil || !strings.HasPrefix(body, "hello from workload\n") {
		t.Fatalf("GET through port-forward deploy/web: %q, %v\nstderr: %s", body, err, pf.errOut())
	}
	helpers := containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.role=port-forward")
	if len(helpers) != 1 || helpers[0].HostConfig.NetworkMode != "container:"+replica.ID || helpers[0].Labels["io.dockctl.namespace"] != "default" {
		t.Fatalf("port-forward helpers: %s", describe(helpers))
	}
	// The relay above ran unprivileged: nobody, no capability, nothing
	// to gain, nothing writable.
	in, err := dockerCli.ContainerInspect(context.Background(), helpers[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if in.Config.User != "65534:65534" || !slices.Equal(in.HostConfig.CapDrop, []string{"ALL"}) ||
		!slices.Contains(in.HostConfig.SecurityOpt, "no-new-privileges") || !in.HostConfig.ReadonlyRootfs {
		t.Errorf("the helper's privileges: user %q, cap drop %v, security %v, read-only %v", in.Config.User, in.HostConfig.CapDrop, in.HostConfig.SecurityOpt, in.HostConfig.ReadonlyRootfs)
	}
	if _, err := get("http://127.0.0.1:" + refused + "/"); err == nil {
		t.Error("GET through a forward to a closed port succeeded")
	}
	eventually(t, time.Minute, "the refused connection's report", func() (bool, string) {
		return strings.Contains(pf.errOut(), "error: an error occurred forwarding "+refused+" -> 9999: error forwarding port 9999 to pod web-"), pf.errOut()
	})
	if body, err := get("http://127.0.0.1:" + port + "/"); err != nil || !strings.HasPrefix(body, "hello from workload\n") {
		t.Fatalf("GET after a refused connection: %q, %v", body, err)
	}
	eventually(t, time.Minute, "a line per connection", func() (bool, string) {
		return strings.Count(pf.out(), "Handling connection for "+port+"\n") == 2 && strings.Count(pf.out(), "Handling connection for "+refused+"\n") == 1, pf.out()
	})

	// port-forward of the Service: its port 80 to the pod's http port.
	svc, svcPort := e.startPortForward("svc/web", ":80")
	if !strings.Contains(svc.out(), " -> 8080\n") {
		t.Errorf("port-forward svc/web :80 forwards to %q, want the targetPort 8080", svc.out())
	}
	if body, err := get("http://127.0.0.1:" + svcPort + "/"); err != nil || !strings.HasPrefix(body, "hello from workload\n") {
		t.Fatalf("GET through port-forward svc/web: %q, %v\nstderr: %s", body, err, svc.errOut())
	}
	// Interrupted, it exits 0 and removes its helper itself.
	svc.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-svc.exited:
		if err != nil {
			t.Errorf("port-forward svc/web after SIGINT: %v\nstderr: %s", err, svc.errOut())
		}
	case <-time.After(time.Minute):
		t.Fatal("port-forward svc/web did not end on SIGINT")
	}
	if hs := containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.role=port-forward"); len(hs) != 1 || hs[0].ID != helpers[0].ID {
		t.Errorf("after port-forward svc/web ended: %s, want only deploy/web's helper", describe(hs))
	}

	// Killed, it has no chance to clean up: its helper goes by itself
	// (its stdin closes with the CLI's connection, it exits, Docker
	// removes it).
	pf.cmd.Process.Kill()
	<-pf.exited
	eventually(t, 2*time.Minute, "the killed port-forward's helper to be gone", func() (bool, string) {
		hs := containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.role=port-forward")
		return len(hs) == 0, describe(hs)
	})
	// The controller left the pod alone all along.
	if now := e.podsOf("default", "web"); len(now) != 1 || now[0].ID != replica.ID || now[0].State != "running" {
		t.Errorf("the pod after the sessions: %s", describe(now))
	}
	// Nothing of the sessions is left but what the harness cleans (and
	// newSvcEnv checks): the deployment, its Service and their helpers.
	for _, c := range containers(t, "io.dockctl.instance="+e.instance) {
		if role := c.Labels["io.dockctl.role"]; role != "" && role != "replica" && role != "proxy" && role != "dns" {
			t.Errorf("left behind: %s (role %s)", c.Names[0], role)
		}
	}
	t.Logf("TestExecAndPortForward took %s", time.Since(began).Round(time.Millisecond))
}
