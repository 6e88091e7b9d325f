package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// requestTimeout bounds one request (connect, send, answer). A request
// that takes longer is a failure of kind "timeout": a user would have given
// up, and a proxy that parks connections must not look like one that works.
const requestTimeout = 5 * time.Second

// httpClient is a minimal HTTP/1.1 client over one TCP connection at a
// time. The harness does not use net/http's Transport on purpose: it
// silently resends a GET that failed on a reused keep-alive connection,
// which would hide exactly the failures the services section counts. Here
// every request is sent once, and every failure is counted and classified.
type httpClient struct {
	addr      string
	keepAlive bool
	path      string

	conn   net.Conn
	br     *bufio.Reader
	reused bool // conn has answered a request before
}

func newHTTPClient(addr string, keepAlive bool) *httpClient {
	return &httpClient{addr: addr, keepAlive: keepAlive, path: "/"}
}

func (c *httpClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
	}
	c.conn, c.br, c.reused = nil, nil, false
}

// do sends one GET and reads the whole answer. It returns the time taken
// and "" on a 200, or the kind of failure. Without keep-alive the request
// asks the server to close, and the client reads to the end of the stream
// before closing: the server closes first, so the client's side holds no
// TIME_WAIT and a client that opens thousands of connections a second
// does not run out of local ports.
func (c *httpClient) do() (time.Duration, string) {
	t0 := time.Now()
	deadline := t0.Add(requestTimeout)
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, requestTimeout)
		if err != nil {
			return time.Since(t0), "connect: " + errKind(err)
		}
		c.conn, c.br, c.reused = conn, bufio.NewReader(conn), false
	}
	reused := c.reused
	fail := func(stage string, err error) (time.Duration, string) {
		c.close()
		kind := stage + ": " + errKind(err)
		if reused {
			// A server or proxy closing an idle keep-alive connection just
			// as the next request goes out. Real clients (Go's Transport,
			// browsers) resend in that case; it is counted all the same,
			// under its own kind, so the reader can tell it apart.
			kind += " (reused keep-alive connection)"
		}
		return time.Since(t0), kind
	}
	_ = c.conn.SetDeadline(deadline)
	req := "GET " + c.path + " HTTP/1.1\r\nHost: dockbench\r\nUser-Agent: dockbench\r\n"
	if !c.keepAlive {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c.conn, req+"\r\n"); err != nil {
		return fail("send", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return fail("answer", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return fail("body", err)
	}
	if resp.StatusCode != http.StatusOK {
		c.close()
		return time.Since(t0), fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	if !c.keepAlive || resp.Close {
		if !c.keepAlive {
			// Wait for the server's FIN (see above); the answer is complete,
			// so an error here is no failure of the request.
			_, _ = io.Copy(io.Discard, c.br)
		}
		// A server that announces Connection: close (Go's does so while it
		// shuts down gracefully) is no failure either: the next request
		// opens a new connection, as any client does.
		c.close()
		return time.Since(t0), ""
	}
	c.reused = true
	return time.Since(t0), ""
}

// errKind reduces a network error to a short, stable kind.
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no free local port (the harness's side)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed by the server"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("timeout (%s)", requestTimeout)
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// trafficResult is what one client saw: requests sent, those that failed
// by kind, and the slowest one.
type trafficResult struct {
	Mode    string         `json:"mode"`
	Sent    int            `json:"sent"`
	Failed  int            `json:"failed"`
	Kinds   map[string]int `json:"kinds,omitempty"`
	Slowest time.Duration  `json:"slowestNs"`
}

// kindsString lists failure kinds, most frequent first.
func (r trafficResult) kindsString() string {
	kinds := sortedKeys(r.Kinds)
	sort.SliceStable(kinds, func(i, j int) bool { return r.Kinds[kinds[i]] > r.Kinds[kinds[j]] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d", k, r.Kinds[k])
	}
	return strings.Join(parts, ", ")
}

// trafficModes are the two clients of a failure measurement: one opens a
// new connection per request, the other keeps one alive.
var trafficModes = []struct {
	name      string
	keepAlive bool
}{
	{"new connection per request", false},
	{"keep-alive", true},
}

// traffic runs one client per mode against addr, each sending requests
// back to back as fast as the answers come, until stopped.
type traffic struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	res   []trafficResult
}

func startTraffic(addr string) *traffic {
	t := &traffic{stopc: make(chan struct{}), res: make([]trafficResult, len(trafficModes))}
	for i, m := range trafficModes {
		t.res[i] = trafficResult{Mode: m.name, Kinds: map[string]int{}}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			c := newHTTPClient(addr, m.keepAlive)
			defer c.close()
			for {
				select {
				case <-t.stopc:
					return
				default:
				}
				d, kind := c.do()
				t.mu.Lock()
				r := &t.res[i]
				r.Sent++
				r.Slowest = max(r.Slowest, d)
				if kind != "" {
					r.Failed++
					r.Kinds[kind]++
				}
				t.mu.Unlock()
				if kind != "" && strings.HasPrefix(kind, "connect: ") {
					// Nothing listens (a port between two containers): do not
					// spin a core on refused connects, which would starve the
					// engine that is bringing the next one up.
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	return t
}

// snapshot returns the results so far and resets them.
func (t *traffic) snapshot() []trafficResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]trafficResult, len(t.res))
	for i, r := range t.res {
		out[i] = r
		t.res[i] = trafficResult{Mode: r.Mode, Kinds: map[string]int{}}
	}
	return out
}

func (t *traffic) stop() []trafficResult {
	close(t.stopc)
	t.wg.Wait()
	return t.snapshot()
}

// trafficTail is how long the clients keep going once the operation is
// over, so that a failure just after the last container change is caught.
const trafficTail = time.Second

// measureFailures runs both clients against addr while op runs. The
// clients first run for half a second on their own: a failure then means
// the path is broken before the operation, which makes the figure
// meaningless, and is an error. Counting starts just before op and ends
// trafficTail after it returns.
func measureFailures(ctx context.Context, addr string, op func(context.Context) error) ([]trafficResult, error) {
	t := startTraffic(addr)
	select {
	case <-time.After(500 * time.Millisecond):
	case <-ctx.Done():
		t.stop()
		return nil, ctx.Err()
	}
	for _, r := range t.snapshot() {
		if r.Sent == 0 || r.Failed > 0 {
			t.stop()
			return nil, fmt.Errorf("%s to %s already fails before the operation: %d of %d failed (%s)", r.Mode, addr, r.Failed, r.Sent, r.kindsString())
		}
	}
	err := op(ctx)
	select {
	case <-time.After(trafficTail):
	case <-ctx.Done():
	}
	res := t.stop()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// recordFailures adds one figure per client: the failed requests, with
// what was sent, the kinds and the slowest request beside it.
func recordFailures(rep *report, section, what string, res []trafficResult) {
	for _, r := range res {
		detail := fmt.Sprintf("of %d sent", r.Sent)
		if r.Failed > 0 {
			detail += "; " + r.kindsString()
		}
		detail += fmt.Sprintf("; slowest %s", r.Slowest.Round(time.Millisecond))
		rep.count(section, fmt.Sprintf("%s, %s: failed requests", what, r.Mode), float64(r.Failed), "failed", detail)
		logf("  %s, %s: %d of %d failed %s", what, r.Mode, r.Failed, r.Sent, r.kindsString())
	}
}

// loadResult is one closed-loop load measurement: latencies of the
// successful requests, and how many there were.
type loadResult struct {
	Latencies []time.Duration
	Failed    int
	Elapsed   time.Duration
}

// runLoad sends requests to addr from conc keep-alive clients, each one
// request at a time, for d (after a short warm-up that opens the
// connections and is not counted).
func runLoad(ctx context.Context, addr string, conc int, d time.Duration) (loadResult, error) {
	const warmup = 300 * time.Millisecond
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+d)
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newHTTPClient(addr, true)
			defer c.close()
			var lat []time.Duration
			failed := 0
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				dur, kind := c.do()
				if t0.Before(measureFrom) {
					continue
				}
				if kind != "" {
					failed++
					continue
				}
				lat = append(lat, dur)
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, lat...)
			res.Failed += failed
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Elapsed = d
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.Latencies) == 0 {
		return res, fmt.Errorf("no request to %s succeeded", addr)
	}
	return res, nil
}

// percentile is the nearest-rank percentile (q in 0..1) of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// waitHTTP polls addr until n requests in a row answer 200, or timeout.
func waitHTTP(ctx context.Context, addr string, n int, timeout time.Duration) error {
	return pollHTTP(ctx, addr, n, timeout, 100*time.Millisecond)
}

// pollHTTP is waitHTTP with a pause of every after each failed request.
func pollHTTP(ctx context.Context, addr string, n int, timeout, every time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := newHTTPClient(addr, false)
	defer c.close()
	ok, last := 0, ""
	for ok < n {
		if _, kind := c.do(); kind == "" {
			ok++
			continue
		} else {
			ok, last = 0, kind
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 %d times in a row within %s (last failure: %s)", addr, n, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
	return nil
}
