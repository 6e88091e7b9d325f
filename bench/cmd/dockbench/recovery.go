package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// recoverySection holds speed goal 3's figures (BENCHMARKS.md, Cold
// recovery after a daemon restart): pods and Services after a Docker
// daemon restart without live-restore, dockctl's installed controller
// beside Docker's own restart policy "always" and network aliases. The
// measurement needs a Docker daemon of its own to restart — the machine's
// is never restarted — so it is the end-to-end tests' Go benchmark
// (e2e/recovery_test.go, BenchmarkColdRecovery, with its private daemon),
// run here at one size and read back.
const recoverySection = "recovery"

// recoveryBench is the size the section runs: speed goal 3's.
const recoveryBench = "pods=100_services=10"

// recoveryRatio is the ratio the guard judges.
const recoveryRatio = "recovery: cold, dockctl / Docker restart: always (" + recoveryBench + ")"

func benchRecovery(ctx context.Context, e *env, s settings, rep *report) error {
	if !s.Recovery {
		rep.note("recovery: skipped (BENCH_QUICK=1; set BENCH_RECOVERY=1 to include it)")
		return nil
	}
	dockctlName := "dockctl (installed controller): daemon start → every pod running, every Service answering by name"
	dockerName := "Docker restart: always + network aliases: daemon start → every container running, every alias answering"
	rep.ratio(recoveryRatio, recoverySection+"/"+dockctlName, recoverySection+"/"+dockerName, atMost(1.1, "speed goal 3"))
	parts := []struct{ name, metric string }{
		{dockctlName, "dockctl-s"},
		{dockerName, "docker-s"},
		{"dockctl: daemon start → every pod running", "dockctl-pods-s"},
		{"dockctl: daemon start → every Service answering", "dockctl-svc-s"},
		{"Docker: daemon start → every container running", "docker-pods-s"},
		{"Docker: daemon start → every alias answering", "docker-svc-s"},
	}
	na := func(why string) {
		for _, p := range parts {
			rep.na(recoverySection, p.name, why)
		}
	}
	t0 := time.Now()
	out, err := runColdRecovery(ctx, e.root)
	logf("  BenchmarkColdRecovery/%s took %s", recoveryBench, time.Since(t0).Round(100*time.Millisecond))
	if err != nil {
		na("the benchmark failed")
		return fmt.Errorf("BenchmarkColdRecovery/%s: %w\n%s", recoveryBench, err, benchTail(out, 30))
	}
	if why, skipped := benchSkipped(out); skipped {
		na("skipped: " + why)
		return nil
	}
	m, err := parseBenchLine(out, "BenchmarkColdRecovery/"+recoveryBench)
	if err != nil {
		na(err.Error())
		return fmt.Errorf("%w\n%s", err, benchTail(out, 30))
	}
	for _, p := range parts {
		if v, ok := m[p.metric]; ok {
			rep.value(recoverySection, p.name, v*1000, "ms")
		} else {
			rep.na(recoverySection, p.name, "the benchmark reported no "+p.metric)
		}
	}
	return nil
}

// runColdRecovery runs the Go benchmark as `make recovery` does, with
// cgo (the e2e tests' -race is not used: timings) and returns its output.
// It runs in a process group of its own, which a cancelled run (the
// bound reached, a signal) ends with SIGTERM: its private daemon then
// stops its containers as at any stop, but the benchmark's own cleanup
// does not run (docs: BENCHMARKS.md, Cold recovery).
func runColdRecovery(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-p", "1", "-tags", "e2e", "-run", "^$",
		"-bench", "^BenchmarkColdRecovery$/^"+recoveryBench+"$", "-benchtime", "1x", "-timeout", "30m", "./e2e/")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 90 * time.Second
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// parseBenchLine reads the metrics of benchmark name from go test's
// output: the line "name-P  N  v1 unit1  v2 unit2 …" (P the GOMAXPROCS
// suffix, absent at 1), as a map from unit to value.
func parseBenchLine(out, name string) (map[string]float64, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != name && !strings.HasPrefix(f[0], name+"-")) {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimPrefix(f[0], name+"-")); err != nil && f[0] != name {
			continue // another benchmark whose name begins with name-
		}
		if (len(f)-2)%2 != 0 {
			return nil, fmt.Errorf("benchmark line %q: not N followed by value-unit pairs", line)
		}
		m := map[string]float64{}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", line, err)
			}
			m[f[i+1]] = v
		}
		return m, nil
	}
	return nil, errors.New("no result line for " + name + " in the benchmark's output")
}

// benchSkipped reports whether go test's output says the benchmark was
// skipped (the e2e tests' opt-out of a private daemon, on a machine that
// cannot run one), and why.
func benchSkipped(out string) (string, bool) {
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if strings.Contains(line, "--- SKIP:") {
			if i+1 < len(lines) {
				return strings.TrimSpace(lines[i+1]), true
			}
			return "", true
		}
	}
	return "", false
}

// benchTail is the last n lines of out that are not the private daemon's
// own log (its tail is printed on a failure, and would hide the reason).
func benchTail(out string, n int) string {
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if !strings.Contains(line, "level=") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep[max(0, len(keep)-n):], "\n")
}
