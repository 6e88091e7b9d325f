package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/internal/grpcprobe"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// ExecDocker runs an exec probe in a container (the Docker API's exec).
type ExecDocker interface {
	Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error)
}

// RelayDocker runs a relayed probe in the DNS helper and returns its exit
// code and output (the Docker API's exec, output kept).
type RelayDocker interface {
	ExecOutput(ctx context.Context, id string, cmd []string, timeout time.Duration) (exit int, stdout []byte, err error)
}

// Runner runs probes for real (a podruntime.ProbeRunner; podruntime.Prober
// says which, and when): HTTP and TCP from the controller to the
// container's address, or relayed through the DNS helper when the
// controller cannot reach the instance network (route.go); exec through
// the Docker API.
type Runner struct {
	docker ExecDocker
	client *http.Client
	// nd runs relayed probes (nil: Docker without networks); route says
	// whether to relay (nil: never).
	nd    RelayDocker
	route *Route
	// Dial connects a direct probe (tests substitute it).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewRunner returns a Runner that execs through d, relays through nd (nil:
// never) when route says so (nil: never) and dials directly otherwise.
func NewRunner(d ExecDocker, nd RelayDocker, route *Route) *Runner {
	r := &Runner{docker: d, nd: nd, route: route}
	var dialer net.Dialer
	r.Dial = dialer.DialContext
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) { return r.Dial(ctx, network, addr) }
	// As kubelet, and as the relay (internal/dataplane): never through a
	// proxy from the environment, HTTPS without verifying the
	// certificate, so that a pod is judged alike in either mode.
	transport.Proxy = nil
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // kubelet's semantics
	r.client = &http.Client{
		Transport: transport,
		// A probe judges the container's own answer, as kubelet does.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r
}

// Run runs one attempt of probe p against t (podruntime.ProbeRunner).
func (r *Runner) Run(ctx context.Context, t podruntime.ProbeTarget, p *manifests.Probe) error {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	if p.Exec == nil && !t.HostNetwork && r.nd != nil {
		if helper, relay := r.route.Via(); relay {
			if !t.OnNetwork {
				// Its address is not one the relay can reach (a pod of an
				// earlier release the sweep has not connected yet).
				return fmt.Errorf("%w: the pod is not on the instance network yet", podruntime.ErrNoVerdict)
			}
			return r.relay(ctx, helper, t, p, timeout)
		}
	}
	err := r.direct(ctx, t, p, timeout)
	if p.Exec == nil {
		err = r.route.judgeDirect(err)
	}
	return err
}

// relay runs an httpGet, tcpSocket or grpc probe in the DNS helper.
func (r *Runner) relay(ctx context.Context, helper string, t podruntime.ProbeTarget, p *manifests.Probe, timeout time.Duration) error {
	if helper == "" {
		r.route.relayLost("", fmt.Errorf("no DNS helper runs"))
		return fmt.Errorf("%w: no DNS helper runs to relay it", podruntime.ErrNoVerdict)
	}
	spec, err := relaySpec(t, p, timeout)
	if err != nil {
		return err
	}
	cmd, err := relayCommand(spec)
	if err != nil {
		return fmt.Errorf("%w: %v", podruntime.ErrNoVerdict, err)
	}
	code, out, err := r.nd.ExecOutput(ctx, helper, cmd, timeout+relayMargin)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.route.relayLost(helper, err)
		return fmt.Errorf("%w: relay through the DNS helper: %v", podruntime.ErrNoVerdict, err)
	}
	return relayVerdict(code, out, timeout)
}

// relaySpec is the probe as the relay runs it: Kubernetes' semantics, to
// the same address and port a direct probe would dial.
func relaySpec(t podruntime.ProbeTarget, p *manifests.Probe, timeout time.Duration) (helperapi.ProbeSpec, error) {
	spec := helperapi.ProbeSpec{Address: t.Address, TimeoutMillis: timeout.Milliseconds()}
	var port intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		spec.Kind, port, spec.Scheme, spec.Path = "http", g.Port, strings.ToUpper(g.Scheme), g.Path
		if spec.Scheme == "" {
			spec.Scheme = "HTTP"
		}
		if g.Host != "" {
			spec.Address = g.Host
		}
		for _, h := range g.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				spec.Host = h.Value
				continue
			}
			if spec.Headers == nil {
				spec.Headers = map[string]string{}
			}
			spec.Headers[h.Name] = h.Value
		}
	case p.TCPSocket != nil:
		spec.Kind, port = "tcp", p.TCPSocket.Port
		if p.TCPSocket.Host != "" {
			spec.Address = p.TCPSocket.Host
		}
	case p.GRPC != nil:
		spec.Kind, port = "grpc", intstr.FromInt32(p.GRPC.Port)
		if p.GRPC.Service != nil {
			spec.Service = *p.GRPC.Service
		}
	default:
		return spec, fmt.Errorf("probe has no handler to relay")
	}
	n, err := resolvePort(port, t.Ports)
	if err != nil {
		return spec, err
	}
	spec.Port = n
	if spec.Address == "" {
		return spec, fmt.Errorf("container has no address to probe (network mode none?)")
	}
	return spec, nil
}

// direct runs a probe from the controller itself.
func (r *Runner) direct(ctx context.Context, t podruntime.ProbeTarget, p *manifests.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		code, err := r.docker.Exec(ctx, t.ContainerID, p.Exec.Command, timeout)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("%s exited %d", strings.Join(p.Exec.Command, " "), code)
		}
		return nil
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := resolvePort(g.Port, t.Ports)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = t.Address
		}
		if host == "" {
			return fmt.Errorf("container has no address to probe (network mode none?)")
		}
		scheme := strings.ToLower(g.Scheme)
		if scheme == "" {
			scheme = "http"
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "dockctl-probe")
		for _, h := range g.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				req.Host = h.Value // net/http ignores a Host header
				continue
			}
			req.Header.Set(h.Name, h.Value)
		}
		// Whether a connection was made tells a dial that never got
		// through from an answer: net/http reports a dial cut short by the
		// timeout as the context's error, not as the dial's.
		var connected atomic.Bool
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
		}))
		resp, err := r.client.Do(req)
		if err != nil {
			var op *net.OpError
			if !connected.Load() && !errors.As(err, &op) {
				return &net.OpError{Op: "dial", Net: "tcp", Err: err}
			}
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe %s: status %d", req.URL, resp.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.Ports)
		if err != nil {
			return err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.Address
		}
		if host == "" {
			return fmt.Errorf("container has no address to probe (network mode none?)")
		}
		conn, err := r.Dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.GRPC != nil:
		if t.Address == "" {
			return fmt.Errorf("container has no address to probe (network mode none?)")
		}
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcprobe.Check(ctx, r.Dial, t.Address, int(p.GRPC.Port), service)
	}
	return fmt.Errorf("probe has no handler")
}

// resolvePort turns a probe port (a number or a container port's name)
// into a number.
func resolvePort(p intstr.IntOrString, ports []manifests.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		return int(p.IntVal), nil
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}
