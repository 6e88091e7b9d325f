package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// Target is a serving helper as the control server sees it: the proxy or
// the DNS server, each decoding its own config type.
type Target interface {
	// Apply decodes and serves raw, returning its generation; it returns
	// only once raw is served. On error the previous config keeps serving.
	Apply(raw json.RawMessage) (gen int64, err error)
	// Generation is the generation served.
	Generation() int64
}

// maxConfig bounds a pushed config (the push reads it from stdin: Linux
// caps one argv string at 128 KiB, far less than a large Service's).
const maxConfig = 16 << 20

// reply is the control server's answer on the socket. It stays inside this
// package: `helper push` turns it into its exit status and helperapi.Ack.
type reply struct {
	Generation int64                   `json:"generation"` // served after the push
	Stale      bool                    `json:"stale,omitempty"`
	Error      string                  `json:"error,omitempty"`
	Unbound    []helperapi.UnboundPort `json:"unbound,omitempty"`
}

// unboundReporter is a Target that binds host ports itself and serves
// the others when one cannot be bound (--host-ports): the ack says which.
type unboundReporter interface {
	Unbound() []helperapi.UnboundPort
}

// ControlServer applies the configs pushed on the control socket to its
// Target and records each in the state file before acknowledging it.
type ControlServer struct {
	target    Target
	statePath string
	log       *slog.Logger
	mu        sync.Mutex // one push at a time: check, apply, record, answer
}

// NewControlServer returns a server for target recording configs at
// statePath (helperapi.StateFile in a helper).
func NewControlServer(target Target, statePath string, log *slog.Logger) *ControlServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ControlServer{target: target, statePath: statePath, log: log}
}

// ListenControl listens on a unix socket; a name starting with "@" is in
// the abstract namespace (no file, no writable directory needed). A path
// (helperapi.HostControlSocket) gets its directory, private to the
// container's user, and replaces the file a previous run of the
// container left (Docker's restart policy keeps the writable layer).
func ListenControl(name string) (net.Listener, error) {
	if !strings.HasPrefix(name, "@") {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return nil, fmt.Errorf("control socket %s: %w", name, err)
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("control socket %s: remove the previous run's: %w", name, err)
		}
	}
	ln, err := net.Listen("unix", name)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", name, err)
	}
	return ln, nil
}

// Serve answers pushes on ln until ctx is done.
func (s *ControlServer) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of descriptors, say: the proxy keeps serving, pushes
			// wait; the controller's push times out and retries.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("control socket: accept failed", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			s.handle(ctx, c)
		}()
	}
}

func (s *ControlServer) handle(ctx context.Context, c net.Conn) {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	// Stopping cuts a push still being read; one being applied is
	// finished and answered.
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	var raw json.RawMessage
	if err := json.NewDecoder(io.LimitReader(c, maxConfig)).Decode(&raw); err != nil {
		s.answer(c, reply{Generation: s.target.Generation(), Error: "read config: " + err.Error()})
		return
	}
	s.answer(c, s.push(raw))
}

func (s *ControlServer) answer(c net.Conn, r reply) {
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewEncoder(c).Encode(r); err != nil {
		s.log.Warn("control: answer lost", "err", err)
	}
}

// push applies one config: refused if older than the one
// served, else applied, recorded, then acknowledged.
func (s *ControlServer) push(raw json.RawMessage) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.target.Generation()
	gen, err := generationOf(raw)
	if err != nil {
		return reply{Generation: cur, Error: err.Error()}
	}
	if gen < cur {
		s.log.Info("push refused: stale generation", "pushed", gen, "served", cur)
		return reply{Generation: cur, Stale: true}
	}
	if _, err := s.target.Apply(raw); err != nil {
		s.log.Error("push not applied", "generation", gen, "err", err)
		return reply{Generation: s.target.Generation(), Error: err.Error()}
	}
	if err := WriteState(s.statePath, raw); err != nil {
		// Served but not recorded: not acknowledged, so the controller
		// pushes again rather than trust a restart to keep it.
		s.log.Error("push applied but not recorded", "generation", gen, "err", err)
		return reply{Generation: s.target.Generation(), Error: err.Error()}
	}
	r := reply{Generation: s.target.Generation()}
	if u, ok := s.target.(unboundReporter); ok {
		r.Unbound = u.Unbound()
	}
	return r
}

// generationOf reads a config's generation without knowing its type.
func generationOf(raw []byte) (int64, error) {
	var g struct {
		Generation *int64 `json:"generation"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return 0, fmt.Errorf("config: %w", err)
	}
	if g.Generation == nil {
		return 0, errors.New("config: no generation")
	}
	return *g.Generation, nil
}

// WriteState records raw at path so that it survives a crash at any point:
// the file holds the previous config or raw, never a mix.
func WriteState(path string, raw []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(raw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("state file %s: %w", path, err)
	}
	// The rename is durable only once the directory is.
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("state file %s: sync directory: %w", path, err)
		}
	}
	return nil
}

// initialConfigs lists the configs a serving helper may start from, best
// first: --config, unless the state file holds a newer generation (pushes
// received since the container was created). Each is labelled for logs.
func initialConfigs(flagConfig, statePath string, log *slog.Logger) ([]json.RawMessage, error) {
	fromFlag := json.RawMessage(flagConfig)
	flagGen, err := generationOf(fromFlag)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	state, err := os.ReadFile(statePath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return []json.RawMessage{fromFlag}, nil
	case err != nil:
		log.Warn("state file unreadable, starting from --config", "path", statePath, "err", err)
		return []json.RawMessage{fromFlag}, nil
	}
	state = bytes.TrimSpace(state)
	stateGen, err := generationOf(state)
	if err != nil {
		log.Warn("state file invalid, starting from --config", "path", statePath, "err", err)
		return []json.RawMessage{fromFlag}, nil
	}
	if stateGen > flagGen {
		log.Info("starting from the state file", "generation", stateGen, "flag_generation", flagGen)
		return []json.RawMessage{state, fromFlag}, nil
	}
	return []json.RawMessage{fromFlag, state}, nil
}

// start applies the first of initialConfigs that applies, and records it.
func start(flagConfig, statePath string, log *slog.Logger, apply func(json.RawMessage) error) error {
	cands, err := initialConfigs(flagConfig, statePath, log)
	if err != nil {
		return err
	}
	var errs []error
	for _, raw := range cands {
		if err := apply(raw); err != nil {
			log.Error("initial config not applied", "err", err)
			errs = append(errs, err)
			continue
		}
		if err := WriteState(statePath, raw); err != nil {
			// Serving matters more than recording: the next push records.
			log.Warn("initial config not recorded", "err", err)
		}
		return nil
	}
	return errors.Join(errs...)
}

// Push sends raw to the control server on socket and waits for its answer.
// It returns the Ack, and an exit status of helperapi's.
func Push(socket string, raw []byte, timeout time.Duration) (helperapi.Ack, int, error) {
	if _, err := generationOf(raw); err != nil {
		return helperapi.Ack{}, helperapi.ExitFailed, err
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("unix", socket)
	if err != nil {
		return helperapi.Ack{}, helperapi.ExitFailed, fmt.Errorf("no helper answering on %s: %w", socket, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(raw); err != nil {
		return helperapi.Ack{}, helperapi.ExitFailed, fmt.Errorf("send config: %w", err)
	}
	if uc, ok := c.(*net.UnixConn); ok {
		uc.CloseWrite()
	}
	var r reply
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		return helperapi.Ack{}, helperapi.ExitFailed, fmt.Errorf("no acknowledgement: %w", err)
	}
	ack := helperapi.Ack{Generation: r.Generation, Unbound: r.Unbound}
	switch {
	case r.Stale:
		return ack, helperapi.ExitStale, fmt.Errorf("stale config: the helper serves generation %d", r.Generation)
	case r.Error != "":
		return ack, helperapi.ExitFailed, errors.New(r.Error)
	}
	return ack, helperapi.ExitOK, nil
}
