package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NotReadyReason is the body of a 503 from /readyz. The controller is ready
// when its last contact with the Docker daemon succeeded, so that is the only
// reason it can be not ready.
const NotReadyReason = "not ready: docker daemon not reachable"

// shutdownTimeout bounds how long Serve waits for in-flight requests (a
// scrape takes milliseconds) once its context ends.
const shutdownTimeout = 5 * time.Second

// Handler serves /metrics (this registry, in the Prometheus text format,
// which a benchmark can parse with a regexp), /healthz (200 "ok" while the process
// serves at all) and /readyz (200 "ok" when ready reports true, else 503
// with NotReadyReason). A nil ready means always ready.
func (m *Metrics) Handler(ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, NotReadyReason, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves h
// until ctx ends, then shuts down gracefully. It returns once listening, with
// the address actually bound (for logs, and for tests that asked for port 0),
// and a channel that receives the server's final error (nil after a clean
// shutdown) and is then closed. A listen failure is returned directly, so
// that a taken port stops the command at startup rather than in a log line.
func Serve(ctx context.Context, addr string, h http.Handler) (string, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	done := make(chan error, 1)
	go func() {
		defer close(done)
		select {
		case err := <-served:
			// The listener failed on its own; nothing left to shut down.
			done <- err
			return
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		done <- err
	}()
	return ln.Addr().String(), done, nil
}
