package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/events"
)

// benchSteady converges D deployments × R replicas, waits until nothing
// happens, then measures an idle window: the controller's CPU time, its
// peak RSS, and the Docker API calls it made — both as the controller
// reports them (dockctl_docker_api_calls_total, when exported) and as
// counted independently by a proxy in front of the Docker socket.
func benchSteady(ctx context.Context, e *env, s settings, rep *report) error {
	rep.note("steady state: %d deployments × %d replicas, idle window %s, controller --resync-period %s",
		s.SteadyDeploys, s.SteadyReplicas, s.SteadyIdle, s.SteadyResync)
	return measureSteady(ctx, e, s, rep, "steady state", "steady")
}

// measureSteady is benchSteady's measurement, its figures recorded under
// section, with a controller of that name (the baseline comparison runs it
// once per binary).
func measureSteady(ctx context.Context, e *env, s settings, rep *report, section, name string) error {
	total := s.SteadyDeploys * s.SteadyReplicas
	proxy, err := startCountingProxy(e)
	if err != nil {
		rep.note("%s: no API-call proxy (%v): proxy counts are n/a", section, err)
	}
	dockerHost := ""
	if proxy != nil {
		defer proxy.close()
		dockerHost = "unix://" + proxy.sock
	}
	c, err := e.startController(ctx, name, s.SteadyResync, dockerHost)
	if err != nil {
		return err
	}
	defer c.stop()

	var docs []string
	for i := 0; i < s.SteadyDeploys; i++ {
		docs = append(docs, e.manifest(fmt.Sprintf("idle-%03d", i), s.SteadyReplicas, "v1"))
	}
	// Converging is measured too, as a bonus figure: it is the many-
	// deployments case of scale-up (D syncs in parallel, not one).
	w := e.hub.watch()
	t0 := time.Now()
	if err := c.apply(ctx, strings.Join(docs, "---\n")); err != nil {
		w.close()
		return err
	}
	t1, err := w.until(ctx, time.Duration(total)*time.Second+time.Minute,
		countEvents(string(events.ActionStart), "io.dockctl.instance", c.instance, total, nil))
	w.close()
	if err != nil {
		return fmt.Errorf("converge %d containers: %w", total, err)
	}
	rep.duration(section, fmt.Sprintf("dockctl converge 0 → %d deployments × %d (apply → last start)", s.SteadyDeploys, s.SteadyReplicas), t1.Sub(t0))
	if _, err := e.waitRunning(ctx, total, time.Minute, "io.dockctl.instance="+c.instance); err != nil {
		return err
	}
	if err := waitQuiet(ctx, e, c.instance, 3*time.Second, time.Minute); err != nil {
		return err
	}

	// The window. Everything is read right before and right after it.
	calls0, present0, merr0 := c.apiCalls(ctx)
	var proxy0 map[string]int64
	if proxy != nil {
		proxy0 = proxy.snapshot()
	}
	cpu0, err := cpuTime(c.pid())
	if err != nil {
		return err
	}
	wq := e.hub.watch()
	start := time.Now()
	select {
	case <-time.After(s.SteadyIdle):
	case <-ctx.Done():
		wq.close()
		return ctx.Err()
	}
	cpu1, err := cpuTime(c.pid())
	if err != nil {
		wq.close()
		return err
	}
	window := time.Since(start)
	calls1, present1, merr1 := c.apiCalls(ctx)
	var proxy1 map[string]int64
	if proxy != nil {
		proxy1 = proxy.snapshot()
	}
	hwm, rss, err := memory(c.pid())
	if err != nil {
		wq.close()
		return err
	}
	// Container events in the window would mean the controller (or
	// someone) changed something: the idle figures would not be idle.
	wq.mu.Lock()
	eventsInWindow := len(wq.queue)
	wq.mu.Unlock()
	wq.close()

	cpu := cpu1 - cpu0
	rep.value(section, "idle window", window.Seconds(), "s")
	rep.value(section, "controller CPU in window", cpu.Seconds(), "s")
	rep.value(section, "controller CPU, % of one core", 100*cpu.Seconds()/window.Seconds(), "%")
	rep.value(section, "controller peak RSS (VmHWM, whole life)", float64(hwm)/(1<<20), "MiB")
	rep.value(section, "controller RSS at end (VmRSS)", float64(rss)/(1<<20), "MiB")
	rep.value(section, "container events in window (should be 0)", float64(eventsInWindow), "")

	switch {
	case merr0 != nil || merr1 != nil:
		rep.na(section, "API calls (dockctl metrics)", errors.Join(merr0, merr1).Error())
	case !present0 || !present1:
		rep.na(section, "API calls (dockctl metrics)", "dockctl does not export dockctl_docker_api_calls_total")
	default:
		var ops []string
		for op := range calls1 {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		writes := 0.0
		for _, op := range ops {
			d := calls1[op] - calls0[op]
			if d == 0 && op != "list" {
				continue // as for the proxy counts: no rows of zeros
			}
			rep.value(section, "API calls (dockctl metrics): "+op, d, "")
			if isWrite(op) {
				writes += d
			}
		}
		rep.value(section, "API write calls (dockctl metrics)", writes, "")
	}
	if proxy != nil {
		ops := map[string]bool{}
		for op := range proxy1 {
			ops[op] = true
		}
		var names []string
		for op := range ops {
			names = append(names, op)
		}
		sort.Strings(names)
		writes := int64(0)
		for _, op := range names {
			d := proxy1[op] - proxy0[op]
			// Operations the controller made before the window but not in
			// it would only add rows of zeros; list is always shown.
			if d == 0 && op != "list" {
				continue
			}
			rep.value(section, "API calls (proxy count): "+op, float64(d), "")
			if isWrite(op) {
				writes += d
			}
		}
		rep.value(section, "API write calls (proxy count)", float64(writes), "")
		// The target (BENCHMARKS.md, Steady state) is at most one list per
		// deployment per resync period (one per resync for the whole
		// instance is better): an idle controller must not poll Docker.
		lists := proxy1["list"] - proxy0["list"]
		resyncs := window.Seconds() / s.SteadyResync.Seconds()
		rep.value(section, "lists per deployment per resync period (proxy count)",
			float64(lists)/float64(s.SteadyDeploys)/resyncs, "")
	}
	return nil
}

// waitQuiet returns once the instance's containers have emitted no event
// for quiet: the controller has nothing left to do.
func waitQuiet(ctx context.Context, e *env, instance string, quiet, timeout time.Duration) error {
	w := e.hub.watch()
	defer w.close()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		_, err := w.until(ctx, quiet, func(m events.Message) bool {
			return m.Actor.Attributes["io.dockctl.instance"] == instance
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // no event for quiet
		}
	}
	return fmt.Errorf("instance %s never went quiet within %s", instance, timeout)
}

// countingProxy sits between the controller and the Docker socket and
// counts requests by operation. It measures what the controller does
// without relying on the controller's own metrics.
type countingProxy struct {
	sock   string
	srv    *http.Server
	mu     sync.Mutex
	counts map[string]int64
}

func startCountingProxy(e *env) (*countingProxy, error) {
	return startCountingProxyAt(e, "docker-proxy.sock")
}

// startCountingProxyAt is startCountingProxy on a socket of the given file
// name in the run's temporary directory, so that several controllers
// measured in the same window (the workloads section's idle cost) each
// have their own count.
func startCountingProxyAt(e *env, file string) (*countingProxy, error) {
	host := e.cli.DaemonHost()
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "unix" {
		return nil, fmt.Errorf("DOCKER_HOST %q is not a unix socket", host)
	}
	upstream := u.Path
	p := &countingProxy{sock: filepath.Join(e.tmp, file), counts: map[string]int64{}}
	ln, err := net.Listen("unix", p.sock)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(p.sock, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = "docker"
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", upstream)
			},
		},
		// The event stream must reach the controller as it happens.
		FlushInterval: -1,
	}
	p.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			op := classify(r.Method, r.URL.Path)
			p.mu.Lock()
			p.counts[op]++
			p.mu.Unlock()
			rp.ServeHTTP(w, r)
		}),
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *countingProxy) snapshot() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

func (p *countingProxy) close() { _ = p.srv.Close() }

var apiVersionPrefix = regexp.MustCompile(`^/v[0-9.]+`)

// classify names an Engine API request by the operation it performs.
func classify(method, path string) string {
	path = apiVersionPrefix.ReplaceAllString(path, "")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/_ping":
		return "ping"
	case path == "/events":
		return "events"
	case path == "/version" || path == "/info":
		return strings.TrimPrefix(path, "/")
	case path == "/containers/json":
		return "list"
	case path == "/containers/create":
		return "create"
	case parts[0] == "containers" && len(parts) == 2 && method == http.MethodDelete:
		return "remove"
	case parts[0] == "containers" && len(parts) == 3 && parts[2] == "json":
		return "inspect"
	case parts[0] == "containers" && len(parts) == 3:
		return parts[2] // start, stop, kill, unpause, pause, restart, logs, …
	case path == "/images/create":
		return "pull"
	case parts[0] == "images":
		return "image"
	}
	return "other " + method + " " + parts[0]
}

// isWrite reports whether an operation changes something in the engine.
func isWrite(op string) bool {
	switch op {
	case "create", "pull", "remove", "start", "stop", "kill", "unpause", "pause", "restart", "update", "rename":
		return true
	}
	return strings.HasPrefix(op, "other POST") || strings.HasPrefix(op, "other DELETE")
}
