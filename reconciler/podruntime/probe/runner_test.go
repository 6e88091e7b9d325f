package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

func TestDockerProbeRunner(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	engine := dockerfake.New(podtest.Image)
	id, _ := engine.Add(dockerx.Container{Name: "c", State: dockerx.StateRunning, Labels: map[string]string{}}, "")
	engine.OnExec = func(_ string, cmd []string) (int, error) {
		if cmd[0] == "fail" {
			return 3, nil
		}
		return 0, nil
	}
	runner := NewRunner(engine, nil, nil)
	target := podruntime.ProbeTarget{ContainerID: id, Address: host, Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	httpProbe := func(path string, p intstr.IntOrString) *manifests.Probe {
		return &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: path, Port: p}, TimeoutSeconds: 1}
	}
	tests := []struct {
		name  string
		probe *manifests.Probe
		ok    bool
	}{
		{"http 200", httpProbe("/ok", intstr.FromInt32(int32(port))), true},
		{"http by port name", httpProbe("/ok", intstr.FromString("http")), true},
		{"http 503", httpProbe("/fail", intstr.FromInt32(int32(port))), false},
		{"http 302 counts as success, not followed", httpProbe("/redirect", intstr.FromInt32(int32(port))), true},
		{"http unknown port name", httpProbe("/ok", intstr.FromString("nope")), false},
		{"tcp open", &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, true},
		{"tcp closed", &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort))}}, false},
		{"exec exit 0", &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"true"}}}, true},
		{"exec exit 3", &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"fail"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runner.Run(context.Background(), target, tt.probe)
			if (err == nil) != tt.ok {
				t.Fatalf("Run = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestRelaySpecGRPC(t *testing.T) {
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7"}
	svc := "ready"
	got, err := relaySpec(target, &manifests.Probe{GRPC: &manifests.GRPCAction{Port: 9090, Service: &svc}}, 2*time.Second)
	want := helperapi.ProbeSpec{Kind: "grpc", Address: "10.222.0.7", Port: 9090, Service: "ready", TimeoutMillis: 2000}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("relaySpec = %+v, %v\nwant %+v", got, err, want)
	}
}

func TestDockerProbeRunnerGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("warming", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	runner := NewRunner(dockerfake.New(podtest.Image), nil, nil)
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "127.0.0.1"}
	for _, tc := range []struct {
		service string
		ok      bool
	}{{"", true}, {"ready", true}, {"warming", false}} {
		svc := tc.service
		err := runner.Run(context.Background(), target, &manifests.Probe{GRPC: &manifests.GRPCAction{Port: port, Service: &svc}, TimeoutSeconds: 1})
		if (err == nil) != tc.ok {
			t.Errorf("service %q: Run = %v, want ok=%v", tc.service, err, tc.ok)
		}
	}
	// Flipping the status flips the verdict.
	hs.SetServingStatus("warming", healthpb.HealthCheckResponse_SERVING)
	svc := "warming"
	if err := runner.Run(context.Background(), target, &manifests.Probe{GRPC: &manifests.GRPCAction{Port: port, Service: &svc}, TimeoutSeconds: 1}); err != nil {
		t.Errorf("after SERVING: %v", err)
	}
}

func TestRelaySpec(t *testing.T) {
	ports := []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7", Ports: ports}
	tests := []struct {
		name string
		p    *manifests.Probe
		want helperapi.ProbeSpec
		err  string
	}{
		{
			name: "httpGet by port name",
			p:    &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			want: helperapi.ProbeSpec{Kind: "http", Address: "10.222.0.7", Port: 8080, Scheme: "HTTP", Path: "/healthz", TimeoutMillis: 2000},
		},
		{
			name: "httpGet with a host, a Host header and another header",
			p: &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Host: "10.222.0.9", Scheme: "https",
				HTTPHeaders: []manifests.HTTPHeader{{Name: "host", Value: "web.example"}, {Name: "X-Probe", Value: "1"}}}},
			want: helperapi.ProbeSpec{Kind: "http", Address: "10.222.0.9", Port: 80, Scheme: "HTTPS", Path: "/", Host: "web.example",
				Headers: map[string]string{"X-Probe": "1"}, TimeoutMillis: 2000},
		},
		{
			name: "tcpSocket",
			p:    &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(5432)}},
			want: helperapi.ProbeSpec{Kind: "tcp", Address: "10.222.0.7", Port: 5432, TimeoutMillis: 2000},
		},
		{
			name: "unknown port name",
			p:    &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromString("db")}},
			err:  `no container port named "db"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := relaySpec(target, tt.p, 2*time.Second)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("relaySpec = %+v, %v; want an error saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("relaySpec = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// execRecorder is a RelayDocker whose ExecOutput answers relayed probes.
type execRecorder struct {
	mu     sync.Mutex
	cmds   [][]string
	ids    []string
	answer func(spec helperapi.ProbeSpec) (int, string, error)
}

// TestDockerProbeRunnerRelays: in relay mode httpGet and tcpSocket probes
// are exec'd in the DNS helper with their spec, its exit code is the
// verdict, and a relay that cannot run gives no verdict; exec probes and
// host-network pods never go through it.
func TestDockerProbeRunnerRelays(t *testing.T) {
	r := NewRoute("i", quietLog(), nil, func() {})
	r.mode, r.helper, r.network = Relay, "dns1", "dockctl_i"
	nd := &execRecorder{answer: func(spec helperapi.ProbeSpec) (int, string, error) {
		if spec.Address == "10.222.0.7" && spec.Port == 8080 {
			return helperapi.ExitOK, "HTTP 200", nil
		}
		return helperapi.ExitFailed, "connection refused", nil
	}}
	d := &podtest.ScriptedDial{}
	runner := NewRunner(nil, nd, r)
	runner.Dial = d.Dial
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7", Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}},
		OnNetwork: true}
	httpOK := &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}, TimeoutSeconds: 1}
	tcpBad := &manifests.Probe{TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(9)}, TimeoutSeconds: 1}
	ctx := context.Background()

	if err := runner.Run(ctx, target, httpOK); err != nil {
		t.Fatalf("relayed httpGet: %v", err)
	}
	if err := runner.Run(ctx, target, tcpBad); err == nil || errors.Is(err, podruntime.ErrNoVerdict) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("relayed tcpSocket to a closed port: %v, want a failure with the relay's reason", err)
	}
	if len(nd.ids) != 2 || nd.ids[0] != "dns1" || d.Count() != 0 {
		t.Fatalf("execs in %q and %d direct dials; want 2 execs in dns1 and no dial", nd.ids, d.Count())
	}
	// A pod not connected yet (its address is on another network): no
	// verdict, nothing relayed.
	off := target
	off.OnNetwork, off.Address = false, "172.17.0.5"
	if err := runner.Run(ctx, off, httpOK); !errors.Is(err, podruntime.ErrNoVerdict) || len(nd.ids) != 2 {
		t.Fatalf("a pod off the network: %v after %d execs; want no verdict and no exec", err, len(nd.ids))
	}
	// Host network: the relay's loopback is its own; dialed directly.
	host := target
	host.HostNetwork, host.Address = true, "127.0.0.1"
	_ = runner.Run(ctx, host, httpOK)
	if len(nd.ids) != 2 || d.Count() != 1 {
		t.Fatalf("a host-network pod's probe: %d execs, %d dials; want it dialed directly", len(nd.ids), d.Count())
	}
	// The helper's exec fails: no verdict, and the helper is looked for
	// again.
	nd.answer = func(helperapi.ProbeSpec) (int, string, error) {
		return 0, "", fmt.Errorf("exec in dns1: %w", dockerx.ErrNotFound)
	}
	if err := runner.Run(ctx, target, httpOK); !errors.Is(err, podruntime.ErrNoVerdict) {
		t.Fatalf("relay gone: %v, want no verdict", err)
	}
	if helper, _ := r.Via(); helper != "" {
		t.Fatalf("the lost helper %q is still used", helper)
	}
	if err := runner.Run(ctx, target, httpOK); !errors.Is(err, podruntime.ErrNoVerdict) || len(nd.ids) != 3 {
		t.Fatalf("no helper: %v after %d execs, want no verdict without an exec", err, len(nd.ids))
	}
}

// TestDirectHTTPSProbeSkipsVerification: as kubelet (and the relay), an
// HTTPS probe does not verify the pod's certificate (usually self-signed).
func TestDirectHTTPSProbeSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	runner := NewRunner(nil, nil, nil)
	probe := &manifests.Probe{HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(p)), Scheme: "HTTPS"}, TimeoutSeconds: 5}
	if err := runner.Run(context.Background(), podruntime.ProbeTarget{ContainerID: "c", Address: host}, probe); err != nil {
		t.Fatalf("HTTPS probe of a self-signed server: %v", err)
	}
}

// blackholeDial behaves as net.Dialer does towards an address whose
// packets are dropped (a controller in a container on another bridge,
// Docker's isolation rules dropping the SYN): it hangs until the context
// ends, then fails with a dial error.
func blackholeDial(ctx context.Context, network, addr string) (net.Conn, error) {
	<-ctx.Done()
	return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
}

// TestUndecidedRouteDialTimeoutGivesNoVerdict: while the route is
// undecided (no DNS helper runs yet, or the network was just created
// again), a direct probe that cannot even connect must give no verdict,
// or a controller that cannot reach the instance network restarts every
// healthy pod with a liveness probe. Both probe kinds are checked: the
// httpGet one is the trap, as net/http returns the context's error, not
// the dial's *net.OpError, and judgeDirect must still see a dial failure.
func TestUndecidedRouteDialTimeoutGivesNoVerdict(t *testing.T) {
	r := NewRoute("i", quietLog(), nil, func() {})
	r.mode, r.network = Undecided, "dockctl_i"
	runner := NewRunner(nil, &execRecorder{}, r)
	runner.Dial = blackholeDial
	target := podruntime.ProbeTarget{ContainerID: "c", Address: "10.222.0.7",
		Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}, OnNetwork: true}
	probes := map[string]*manifests.Probe{
		"tcpSocket": {TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(8080)}, TimeoutSeconds: 1},
		"httpGet":   {HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}, TimeoutSeconds: 1},
	}
	for _, kind := range []string{"tcpSocket", "httpGet"} {
		err := runner.Run(context.Background(), target, probes[kind])
		if !errors.Is(err, podruntime.ErrNoVerdict) {
			t.Errorf("%s probe whose dial timed out while the route is undecided: %v; want no verdict (it would count towards a restart)", kind, err)
		}
	}
}

func (e *execRecorder) ExecOutput(_ context.Context, id string, cmd []string, _ time.Duration) (int, []byte, error) {
	e.mu.Lock()
	e.cmds = append(e.cmds, cmd)
	e.ids = append(e.ids, id)
	e.mu.Unlock()
	var spec helperapi.ProbeSpec
	if len(cmd) != 5 || cmd[0] != helperapi.Binary || cmd[1] != "helper" || cmd[2] != helperapi.ModeProbe || cmd[3] != "--spec" {
		return helperapi.ExitUsage, []byte("unexpected command"), nil
	}
	if err := json.Unmarshal([]byte(cmd[4]), &spec); err != nil {
		return helperapi.ExitUsage, []byte(err.Error()), nil
	}
	code, out, err := e.answer(spec)
	return code, []byte(out), err
}
