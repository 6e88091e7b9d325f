package dockerx

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// HelperRequest is one helper container (docs/design.md §10): a Service's
// proxy or the instance's DNS server, running dockctl's own binary from
// the helper image (EnsureHelperImage) at a static address of the
// instance network; the gateway or the publisher on the host's network
// (JoinNetwork NetworkModeHost), binding their host ports themselves; or
// a port-forward session's relay in a pod's network namespace
// (JoinNetwork, Attached).
type HelperRequest struct {
	Instance, Namespace, Name, Role, Service, ConfigHash, Image string
	Cmd                                                         []string // e.g. {"/dockctl", "helper", "proxy", "--config", JSON}
	Network                                                     PodNetwork
	Ports                                                       []PortBinding // published on the host (NodePort, LoadBalancer)
	// JoinNetwork, instead of Network, is the network mode of a namespace
	// the helper shares: "container:ID" (a pod's network owner, whose
	// localhost it then sees) or "host". Docker gives such a helper no
	// address, resolver or published port of its own.
	JoinNetwork string
	// Attached makes a helper that lives as long as its creator's attach
	// (AttachHelper): its stdin stays open for that one attach (its
	// command waits for stdin's end), no restart policy brings it back,
	// and Docker removes it once it exits. So a creator killed without a
	// chance to clean up (SIGKILL) leaves nothing behind: its connection
	// to the daemon closes, and with it the helper's stdin.
	Attached bool
}

// NetworkModeHost is the network mode of the host's network namespace.
const NetworkModeHost = "host"

// PortBinding publishes a helper's ContainerPort on HostIP:HostPort.
type PortBinding struct {
	HostIP                  string // "" all addresses
	HostPort, ContainerPort int
	Protocol                string // TCP or UDP, any case; "" TCP
}

// attachedHelperUser is the uid:gid an Attached helper runs as: nobody's
// (65534, as Kubernetes' and the distributions' nobody), which owns no
// file of the helper image and of no pod.
const attachedHelperUser = "65534:65534"

// gatewayStateDir is the directory of the gateway helper's state file
// (helperapi.StateFile), a tmpfs.
const gatewayStateDir = "/run/dockctl"

// helperRoles are the roles a helper container may have: the others name
// what CreateContainer, CreateVolume and the image and network calls
// make.
var helperRoles = map[string]bool{RoleProxy: true, RoleDNS: true, RoleGateway: true, RolePublisher: true, RolePortForward: true}

// IsHelperRole reports whether a container of that role is one of
// dockctl's helpers: no replica of a deployment, never an orphan.
func IsHelperRole(role string) bool { return helperRoles[role] || role == RoleFilesWriter }

// BuildHelperConfig converts a helper request into the three structures
// of Docker's create call, with the log rotation of replicas. It is pure.
// Unlike a replica, a helper runs under Docker's restart policy "always":
// it must keep serving while the controller is down, and Docker restarts
// it after a crash or a daemon restart without anyone asking. An Attached
// helper is the exception: it is its creator's, and goes with it.
func BuildHelperConfig(req HelperRequest, logs ContainerLogs) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	fail := func(format string, args ...any) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
		return nil, nil, nil, fmt.Errorf("helper %s: %s", req.Name, fmt.Sprintf(format, args...))
	}
	switch join := container.NetworkMode(req.JoinNetwork); {
	case req.Instance == "" || req.Name == "" || req.Image == "":
		return fail("instance, name and image are required, have %q, %q, %q", req.Instance, req.Name, req.Image)
	case !helperRoles[req.Role]:
		return fail("role %q is not a helper's (%s, %s, %s, %s or %s)", req.Role, RoleProxy, RoleDNS, RoleGateway, RolePublisher, RolePortForward)
	case len(req.Cmd) == 0:
		return fail("no command: the helper image has no entrypoint")
	case req.Network.Name == "" && join == "":
		return fail("no network: a helper serves on the instance network or joins a namespace")
	case req.Network.Name != "" && join != "":
		return fail("both a network (%s) and a namespace to join (%s)", req.Network.Name, join)
	case join != "" && !join.IsHost() && join.ConnectedContainer() == "":
		return fail("network mode %q joins no namespace: want container:ID or host", join)
	case join != "" && len(req.Ports) > 0:
		return fail("a helper in another's network namespace publishes no port (Docker refuses)")
	}
	labels := map[string]string{LabelInstance: req.Instance, LabelRole: req.Role}
	for k, v := range map[string]string{LabelNamespace: req.Namespace, LabelService: req.Service, LabelConfigHash: req.ConfigHash} {
		if v != "" {
			labels[k] = v
		}
	}
	cfg := &container.Config{Image: req.Image, Cmd: slices.Clone(req.Cmd), Labels: labels}
	hc := &container.HostConfig{
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways},
		NetworkMode:   container.NetworkMode(req.Network.Name),
	}
	if req.Attached {
		// As `docker run -i --rm`: stdin open for the first attach only,
		// closed when it ends.
		cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce = true, true, true
		hc.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyDisabled}
		hc.AutoRemove = true
		// It lives in a user's pod's network namespace and needs nothing
		// there but to wait on stdin and dial the pod's loopback (its
		// execs run with the same rights): no root, no capability (Docker's
		// defaults include NET_RAW, raw sockets on the pod's traffic), no
		// way to gain any, nothing to write.
		cfg.User = attachedHelperUser
		hc.CapDrop = []string{"ALL"}
		hc.SecurityOpt = []string{securityOptNoNewPrivileges}
		hc.ReadonlyRootfs = true
	}
	if req.Role == RoleGateway {
		// The gateway holds TLS keys: its state file lives on a tmpfs
		// (never in an image layer).
		hc.Tmpfs = map[string]string{gatewayStateDir: "rw,noexec,nosuid,size=16m,mode=0700"}
	}
	if req.Role == RoleGateway || req.Role == RolePublisher {
		// They run on the host's network (docs/design.md §10) and need no
		// capability but to bind their ports: none of Docker's defaults
		// (NET_RAW on the host's interfaces, among others), no way to gain
		// one.
		hc.CapDrop = []string{"ALL"}
		hc.CapAdd = []string{"NET_BIND_SERVICE"}
		hc.SecurityOpt = []string{securityOptNoNewPrivileges}
	}
	setLogs(logs, hc)
	if req.JoinNetwork != "" {
		hc.NetworkMode = container.NetworkMode(req.JoinNetwork)
		return cfg, hc, &network.NetworkingConfig{}, nil
	}
	setResolver(req.Network, hc)
	for _, p := range req.Ports {
		if err := publish(p, cfg, hc); err != nil {
			return fail("%v", err)
		}
	}
	ep := &network.EndpointSettings{Aliases: slices.Clone(req.Network.Aliases)}
	if req.Network.IPv4 != "" {
		ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: req.Network.IPv4}
	}
	return cfg, hc, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{req.Network.Name: ep}}, nil
}

// publish exposes p's container port and binds it on the host.
func publish(p PortBinding, cfg *container.Config, hc *container.HostConfig) error {
	proto := strings.ToLower(p.Protocol)
	switch proto {
	case "":
		proto = "tcp"
	case "tcp", "udp":
	default:
		return fmt.Errorf("port %d: unsupported protocol %q", p.ContainerPort, p.Protocol)
	}
	if p.HostPort < 1 || p.HostPort > 65535 || p.ContainerPort < 1 || p.ContainerPort > 65535 {
		return fmt.Errorf("port %s:%d → %d/%s: ports are 1–65535", p.HostIP, p.HostPort, p.ContainerPort, proto)
	}
	if p.HostIP != "" {
		if _, err := netip.ParseAddr(p.HostIP); err != nil {
			return fmt.Errorf("port %d: host address %q: %w", p.HostPort, p.HostIP, err)
		}
	}
	return exposePort(cfg, hc, proto, p.ContainerPort, p.HostIP, p.HostPort)
}

// CreateHelper creates (but does not start) a helper container, with the
// client's log rotation, and returns its ID. A name already in use yields
// an error wrapping ErrConflict: the caller decides whether the container
// of that name is its helper (by its labels) before replacing it.
func (c *Client) CreateHelper(ctx context.Context, req HelperRequest) (string, error) {
	logs, err := c.containerLogs(ctx)
	if err != nil {
		return "", fmt.Errorf("create helper %s: %w", req.Name, err)
	}
	cfg, hc, nc, err := BuildHelperConfig(req, logs)
	if err != nil {
		return "", err
	}
	return c.create(ctx, req.Name, cfg, hc, nc)
}

// Attachment is the attach of an Attached helper (AttachHelper).
type Attachment struct {
	resp types.HijackedResponse
	done chan struct{}
}

// AttachHelper attaches to an Attached helper's stdin and output, before
// it is started, as `docker run -i` does: closing the attachment — or the
// end of the process holding it, however it ends — closes the helper's
// stdin, on which the helper exits and Docker removes it. Its output is
// read and dropped (it is in the helper's log).
func (c *Client) AttachHelper(ctx context.Context, id string) (*Attachment, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, mapErr("attach to helper "+id, err)
	}
	a := &Attachment{resp: resp, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		_, _ = io.Copy(io.Discard, resp.Reader)
	}()
	return a, nil
}

// Done is closed once the helper's output has ended: it exited (or the
// attachment was closed).
func (a *Attachment) Done() <-chan struct{} { return a.done }

// Close ends the attachment, and so the helper.
func (a *Attachment) Close() error {
	a.resp.Close()
	return nil
}
