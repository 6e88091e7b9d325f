// Command workload is the tiny HTTP server that dockctl's tests and demo run
// in containers. It is built static (CGO_ENABLED=0) into an image FROM
// scratch, so it also carries its own probe client ("workload probe URL"):
// there is no shell or curl for exec probes and HEALTHCHECKs to call. For
// the same reason "workload cat FILE" prints a file, for `docker exec`, and
// "workload wait HOST:PORT" waits until a port accepts connections.
//
// With DOCKCTL_STANDIN set it stands in for another image (standin.go).
//
// Every failure mode a test needs can be scheduled with a flag or triggered
// over HTTP: crash, clean exit, turn unhealthy, become ready late.
//
// The text served at / is --message, else the GREETING environment variable,
// else "hello from workload"; it is logged at startup, so a manifest's env
// shows in `dockctl logs`. /whoami answers the hostname alone (the pod's
// name), so that a test can count which replica answered. /ws is a
// WebSocket that echoes each message prefixed with the hostname and a
// space, so that a test through a gateway sees which replica holds it.
//
// With --backend URL (repeatable) it is the front end of a two-tier
// application: GET / also calls each back end and adds its answer, or
// answers 502 naming the back end that failed.
//
// Stopping is graceful, as a well-behaved service behind a load balancer
// stops: on SIGTERM /readyz turns 503 and every response carries
// "Connection: close" (keep-alive clients reconnect, through a Service, to
// another replica, instead of finding their connection closed under them),
// for --drain-delay (the preStop sleep of Kubernetes manifests); then
// http.Server.Shutdown closes the listener and the idle connections and
// waits for the requests in flight, for at most --shutdown-timeout.
// Shutdown does not wait for a WebSocket (a hijacked connection): it
// lives through the drain and ends when the process exits, as a pod's
// WebSockets end when its container stops after its grace period.
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
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/internal/standinapi"
	"golang.org/x/net/websocket"
)

func main() {
	if path, ok := os.LookupEnv(standinapi.Env); ok {
		os.Exit(standinMain(path, os.Args, os.Getpid()))
	}
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probeCmd(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "stat" {
		os.Exit(statCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "cat" {
		os.Exit(catCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "wait" {
		os.Exit(waitCmd(os.Args[2:], os.Stderr, tcpDial, time.Sleep))
	}
	if len(os.Args) > 1 && os.Args[1] == "procs" {
		os.Exit(procsCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:]))
}

// waitCmd implements "workload wait HOST:PORT": it dials HOST:PORT once a
// second until a connection is accepted, then exits 0. It is the init
// container `dockctl convert` makes for a Compose depends_on, run from
// this image (--wait-image) where no image with nc can be pulled.
func waitCmd(args []string, stderr io.Writer, dial func(string) error, sleep func(time.Duration)) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: workload wait HOST:PORT")
		return 2
	}
	_, portName, err := net.SplitHostPort(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "workload wait:", err)
		return 2
	}
	// A port no dial can reach would make the init container wait
	// forever: refuse it at once (a name is looked up as Dial does).
	if port, err := net.LookupPort("tcp", portName); err != nil || port < 1 || port > 65535 {
		fmt.Fprintf(stderr, "workload wait: %s: no port from 1 to 65535\n", args[0])
		return 2
	}
	for {
		err := dial(args[0])
		if err == nil {
			fmt.Fprintf(stderr, "workload wait: %s answers\n", args[0])
			return 0
		}
		fmt.Fprintf(stderr, "workload wait: %s: %v\n", args[0], err)
		sleep(time.Second)
	}
}

// tcpDial connects to addr and closes the connection.
func tcpDial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// procsCmd implements "workload procs STOPFILE PATTERN": until STOPFILE
// exists (at most five minutes) it reads /proc as fast as it can and
// prints, once each, every process whose command line contains PATTERN
// ("PID CMDLINE"), then how many scans it made ("scans N"). It is how a
// test watches what a pod that shares its process namespace can see.
func procsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: workload procs STOPFILE PATTERN")
		return 2
	}
	seen := map[string]bool{strconv.Itoa(os.Getpid()): true} // its own command line holds PATTERN
	scans := 0
	for end := time.Now().Add(5 * time.Minute); time.Now().Before(end); scans++ {
		if _, err := os.Stat(args[0]); err == nil {
			break
		}
		entries, err := os.ReadDir("/proc")
		if err != nil {
			fmt.Fprintln(stderr, "workload procs:", err)
			return 1
		}
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil || seen[e.Name()] {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
			if strings.Contains(cmd, args[1]) {
				seen[e.Name()] = true
				fmt.Fprintf(stdout, "%s %s\n", e.Name(), cmd)
			}
		}
	}
	fmt.Fprintf(stdout, "scans %d\n", scans)
	return 0
}

// catCmd implements "workload cat FILE": the file's content on stdout,
// following symlinks (a configMap volume's files are links into its
// ..data directory), for `docker exec` in an image without a shell.
func catCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: workload cat FILE")
		return 2
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "cat:", err)
		return 1
	}
	_, _ = stdout.Write(b)
	return 0
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

	backends        []string // front-end mode: URLs GET / calls
	backendTimeout  time.Duration
	drainDelay      time.Duration
	shutdownTimeout time.Duration
	grpcListen      string // grpc.go
}

// backendFlag collects repeated --backend values, each an absolute http URL.
type backendFlag struct{ urls *[]string }

func (b backendFlag) String() string {
	if b.urls == nil {
		return ""
	}
	return strings.Join(*b.urls, ",")
}

func (b backendFlag) Set(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return err
	}
	if u.Scheme != "http" || u.Host == "" {
		// FROM scratch holds no CA certificates: https could not work.
		return fmt.Errorf("%q: want an http:// URL with a host", v)
	}
	*b.urls = append(*b.urls, v)
	return nil
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
	fs.Var(backendFlag{&c.backends}, "backend", "front-end mode: GET / also calls this URL and shows its answer (repeatable)")
	fs.DurationVar(&c.backendTimeout, "backend-timeout", 2*time.Second, "how long GET / waits for each --backend")
	fs.DurationVar(&c.drainDelay, "drain-delay", 0, "on SIGTERM, keep serving this long (readiness 503, connections closed after each response) before shutting down")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 25*time.Second, "how long a shutdown waits for requests in flight before it closes their connections")
	fs.StringVar(&c.grpcListen, "grpc-listen", "", "also serve the gRPC health service (grpc.health.v1) here, SERVING while /readyz is ready")
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
	if cfg.grpcListen != "" {
		stopGRPC, err := s.serveGRPCHealth(cfg.grpcListen)
		if err != nil {
			log.Printf("workload: --grpc-listen: %v", err)
			return 1
		}
		defer stopGRPC()
	}
	fmt.Printf("workload: listening on %s\n", ln.Addr())
	log.Printf("workload: pid %d, message %q (from %s)", os.Getpid(), cfg.message, cfg.messageFrom)
	for _, b := range cfg.backends {
		log.Printf("workload: front end of %s", b)
	}

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
	return s.serve(ctx, srv, ln, exits, time.After)
}

// exitShutdownTimeout bounds the shutdown after /crash, /exit and the
// timed exits: they stand for a process that ends on its own, which does
// not wait for long requests.
const exitShutdownTimeout = 2 * time.Second

// serve runs srv on ln until ctx ends (a stop signal) or exits delivers an
// exit code, and returns the process's exit code. On a stop signal it
// drains for cfg.drainDelay (after is time.After, replaced in tests), then
// shuts down gracefully; an exit during the drain cuts it short.
func (s *server) serve(ctx context.Context, srv *http.Server, ln net.Listener, exits <-chan int, after func(time.Duration) <-chan time.Time) int {
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	code, timeout := 0, exitShutdownTimeout
	select {
	case <-ctx.Done():
		timeout = s.cfg.shutdownTimeout
		s.draining.Store(true)
		log.Printf("workload: signal received")
		if d := s.cfg.drainDelay; d > 0 {
			log.Printf("workload: draining for %v (--drain-delay)", d)
			select {
			case <-after(d):
			case code = <-exits:
				timeout = exitShutdownTimeout
			}
		}
		log.Printf("workload: shutting down")
	case code = <-exits:
	case err := <-serveErr:
		log.Printf("workload: %v", err)
		return 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Shutdown closes the listener and the idle connections, then waits
	// for each request in flight to end (its response, if not yet begun,
	// says "Connection: close") and closes its connection.
	if err := srv.Shutdown(sctx); err != nil {
		log.Printf("workload: shutdown: %v; closing the connections still open", err)
		_ = srv.Close()
	}
	return code
}

type server struct {
	cfg       config
	start     time.Time
	now       func() time.Time
	exit      func(code int)
	hostname  string
	client    *http.Client // calls the back ends
	unhealthy atomic.Bool  // set by /unhealthy
	draining  atomic.Bool  // set on a stop signal
}

func newServer(cfg config, now func() time.Time, exit func(int)) *server {
	host, _ := os.Hostname()
	return &server{cfg: cfg, start: now(), now: now, exit: exit, hostname: host, client: &http.Client{
		Timeout: cfg.backendTimeout,
		// A Service balances connections, not requests: a connection per
		// call spreads the calls over the back end's replicas.
		Transport: &http.Transport{DisableKeepAlives: true},
		// The back end's own answer is what the front end reports.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handleRoot)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /readyz", s.handleReadyz)
	mux.HandleFunc("/crash", s.handleCrash)
	mux.HandleFunc("/exit", s.handleExit)
	mux.HandleFunc("/unhealthy", s.handleUnhealthy)
	mux.HandleFunc("GET /whoami", s.handleWhoami)
	mux.HandleFunc("GET /prestop", s.handlePreStop)
	// No Handshake: any Origin is accepted (websocket.Handler refuses a
	// request without one), as a test client's may have none.
	mux.Handle("GET /ws", websocket.Server{Handler: s.handleWebSocket})
	return s.closeWhileDraining(mux)
}

// closeWhileDraining makes every response of a draining server end its
// connection, so that a keep-alive client opens a new one (which a Service
// sends to a replica that is not stopping) after its current request rather
// than sending its next request on a connection the shutdown closes.
func (s *server) closeWhileDraining(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) elapsed() time.Duration { return s.now().Sub(s.start) }

func (s *server) handleRoot(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nhostname: %s\n", s.cfg.message, s.hostname)
	if v, ok := os.LookupEnv("DOCKCTL_TEST_VALUE"); ok {
		fmt.Fprintf(&b, "DOCKCTL_TEST_VALUE=%s\n", v)
	}
	failed := false
	for _, a := range s.callBackends(r.Context()) {
		if a.err != nil {
			failed = true
			fmt.Fprintf(&b, "backend %s: error: %v\n", a.url, a.err)
		} else {
			fmt.Fprintf(&b, "backend %s: %s\n", a.url, a.body)
		}
	}
	if failed {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
	}
	_, _ = io.WriteString(w, b.String())
}

// backendAnswer is one back end's answer to GET, on one line.
type backendAnswer struct {
	url  string
	body string
	err  error
}

// maxBackendBody bounds what is read of a back end's answer.
const maxBackendBody = 64 << 10

// callBackends calls every --backend at once, each bounded by
// --backend-timeout, and returns their answers in flag order.
func (s *server) callBackends(ctx context.Context) []backendAnswer {
	answers := make([]backendAnswer, len(s.cfg.backends))
	var wg sync.WaitGroup
	for i, u := range s.cfg.backends {
		wg.Go(func() {
			body, err := s.get(ctx, u)
			answers[i] = backendAnswer{url: u, body: body, err: err}
		})
	}
	wg.Wait()
	return answers
}

func (s *server) get(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// The line already names the URL: keep the cause alone.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			return "", ue.Err
		}
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBackendBody))
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	// One line per back end: its non-empty lines joined.
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, ", ")
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("answered %s: %s", resp.Status, text)
	}
	return text, nil
}

// handleWebSocket echoes every text message of a WebSocket as
// "HOSTNAME MESSAGE" until the client closes it or the process exits.
func (s *server) handleWebSocket(ws *websocket.Conn) {
	defer ws.Close()
	for {
		var msg string
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			return
		}
		if err := websocket.Message.Send(ws, s.hostname+" "+msg); err != nil {
			return
		}
	}
}

func (s *server) handleWhoami(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, s.hostname)
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
	if s.draining.Load() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
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

// statCmd implements "workload stat FILE": it prints the file's permission
// bits (octal, following symlinks), a space and its content, for tests of
// mounted files (there is no shell or cat in the image).
func statCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: workload stat FILE")
		return 2
	}
	fi, err := os.Stat(args[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%04o %s", fi.Mode().Perm(), b)
	return 0
}
