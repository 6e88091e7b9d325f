package reconciler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// TestPlanConnects: every pod's network owner that is not on the instance
// network is connected in place, with its cause; members, helpers, pods
// on the host's network and containers Docker would refuse are left alone.
func TestPlanConnects(t *testing.T) {
	const net = "dockctl_i"
	labelled := func(c dockerx.Container) dockerx.Container {
		c.Labels = map[string]string{dockerx.LabelNamespace: "default"}
		return c
	}
	replica := func(ord int, state string) dockerx.Container { return ctr("h1", ord, state, time.Hour) }
	pod := podOf("h2", 0, dockerx.StateRunning, map[string]string{"app": dockerx.StateRunning})
	holder, mem := pod[0], pod[1]
	if holder.Role != dockerx.RoleHolder {
		holder, mem = mem, holder
	}
	withMode := func(c dockerx.Container, mode string) dockerx.Container {
		c.NetworkMode = mode
		return c
	}
	helper := func(role string) dockerx.Container {
		return dockerx.Container{ID: "id-" + role, Name: "i_" + role, Role: role, State: dockerx.StateRunning, Instance: "i"}
	}
	tests := []struct {
		name string
		cs   []dockerx.Container
		want []string
	}{
		{
			name: "a replica of an earlier release, on the default bridge",
			cs:   []dockerx.Container{onNetworks(replica(0, dockerx.StateRunning), map[string]string{"bridge": "172.17.0.2"})},
			want: []string{"connect i_web-h1-0 to dockctl_i: created by an earlier release"},
		},
		{
			name: "a labelled replica disconnected by hand",
			cs:   []dockerx.Container{labelled(onNetworks(replica(0, dockerx.StateRunning), map[string]string{}))},
			want: []string{"connect i_web-h1-0 to dockctl_i: " + causeDisconnected},
		},
		{
			name: "already connected: nothing",
			cs:   []dockerx.Container{onNetworks(replica(0, dockerx.StateRunning), map[string]string{net: "10.222.0.5", "bridge": "172.17.0.2"})},
		},
		{
			name: "connected but stopped (no address yet): nothing",
			cs:   []dockerx.Container{onNetworks(replica(0, dockerx.StateExited), map[string]string{net: ""})},
		},
		{
			name: "stopped and created containers are connected too: Docker attaches them at their start",
			cs: []dockerx.Container{
				onNetworks(replica(1, dockerx.StateCreated), map[string]string{"bridge": ""}),
				onNetworks(replica(0, dockerx.StateExited), map[string]string{"bridge": ""}),
			},
			want: []string{"connect i_web-h1-0 to dockctl_i: created by an earlier release", "connect i_web-h1-1 to dockctl_i: created by an earlier release"},
		},
		{
			name: "states Docker refuses or that are going: nothing",
			cs: []dockerx.Container{
				replica(0, dockerx.StatePaused), replica(1, dockerx.StateRemoving), replica(2, dockerx.StateDead), replica(3, dockerx.StateRestarting),
			},
		},
		{
			name: "the host's network joins no other",
			cs:   []dockerx.Container{onNetworks(replica(0, dockerx.StateRunning), map[string]string{"host": ""})},
		},
		{
			name: "another container's namespace (container:X of an earlier release), the host's or none: nothing, whatever is listed",
			cs: []dockerx.Container{
				withMode(replica(0, dockerx.StateRunning), "container:0123"),
				withMode(replica(1, dockerx.StateRunning), "host"),
				withMode(onNetworks(replica(2, dockerx.StateRunning), map[string]string{}), "none"),
			},
		},
		{
			name: "a holder pod: its holder only, never a member",
			cs:   []dockerx.Container{onNetworks(holder, map[string]string{"bridge": "172.17.0.3"}), mem},
			want: []string{"connect " + holder.Name + " to dockctl_i: created by an earlier release"},
		},
		{
			name: "helpers are the Service reconciler's",
			cs:   []dockerx.Container{helper(dockerx.RoleDNS), helper(dockerx.RoleProxy)},
		},
		{
			name: "a port-forward session's helper is the CLI's, in a pod's namespace",
			cs:   []dockerx.Container{withMode(helper(dockerx.RolePortForward), "container:0123")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, op := range planConnects(net, tt.cs) {
				got = append(got, op.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("planConnects:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

// onNetworks reports c connected to nets (name → IPv4), as the list does.
func onNetworks(c dockerx.Container, nets map[string]string) dockerx.Container {
	c.Networks = nets
	return c
}

// connectCounter counts every ConnectNetwork attempt (the engine counts
// only those that succeed) and every ensure (one network list a sweep).
type connectCounter struct {
	NetworkDocker
	mu                sync.Mutex
	attempts, ensures int
}

func (c *connectCounter) ConnectNetwork(ctx context.Context, network, id string, ep dockerx.EndpointSettings) error {
	c.mu.Lock()
	c.attempts++
	c.mu.Unlock()
	return c.NetworkDocker.ConnectNetwork(ctx, network, id, ep)
}

func (c *connectCounter) ListNetworks(ctx context.Context) ([]dockerx.Network, error) {
	c.mu.Lock()
	c.ensures++
	c.mu.Unlock()
	return c.NetworkDocker.ListNetworks(ctx)
}

func (c *connectCounter) counts() (attempts, ensures int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts, c.ensures
}

// TestContainerNetworkModeReplicaIsNeverConnected: a deployment stored by
// an earlier release with dockctl.io/network: container:X (a network mode
// that keeps its meaning) has replicas in another container's network
// namespace, which Docker never lets join a network. planConnects must
// not ask for a connect of them: one at every sweep would be a refused
// write call and a warning per replica per resync, forever, breaking "an
// idle controller makes no Docker call that writes".
func TestContainerNetworkModeReplicaIsNeverConnected(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 30 * time.Millisecond, Allow: manifests.Policy{HostNamespaces: true}})
	counter := &connectCounter{NetworkDocker: h.engine}
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
