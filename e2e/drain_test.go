//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The load generator of the drain tests: goroutines on the host sending
// GETs through a published Service port as fast as they can, one kind with
// a new connection per request, one over keep-alive connections. A request
// fails when it gets no answer or an answer other than 200; Go's transport
// retries a GET on a reused connection that closed before answering, as
// every keep-alive client does, so a server closing an idle connection is
// not a failure.

const (
	newConn   = 0 // a new connection per request
	keepAlive = 1 // requests over keep-alive connections
)

var loadModeNames = [2]string{"new connection per request", "keep-alive"}

type loadGen struct {
	url             string
	host            string // the Host header; "" the URL's
	ok, failed      [2]atomic.Int64
	mu              sync.Mutex
	errs            []string // the first failures, with their time
	phases          []loadPhase
	markOK, markBad [2]int64 // counts at the last mark
	markAt          time.Time
	done            chan struct{}
	stopOnce        sync.Once
	wg              sync.WaitGroup
}

// loadPhase is the requests between two marks, per mode.
type loadPhase struct {
	name       string
	took       time.Duration
	ok, failed [2]int64
}

func (p loadPhase) failures() int64 { return p.failed[newConn] + p.failed[keepAlive] }

func (p loadPhase) String() string {
	return fmt.Sprintf("%s (%s): new connections %d ok %d failed; keep-alive %d ok %d failed",
		p.name, p.took.Round(time.Millisecond), p.ok[newConn], p.failed[newConn], p.ok[keepAlive], p.failed[keepAlive])
}

// loadWorkers is the number of goroutines per mode: on a 2-core machine
// more only starve the controller and Docker, which the test needs.
const loadWorkers = 2

func startLoad(t testing.TB, url string) *loadGen {
	t.Helper()
	return startLoadAs(t, url, "")
}

// startLoadAs is startLoad with the Host header host (a gateway routes by
// it); "" keeps the URL's.
func startLoadAs(t testing.TB, url, host string) *loadGen {
	t.Helper()
	l := &loadGen{url: url, host: host, done: make(chan struct{}), markAt: time.Now()}
	for mode := range 2 {
		for range loadWorkers {
			l.wg.Add(1)
			go l.worker(mode)
		}
	}
	t.Cleanup(l.stop)
	return l
}

func (l *loadGen) worker(mode int) {
	defer l.wg.Done()
	tr := &http.Transport{DisableKeepAlives: mode == newConn, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for {
		select {
		case <-l.done:
			return
		default:
		}
		err := l.get(c)
		if err == nil {
			l.ok[mode].Add(1)
			continue
		}
		l.failed[mode].Add(1)
		l.mu.Lock()
		if len(l.errs) < 20 {
			l.errs = append(l.errs, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), loadModeNames[mode], err))
		}
		l.mu.Unlock()
	}
}

func (l *loadGen) get(c *http.Client) error {
	req, err := http.NewRequest(http.MethodGet, l.url, nil)
	if err != nil {
		return err
	}
	if l.host != "" {
		req.Host = l.host
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// mark ends the current phase and returns its counts.
func (l *loadGen) mark(name string) loadPhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := loadPhase{name: name, took: time.Since(l.markAt)}
	for m := range 2 {
		ok, bad := l.ok[m].Load(), l.failed[m].Load()
		p.ok[m], p.failed[m] = ok-l.markOK[m], bad-l.markBad[m]
		l.markOK[m], l.markBad[m] = ok, bad
	}
	l.markAt = time.Now()
	l.phases = append(l.phases, p)
	return p
}

// waitRequests waits until each mode has made n more requests since the
// last mark.
func (l *loadGen) waitRequests(t testing.TB, n int64) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d requests of each kind", n), func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		var made [2]int64
		for m := range 2 {
			made[m] = l.ok[m].Load() + l.failed[m].Load() - l.markOK[m] - l.markBad[m]
		}
		return made[newConn] >= n && made[keepAlive] >= n, fmt.Sprint(made)
	})
}

func (l *loadGen) stop() {
	l.stopOnce.Do(func() {
		close(l.done)
		l.wg.Wait()
	})
}

// report is one line per phase and the totals.
func (l *loadGen) report() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "requests through %s:\n", l.url)
	for _, p := range l.phases {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	fmt.Fprintf(&b, "  total: new connections %d ok %d failed; keep-alive %d ok %d failed",
		l.ok[newConn].Load(), l.failed[newConn].Load(), l.ok[keepAlive].Load(), l.failed[keepAlive].Load())
	return b.String()
}

func (l *loadGen) firstErrors() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.errs, "\n")
}

// TestServiceDrain (issue 10 item 6, the headline result): a client sending
// requests as fast as it can through a published Service — new connections
// and keep-alive — sees 0 failed requests during a `rollout restart` of 4
// replicas and during a scale 4 → 1 → 4. Each replica leaves the Service
// (acknowledged by the proxy) before its stop signal; the workload drains
// (readiness 503, Connection: close) for --drain-delay, then shuts down
// gracefully.
func TestServiceDrain(t *testing.T) {
	e, _, port := publishedWeb(t, 4, "--drain-delay=1s")
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitHostAnswers(t, url, "hello from workload")
	before := map[string]bool{}
	for _, c := range e.podsOf("default", "web") {
		before[c.ID] = true
	}

	l := startLoad(t, url)
	l.waitRequests(t, 50)
	l.mark("warm-up")

	start := time.Now()
	e.mustDockctl("", "rollout", "restart", "deployment/web")
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "3m")
	// Until the old replicas are gone, not only replaced: their drain and
	// stop are what this measures.
	eventually(t, 2*time.Minute, "4 new replicas and no old one", func() (bool, string) {
		cs := e.podsOf("default", "web")
		ok := len(cs) == 4
		for _, c := range cs {
			ok = ok && !before[c.ID] && c.State == "running"
		}
		return ok, describe(cs)
	})
	restart := l.mark("rollout restart of 4 replicas")
	t.Logf("rollout restart of 4 replicas done in %s", time.Since(start).Round(time.Millisecond))

	e.mustDockctl("", "scale", "deployment", "web", "--replicas", "1")
	e.waitPodsRunning("default", "web", 1)
	down := l.mark("scale 4 → 1")
	e.mustDockctl("", "scale", "deployment", "web", "--replicas", "4")
	e.waitPodsRunning("default", "web", 4)
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	l.waitRequests(t, 50) // traffic onto the new replicas too
	up := l.mark("scale 1 → 4")
	l.stop()

	t.Log(l.report())
	for _, p := range []loadPhase{restart, down, up} {
		if p.ok[newConn] == 0 || p.ok[keepAlive] == 0 {
			t.Errorf("%s: a kind of client made no successful request; the test measured nothing", p)
		}
	}
	var failed int64
	for _, p := range l.phases {
		failed += p.failures()
	}
	if failed > 0 {
		t.Errorf("%d requests failed; want 0. First errors:\n%s", failed, l.firstErrors())
	}
}
