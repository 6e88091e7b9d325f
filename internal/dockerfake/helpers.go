package dockerfake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// CreateHelper creates a helper container as dockerx.Client does: the
// configuration of dockerx.BuildHelperConfig (it fails where that does),
// attached to its network with its static address and aliases, restarted
// by Docker when its process exits (restart policy always: see Exit). Its
// image must be present (EnsureHelperImage). A taken name is ErrConflict.
// Counted as "create:helper".
func (e *Engine) CreateHelper(ctx context.Context, req dockerx.HelperRequest) (string, error) {
	cfg, hc, nc, err := dockerx.BuildHelperConfig(req, dockerx.ContainerLogs{})
	if err != nil {
		return "", err
	}
	if err := e.reachable("create helper " + req.Name); err != nil {
		return "", err
	}
	ns := &namespaces{network: string(hc.NetworkMode), endpoints: endpointsOf(hc, nc), restartAlways: true}
	// The ports it publishes, as a list answer shows them: what another
	// publisher's conflict check reads.
	var ports []dockerx.Port
	for _, b := range req.Ports {
		ports = append(ports, dockerx.Port{HostIP: b.HostIP, HostPort: uint16(b.HostPort), ContainerPort: uint16(b.ContainerPort), Protocol: strings.ToLower(b.Protocol)})
	}
	return e.add(dockerx.Container{Name: req.Name, Image: cfg.Image, Labels: cfg.Labels, State: dockerx.StateCreated, Ports: ports}, "create:helper", ns, nil)
}

// HelperImageRef returns the reference EnsureHelperImage gives the
// instance. The real one is named after dockctl's executable, which a
// test binary is not: this one is fixed per instance.
func HelperImageRef(instance string) string {
	return dockerx.HelperRepository + ":" + instance + "-" + fakeDigest("helper " + instance)[:12]
}

func fakeDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// EnsureHelperImage makes the instance's helper image present, listed by
// ListHelperImages beside the holder image and kept by RemoveImage while
// a container made from it exists, and returns HelperImageRef(instance).
// OnHelperImage, when set, can make it fail. Counted as "image:helper".
func (e *Engine) EnsureHelperImage(ctx context.Context, instance string) (string, error) {
	if err := e.imageCall("image:helper", "helper image", instance, e.OnHelperImage); err != nil {
		return "", err
	}
	ref := HelperImageRef(instance)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addHelperImageLocked(instance, "sha256:"+fakeDigest("helper image "+instance), ref)
	return ref, nil
}

// HandleExec makes h answer ExecOutput: it receives the container's ID
// and the command, and returns the exit code and stdout (kept up to
// dockerx.MaxExecOutput). Without a handler every command exits 0 with no
// output. h runs with the engine's lock released; it may call the engine.
func (e *Engine) HandleExec(h func(containerID string, cmd []string) (int, []byte)) {
	e.HandleExecInput(func(id string, cmd []string, _ []byte) (int, []byte) { return h(id, cmd) })
}

// HandleExecInput is HandleExec for a handler that also reads the
// command's stdin (ExecInput; nil when none was attached).
func (e *Engine) HandleExecInput(h func(containerID string, cmd []string, stdin []byte) (int, []byte)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exec = h
}

// ExecOutput runs cmd in a running container through the HandleExec
// handler, failing as Docker does: ErrNotFound for a missing container,
// ErrConflict for one that is not running (or paused). Counted as
// "exec:output".
func (e *Engine) ExecOutput(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, []byte, error) {
	return e.ExecInput(ctx, id, cmd, nil, timeout)
}

// ExecInput is ExecOutput with stdin, handed to the handler. Counted as
// "exec:output" too: it is the same exec.
func (e *Engine) ExecInput(ctx context.Context, id string, cmd []string, stdin []byte, timeout time.Duration) (int, []byte, error) {
	e.mu.Lock()
	e.calls["exec:output"]++
	if e.down {
		e.mu.Unlock()
		return 0, nil, fmt.Errorf("exec in container %s: %w", short(id), dockerx.ErrUnreachable)
	}
	c := e.lookupLocked(id)
	var state, cid string
	if c != nil {
		state, cid = c.State, c.ID
	}
	h := e.exec
	e.mu.Unlock()
	switch {
	case c == nil:
		return 0, nil, fmt.Errorf("exec in container %s: No such container: %s: %w", short(id), id, dockerx.ErrNotFound)
	case state == dockerx.StatePaused:
		return 0, nil, fmt.Errorf("exec in container %s: Container %s is paused, unpause the container before exec: %w", short(id), cid, dockerx.ErrConflict)
	case state != dockerx.StateRunning:
		return 0, nil, fmt.Errorf("exec in container %s: Container %s is not running: %w", short(id), cid, dockerx.ErrConflict)
	case h == nil:
		return 0, nil, nil
	}
	code, out := h(cid, slices.Clone(cmd), slices.Clone(stdin))
	if len(out) > dockerx.MaxExecOutput {
		out = out[:dockerx.MaxExecOutput]
	}
	return code, slices.Clone(out), nil
}

// RunFilesWriter runs a files writer as dockerx.Client does, through the
// HandleExecInput handler: its command (dockerx.FilesCommand and the
// request's Args) and stdin, with the ID of the pod's holder as the
// container — the writer mounts the holder's volumes, so a handler keeps
// what is written per holder (its name when there is none). The
// configuration must build (dockerx.BuildFilesWriterConfig). Counted as
// "run:files-writer".
func (e *Engine) RunFilesWriter(ctx context.Context, req dockerx.FilesWriterRequest, stdin []byte, timeout time.Duration) (int, []byte, error) {
	cfg, _, err := dockerx.BuildFilesWriterConfig(req)
	if err != nil {
		return 0, nil, err
	}
	e.mu.Lock()
	e.calls["run:files-writer"]++
	if e.down {
		e.mu.Unlock()
		return 0, nil, fmt.Errorf("create files writer: %w", dockerx.ErrUnreachable)
	}
	id := req.Pod.Pod.Holder
	if c := e.lookupLocked(id); c != nil {
		id = c.ID
	}
	h := e.exec
	e.mu.Unlock()
	if h == nil {
		return 0, nil, nil
	}
	code, out := h(id, slices.Clone(cfg.Cmd), slices.Clone(stdin))
	if len(out) > dockerx.MaxExecOutput {
		out = out[:dockerx.MaxExecOutput]
	}
	return code, slices.Clone(out), nil
}
