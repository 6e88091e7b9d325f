// Package helperfake is internal/dockerfake with Service helpers (proxies,
// the DNS server) that behave as dockctl's do, for the tests of the
// reconciler's packages: only _test.go files import it.
//
// Invariant: a helper serves the config of its command, then what is pushed
// to it, and refuses an older generation than the one it holds (ExitStale,
// with that generation), as `dockctl helper push` does.
package helperfake

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
)

// Engine is internal/dockerfake with helpers that behave as dockctl's do:
// a helper serves the config of its command, then what is pushed to it,
// refusing an older generation (ExitStale, with the one it holds) — and,
// for port conflicts, the daemon's other containers.
type Engine struct {
	*dockerfake.Engine
	mu      sync.Mutex
	served  map[string]string // container ID → config JSON served
	creates []dockerx.HelperRequest
	// exec, when set, answers a push instead of the helper.
	exec func(id string, cmd []string) (int, []byte)
	// journal records, in order, every config a helper applied ("push
	// ID CONFIG") and every stop signal ("stop ID").
	journal []string
	// daemon are containers of other owners (ListAllContainers).
	daemon []dockerx.Container
	// cmds are the helpers' commands, by container ID: the control
	// socket a push must name, and whether it binds host ports itself.
	cmds map[string][]string
	// hostHeld are host ports a process of the host holds (HoldHostPort):
	// a helper binding host ports itself (--host-ports) acks them unbound.
	hostHeld map[int]bool
}

// New returns an Engine with the images given and the instance network
// dockctl_i (10.222.0.0/20) of instance "i".
func New(t testing.TB, images ...string) *Engine {
	h := &Engine{Engine: dockerfake.New(images...), served: map[string]string{}, cmds: map[string][]string{}, hostHeld: map[int]bool{}}
	h.HandleExecInput(h.handle)
	if _, err := h.EnsureNetwork(context.Background(), dockerx.NetworkRequest{Instance: "i", Name: "dockctl_i",
		Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}); err != nil {
		t.Fatal(err)
	}
	return h
}

// CreateHelper creates a helper that serves the config of its command.
func (h *Engine) CreateHelper(ctx context.Context, req dockerx.HelperRequest) (string, error) {
	id, err := h.Engine.CreateHelper(ctx, req)
	if err == nil {
		h.mu.Lock()
		h.creates = append(h.creates, req)
		h.served[id] = req.Cmd[len(req.Cmd)-1]
		h.cmds[id] = slices.Clone(req.Cmd)
		h.mu.Unlock()
	}
	return id, err
}

// StopContainer journals the stop signal.
func (h *Engine) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	h.mu.Lock()
	h.journal = append(h.journal, "stop "+id)
	h.mu.Unlock()
	return h.Engine.StopContainer(ctx, id, timeout)
}

// Entries returns the journal: every config a helper applied ("push ID
// CONFIG") and every stop signal ("stop ID"), in order.
func (h *Engine) Entries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.journal)
}

// ListAllContainers lists the instance's containers and the daemon's
// others (SetDaemon).
func (h *Engine) ListAllContainers(context.Context) ([]dockerx.Container, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(h.Snapshot(), h.daemon...), nil
}

func (h *Engine) handle(id string, cmd []string, stdin []byte) (int, []byte) {
	h.mu.Lock()
	exec := h.exec
	h.mu.Unlock()
	if exec != nil {
		// Outside the lock: the hook may replace itself (SetExec).
		return exec(id, cmd)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(cmd) < 5 || cmd[1] != "helper" || cmd[2] != helperapi.ModePush || cmd[3] != "--config" {
		return helperapi.ExitUsage, nil
	}
	socket := helperapi.ControlSocket
	switch rest := cmd[5:]; {
	case len(rest) == 2 && rest[0] == "--control-socket":
		socket = rest[1]
	case len(rest) != 0:
		return helperapi.ExitUsage, nil
	}
	if socket != flagOf(h.cmds[id], "--control-socket", helperapi.ControlSocket) {
		// Nothing listens there: the helper's socket is another.
		return helperapi.ExitFailed, nil
	}
	config := cmd[4]
	if config == "-" { // as `helper push --config -` reads it
		config = string(stdin)
	}
	var in, held struct{ Generation int64 }
	if err := json.Unmarshal([]byte(config), &in); err != nil {
		return helperapi.ExitFailed, nil
	}
	_ = json.Unmarshal([]byte(h.served[id]), &held)
	if in.Generation < held.Generation {
		ack, _ := json.Marshal(helperapi.Ack{Generation: held.Generation})
		return helperapi.ExitStale, ack
	}
	if listsAPortTwice(config) {
		return helperapi.ExitFailed, nil // as the helpers' compile refuses it
	}
	h.served[id] = config
	h.journal = append(h.journal, "push "+id+" "+config)
	a := helperapi.Ack{Generation: in.Generation}
	if slices.Contains(h.cmds[id], "--host-ports") {
		var ports struct {
			Ports []struct {
				Port     int
				Protocol string
			}
		}
		_ = json.Unmarshal([]byte(config), &ports)
		for _, p := range ports.Ports {
			if h.hostHeld[p.Port] {
				proto := p.Protocol
				if proto == "" || proto == helperapi.GatewayHTTP || proto == helperapi.GatewayHTTPS {
					proto = helperapi.TCP
				}
				a.Unbound = append(a.Unbound, helperapi.UnboundPort{Port: p.Port, Protocol: proto, Error: "address already in use"})
			}
		}
	}
	ack, _ := json.Marshal(a)
	return helperapi.ExitOK, ack
}

// listsAPortTwice reports whether a proxy's or the gateway's config
// lists one port (and protocol) twice, which dockctl's helpers refuse.
func listsAPortTwice(config string) bool {
	var cfg struct {
		Ports []struct {
			Port     int
			Protocol string
		}
	}
	_ = json.Unmarshal([]byte(config), &cfg)
	seen := map[string]bool{}
	for _, p := range cfg.Ports {
		k := fmt.Sprint(p.Port, "/", cmp.Or(p.Protocol, helperapi.TCP))
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// flagOf is the value of a flag in a command ("--name value"), or def.
func flagOf(cmd []string, name, def string) string {
	if i := slices.Index(cmd, name); i >= 0 && i+1 < len(cmd) {
		return cmd[i+1]
	}
	return def
}

// HoldHostPort makes a process of the host hold port (held) or free it:
// a helper binding host ports itself acks it unbound while held.
func (h *Engine) HoldHostPort(port int, held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if held {
		h.hostHeld[port] = true
	} else {
		delete(h.hostHeld, port)
	}
}

// Serving returns the ID of the helper of that name and decodes what it
// serves into v.
func (h *Engine) Serving(name string, v any) (string, bool) {
	for _, c := range h.Snapshot() {
		if c.Name == name {
			h.mu.Lock()
			defer h.mu.Unlock()
			return c.ID, json.Unmarshal([]byte(h.served[c.ID]), v) == nil
		}
	}
	return "", false
}

// CreatedHelpers returns the requests of every helper created, in order.
func (h *Engine) CreatedHelpers() []dockerx.HelperRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.creates)
}

// WriteCount counts the calls that change what Docker runs or serves.
func (h *Engine) WriteCount() int {
	return h.WriteCalls() + h.Calls()["exec:output"] + h.Calls()["create:helper"]
}

// SetExec makes fn answer every push instead of the helpers (nil: the
// helpers answer again).
func (h *Engine) SetExec(fn func(id string, cmd []string) (int, []byte)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.exec = fn
}

// ExecHooked reports whether a hook answers the pushes (SetExec).
func (h *Engine) ExecHooked() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.exec != nil
}

// SetDaemon sets the daemon's containers of other owners.
func (h *Engine) SetDaemon(cs []dockerx.Container) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.daemon = cs
}

// SetServed makes the helper id serve config, as if it had been pushed.
func (h *Engine) SetServed(id, config string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.served[id] = config
}
