// This file has no build tag on purpose: the gate below and its tests need
// no Docker, so `make unit` checks them, and the e2e tests use the gate.

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// skipDaemonRestartEnv is the only way to run the e2e tests without
// TestDaemonRestart (a machine that cannot run a private dockerd). .ci/run
// refuses it, so CI can never pass without that test.
const skipDaemonRestartEnv = "DOCKCTL_E2E_SKIP_DAEMON_RESTART"

// privateDockerdGate decides what a test needing a private dockerd does on
// this machine: run (reason ""), or, when something it needs is missing,
// fail — unless the opt-out variable is exactly "1", then skip. A silent
// skip would let the only daemon-restart test disappear from a green run.
func privateDockerdGate(euid int, lookPath func(string) (string, error), optOut string) (skip bool, reason string) {
	var missing []string
	if euid != 0 {
		missing = append(missing, "root")
	}
	for _, bin := range []string{"dockerd", "unshare"} {
		if _, err := lookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) == 0 {
		return false, ""
	}
	reason = "a private dockerd needs " + strings.Join(missing, ", ")
	if optOut == "1" {
		return true, reason + " (skipped: " + skipDaemonRestartEnv + "=1)"
	}
	return false, reason + "; set " + skipDaemonRestartEnv + "=1 to skip this test knowingly (CI refuses it)"
}

func TestPrivateDockerdGate(t *testing.T) {
	all := func(string) (string, error) { return "/usr/bin/x", nil }
	noDockerd := func(bin string) (string, error) {
		if bin == "dockerd" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + bin, nil
	}
	for _, tc := range []struct {
		name       string
		euid       int
		lookPath   func(string) (string, error)
		optOut     string
		wantSkip   bool
		wantReason bool
	}{
		{"root with everything runs", 0, all, "", false, false},
		{"root with everything runs despite the opt-out", 0, all, "1", false, false},
		{"not root fails", 1000, all, "", false, true},
		{"no dockerd fails", 0, noDockerd, "", false, true},
		{"opt-out other than 1 still fails", 1000, all, "true", false, true},
		{"not root with the opt-out skips", 1000, all, "1", true, true},
		{"no dockerd with the opt-out skips", 0, noDockerd, "1", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skip, reason := privateDockerdGate(tc.euid, tc.lookPath, tc.optOut)
			if skip != tc.wantSkip || (reason != "") != tc.wantReason {
				t.Fatalf("got skip=%v reason=%q; want skip=%v, a reason: %v", skip, reason, tc.wantSkip, tc.wantReason)
			}
			if reason != "" && !strings.Contains(reason, skipDaemonRestartEnv) {
				t.Errorf("reason %q does not name %s", reason, skipDaemonRestartEnv)
			}
		})
	}
}

// TestCIRefusesDaemonRestartOptOut runs .ci/run with the opt-out set and
// with stand-ins for go, docker and make that would all succeed: it must
// exit non-zero before running anything.
func TestCIRefusesDaemonRestartOptOut(t *testing.T) {
	bin := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	stub := "#!/bin/sh\necho \"$0 $*\" >>" + ran + "\nexit 0\n"
	for _, name := range []string{"go", "docker", "make", "dockerd"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", filepath.Join("..", ".ci", "run"))
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), skipDaemonRestartEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf(".ci/run with %s=1: want a non-zero exit, got err=%v\n%s", skipDaemonRestartEnv, err, out)
	}
	if !strings.Contains(string(out), skipDaemonRestartEnv) {
		t.Errorf(".ci/run output does not name %s:\n%s", skipDaemonRestartEnv, out)
	}
	if b, _ := os.ReadFile(ran); strings.Contains(string(b), "make") {
		t.Errorf(".ci/run ran make despite the opt-out:\n%s", b)
	}
}

// TestCIRunsOnlyWithCITrue: .ci/run refuses to run the suite unless CI is
// exactly "true", under which the tests that lack root, a pseudo-terminal,
// unshare or a tmpfs mount fail instead of skipping (internal/testenv); a
// CI run without it would let them disappear from a green run. With it,
// and stand-ins for go, docker and make that succeed, it runs make test.
func TestCIRunsOnlyWithCITrue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ci      string // "-": unset
		wantRun bool
	}{
		{"CI unset is refused", "-", false},
		{"CI=false is refused", "false", false},
		{"CI=1 is refused", "1", false},
		{"CI=true runs make test", "true", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			ran := filepath.Join(t.TempDir(), "ran")
			stub := "#!/bin/sh\necho \"$0 $*\" >>" + ran + "\nexit 0\n"
			for _, name := range []string{"go", "docker", "make", "dockerd"} {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, skipDaemonRestartEnv+"=") && !strings.HasPrefix(kv, "PATH=") {
					env = append(env, kv)
				}
			}
			env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			if tc.ci != "-" {
				env = append(env, "CI="+tc.ci)
			}
			cmd := exec.Command("bash", filepath.Join("..", ".ci", "run"))
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			b, _ := os.ReadFile(ran)
			madeTest := strings.Contains(string(b), "make test")
			if tc.wantRun {
				if err != nil || !madeTest {
					t.Fatalf(".ci/run with CI=true: err=%v, ran %q; want make test run and a zero exit\n%s", err, b, out)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || madeTest {
				t.Fatalf(".ci/run with CI %q: err=%v, ran %q; want a non-zero exit before make\n%s", tc.ci, err, b, out)
			}
			if !strings.Contains(string(out), "CI=true") {
				t.Errorf(".ci/run output does not say CI=true is required:\n%s", out)
			}
		})
	}
}
