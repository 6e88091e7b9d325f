package dockerx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"
)

// ContainerDetails is what an inspect reports that a list does not: the
// facts the controller needs for restart backoff, readiness and diagnosis.
type ContainerDetails struct {
	ID           string
	Name         string // without the leading "/"
	Image        string
	Labels       map[string]string
	State        string // one of the State* constants
	Pid          int
	ExitCode     int
	Error        string // the daemon's error starting the container, if any
	OOMKilled    bool
	RestartCount int
	StartedAt    time.Time // zero if never started
	FinishedAt   time.Time // zero if never stopped
	Health       string    // one of the Health* constants
	// FailingStreak counts consecutive failed health checks.
	FailingStreak int
	// IPAddress is the container's address on its first network that has
	// one ("" with network mode none or host), for controller-run probes.
	IPAddress string
	// Networks maps each network the container is connected to onto its
	// IPv4 address there ("" while it has none), as Container.Networks.
	Networks map[string]string
	// HostNetwork is true for network mode host: probes go to 127.0.0.1.
	HostNetwork bool
}

// ListContainers returns every container, running or not, labelled with the
// instance. It is one daemon call, filtered by the daemon.
func (c *Client) ListContainers(ctx context.Context, instance string) ([]Container, error) {
	return c.list(ctx, "instance "+instance, filters.Arg("label", LabelInstance+"="+instance))
}

// ListHelpers returns the instance's containers of one role (a helper's:
// RoleProxy, RoleDNS, …), running or not: the daemon filters on both
// labels, so a Service's sync decodes its few helpers, not every pod of
// the instance (at 400 pods, 40 Services' resyncs decoding the whole
// instance each were most of an idle controller's CPU).
func (c *Client) ListHelpers(ctx context.Context, instance, role string) ([]Container, error) {
	return c.list(ctx, role+"s", filters.Arg("label", LabelInstance+"="+instance), filters.Arg("label", LabelRole+"="+role))
}

// ListDeploymentContainers returns the containers of one deployment of the
// instance: the daemon filters on both labels, which keeps a sync triggered
// by an event cheap however many containers the instance has.
func (c *Client) ListDeploymentContainers(ctx context.Context, instance, deployment string) ([]Container, error) {
	return c.list(ctx, "deployment "+deployment,
		filters.Arg("label", LabelInstance+"="+instance), filters.Arg("label", LabelDeployment+"="+deployment))
}

// ListAllContainers returns every container of the daemon, dockctl's or
// not: the Services' port-conflict check needs the host ports others hold.
func (c *Client) ListAllContainers(ctx context.Context) ([]Container, error) {
	return c.list(ctx, "the daemon")
}

func (c *Client) list(ctx context.Context, what string, args ...filters.KeyValuePair) ([]Container, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	list, err := c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(args...)})
	if err != nil {
		return nil, mapErr("list containers of "+what, err)
	}
	out := make([]Container, 0, len(list))
	for _, s := range list {
		out = append(out, fromSummary(s))
	}
	return out, nil
}

func fromSummary(s container.Summary) Container {
	c := Container{
		ID:            s.ID,
		Name:          summaryName(s.Names),
		Image:         s.Image,
		ImageID:       s.ImageID,
		Labels:        s.Labels,
		Instance:      s.Labels[LabelInstance],
		Deployment:    s.Labels[LabelDeployment],
		TemplateHash:  s.Labels[LabelTemplateHash],
		Namespace:     ParseNamespace(s.Labels, summaryName(s.Names)),
		Role:          roleOf(s.Labels),
		Pod:           s.Labels[LabelPod],
		PodUID:        s.Labels[LabelPodUID],
		ContainerName: s.Labels[LabelContainer],
		Service:       s.Labels[LabelService],
		ConfigHash:    s.Labels[LabelConfigHash],
		State:         string(s.State),
		Health:        parseHealth(s.Status),
		Status:        s.Status,
		ExitCode:      parseExitCode(s.Status),
		Created:       time.Unix(s.Created, 0),
		NetworkMode:   s.HostConfig.NetworkMode,
		Volumes:       mountedVolumes(s),
	}
	for _, p := range s.Ports {
		c.Ports = append(c.Ports, Port{HostIP: p.IP, HostPort: p.PublicPort, ContainerPort: p.PrivatePort, Protocol: p.Type})
	}
	if s.NetworkSettings != nil {
		c.Networks = endpointAddresses(s.NetworkSettings.Networks, running(c.State))
		c.StaticIPv4 = staticAddresses(s.NetworkSettings.Networks) // hostinfo.go
	}
	return c
}

// endpointAddresses maps each network of a list or inspect answer onto
// the container's IPv4 address there; nil when there is none. A running
// container is on a network only with an endpoint there: Docker 20.10
// leaves a network whose connect it refused in the container's
// configuration (see ConnectNetwork).
func endpointAddresses(eps map[string]*network.EndpointSettings, running bool) map[string]string {
	out := make(map[string]string, len(eps))
	for name, ep := range eps {
		switch {
		case ep == nil:
			out[name] = ""
		case running && ep.EndpointID == "":
		default:
			out[name] = ep.IPAddress
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// running reports whether a container in state is running (its
// endpoints exist).
func running(state string) bool {
	return state == StateRunning || state == StatePaused || state == StateRestarting
}

// roleOf reads a container's role; one made before roles existed is a
// replica.
func roleOf(labels map[string]string) string {
	if r := labels[LabelRole]; r != "" {
		return r
	}
	return RoleReplica
}

// summaryName picks the container's own name: with legacy links Docker also
// lists "/other/alias" names, which have a second slash.
func summaryName(names []string) string {
	for _, n := range names {
		if n = strings.TrimPrefix(n, "/"); !strings.Contains(n, "/") {
			return n
		}
	}
	if len(names) > 0 {
		return strings.TrimPrefix(names[0], "/")
	}
	return ""
}

// parseHealth reads the health suffix Docker appends to the list status,
// e.g. "Up 2 minutes (health: starting)". The list endpoint of API 1.41
// has no structured health field, and an inspect per container would cost
// one call per replica on every sync.
func parseHealth(status string) string {
	switch {
	case strings.HasSuffix(status, "(healthy)"):
		return HealthHealthy
	case strings.HasSuffix(status, "(unhealthy)"):
		return HealthUnhealthy
	case strings.HasSuffix(status, "(health: starting)"):
		return HealthStarting
	}
	return HealthNone
}

// CreateContainer creates (but does not start) one replica, with the
// client's log rotation for the daemon's default log driver (req.Logs is
// replaced), and connects it to its ExtraNetworks. A name already in use
// yields an error wrapping ErrConflict. A container that cannot join one
// of its networks is removed again, so that a create either succeeds
// whole or leaves nothing (its name free for the retry).
func (c *Client) CreateContainer(ctx context.Context, req CreateRequest) (string, error) {
	logs, err := c.containerLogs(ctx)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", req.Name, err)
	}
	req.Logs = logs
	if err := c.volumeMountpoints(ctx, &req); err != nil { // convert_files.go
		return "", fmt.Errorf("create container %s: %w", req.Name, err)
	}
	cfg, hc, nc, err := BuildConfig(req)
	if err != nil {
		return "", err
	}
	id, err := c.create(ctx, req.Name, cfg, hc, nc)
	if err != nil {
		return "", err
	}
	for _, a := range ExtraNetworks(req) {
		if err := c.ConnectNetwork(ctx, a.Network, id, a.Endpoint); err != nil {
			if rerr := c.RemoveContainer(ctx, id); rerr != nil {
				c.log.Warn("remove a container that could not join its network", "container", req.Name, "err", rerr)
			}
			return "", fmt.Errorf("create container %s: %w", req.Name, err)
		}
	}
	return id, nil
}

// create makes one container and logs the daemon's warnings.
func (c *Client) create(ctx context.Context, name string, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.api.ContainerCreate(ctx, cfg, hc, nc, nil, name)
	if err != nil {
		return "", mapErr("create container "+name, err)
	}
	for _, w := range resp.Warnings {
		c.log.Warn("docker create warning", "container", name, "warning", w)
	}
	return resp.ID, nil
}

// StartContainer starts a container; one already running is not an error
// (the Engine answers 304, which the SDK treats as success).
func (c *Client) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	return mapErr("start container "+id, c.api.ContainerStart(ctx, id, container.StartOptions{}))
}

// StopContainer sends the stop signal and kills after timeout. The call's
// own deadline is extended by that grace period. On an Engine that
// deadlocks on concurrent network leaves it runs through the leave gate
// (leavegate.go) and returns once Docker has handled the exit; its
// deadline starts when the gate lets it through.
func (c *Client) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	release, held, err := c.leaves.enter(ctx, c.api, c.timeout)
	if err != nil {
		return fmt.Errorf("stop container %s: waiting for the leave gate: %w", id, err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, c.timeout+timeout)
	defer cancel()
	secs := int((timeout + time.Second - 1) / time.Second)
	err = c.api.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs})
	if err == nil && held {
		// Docker reports the stop once the container's state says exited,
		// before its exit handler has released the network; an inspect
		// waits for that handler's container lock.
		ictx, icancel := c.callCtx(ctx)
		_, _ = c.api.ContainerInspect(ictx, id)
		icancel()
	}
	return mapErr("stop container "+id, err)
}

// UnpauseContainer resumes a paused container (a manual `docker pause` is
// drift that dockctl undoes).
func (c *Client) UnpauseContainer(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	return mapErr("unpause container "+id, c.api.ContainerUnpause(ctx, id))
}

// RemoveContainer kills and removes a container with its anonymous volumes
// (emptyDir). It is idempotent: a container already gone, or already being
// removed by a concurrent call, is success.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	// A forced removal of a running container is a stop too: through the
	// leave gate (leavegate.go), for at most its hold (a container Docker
	// cannot kill at once must not stop every other removal). Its deadline
	// starts when the gate lets it through.
	release, _, err := c.leaves.enter(ctx, c.api, c.timeout)
	if err != nil {
		return fmt.Errorf("remove container %s: waiting for the leave gate: %w", id, err)
	}
	defer release()
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	err = c.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress"):
		return nil
	}
	return mapErr("remove container "+id, err)
}

// InspectContainer returns the details of one container.
func (c *Client) InspectContainer(ctx context.Context, id string) (ContainerDetails, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.api.ContainerInspect(ctx, id)
	if err != nil {
		return ContainerDetails{}, mapErr("inspect container "+id, err)
	}
	return fromInspect(r), nil
}

func fromInspect(r container.InspectResponse) ContainerDetails {
	d := ContainerDetails{ID: r.ID, Name: strings.TrimPrefix(r.Name, "/"), RestartCount: r.RestartCount}
	if r.Config != nil {
		d.Image = r.Config.Image
		d.Labels = r.Config.Labels
	}
	if r.HostConfig != nil {
		d.HostNetwork = r.HostConfig.NetworkMode.IsHost()
	}
	if ns := r.NetworkSettings; ns != nil {
		d.Networks = endpointAddresses(ns.Networks, r.State != nil && running(string(r.State.Status)))
		d.IPAddress = ns.IPAddress
		if d.IPAddress == "" {
			// Sorted, so that a container on several networks always
			// yields the same address.
			names := make([]string, 0, len(ns.Networks))
			for name := range ns.Networks {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if ep := ns.Networks[name]; ep != nil && ep.IPAddress != "" {
					d.IPAddress = ep.IPAddress
					break
				}
			}
		}
	}
	if s := r.State; s != nil {
		d.State = string(s.Status)
		d.Pid = s.Pid
		d.ExitCode = s.ExitCode
		d.Error = s.Error
		d.OOMKilled = s.OOMKilled
		d.StartedAt = parseDockerTime(s.StartedAt)
		d.FinishedAt = parseDockerTime(s.FinishedAt)
		if s.Health != nil {
			d.Health = string(s.Health.Status)
			d.FailingStreak = s.Health.FailingStreak
		}
	}
	return d
}

// Exec runs cmd in a running container and returns its exit code. It is
// how exec liveness probes run beside the HEALTHCHECK that carries the
// readiness probe: a container has only one HEALTHCHECK. The call's own
// deadline bounds the whole run; a command still running then is an error.
// The command runs detached: its end is its exit, even if a child of it
// still holds its output open.
func (c *Client) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	created, err := c.api.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd})
	if err != nil {
		return 0, mapErr("exec in container "+id, err)
	}
	if err := c.api.ContainerExecStart(ctx, created.ID, container.ExecStartOptions{Detach: true}); err != nil {
		return 0, mapErr("exec in container "+id, err)
	}
	return c.execExit(ctx, id, created.ID, cmd, timeout)
}

// MaxExecOutput is how much of a command's stdout ExecOutput keeps: the
// first 64 KiB. The rest is read and dropped, so that the command is
// never blocked on a full pipe.
const MaxExecOutput = 64 << 10

// ExecOutput runs cmd in a running container and returns its exit code
// and its stdout (the first MaxExecOutput bytes; stderr is read and
// dropped, logged at debug level when the command fails). It is how the
// controller talks to its helpers (a push, a probe relay): through the
// exec API, which works against a remote daemon too. timeout bounds the
// whole run, output included; a command still running then is an error.
func (c *Client) ExecOutput(ctx context.Context, id string, cmd []string, timeout time.Duration) (exit int, stdout []byte, err error) {
	return c.ExecInput(ctx, id, cmd, nil, timeout)
}

// ExecInput is ExecOutput with stdin (nil: none attached): the command
// reads stdin to its end. It carries what does not fit in an argument
// (Linux bounds each to 128 KiB), such as a helper's config.
func (c *Client) ExecInput(ctx context.Context, id string, cmd []string, stdin []byte, timeout time.Duration) (exit int, stdout []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	what := "exec in container " + id
	execID, resp, err := c.execAttach(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, nil, err
	}
	defer resp.Close()
	out, errOut, err := exchange(ctx, resp, stdin, what, cmd, timeout)
	if err != nil {
		return 0, out.Bytes(), err
	}
	code, err := c.execExit(ctx, id, execID, cmd, timeout)
	if err == nil && code != 0 && errOut.Len() > 0 {
		c.log.Debug("exec failed", "container", id, "cmd", cmd, "exit", code, "stderr", errOut.String())
	}
	return code, out.Bytes(), err
}

// exchange writes stdin (nil: nothing) to a command's hijacked connection
// while it reads the command's output to its end: stdout and stderr, the
// first MaxExecOutput bytes of each. The connection no longer watches
// ctx, so it is closed at ctx's end, which ends a copy that would
// otherwise wait for the command.
func exchange(ctx context.Context, resp types.HijackedResponse, stdin []byte, what string, cmd []string, timeout time.Duration) (out, errOut *cappedBuffer, err error) {
	stop := context.AfterFunc(ctx, resp.Close)
	defer stop()
	if stdin != nil {
		// Written while the output is read: a command may answer before
		// it has read everything. CloseWrite is the command's EOF; a
		// write cut short shows as the command's failure or the deadline.
		go func() {
			if _, err := resp.Conn.Write(stdin); err == nil {
				_ = resp.CloseWrite()
			}
		}()
	}
	out, errOut = &cappedBuffer{max: MaxExecOutput}, &cappedBuffer{max: MaxExecOutput}
	_, copyErr := stdcopy.StdCopy(out, errOut, resp.Reader)
	if ctx.Err() != nil {
		return out, errOut, fmt.Errorf("%s: %s did not finish within %s: %w", what, strings.Join(cmd, " "), timeout, ctx.Err())
	}
	if copyErr != nil {
		return out, errOut, fmt.Errorf("%s: reading its output: %w", what, copyErr)
	}
	return out, errOut, nil
}

// execAttach creates an exec of o in container id and attaches its
// streams, which starts it. The hijacked connection outlives ctx.
func (c *Client) execAttach(ctx context.Context, id string, o container.ExecOptions) (string, types.HijackedResponse, error) {
	what := "exec in container " + id
	created, err := c.api.ContainerExecCreate(ctx, id, o)
	if err != nil {
		return "", types.HijackedResponse{}, mapErr(what, err)
	}
	resp, err := c.api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: o.Tty, ConsoleSize: o.ConsoleSize})
	if err != nil {
		return "", types.HijackedResponse{}, mapErr(what, err)
	}
	return created.ID, resp, nil
}

// ExecConfig is a command ExecAttach runs in a container, its streams
// attached, as `docker exec` runs one.
type ExecConfig struct {
	Cmd []string
	// Stdin attaches the command's standard input (ExecSession.Write and
	// CloseWrite); without it the command's stdin is empty.
	Stdin bool
	// TTY gives the command a terminal: its output is then one stream, as
	// the terminal shows it (stderr included), and Resize sets its size.
	TTY bool
	// Size is the terminal's size at start (TTY; zero: Docker's). Engines
	// before API 1.42 ignore it: a Resize once started sets it there.
	Size TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct{ Height, Width uint }

// ExecStartError is a command Docker could not start in a running
// container (no such executable, not executable). Docker gives it no
// process and the exit code docker exec reports (126; 127 for a missing
// executable on engines that tell it apart), and sends its reason as the
// command's whole output.
type ExecStartError struct {
	Container string
	ExitCode  int
	// Reason is the runtime's, e.g. `OCI runtime exec failed: exec
	// failed: unable to start container process: exec: "sh": executable
	// file not found in $PATH: unknown`.
	Reason string
}

func (e *ExecStartError) Error() string {
	return fmt.Sprintf("exec in container %s: %s", e.Container, e.Reason)
}

// ExecSession is a command started by ExecAttach, its streams attached
// over one connection to the daemon. Close it when done with it.
type ExecSession struct {
	c         *Client
	container string
	id        string // the exec's
	cmd       []string
	tty       bool
	resp      types.HijackedResponse
}

// ExecAttach runs cfg's command in running container id with its streams
// attached, for a user at a terminal (`dockctl exec`) or a relay (`dockctl
// port-forward`), and returns once Docker has started it. A command Docker
// could not start is an *ExecStartError; a container that is not running
// an error wrapping ErrConflict.
func (c *Client) ExecAttach(ctx context.Context, id string, cfg ExecConfig) (*ExecSession, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	o := container.ExecOptions{Cmd: cfg.Cmd, AttachStdin: cfg.Stdin, AttachStdout: true, AttachStderr: true, Tty: cfg.TTY}
	if cfg.TTY && cfg.Size != (TerminalSize{}) {
		o.ConsoleSize = &[2]uint{cfg.Size.Height, cfg.Size.Width}
	}
	execID, resp, err := c.execAttach(ctx, id, o)
	if err != nil {
		return nil, err
	}
	s := &ExecSession{c: c, container: id, id: execID, cmd: cfg.Cmd, tty: cfg.TTY, resp: resp}
	if err := s.started(ctx); err != nil {
		resp.Close()
		return nil, err
	}
	return s, nil
}

// started waits until Docker has started the command, so that the reason
// it could not (which Docker sends as the command's output) is an error
// and not output the command seems to print. Started, a command has a
// process, even once it has exited; one Docker could not start has none,
// and an exit code. (Docker reports an exec running from before it tries
// to start its process: only the process tells.)
func (s *ExecSession) started(ctx context.Context) error {
	for {
		info, err := s.c.api.ContainerExecInspect(ctx, s.id)
		if err != nil {
			return mapErr("exec in container "+s.container, err)
		}
		switch {
		case info.Pid != 0:
			return nil
		case !info.Running && info.ExitCode != 0:
			stop := context.AfterFunc(ctx, s.resp.Close)
			defer stop()
			reason := &cappedBuffer{max: 4 << 10}
			_ = s.Output(reason, reason)
			msg := strings.TrimSpace(reason.String())
			if msg == "" {
				msg = fmt.Sprintf("%s could not be started (exit code %d)", strings.Join(s.cmd, " "), info.ExitCode)
			}
			return &ExecStartError{Container: s.container, ExitCode: info.ExitCode, Reason: msg}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("exec in container %s: %s did not start: %w", s.container, strings.Join(s.cmd, " "), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Write writes to the command's stdin (ExecConfig.Stdin).
func (s *ExecSession) Write(p []byte) (int, error) { return s.resp.Conn.Write(p) }

// CloseWrite ends the command's stdin: the command reads its EOF, and the
// output goes on.
func (s *ExecSession) CloseWrite() error { return s.resp.CloseWrite() }

// Output copies the command's output until it ends — the command exited
// and Docker sent the rest, or the session was closed: stdout and stderr
// apart, or with a TTY the terminal's one stream to stdout.
func (s *ExecSession) Output(stdout, stderr io.Writer) error {
	if s.tty {
		_, err := io.Copy(stdout, s.resp.Reader)
		return err
	}
	_, err := stdcopy.StdCopy(stdout, stderr, s.resp.Reader)
	return err
}

// Resize sets the size of the command's terminal (ExecConfig.TTY).
func (s *ExecSession) Resize(ctx context.Context, size TerminalSize) error {
	ctx, cancel := s.c.callCtx(ctx)
	defer cancel()
	return mapErr("resize exec in container "+s.container, s.c.api.ContainerExecResize(ctx, s.id, container.ResizeOptions{Height: size.Height, Width: size.Width}))
}

// Wait returns the command's exit code once it has exited: after its
// output ended, within moments.
func (s *ExecSession) Wait(ctx context.Context) (int, error) {
	ctx, cancel := s.c.callCtx(ctx)
	defer cancel()
	return s.c.execExit(ctx, s.container, s.id, s.cmd, s.c.timeout)
}

// Close closes the connection: the command's stdin ends, its output is
// dropped.
func (s *ExecSession) Close() error {
	s.resp.Close()
	return nil
}

// execExit waits for an exec to end and returns its exit code. The end of
// an exec's output comes moments before Docker records its exit code.
func (c *Client) execExit(ctx context.Context, id, execID string, cmd []string, timeout time.Duration) (int, error) {
	for {
		info, err := c.api.ContainerExecInspect(ctx, execID)
		if err != nil {
			return 0, mapErr("exec in container "+id, err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("exec in container %s: %s did not finish within %s: %w", id, strings.Join(cmd, " "), timeout, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// cappedBuffer keeps the first max bytes written to it and drops the
// rest, reporting every write as complete.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// parseDockerTime parses inspect's RFC 3339 times; Docker reports "never"
// as year 1, which maps to the zero time.
func parseDockerTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.IsZero() || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// Logs returns the container's stdout and stderr, demultiplexed into one
// stream (Docker multiplexes them, except for a container with a TTY,
// whose one stream is copied as it is: logsCopier). tail is
// "all" or a line count; "" means all. With follow the stream lasts until
// ctx is done or the reader is closed; the call's deadline bounds only
// opening it.
func (c *Client) Logs(ctx context.Context, id string, follow bool, tail string) (io.ReadCloser, error) {
	return c.LogsWith(ctx, id, LogsOptions{Follow: follow, Tail: tail})
}

// LogsOptions choose a log stream's lines, as `docker logs` does.
type LogsOptions struct {
	Follow bool
	Tail   string // "all", "" (all) or a line count
	// Since, when set, leaves out the lines written before it.
	Since time.Time
	// Until, when set, leaves out the lines written at or after it (a
	// container's earlier runs: logs --previous).
	Until time.Time
	// Timestamps prefixes each line with its RFC 3339 time (nanoseconds).
	Timestamps bool
}

// LogsWith is Logs with the choice of lines of o.
func (c *Client) LogsWith(ctx context.Context, id string, o LogsOptions) (io.ReadCloser, error) {
	follow, tail := o.Follow, o.Tail
	if tail == "" {
		tail = "all"
	}
	var since string
	if !o.Since.IsZero() {
		// The engine takes Unix seconds with a fraction.
		since = fmt.Sprintf("%d.%09d", o.Since.Unix(), o.Since.Nanosecond())
	}
	var until string
	if !o.Until.IsZero() {
		until = fmt.Sprintf("%d.%09d", o.Until.Unix(), o.Until.Nanosecond())
	}
	copyLogs, err := c.logsCopier(ctx, id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(c.timeout, cancel)
	rc, err := c.api.ContainerLogs(ctx, id, container.LogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: follow, Tail: tail,
		Since: since, Until: until, Timestamps: o.Timestamps,
	})
	if !timer.Stop() && err == nil {
		err = fmt.Errorf("opening the stream took longer than %s: %w", c.timeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		if rc != nil {
			rc.Close()
		}
		return nil, mapErr("logs of container "+id, err)
	}
	pr, pw := io.Pipe()
	go func() {
		err := copyLogs(pw, rc)
		rc.Close()
		cancel()
		pw.CloseWithError(err) // nil → EOF for the reader
	}()
	return &logReader{PipeReader: pr, cancel: cancel}, nil
}

// logReader cancels the daemon request when the consumer closes it, which
// unblocks the copying goroutine.
type logReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (l *logReader) Close() error {
	l.cancel()
	return l.PipeReader.Close()
}
