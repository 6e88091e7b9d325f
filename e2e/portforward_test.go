//go:build e2e

package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sniffingProxy stands between the CLI and the real daemon on a unix
// socket of its own and calls onRequest with each chunk the CLI sends
// before passing it on; onRequest returns whether to pass it on and
// whether to hold the daemon's answers on that connection until release
// is closed. It lets a test stop the CLI at an exact step of its
// conversation with Docker.
type sniffingProxy struct {
	path      string
	onRequest func(chunk []byte) (forward, hold bool)
	release   chan struct{}
}

func startSniffingProxy(t testing.TB, onRequest func(chunk []byte) (forward, hold bool)) *sniffingProxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "pfproxy-")
	if err != nil {
		t.Fatal(err)
	}
	p := &sniffingProxy{path: filepath.Join(dir, "d.sock"), onRequest: onRequest, release: make(chan struct{})}
	l, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() {
		l.Close()
		once.Do(func() { close(p.release) })
		os.RemoveAll(dir)
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *sniffingProxy) serve(c net.Conn) {
	defer c.Close()
	d, err := net.Dial("unix", "/var/run/docker.sock")
	if err != nil {
		return
	}
	defer d.Close()
	var mu sync.Mutex
	hold := false
	go func() {
		b := make([]byte, 32<<10)
		for {
			n, err := d.Read(b)
			if n > 0 {
				mu.Lock()
				h := hold
				mu.Unlock()
				if h {
					<-p.release
				}
				if _, werr := c.Write(b[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	b := make([]byte, 32<<10)
	for {
		n, err := c.Read(b)
		if n > 0 {
			forward, h := p.onRequest(b[:n])
			if h {
				mu.Lock()
				hold = true
				mu.Unlock()
			}
			if !forward {
				return
			}
			if _, werr := d.Write(b[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A `dockctl port-forward` that ends between its helper's create and its
// start must not leave the helper behind for good: Docker never
// auto-removes a container that never ran (AutoRemove acts when it
// exits), so the CLI removes what it named, and the controller (with
// --prune-orphans) removes a port-forward helper that never started. Two
// ways to get there, both through the real CLI against the real daemon
// (through a proxy that stops the CLI at the exact step):
//   - SIGINT (Ctrl-C) while the create call is in flight: the daemon
//     creates the helper and the CLI's cancelled call returns an error;
//     the CLI knows the name, so it removes the helper before it exits;
//   - SIGKILL (or a crash, or the daemon connection dropping) after the
//     create, before the attach: nothing of the CLI is left to clean up,
//     so the controller must.
func TestPortForwardInterruptedBeforeStartLeavesNoHelper(t *testing.T) {
	began := time.Now()
	e := newEnv(t)
	e.apply(webManifest(1, ""))
	// A helper that is not running goes once it is older than
	// --stale-port-forward-after (1m by default: a live CLI's time to
	// start its own); 5s keeps this test short.
	e.startController("--prune-orphans", "--stale-port-forward-after", "5s")
	e.waitRunning("web", 1, "")

	pfHelpers := func() []string {
		var out []string
		for _, c := range containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.role=port-forward") {
			out = append(out, c.Names[0]+" ("+c.State+")")
		}
		return out
	}
	// start runs port-forward through a proxy that calls onRequest.
	start := func(onRequest func(chunk []byte) (forward, hold bool)) (*exec.Cmd, chan error, *bytes.Buffer) {
		proxy := startSniffingProxy(t, onRequest)
		cmd := exec.Command(dockctlBin, "--instance", e.instance, "--state-dir", e.stateDir, "port-forward", "deploy/web", ":8080")
		cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+proxy.path)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
		})
		return cmd, exited, out
	}
	post := func(chunk []byte, path string) bool {
		return bytes.HasPrefix(chunk, []byte("POST /")) && bytes.Contains(chunk, []byte(path))
	}
	waitExit := func(what string, exited chan error, out *bytes.Buffer) {
		select {
		case err := <-exited:
			t.Logf("%s: exited (%v): %s", what, err, bytes.TrimSpace(out.Bytes()))
		case <-time.After(time.Minute):
			t.Fatalf("%s: did not exit", what)
		}
	}

	// 1. Ctrl-C while the create call is in flight: the daemon has the
	// request (its answer is held back) and makes the helper; then SIGINT.
	creating := make(chan struct{})
	var once sync.Once
	cmd, exited, out := start(func(chunk []byte) (bool, bool) {
		if post(chunk, "/containers/create?name=") && bytes.Contains(chunk, []byte("_pf-")) {
			once.Do(func() { close(creating) })
			return true, true
		}
		return true, false
	})
	select {
	case <-creating:
	case err := <-exited:
		t.Fatalf("port-forward ended before creating its helper: %v\n%s", err, out)
	case <-time.After(2 * time.Minute):
		t.Fatal("port-forward never created its helper")
	}
	eventually(t, time.Minute, "the daemon to create the helper", func() (bool, string) {
		hs := pfHelpers()
		return len(hs) == 1, strings.Join(hs, ", ")
	})
	_ = cmd.Process.Signal(syscall.SIGINT)
	waitExit("port-forward interrupted during its helper's create", exited, out)
	// The CLI removes the helper it named before it exits.
	if hs := pfHelpers(); len(hs) > 0 {
		t.Errorf("port-forward interrupted during its helper's create exited, leaving %s", strings.Join(hs, ", "))
	}

	// 2. SIGKILL once the helper is created, before the CLI attaches to
	// it (the attach request is held until the CLI is dead).
	attaching := make(chan struct{})
	dead := make(chan struct{})
	var once2 sync.Once
	cmd, exited, out = start(func(chunk []byte) (bool, bool) {
		if post(chunk, "/attach?") {
			once2.Do(func() { close(attaching) })
			<-dead
			return false, false
		}
		return true, false
	})
	select {
	case <-attaching:
	case err := <-exited:
		t.Fatalf("port-forward ended before attaching to its helper: %v\n%s", err, out)
	case <-time.After(2 * time.Minute):
		t.Fatal("port-forward never attached to its helper")
	}
	_ = cmd.Process.Kill()
	waitExit("port-forward killed before its attach", exited, out)
	close(dead)

	// The daemon never removes them (they never ran): the controller does
	// (--prune-orphans, a sweep every 2 s).
	t.Logf("helpers once both CLIs are gone: %v (after %s)", pfHelpers(), time.Since(began).Round(time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	for len(pfHelpers()) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	if hs := pfHelpers(); len(hs) > 0 {
		t.Errorf("port-forward helpers left 30 s after their CLIs ended (controller running with --prune-orphans): %s", strings.Join(hs, ", "))
	}
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}
