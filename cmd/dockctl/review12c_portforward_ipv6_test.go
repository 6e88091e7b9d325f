package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// procExecs runs each exec as the helper container would: dockctl's own
// binary (this test binary, run as dockctl) with the exec's command line,
// its stdin and output piped.
type procExecs struct{ t *testing.T }

func (p procExecs) startExec(_ context.Context, _ string, cfg dockerx.ExecConfig) (execStream, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, cfg.Cmd[1:]...) // cfg.Cmd[0] is the binary's path in the helper image
	cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1")
	s := &procExec{cmd: cmd}
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if s.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if s.errPipe, err = cmd.StderrPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s, nil
}

type procExec struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	// errPipe is the relay's stderr, where it says why it failed.
	errPipe io.ReadCloser
}

func (s *procExec) Write(b []byte) (int, error) { return s.stdin.Write(b) }
func (s *procExec) CloseWrite() error           { return s.stdin.Close() }
func (s *procExec) Output(stdout, stderr io.Writer) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(stderr, s.errPipe)
	}()
	_, err := io.Copy(stdout, s.stdout)
	<-done
	return err
}
func (s *procExec) Resize(context.Context, dockerx.TerminalSize) error { return nil }
func (s *procExec) Wait(context.Context) (int, error) {
	err := s.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}
func (s *procExec) Close() error { return s.stdin.Close() }

// kubectl's port-forward connects to the pod's localhost: the runtime
// (containerd's CRI portForward) dials 127.0.0.1:PORT and, when that
// fails, [::1]:PORT. dockctl's relay dials 127.0.0.1:PORT only
// (relayCommand), so a server that listens on the IPv6 loopback alone —
// e.g. one that binds "localhost" where that resolves to ::1 first, as
// Node.js does since v17 — is reachable with kubectl and refused with
// dockctl. The relay below is the real one: `dockctl helper relay`, run
// as the helper container runs it.
func TestReview12cPortForwardReachesIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatalf("this test needs the IPv6 loopback: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello from ::1\n")
			c.Close()
		}
	}()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	remote, _ := strconv.Atoi(p)
	errOut := &syncBuffer{}
	f := &forwarder{docker: procExecs{t}, helper: "helper-1", pod: "web-0", out: &syncBuffer{}, errOut: errOut}
	addrs, _ := parseAddresses([]string{"127.0.0.1"})
	if err := f.listen([]forwardedPort{{0, uint16(remote)}}, addrs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.serve(ctx)
	defer f.close()
	c, err := net.Dial("tcp", f.listeners[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, _ := io.ReadAll(c)
	if string(b) != "hello from ::1\n" {
		waitUntil(t, "the forward's report", func() bool { return errOut.String() != "" })
		t.Errorf("through the forward to a server on [::1]:%d: %q; stderr %q (kubectl reaches it)", remote, b, errOut.String())
	}
}
