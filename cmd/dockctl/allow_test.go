package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// The --allow-* flags reach the controller's policy: host path prefixes as
// a list (repeatable, comma-separated, bare = "/"), capabilities as a list.
func TestControllerAllowFlags(t *testing.T) {
	tests := []struct {
		args []string
		want manifests.Policy
	}{
		{nil, manifests.Policy{}},
		{[]string{"--allow-privileged", "--allow-host-namespaces", "--allow-host-root"},
			manifests.Policy{Privileged: true, HostNamespaces: true, HostRoot: true}},
		{[]string{"--allow-host-path"}, manifests.Policy{HostPaths: []string{"/"}}},
		{[]string{"--allow-host-path=/srv,/opt/data", "--allow-host-path=/mnt"}, manifests.Policy{HostPaths: []string{"/srv", "/opt/data", "/mnt"}}},
		{[]string{"--allow-capabilities=NET_ADMIN,sys_time"}, manifests.Policy{Capabilities: []string{"NET_ADMIN", "sys_time"}}},
		{[]string{"--allow-networks=backend,monitoring", "--allow-networks=bridge"}, manifests.Policy{Networks: []string{"backend", "monitoring", "bridge"}}},
		{[]string{"--allow-host-ports=8080,9000-9100", "--allow-host-ports=53"},
			manifests.Policy{HostPorts: []manifests.PortRange{{From: 8080, To: 8080}, {From: 9000, To: 9100}, {From: 53, To: 53}}}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := &controllerOptions{}
			cmd := newControllerCommandWith(&globalOptions{}, o)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
				t.Fatal(err)
			}
			got := o.allow.policy("/state")
			if got.Privileged != tt.want.Privileged || got.HostNamespaces != tt.want.HostNamespaces || got.HostRoot != tt.want.HostRoot ||
				!slices.Equal(got.HostPaths, tt.want.HostPaths) || !slices.Equal(got.Capabilities, tt.want.Capabilities) ||
				!slices.Equal(got.Networks, tt.want.Networks) || !slices.Equal(got.HostPorts, tt.want.HostPorts) {
				t.Fatalf("policy %+v, want %+v", got, tt.want)
			}
			if got.Host.Resolve == nil || !slices.Contains(got.Host.Protected, "/state") {
				t.Fatalf("the policy must resolve paths and protect the state directory: %+v", got.Host)
			}
		})
	}
	// A list flag's value after a space is an argument: say how to fix it.
	o := &controllerOptions{}
	cmd := newControllerCommandWith(&globalOptions{}, o)
	if err := cmd.ParseFlags([]string{"--allow-host-path", "/srv"}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Args(cmd, cmd.Flags().Args()); err == nil || !strings.Contains(err.Error(), "--allow-host-path=/srv") {
		t.Fatalf("want an error showing the = form, got %v", err)
	}
}

// apply warns about every setting the controller gates: the network
// annotation values that are host namespaces are refused outright, and
// capabilities and system paths are named with the flag that allows them.
func TestApplyWarnsAboutHostPrivileges(t *testing.T) {
	withSpec := func(extra, container string) string {
		s := strings.Replace(webYAML, "    spec:\n      containers:", "    spec:\n"+extra+"      containers:", 1)
		return strings.Replace(s, "        env:", container+"        env:", 1)
	}
	tests := []struct {
		name, src string
		want      []string
	}{
		{"capability", withSpec("", "        securityContext: {capabilities: {add: [SYS_ADMIN, NET_BIND_SERVICE]}}\n"),
			[]string{"spec.template.spec.containers[0].securityContext.capabilities.add[0]", "--allow-capabilities=SYS_ADMIN"}},
		{"/etc", withSpec("      volumes: [{name: v, hostPath: {path: /etc}}]\n", "        volumeMounts: [{name: v, mountPath: /v}]\n"),
			[]string{"spec.template.spec.volumes[0].hostPath.path", "--allow-host-path=/etc", "--allow-host-root"}},
		{"another network", strings.Replace(webYAML, "      labels: {app: web}\n    spec:", "      labels: {app: web}\n      annotations: {dockctl.io/network: backend}\n    spec:", 1),
			[]string{"spec.template.metadata.annotations[dockctl.io/network]", "--allow-networks=backend"}},
		{"host port", strings.Replace(strings.Replace(webYAML, "hostPort: 0", "hostPort: 18080", 1), "replicas: 3", "replicas: 1", 1),
			[]string{"spec.template.spec.containers[0].ports[0].hostPort", "--allow-host-ports=18080"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := run(t, tt.src, "--state-dir", t.TempDir(), "apply", "-f", "-")
			if err != nil || out != "deployment/web created\n" {
				t.Fatalf("apply: %v %q %q", err, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("warning %q lacks %q", errOut, w)
				}
			}
			if strings.Contains(errOut, "NET_BIND_SERVICE") {
				t.Errorf("a default capability is no privilege: %q", errOut)
			}
		})
	}
}

// The instance's own network is where every pod is anyway: naming it in
// dockctl.io/network needs no flag, and apply does not warn.
func TestApplyDoesNotWarnAboutTheInstanceNetwork(t *testing.T) {
	src := strings.Replace(webYAML, "      labels: {app: web}\n    spec:", "      labels: {app: web}\n      annotations: {dockctl.io/network: dockctl_t}\n    spec:", 1)
	dir := t.TempDir()
	controllerBeating(t, dir, "t")
	out, errOut, err := run(t, src, "--state-dir", dir, "--instance", "t", "apply", "-f", "-")
	if err != nil || out != "deployment/web created\n" || errOut != "" {
		t.Fatalf("apply: %v %q %q", err, out, errOut)
	}
}

// --container-log-max-size takes a quantity as kubelet's
// containerLogMaxSize does (default 10Mi × 5 files); 0 disables rotation.
func TestContainerLogFlags(t *testing.T) {
	o := &controllerOptions{}
	cmd := newControllerCommandWith(&globalOptions{}, o)
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if n, err := parseLogMaxSize(o.containerLogMaxSize); err != nil || n != 10<<20 || o.containerLogMaxFiles != 5 {
		t.Fatalf("defaults: %d bytes (%v) × %d files, want 10Mi × 5", n, err, o.containerLogMaxFiles)
	}
	for in, want := range map[string]int64{"0": 0, "10Mi": 10 << 20, "1Gi": 1 << 30, "5000000": 5000000, "1Ki": 1024} {
		if got, err := parseLogMaxSize(in); err != nil || got != want {
			t.Errorf("parseLogMaxSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"10m", "-1Mi", "ten", "100"} {
		if _, err := parseLogMaxSize(in); err == nil {
			t.Errorf("parseLogMaxSize(%q): want an error", in)
		}
	}
}

// A --allow-host-ports value that is not a port or a range stops the
// controller at start rather than allowing nothing, or everything.
func TestControllerRefusesBadHostPortRanges(t *testing.T) {
	for _, v := range []string{"http", "0", "65536", "9100-9000", "80-", "-80"} {
		t.Run(v, func(t *testing.T) {
			_, _, err := run(t, "", "--state-dir", t.TempDir(), "controller", "--metrics-addr", "", "--allow-host-ports="+v)
			if err == nil || !strings.Contains(err.Error(), "--allow-host-ports="+v) {
				t.Fatalf("--allow-host-ports=%s: err %v, want it refused", v, err)
			}
		})
	}
}
