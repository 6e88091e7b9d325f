//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/dockctl/dockctl/internal/testio"
)

// hostController is `dockctl controller` run as a plain host process (the
// built dockctlBin), for the tests that must SIGKILL it at a precise moment
// or point it at a private Docker daemon. Only this process is ever
// signalled, by its PID.
type hostController struct {
	t    testing.TB
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed when the process has exited
}

// syncBuffer collects output written while the test reads it.
type syncBuffer = testio.Buffer

// startHostController starts a controller for e's instance and state
// directory and waits until it logs "controller started". extraEnv (e.g.
// DOCKER_HOST=…) is added to this process's environment; extraArgs come after
// the defaults, so that they win.
func (e *env) startHostController(extraEnv []string, extraArgs ...string) *hostController {
	e.t.Helper()
	// The workloads of a private daemon join its privateNetwork.
	args := append([]string{"--instance", e.instance, "--state-dir", e.stateDir,
		"controller", "--resync-period", "2s", "--metrics-addr", "", "--crash-backoff-base", "200ms",
		"--allow-networks=" + privateNetwork}, extraArgs...)
	hc := &hostController{t: e.t, cmd: exec.Command(dockctlBin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	hc.cmd.Env = append(os.Environ(), extraEnv...)
	hc.cmd.Stdout, hc.cmd.Stderr = hc.out, hc.out
	if err := hc.cmd.Start(); err != nil {
		e.t.Fatalf("start host controller: %v", err)
	}
	go func() {
		_ = hc.cmd.Wait()
		close(hc.done)
	}()
	e.t.Cleanup(func() {
		hc.stop()
		if e.t.Failed() {
			e.t.Logf("host controller (pid %d) log:\n%s", hc.cmd.Process.Pid, hc.out.String())
		}
	})
	hc.waitLog("controller started", time.Minute)
	return hc
}

func (hc *hostController) exited() bool {
	select {
	case <-hc.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL, as a crash or the OOM killer would, and reaps it.
func (hc *hostController) kill() {
	hc.t.Helper()
	if hc.exited() {
		hc.t.Fatalf("controller exited before it could be killed:\n%s", hc.out.String())
	}
	_ = hc.cmd.Process.Signal(syscall.SIGKILL)
	<-hc.done
}

// stop sends SIGTERM (the controller finishes its syncs and exits) and
// falls back to SIGKILL after 30s. A no-op once the process has exited.
func (hc *hostController) stop() {
	if hc.exited() {
		return
	}
	_ = hc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-hc.done:
	case <-time.After(30 * time.Second):
		_ = hc.cmd.Process.Signal(syscall.SIGKILL)
		<-hc.done
	}
}

// waitLog waits until the output contains substr and returns that line.
func (hc *hostController) waitLog(substr string, timeout time.Duration) string {
	hc.t.Helper()
	var line string
	eventually(hc.t, timeout, fmt.Sprintf("controller log line %q", substr), func() (bool, string) {
		out := hc.out.String()
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, substr) {
				line = l
				return true, ""
			}
		}
		if hc.exited() {
			hc.t.Fatalf("controller exited while waiting for %q:\n%s", substr, out)
		}
		return false, out
	})
	return line
}

var metricsAddrPattern = regexp.MustCompile(`serving metrics and health"? addr=(\S+)`)

// metricsAddr returns the address the controller's /metrics, /healthz and
// /readyz listen on, from its log (it binds 127.0.0.1:0 in tests).
func (hc *hostController) metricsAddr() string {
	hc.t.Helper()
	line := hc.waitLog("serving metrics and health", 30*time.Second)
	m := metricsAddrPattern.FindStringSubmatch(line)
	if m == nil {
		hc.t.Fatalf("no address in %q", line)
	}
	return m[1]
}

// httpStatus GETs url and returns its status code, or 0 if nothing answered.
func httpStatus(url string) int {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// countSampler lists a label selection every period for as long as it runs,
// recording the largest count seen and every sample above the current
// limit. The instant a create succeeds the container exists, so a create
// beyond the limit shows up in the next sample unless it is removed within
// one period.
type countSampler struct {
	mu         sync.Mutex
	limit      int
	max        int
	samples    int
	failures   int // lists that failed (e.g. the daemon was down)
	violations []string
	seen       map[string]string // container ID → name, every container ever sampled

	cancel context.CancelFunc
	done   chan struct{}
}

func startCountSampler(t testing.TB, cli *client.Client, period time.Duration, limit int, labels ...string) *countSampler {
	args := labelFilter(labels...)
	ctx, cancel := context.WithCancel(context.Background())
	s := &countSampler{limit: limit, seen: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
			cs, err := cli.ContainerList(lctx, container.ListOptions{All: true, Filters: args})
			lcancel()
			s.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					s.failures++
				}
			} else {
				s.samples++
				s.max = max(s.max, len(cs))
				for _, c := range cs {
					s.seen[c.ID] = strings.TrimPrefix(c.Names[0], "/")
				}
				if len(cs) > s.limit {
					s.violations = append(s.violations, fmt.Sprintf("%s: %d > %d: %s",
						time.Now().Format("15:04:05.000"), len(cs), s.limit, describe(cs)))
				}
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *countSampler) setLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
}

func (s *countSampler) stop() {
	s.cancel()
	<-s.done
}

// check fails the test if any sample so far exceeded its limit, or if no
// list ever succeeded (a bound never measured is not held), and returns
// the largest count seen.
func (s *countSampler) check(t testing.TB) int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("count sampler: %d samples (%d failed lists), max %d", s.samples, s.failures, s.max)
	if s.samples == 0 {
		t.Errorf("count sampler: no sample taken (%d failed lists): the bound of %d was never measured", s.failures, s.limit)
	}
	if len(s.violations) > 0 {
		t.Errorf("%d samples over the limit:\n%s", len(s.violations), strings.Join(s.violations, "\n"))
	}
	return s.max
}

// seenIDs returns the IDs of every container sampled so far.
func (s *countSampler) seenIDs() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.seen))
	for k, v := range s.seen {
		out[k] = v
	}
	return out
}

// countStates counts a container list by state.
func countStates(cs []container.Summary) (total, running int) {
	for _, c := range cs {
		if c.State == "running" {
			running++
		}
	}
	return len(cs), running
}

// deploymentJSON reads one deployment through `dockctl get deployments -o
// json` (a List), failing the test if the output does not parse or lacks it.
type deploymentView struct {
	Metadata struct {
		Name       string `json:"name"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int `json:"replicas"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
		Replicas           int   `json:"replicas"`
		ReadyReplicas      int   `json:"readyReplicas"`
		UpdatedReplicas    int   `json:"updatedReplicas"`
	} `json:"status"`
}

func (e *env) getDeploymentJSON(name string, extraEnv ...string) deploymentView {
	e.t.Helper()
	full := []string{"--instance", e.instance, "--state-dir", e.stateDir, "get", "deployments", "-o", "json"}
	cmd := exec.Command(dockctlBin, full...)
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("dockctl get deployments -o json: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []deploymentView `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		e.t.Fatalf("get deployments -o json does not parse: %v\n%s", err, stdout.String())
	}
	var names []string
	for _, d := range list.Items {
		if d.Metadata.Name == name {
			return d
		}
		names = append(names, d.Metadata.Name)
	}
	sort.Strings(names)
	e.t.Fatalf("deployment %s missing from get deployments -o json (have %v):\n%s", name, names, stdout.String())
	return deploymentView{}
}
