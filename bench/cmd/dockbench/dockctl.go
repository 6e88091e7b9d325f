package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// controller is one `dockctl controller` host process with its own
// instance and state directory.
type controller struct {
	e           *env
	bin         string // the dockctl binary it runs, also for its CLI
	name        string
	instance    string
	stateDir    string
	metricsAddr string
	logPath     string
	cmd         *exec.Cmd
	exited      chan struct{}
}

// startController runs the built binary as a host process. dockerHost, when
// set, points it at the counting proxy instead of the daemon; extra are
// more controller flags.
func (e *env) startController(ctx context.Context, name string, resync time.Duration, dockerHost string, extra ...string) (*controller, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &controller{
		e: e, bin: e.dockctlBin, name: name,
		instance:    "bench-" + e.runID + "-" + name,
		stateDir:    filepath.Join(e.tmp, "state-"+name),
		metricsAddr: fmt.Sprintf("127.0.0.1:%d", port),
		logPath:     filepath.Join(e.tmp, "controller-"+name+".log"),
		exited:      make(chan struct{}),
	}
	e.useInstance(c.instance)
	logFile, err := os.Create(c.logPath)
	if err != nil {
		return nil, err
	}
	c.cmd = exec.Command(c.bin, append([]string{"--instance", c.instance, "--state-dir", c.stateDir,
		"controller", "--metrics-addr", c.metricsAddr, "--resync-period", resync.String()}, extra...)...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.Env = os.Environ()
	if dockerHost != "" {
		c.cmd.Env = append(c.cmd.Env, "DOCKER_HOST="+dockerHost)
	}
	// Its own process group, so that a Ctrl-C at the terminal reaches the
	// harness only and the controller is stopped in order by the cleanup.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		_ = c.cmd.Wait()
		logFile.Close()
		close(c.exited)
	}()
	e.mu.Lock()
	e.controllers = append(e.controllers, c)
	e.mu.Unlock()

	// Ready means the metrics listener answers and /readyz says Docker was
	// reached, i.e. the first list has happened.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ok, _ := c.httpOK(ctx, "/readyz"); ok {
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("controller %s exited at start:\n%s", name, c.logTail())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("controller %s not ready after 20s:\n%s", name, c.logTail())
		}
	}
}

func (c *controller) pid() int { return c.cmd.Process.Pid }

// stop sends SIGTERM (the controller finishes in-flight syncs and leaves the
// workloads running) and kills it if it has not exited within 10 s.
func (c *controller) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	for i, x := range c.e.controllers {
		if x == c {
			c.e.controllers = append(c.e.controllers[:i], c.e.controllers[i+1:]...)
			break
		}
	}
}

func (c *controller) logTail() string {
	b, _ := os.ReadFile(c.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// dockctl runs the CLI against this controller's instance and state dir.
func (c *controller) dockctl(ctx context.Context, stdin string, args ...string) error {
	_, err := c.dockctlOutput(ctx, stdin, args...)
	return err
}

// dockctlOutput is dockctl returning what the command printed.
func (c *controller) dockctlOutput(ctx context.Context, stdin string, args ...string) (string, error) {
	full := append([]string{"--instance", c.instance, "--state-dir", c.stateDir}, args...)
	cmd := exec.CommandContext(ctx, c.bin, full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("dockctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func (c *controller) apply(ctx context.Context, manifest string) error {
	return c.dockctl(ctx, manifest, "apply", "-f", "-")
}

func (c *controller) httpOK(ctx context.Context, path string) (bool, []byte) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+c.metricsAddr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, b
}

// apiCalls scrapes /metrics and returns dockctl_docker_api_calls_total by
// operation; present is false when the controller does not export the
// counter (the metric is not merged yet), so that the report says "n/a"
// rather than zero.
func (c *controller) apiCalls(ctx context.Context) (calls map[string]float64, present bool, err error) {
	ok, body := c.httpOK(ctx, "/metrics")
	if !ok {
		return nil, false, fmt.Errorf("scrape %s/metrics failed", c.metricsAddr)
	}
	return parseCounter(body, "dockctl_docker_api_calls_total", "operation")
}

// parseCounter sums a counter family from the Prometheus text format by one
// label. A small parser suffices for a counter and keeps the harness free
// of a direct dependency on prometheus/common.
func parseCounter(body []byte, family, label string) (map[string]float64, bool, error) {
	out := map[string]float64{}
	present := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE "+family+" ") {
			present = true
			continue
		}
		if !strings.HasPrefix(line, family+"{") && !strings.HasPrefix(line, family+" ") {
			continue
		}
		present = true
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			return nil, true, fmt.Errorf("metrics line %q: %w", line, err)
		}
		key := ""
		if i := strings.Index(line, label+`="`); i >= 0 {
			rest := line[i+len(label)+2:]
			key = rest[:strings.IndexByte(rest, '"')]
		}
		out[key] += v
	}
	return out, present, sc.Err()
}

// cpuTime returns the process's user+system CPU time from /proc/PID/stat.
// The fields are in USER_HZ, which Linux fixes at 100 for user space
// whatever the kernel's own tick rate.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are fixed.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	const userHZ = 100
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// memory returns VmHWM (peak resident set) and VmRSS, in bytes.
func memory(pid int) (hwm, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			hwm = n << 10
		case "VmRSS":
			rss = n << 10
		}
	}
	if hwm == 0 {
		return 0, 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
	}
	return hwm, rss, nil
}

// freePort asks the kernel for a free loopback port. The controller cannot
// report the port it bound to 127.0.0.1:0, so the harness picks one; the
// short window in which another process could take it is acceptable here.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// manifest renders one bench Deployment. Template labels carry the run
// label, so dockctl's containers are found and cleaned up with the
// harness's own. maxSurge/maxUnavailable match Swarm's
// --update-parallelism 5 --update-order start-first on 20 replicas.
func (e *env) manifest(name string, replicas int, greeting string) string {
	return e.manifestWith(name, replicas, greeting, "25%", "0")
}

// manifestWith is manifest with the rolling update's surge and unavailable.
func (e *env) manifestWith(name string, replicas int, greeting, surge, unavailable string) string {
	return e.deploymentYAML(name, replicas,
		fmt.Sprintf("  strategy:\n    type: RollingUpdate\n    rollingUpdate: {maxSurge: %s, maxUnavailable: %s}\n", surge, unavailable),
		fmt.Sprintf("        env: [{name: GREETING, value: %q}]\n", greeting))
}

// deploymentYAML renders a Deployment of one workload container listening
// on 8080, its template labelled with the run. strategy (spec lines) and
// container (lines of the container) are inserted as given.
func (e *env) deploymentYAML(name string, replicas int, strategy, container string) string {
	return e.deploymentYAMLLabelled(name, replicas, "", strategy, container)
}

// deploymentYAMLLabelled is deploymentYAML with more template labels
// (flow-mapping entries, each ending in ", ": "group: g, "), after app.
func (e *env) deploymentYAMLLabelled(name string, replicas int, labels, strategy, container string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[2]d
  selector:
    matchLabels: {app: %[1]s}
%[6]s  template:
    metadata:
      labels: {app: %[1]s, %[8]s%[3]s: %[4]s}
    spec:
      containers:
      - name: app
        image: %[5]s
        args: ["--listen=:8080"]
%[7]s`, name, replicas, benchLabel, e.runID, e.image, strategy, container, labels)
}
