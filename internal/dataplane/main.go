package dataplane

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

const usage = `usage: dockctl helper MODE [flags]   (run by dockctl in its helper containers)

modes:
  proxy --config JSON   serve a Service proxy (helperapi.ProxyConfig)
  dns   --config JSON   serve the instance's DNS (helperapi.DNSConfig)
  gateway --config JSON serve the instance's HTTP(S) gateway (helperapi.GatewayConfig;
                        --config -: read it from stdin, as it may hold TLS keys)
  push  --config JSON   push a config to the helper serving in this container
                        (--config -: read it from stdin, for configs over an argument's 128 KiB)
  probe --spec JSON     run one probe (helperapi.ProbeSpec); exit 0 success, 1 failure, 4 timeout
  hold                  hold a pod's namespaces and file volumes (a pod's holder)
  files                 write a pod's file volumes (helperapi.FilesPayload on stdin)
  port-forward          hold a port-forward session's helper until stdin ends
  relay HOST:PORT…      relay stdin to the first HOST:PORT that accepts and its answer to stdout
                        (one forwarded connection)
`

// Main runs `dockctl helper ARGS…` and returns its exit status. Serving
// modes run until SIGTERM or SIGINT, then exit 0 after a graceful stop.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return run(ctx, args, os.Stdin, stdout, stderr)
}

// run is Main with the context that stops serving modes (tests cancel it).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return helperapi.ExitUsage
	}
	switch args[0] {
	case helperapi.ModeProxy:
		return runProxy(ctx, args[1:], stderr)
	case helperapi.ModeDNS:
		return runDNS(ctx, args[1:], stderr)
	case helperapi.ModeGateway: // gateway.go
		return runGateway(ctx, args[1:], stdin, os.Stdout, stderr)
	case helperapi.ModePush:
		return runPush(args[1:], stdin, stdout, stderr)
	case helperapi.ModeProbe:
		return runProbe(ctx, args[1:], stdout, stderr)
	case helperapi.ModeHold, helperapi.ModeFiles: // files.go
		if args[0] == helperapi.ModeHold {
			return runHold(ctx, args[1:], stderr)
		}
		return runFiles(args[1:], stdin, stdout, stderr)
	case helperapi.ModePortForward, helperapi.ModeRelay: // relay.go
		if args[0] == helperapi.ModePortForward {
			return runPortForward(ctx, args[1:], stdin, stderr)
		}
		return runRelay(ctx, args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return helperapi.ExitOK
	default:
		fmt.Fprintf(stderr, "error: unknown helper mode %q\n%s", args[0], usage)
		return helperapi.ExitUsage
	}
}

// serveFlags are the flags of the serving modes. The ones other than
// --config exist for tests and for running a helper outside its container.
type serveFlags struct {
	config, stateFile, socket, logLevel string
	grace                               time.Duration
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "the initial config (JSON)")
	fs.StringVar(&f.stateFile, "state-file", helperapi.StateFile, "where the applied config is kept")
	fs.StringVar(&f.socket, "control-socket", helperapi.ControlSocket, "control socket (@name: abstract)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&f.grace, "shutdown-grace", 5*time.Second, "how long open connections may finish after SIGTERM")
}

// parseServe parses a serving mode's flags (register adds the mode's own)
// and makes its logger; ok false means return code.
func parseServe(mode string, args []string, stderr io.Writer, register func(*flag.FlagSet)) (f serveFlags, log *slog.Logger, code int, ok bool) {
	fs := flag.NewFlagSet("helper "+mode, flag.ContinueOnError)
	f.register(fs)
	register(fs)
	if code, ok := parse(fs, args, stderr, "config"); !ok {
		return f, nil, code, false
	}
	log, err := newLogger(stderr, f.logLevel, mode)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return f, nil, helperapi.ExitUsage, false
	}
	return f, log, 0, true
}

// parse parses args; ok false means return code.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer, required ...string) (code int, ok bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helperapi.ExitOK, false
		}
		return helperapi.ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected arguments %q\n", fs.Args())
		return helperapi.ExitUsage, false
	}
	for _, name := range required {
		if fs.Lookup(name).Value.String() == "" {
			fmt.Fprintf(stderr, "error: --%s is required\n", name)
			return helperapi.ExitUsage, false
		}
	}
	return 0, true
}

func newLogger(w io.Writer, level, mode string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("helper", mode), nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields: a
// config this binary does not fully understand is not served as if it did
// (a controller whose helpers speak another protocol replaces them,
// docs/design.md §10 and §16).
func decodeStrict(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// proxyTarget is the proxy as a control server's Target.
type proxyTarget struct{ p *Proxy }

func (t proxyTarget) Generation() int64 { return t.p.Generation() }

func (t proxyTarget) Unbound() []helperapi.UnboundPort { return t.p.Unbound() }

func (t proxyTarget) Apply(raw json.RawMessage) (int64, error) {
	var cfg helperapi.ProxyConfig
	if err := decodeStrict(raw, &cfg); err != nil {
		return 0, fmt.Errorf("proxy config: %w", err)
	}
	return cfg.Generation, t.p.Apply(cfg)
}

func runProxy(ctx context.Context, args []string, stderr io.Writer) int {
	var host *string
	var hostPorts *bool
	f, log, code, ok := parseServe(helperapi.ModeProxy, args, stderr, func(fs *flag.FlagSet) {
		host = fs.String("listen-host", "0.0.0.0", "address the Service ports listen on")
		hostPorts = fs.Bool("host-ports", false, "the ports are the host's: one that cannot be bound is reported, the others served")
	})
	if !ok {
		return code
	}
	p := NewProxy(ProxyOptions{
		ListenAddr: func(_ string, port int) string { return net.JoinHostPort(*host, strconv.Itoa(port)) },
		HostPorts:  *hostPorts,
		Log:        log,
	})
	return serve(ctx, f, log, proxyTarget{p}, nil, func(sctx context.Context) error { return p.Shutdown(sctx) })
}

// serve runs a serving mode around target: it listens for pushes, applies
// the initial config, runs body (if any) until ctx is done, then gives
// shutdown (if any) a bounded grace.
func serve(ctx context.Context, f serveFlags, log *slog.Logger, target Target, body func(context.Context) error, shutdown func(context.Context) error) int {
	ln, err := ListenControl(f.socket)
	if err != nil {
		log.Error("cannot serve pushes", "err", err)
		return helperapi.ExitFailed
	}
	defer ln.Close()
	err = start(f.config, f.stateFile, log, func(raw json.RawMessage) error {
		_, err := target.Apply(raw)
		return err
	})
	if err != nil {
		log.Error("no initial config could be applied", "err", err)
		return helperapi.ExitFailed
	}
	log.Info("serving", "generation", target.Generation(), "control_socket", f.socket)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs := NewControlServer(target, f.stateFile, log)
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errc <- cs.Serve(ctx, ln) })
	if body != nil {
		wg.Go(func() { errc <- body(ctx) })
	}
	code := helperapi.ExitOK
	select {
	case <-ctx.Done():
		log.Info("stopping", "grace", f.grace.String())
	case err := <-errc:
		if ctx.Err() == nil {
			log.Error("stopped serving", "err", err)
			code = helperapi.ExitFailed
		}
	}
	cancel()
	// Returning means stopped: no push is answered any more (a push in
	// progress is finished first), then connections get their grace.
	wg.Wait()
	sctx, scancel := context.WithTimeout(context.Background(), f.grace)
	defer scancel()
	if shutdown != nil {
		if err := shutdown(sctx); err != nil {
			log.Warn("graceful stop cut short", "err", err)
		}
	}
	return code
}

func runPush(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("helper push", flag.ContinueOnError)
	config := fs.String("config", "", "the config to serve (JSON; - reads it from stdin)")
	socket := fs.String("control-socket", helperapi.ControlSocket, "control socket (@name: abstract)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the acknowledgement")
	if code, ok := parse(fs, args, stderr, "config"); !ok {
		return code
	}
	raw, ok := configArg(*config, stdin, stderr)
	if !ok {
		return helperapi.ExitUsage
	}
	ack, code, err := Push(*socket, raw, *timeout)
	if code == helperapi.ExitOK || code == helperapi.ExitStale {
		out, _ := json.Marshal(ack)
		fmt.Fprintln(stdout, string(out))
	}
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
	}
	return code
}

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("helper probe", flag.ContinueOnError)
	specJSON := fs.String("spec", "", "the probe (JSON)")
	if code, ok := parse(fs, args, stderr, "spec"); !ok {
		return code
	}
	var spec helperapi.ProbeSpec
	if err := decodeStrict([]byte(*specJSON), &spec); err != nil {
		fmt.Fprintln(stdout, "failure: --spec:", strings.ReplaceAll(err.Error(), "\n", " "))
		return helperapi.ExitUsage
	}
	r := Probe(ctx, spec)
	fmt.Fprintln(stdout, r.Message)
	return r.Exit
}

// configArg is a --config value: the JSON itself, or "-" for stdin (a
// config over an argument's 128 KiB, or one holding TLS keys, which must
// never be in argv). ok false: the error is written to stderr.
func configArg(config string, stdin io.Reader, stderr io.Writer) ([]byte, bool) {
	if config != "-" {
		return []byte(config), true
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxConfig+1))
	if err != nil || len(raw) > maxConfig {
		fmt.Fprintln(stderr, "error: reading the config from stdin:", cmp.Or(err, fmt.Errorf("over %d bytes", maxConfig)))
		return nil, false
	}
	return raw, true
}
