package main

import (
	"io"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// --subnet is parsed into the options, and a value the controller could
// never create a network with is refused before anything starts, naming
// the flag.
func TestControllerSubnetFlag(t *testing.T) {
	o := &controllerOptions{}
	cmd := newControllerCommandWith(&globalOptions{}, o)
	if f := cmd.Flags().Lookup("subnet"); f == nil || f.DefValue != "" {
		t.Fatalf("--subnet: %+v, want a flag with no default (a free subnet is chosen)", f)
	}
	if err := cmd.Flags().Parse([]string{"--subnet", "192.168.77.0/24"}); err != nil || o.subnet != "192.168.77.0/24" {
		t.Fatalf("--subnet 192.168.77.0/24: %v, parsed %q", err, o.subnet)
	}
	for _, tt := range []struct{ value, says string }{
		{"10.0.0.0/25", "too small"},
		{"10.0.0.1/24", "did you mean 10.0.0.0/24"},
		{"fd00::/64", "IPv4"},
		{"10.0.0.0", "CIDR"},
	} {
		cmd := newControllerCommand(&globalOptions{stateDir: t.TempDir()})
		cmd.SetArgs([]string{"--subnet", tt.value, "--metrics-addr", ""})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--subnet "+tt.value) || !strings.Contains(err.Error(), tt.says) {
			t.Fatalf("--subnet %s: err = %v, want a refusal naming the flag and saying %q", tt.value, err, tt.says)
		}
	}
}

// The controller gives its instance a network with the --subnet given, and
// creates every replica on it with a pod's resolver settings: the DNS
// server at the first address of the subnet's upper half, the namespace's
// search list, ndots:5.
func TestControllerInstanceNetworkWiring(t *testing.T) {
	api := startDockerAPI(t, "dockctl-workload:dev")
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t"}
	if _, _, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	startDockctl(t, api, append(base, "controller", "--metrics-addr", "", "--resync-period", "200ms", "--subnet", "192.168.77.0/24")...)
	waitUntil(t, "3 running replicas", func() bool { return api.running(dockerx.LabelDeployment, "web") == 3 })
	api.mu.Lock()
	n := api.networks["dockctl_t"]
	api.mu.Unlock()
	if n == nil || n.Labels[dockerx.LabelInstance] != "t" || n.Labels[dockerx.LabelRole] != dockerx.RoleNetwork ||
		len(n.IPAM.Config) != 1 || n.IPAM.Config[0].Subnet != "192.168.77.0/24" || n.IPAM.Config[0].IPRange != "192.168.77.0/25" || n.IPAM.Config[0].Gateway != "192.168.77.1" {
		t.Fatalf("instance network: %+v", n)
	}
	for _, req := range api.createsSnapshot() {
		hc := req.HostConfig
		if hc == nil || hc.NetworkMode != "dockctl_t" || strings.Join(hc.DNS, ",") != "192.168.77.128" ||
			strings.Join(hc.DNSSearch, ",") != "default.svc.cluster.local,svc.cluster.local,cluster.local" || strings.Join(hc.DNSOptions, ",") != "ndots:5" {
			t.Fatalf("replica created off the instance network or without a pod's resolver: %+v", hc)
		}
	}
}
