package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// `dockctl exec -it` puts the local terminal in raw mode and restores it
// when the command ends, or on SIGTERM or SIGHUP. SIGINT (kill -INT, a
// supervising script or `timeout -s INT`; Ctrl-C itself is a key in raw
// mode) and SIGQUIT kill dockctl with Go's default action instead, and
// the user's terminal is left raw: no echo, no line editing, Ctrl-C
// dead, until `reset`. kubectl restores the terminal on SIGINT, SIGTERM,
// SIGHUP and SIGQUIT alike (its term.TTY.Safe runs under
// util/interrupt's handler).
func TestReview12cExecTerminalRestoredOnSIGINT(t *testing.T) {
	api, base, d := shopApplied(t)
	pod := dockerx.Hostname("shop", manifests.TemplateHash(&d.Spec.Template), 0)
	for _, c := range testPod("t1", d, 0, time.Minute, false,
		member{name: "migrate", state: "exited:0"}, member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}) {
		api.add(c.Name, c.State, c.Labels)
	}
	// The command: a shell that reads its terminal until it goes.
	api.setExec(func(string, []string) (string, func(io.Reader, io.Writer, io.Writer) int) {
		return "", func(in io.Reader, out, _ io.Writer) int {
			io.WriteString(out, "$ ")
			_, _ = io.Copy(io.Discard, in)
			return 0
		}
	})
	// SIGINT, as the review found, and the other three kubectl handles.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			_, pts := openPTY(t)
			setWinsize(t, pts, 24, 80)
			lflag := func() uint32 {
				tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				return tio.Lflag
			}
			const cooked = unix.ICANON | unix.ECHO | unix.ISIG
			before := lflag()
			if before&cooked != cooked {
				t.Fatalf("the pseudo-terminal does not start cooked: lflag %#x", before)
			}
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, append(base, "exec", "-it", pod, "-c", "web", "--", "sh")...)
			cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1", "DOCKER_HOST="+api.host)
			var errOut bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			waitUntil(t, "exec -it to make the terminal raw", func() bool { return lflag()&cooked == 0 })

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				t.Logf("exec -it after %v: %v; stderr %q", sig, err, errOut.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("exec -it did not end on %v", sig)
			}
			if after := lflag(); after != before {
				t.Errorf("the terminal is left raw after %v: lflag %#x, was %#x (kubectl restores it)", sig, after, before)
			}
		})
	}
}
