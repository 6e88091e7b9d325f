package reconciler

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// netReviewBlackholeDial behaves as net.Dialer does towards an address whose
// packets are dropped (a controller in a container on another bridge,
// Docker's isolation rules dropping the SYN): it hangs until the context
// ends, then fails with a dial error.
func netReviewBlackholeDial(ctx context.Context, network, addr string) (net.Conn, error) {
	<-ctx.Done()
	return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
}

// TestReview10UndecidedRouteHTTPDialTimeoutGivesNoVerdict: while the
// route is undecided (no DNS helper runs yet, or the network was just
// created again), a direct probe that cannot even connect must give no
// verdict, or a controller that cannot reach the instance network
// restarts every healthy pod with an httpGet liveness probe. The tcpSocket
// probe gets that right; the httpGet probe does not: net/http returns the
// context's error, not the dial's *net.OpError, so judgeDirect counts it
// as a failure.
func TestReview10UndecidedRouteHTTPDialTimeoutGivesNoVerdict(t *testing.T) {
	r := newProbeRoute("i", quietLog(), nil, func() {})
	r.mode, r.network = ProbeUndecided, "dockctl_i"
	runner := newDockerProbeRunner(nil, &execRecorder{}, r)
	runner.dial = netReviewBlackholeDial
	target := probeTarget{ContainerID: "c", Address: "10.222.0.7",
		Ports: []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}, located: "dockctl_i", onNetwork: true}
	probes := map[string]*manifests.Probe{
		"tcpSocket": {TCPSocket: &manifests.TCPSocketAction{Port: intstr.FromInt32(8080)}, TimeoutSeconds: 1},
		"httpGet":   {HTTPGet: &manifests.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}, TimeoutSeconds: 1},
	}
	for _, kind := range []string{"tcpSocket", "httpGet"} {
		err := runner.Run(context.Background(), target, probes[kind])
		if !errors.Is(err, errNoVerdict) {
			t.Errorf("%s probe whose dial timed out while the route is undecided: %v; want no verdict (it would count towards a restart)", kind, err)
		}
	}
}

// netReviewConnectCounter counts every ConnectNetwork attempt (the engine counts
// only those that succeed) and every ensure (one network list a sweep).
type netReviewConnectCounter struct {
	NetworkDocker
	mu                sync.Mutex
	attempts, ensures int
}

func (c *netReviewConnectCounter) ConnectNetwork(ctx context.Context, network, id string, ep dockerx.EndpointSettings) error {
	c.mu.Lock()
	c.attempts++
	c.mu.Unlock()
	return c.NetworkDocker.ConnectNetwork(ctx, network, id, ep)
}

func (c *netReviewConnectCounter) ListNetworks(ctx context.Context) ([]dockerx.Network, error) {
	c.mu.Lock()
	c.ensures++
	c.mu.Unlock()
	return c.NetworkDocker.ListNetworks(ctx)
}

func (c *netReviewConnectCounter) counts() (attempts, ensures int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts, c.ensures
}

// TestReview10ContainerNetworkModeNotConnectedEverySweep: a deployment
// stored by an earlier release with dockctl.io/network: container:X (a
// network mode the code says keeps its meaning) has replicas in another
// container's network namespace, which Docker never lets join a network.
// planConnects sees no network on them and asks for a connect at every
// sweep: a refused write call and a warning per replica per resync,
// forever, breaking "an idle controller makes no Docker call that writes".
func TestReview10ContainerNetworkModeNotConnectedEverySweep(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 30 * time.Millisecond, Allow: manifests.Policy{HostNamespaces: true}})
	counter := &netReviewConnectCounter{NetworkDocker: h.engine}
	h.opts.NetworkDocker = counter
	h.ctrl = New(h.engine, h.store, h.opts)
	if _, err := h.engine.Add(dockerx.Container{Name: "donor", Image: testImage, State: dockerx.StateRunning}, ""); err != nil {
		t.Fatal(err)
	}
	d := testDeployment("web", 1, "x")
	d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "container:donor"}
	h.apply(d)
	h.start()
	h.waitReplicas("web", 1)
	_, from := counter.counts()
	h.waitFor("five more sweeps", func() bool { _, n := counter.counts(); return n >= from+5 })
	h.stop()
	if attempts, _ := counter.counts(); attempts != 0 {
		t.Fatalf("%d connect attempts for a replica in another container's network namespace; want none (Docker refuses every one)", attempts)
	}
}

// netReviewListedNetworks is a NetworkDocker whose list is fixed.
type netReviewListedNetworks struct {
	NetworkDocker
	nets []dockerx.Network
}

func (l *netReviewListedNetworks) ListNetworks(context.Context) ([]dockerx.Network, error) {
	return slices.Clone(l.nets), nil
}

// TestReview10DuplicateInstanceNetworkNameIsAConflict: Docker 20.10
// creates a second network of an existing name for any client that does
// not set CheckDuplicate (the SDK's default; checked on this daemon), and
// then refuses the name as ambiguous everywhere dockctl uses it
// ("2 matches found based on name": pods' NetworkMode at start, connect,
// inspect). ensure takes the first network of that name in the list and,
// when it is ours, reports no conflict: every pod created on the name
// fails to start, and nothing says why.
func TestReview10DuplicateInstanceNetworkNameIsAConflict(t *testing.T) {
	ours := dockerx.Network{ID: "aaa", Name: "dockctl_i", Labels: dockerx.NetworkLabels("i"), Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}
	foreign := dockerx.Network{ID: "bbb", Name: "dockctl_i", Subnet: "172.30.0.0/16"}
	n := newInstanceNetwork("i", "", &netReviewListedNetworks{nets: []dockerx.Network{ours, foreign}}, nil, quietLog(), nil)
	st, _, err := n.ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st != nil || !n.conflict {
		t.Fatalf("two networks named dockctl_i (one not ours): pods are put on %+v, conflict reported %v; want no network used and the conflict reported", st, n.conflict)
	}
}

// TestReview10RefusedDNSDialMeansReachable: the route is decided by
// dialing the DNS server as soon as its helper's "start" event arrives —
// before the helper's process listens. A refused connection proves the
// network routes from here (judgeDirect itself treats a refusal as an
// answer), yet update decides "relay", and relay is never re-checked:
// a controller on the Docker host then execs in the DNS helper for every
// probe of every pod, for good, and loses all probes whenever that one
// helper is being replaced.
func TestReview10RefusedDNSDialMeansReachable(t *testing.T) {
	st := &store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", DNSIP: "10.222.8.0"}
	dns := []dockerx.Container{{ID: "dns1", Name: "i_dns", Role: dockerx.RoleDNS, Instance: "i", State: dockerx.StateRunning}}
	r := newProbeRoute("i", quietLog(), nil, func() {})
	r.dial = func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	r.update(context.Background(), st, false, dns)
	if _, relay := r.via(); relay {
		t.Fatalf("the DNS server refused the connection (routed, not listening yet): mode %s; want direct (or undecided until it listens)", r.mode)
	}
}
