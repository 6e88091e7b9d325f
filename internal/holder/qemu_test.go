//go:build qemu

package holder

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The arm64 holder cannot run natively here: these tests run it under
// qemu-user (apt-get install qemu-user), whose -strace output on stderr
// tells when the program has reached its sleep. Run them after any change
// to arm64.go: go test -tags qemu -run QEMU ./internal/holder/

// lockedBuffer collects stderr written by another process's pipe copier.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) sleeping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), "rt_sigsuspend(")
}

func qemuArgv(t *testing.T) []string {
	t.Helper()
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		t.Fatalf("qemu-aarch64 (apt-get install qemu-user): %v", err)
	}
	b, err := Binary("arm64")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/holder-arm64"
	if err := os.WriteFile(path, b, 0o555); err != nil {
		t.Fatal(err)
	}
	return []string{qemu, "-strace", path}
}

func TestQEMUArm64ExitsZeroOnSignal(t *testing.T) {
	argv := qemuArgv(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			var stderr lockedBuffer
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the holder to sleep", stderr.sleeping)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			exitsZero(t, cmd)
			if out := stderr.String(); strings.Contains(out, "exit_group(1)") || !strings.Contains(out, "exit_group(0)") {
				t.Errorf("strace:\n%s", out)
			}
		})
	}
}

func TestQEMUArm64ReapsChildren(t *testing.T) {
	var stderr lockedBuffer
	testReaping(t, qemuArgv(t), &stderr, func(int) bool { return stderr.sleeping() })
	t.Logf("strace:\n%s", stderr.String())
}
