// Command workload is the tiny HTTP server that dockctl's tests and demo run
// in containers. It is built static (CGO_ENABLED=0) into an image FROM
// scratch, so it also carries its own probe client ("workload probe URL"):
// there is no shell or curl for exec probes and HEALTHCHECKs to call.
//
// Every failure mode a test needs can be scheduled with a flag or triggered
// over HTTP: crash, clean exit, turn unhealthy, become ready late.
//
// The text served at / is --message, else the GREETING environment variable,
// else "hello from workload"; it is logged at startup, so a manifest's env
// shows in `dockctl logs`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probeCmd(os.Args[2:], os.Stderr))
	}
	os.Exit(run(os.Args[1:]))
}

// probeCmd implements "workload probe URL": exit 0 on a 2xx answer, else 1.
func probeCmd(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: workload probe URL")
		return 2
	}
	if err := probe(args[0], 10*time.Second); err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}
	return 0
}

func probe(url string, timeout time.Duration) error {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

type config struct {
	listen         string
	message        string
	messageFrom    string // where message came from: --message, GREETING or default
	crashAfter     time.Duration
	exitCode       int
	exitAfter      time.Duration
	unhealthyAfter time.Duration
	readyAfter     time.Duration
	ignoreSIGTERM  bool
	writeFile      string
	requireFile    string
}

// defaultMessage is served at / when neither --message nor GREETING is set.
const defaultMessage = "hello from workload"

func parseFlags(args []string) (config, error) {
	return parseFlagsEnv(args, os.LookupEnv)
}

// parseFlagsEnv parses args; lookupEnv supplies GREETING, which replaces the
// default of --message (so a manifest's env shows in the answer at / and in
// the container's log), while an explicit --message still wins.
func parseFlagsEnv(args []string, lookupEnv func(string) (string, bool)) (config, error) {
	c := config{messageFrom: "default"}
	message := defaultMessage
	if v, ok := lookupEnv("GREETING"); ok {
		message, c.messageFrom = v, "GREETING"
	}
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	fs.StringVar(&c.listen, "listen", ":8080", "address to listen on")
	fs.StringVar(&c.message, "message", message, "text served at / (GREETING, when set, replaces the default)")
	fs.DurationVar(&c.crashAfter, "crash-after", 0, "exit with --exit-code after this long (0 = never)")
	fs.IntVar(&c.exitCode, "exit-code", 1, "exit code used by --crash-after")
	fs.DurationVar(&c.exitAfter, "exit-after", 0, "exit 0 after this long (0 = never)")
	fs.DurationVar(&c.unhealthyAfter, "unhealthy-after", 0, "/healthz answers 503 after this long (0 = never)")
	fs.DurationVar(&c.readyAfter, "ready-after", 0, "/readyz answers 503 until this long has passed")
	fs.BoolVar(&c.ignoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM, so that `docker stop` must wait for its timeout and kill")
	fs.StringVar(&c.requireFile, "require-file", "", "exit 1 at startup unless this file exists (e.g. one an init container wrote)")
	fs.StringVar(&c.writeFile, "write-file", "", "write the message to this file at startup (after --require-file), exit 1 if that fails")
	err := fs.Parse(args)
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "message" {
			c.messageFrom = "--message"
		}
	})
	return c, err
}

func run(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		return 2
	}
	// The files come first, so that an init container made of them fails
	// or succeeds before anything else happens.
	if cfg.requireFile != "" {
		if _, err := os.Stat(cfg.requireFile); err != nil {
			log.Printf("workload: --require-file: %v", err)
			return 1
		}
	}
	if cfg.writeFile != "" {
		if err := os.WriteFile(cfg.writeFile, []byte(cfg.message+"\n"), 0o644); err != nil {
			log.Printf("workload: --write-file: %v", err)
			return 1
		}
		log.Printf("workload: wrote %s", cfg.writeFile)
	}
	// exits carries an exit code from a handler or a timer to main, which
	// owns the process lifetime.
	exits := make(chan int, 1)
	s := newServer(cfg, time.Now, func(code int) {
		select {
		case exits <- code:
		default: // an exit is already under way
		}
	})
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		log.Printf("workload: %v", err)
		return 1
	}
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("workload: listening on %s\n", ln.Addr())
	log.Printf("workload: pid %d, message %q (from %s)", os.Getpid(), cfg.message, cfg.messageFrom)

	if cfg.crashAfter > 0 {
		time.AfterFunc(cfg.crashAfter, func() { log.Printf("workload: crashing (--crash-after)"); s.exit(cfg.exitCode) })
	}
	if cfg.exitAfter > 0 {
		time.AfterFunc(cfg.exitAfter, func() { log.Printf("workload: exiting (--exit-after)"); s.exit(0) })
	}

	// As PID 1 of a container, a signal without a handler is ignored, so
	// SIGTERM must be caught explicitly for `docker stop` to be prompt.
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	if cfg.ignoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
		sigs = sigs[1:]
		log.Printf("workload: ignoring SIGTERM (--ignore-sigterm)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	code := 0
	select {
	case <-ctx.Done():
		log.Printf("workload: signal received, shutting down")
	case code = <-exits:
	case err := <-serveErr:
		log.Printf("workload: %v", err)
		return 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Printf("workload: shutdown: %v", err)
	}
	return code
}

type server struct {
	cfg       config
	start     time.Time
	now       func() time.Time
	exit      func(code int)
	unhealthy atomic.Bool // set by /unhealthy
}

func newServer(cfg config, now func() time.Time, exit func(int)) *server {
	return &server{cfg: cfg, start: now(), now: now, exit: exit}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handleRoot)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /readyz", s.handleReadyz)
	mux.HandleFunc("/crash", s.handleCrash)
	mux.HandleFunc("/exit", s.handleExit)
	mux.HandleFunc("/unhealthy", s.handleUnhealthy)
	return mux
}

func (s *server) elapsed() time.Duration { return s.now().Sub(s.start) }

func (s *server) handleRoot(w http.ResponseWriter, _ *http.Request) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "%s\nhostname: %s\n", s.cfg.message, host)
	if v, ok := os.LookupEnv("DOCKCTL_TEST_VALUE"); ok {
		fmt.Fprintf(w, "DOCKCTL_TEST_VALUE=%s\n", v)
	}
}

func (s *server) healthy() bool {
	if s.unhealthy.Load() {
		return false
	}
	return s.cfg.unhealthyAfter <= 0 || s.elapsed() < s.cfg.unhealthyAfter
}

func (s *server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	if !s.healthy() {
		http.Error(w, "unhealthy", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *server) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	if s.elapsed() < s.cfg.readyAfter {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *server) handleCrash(w http.ResponseWriter, _ *http.Request) {
	s.respondThenExit(w, 1, "crashing")
}

func (s *server) handleExit(w http.ResponseWriter, r *http.Request) {
	code := 0
	if q := r.URL.Query().Get("code"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > 255 {
			http.Error(w, "code must be 0..255", http.StatusBadRequest)
			return
		}
		code = n
	}
	s.respondThenExit(w, code, fmt.Sprintf("exiting with code %d", code))
}

func (s *server) handleUnhealthy(w http.ResponseWriter, _ *http.Request) {
	s.unhealthy.Store(true)
	fmt.Fprintln(w, "now unhealthy")
}

// respondThenExit flushes the answer before exiting, so the caller learns
// that its request was taken.
func (s *server) respondThenExit(w http.ResponseWriter, code int, msg string) {
	fmt.Fprintln(w, msg)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	log.Printf("workload: %s (HTTP request)", msg)
	s.exit(code)
}
