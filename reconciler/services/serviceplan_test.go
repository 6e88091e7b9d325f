package services

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/golden"
	"github.com/dockctl/dockctl/store"
)

// proxyCtr is an observed proxy of default/web.
func proxyCtr(name, hash, state string) dockerx.Container {
	return dockerx.Container{ID: "id-" + name + "-" + hash + "-" + state, Name: name, State: state, Instance: "i", Role: dockerx.RoleProxy,
		Namespace: "default", Service: "web", ConfigHash: hash}
}

// webWant is the proxy wanted for default/web with two ready endpoints
// (one, with few).
func webWant(few bool) *helperWant {
	svc := svcOf("web", "NodePort", "", sport("http", 80, 30080))
	ready := []store.EndpointStatus{
		{Pod: "web-a-0", IP: "10.222.0.2", Ready: true, Ports: []store.EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}},
		{Pod: "web-a-1", IP: "10.222.0.3", Ready: true, Ports: []store.EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}},
	}
	if few {
		ready = ready[:1]
	}
	bindings := []dockerx.PortBinding{{HostIP: "127.0.0.1", HostPort: 30080, ContainerPort: 80, Protocol: "TCP"}}
	content, render := renderer(proxyConfig("default/web", svc, ready), func(c *helperapi.ProxyConfig, g int64) { c.Generation = g })
	return &helperWant{
		Name: proxyName("i", "default", "web"), Hash: proxyConfigHash("dockctl_i", "10.222.8.1", bindings),
		Also: []string{legacyProxyConfigHash("dockctl_i", "10.222.8.1", svc, bindings)},
		Mode: helperapi.ModeProxy, Content: content, Render: render, Change: "ready endpoints +web-a-1",
		Request: dockerx.HelperRequest{Instance: "i", Namespace: "default", Role: dockerx.RoleProxy, Service: "web",
			Network: dockerx.PodNetwork{Name: "dockctl_i", IPv4: "10.222.8.1"}, Ports: bindings},
	}
}

func TestHelperPlan(t *testing.T) {
	w := webWant(false)
	name, hash := w.Name, w.Hash
	running, exited := dockerx.StateRunning, dockerx.StateExited
	served := func(c dockerx.Container, content string) *pushedConfig {
		return &pushedConfig{ContainerID: c.ID, Content: content, Generation: 6}
	}
	up := proxyCtr(name, hash, running)
	down := proxyCtr(name, hash, exited)
	few := webWant(true).Content
	dnsContent, dnsRender := renderer(dnsConfig([]helperapi.DNSRecord{{Name: "web.default.svc.cluster.local", IPs: []string{"10.222.8.1"},
		Ports: []helperapi.SRVPort{{Name: "http", Protocol: "TCP", Port: 80}}}}), func(c *helperapi.DNSConfig, g int64) { c.Generation = g })
	dns := &helperWant{Name: dnsName("i"), Hash: dnsConfigHash("dockctl_i", "10.222.8.0"), Mode: helperapi.ModeDNS,
		Content: dnsContent, Render: dnsRender, Request: dockerx.HelperRequest{Instance: "i", Role: dockerx.RoleDNS, Network: dockerx.PodNetwork{Name: "dockctl_i", IPv4: "10.222.8.0"}}}

	tests := []struct {
		name   string
		in     helperPlanInput
		ops    string // kind:reason, in order
		serves bool
	}{
		{"proxy-create", helperPlanInput{Want: w, Generation: 6}, "create:Missing", true},
		{"proxy-converged", helperPlanInput{Want: w, Observed: obs(up), Pushed: served(up, w.Content), Generation: 6}, "", true},
		{"proxy-endpoints-changed", helperPlanInput{Want: w, Observed: obs(up), Pushed: served(up, few), Generation: 6}, "push:Changed", true},
		{"proxy-controller-restarted", helperPlanInput{Want: w, Observed: obs(up), Generation: 6}, "push:Resync", true},
		{"proxy-new-container", helperPlanInput{Want: w, Observed: obs(up), Pushed: served(down, w.Content), Generation: 6}, "push:NewContainer", true},
		{"proxy-stopped", helperPlanInput{Want: w, Observed: obs(down), Pushed: served(down, w.Content), Generation: 6}, "start:Stopped", true},
		{"proxy-stopped-unknown", helperPlanInput{Want: w, Observed: obs(down), Generation: 6}, "start:Stopped push:Resync", true},
		{"proxy-paused", helperPlanInput{Want: w, Observed: obs(proxyCtr(name, hash, dockerx.StatePaused)), Pushed: served(proxyCtr(name, hash, dockerx.StatePaused), few), Generation: 6},
			"unpause:Paused push:Changed", true},
		{"proxy-config-changed", helperPlanInput{Want: w, Observed: obs(proxyCtr(name, "0ldha5h", running)), Generation: 6},
			"remove:ConfigChanged create:Missing", true},
		{"proxy-duplicate-and-dead", helperPlanInput{Want: w, Observed: obs(proxyCtr("i_web.default_svc.copy", hash, running), proxyCtr(name, hash, dockerx.StateDead)), Generation: 6},
			"remove:Dead remove:Duplicate create:Missing", true},
		{"proxy-deleted", helperPlanInput{Unwanted: "service deleted", Observed: obs(up, proxyCtr(name, hash, dockerx.StateRemoving))}, "remove:Unwanted", false},
		{"proxy-name-being-freed", helperPlanInput{Want: w, Observed: obs(proxyCtr(name, "0ldha5h", dockerx.StateRemoving)), Generation: 6}, "", false},
		{"proxy-restarting", helperPlanInput{Want: w, Observed: obs(proxyCtr(name, hash, dockerx.StateRestarting)), Generation: 6}, "", false},
		{"dns-create", helperPlanInput{Want: dns, Generation: 1700000000000}, "create:Missing", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := planHelper(tt.in)
			var ops []string
			for i, op := range plan.Ops {
				ops = append(ops, fmt.Sprintf("%s:%s", op.Kind, op.Reason))
				if op.ID != i+1 || op.Cause == "" {
					t.Errorf("%s: want ID %d and a cause", op.Line(), i+1)
				}
				switch op.Kind {
				case HelperCreate:
					checkCreate(t, op, tt.in)
				case HelperPush:
					checkGeneration(t, op.Config, tt.in.Generation+1)
					if op.Generation != tt.in.Generation+1 || op.ContainerID == "" {
						t.Errorf("%s: want generation %d on an existing container", op.Line(), tt.in.Generation+1)
					}
				}
			}
			if got := strings.Join(ops, " "); got != tt.ops || plan.Serves != tt.serves {
				t.Errorf("ops %q serves %v, want %q %v", got, plan.Serves, tt.ops, tt.serves)
			}
			golden.Check(t, "helper-"+tt.name, plan.String())
		})
	}
}

func obs(cs ...dockerx.Container) []dockerx.Container { return cs }

// checkCreate checks a create carries the request, with its name and
// hash, and the full config at the next generation in its command.
func checkCreate(t *testing.T, op HelperOp, in helperPlanInput) {
	t.Helper()
	r := op.Request
	if r == nil || r.Name != in.Want.Name || r.ConfigHash != in.Want.Hash || op.Generation != in.Generation+1 {
		t.Fatalf("%s: request %+v", op.Line(), r)
	}
	if len(r.Cmd) != 5 || r.Cmd[0] != helperapi.Binary || r.Cmd[1] != "helper" || r.Cmd[2] != in.Want.Mode || r.Cmd[3] != "--config" {
		t.Fatalf("command %q", r.Cmd)
	}
	checkGeneration(t, r.Cmd[4], in.Generation+1)
	if r.Image != "" {
		t.Errorf("the plan chose an image (%s): the executor's", r.Image)
	}
}

func checkGeneration(t *testing.T, config string, want int64) {
	t.Helper()
	var g struct{ Generation int64 }
	if err := json.Unmarshal([]byte(config), &g); err != nil || g.Generation != want {
		t.Errorf("config %s: generation %d (%v), want %d", config, g.Generation, err, want)
	}
}

// TestProxyConfigHash: a proxy is replaced for what Docker fixes at its
// creation, never for its endpoints or its Service's ports (pushed) — and
// its image is no input at all, so an upgrade of dockctl keeps proxies
// under traffic running.
func TestProxyConfigHash(t *testing.T) {
	svc := svcOf("web", "NodePort", "", sport("http", 80, 30080))
	b := []dockerx.PortBinding{{HostIP: "127.0.0.1", HostPort: 30080, ContainerPort: 80, Protocol: "TCP"}}
	base := proxyConfigHash("dockctl_i", "10.222.8.1", b)
	if base != webWant(true).Hash || base != webWant(false).Hash {
		t.Error("the endpoints changed the config hash")
	}
	variants := map[string]string{
		"cluster IP": proxyConfigHash("dockctl_i", "10.222.8.2", b),
		"network":    proxyConfigHash("dockctl_j", "10.222.8.1", b),
		"published":  proxyConfigHash("dockctl_i", "10.222.8.1", nil),
	}
	for what, h := range variants {
		if h == base {
			t.Errorf("a change of %s keeps the hash", what)
		}
	}
	if dnsConfigHash("dockctl_i", "10.222.8.0") == dnsConfigHash("dockctl_i", "10.222.8.9") {
		t.Error("the DNS address is not in the DNS server's hash")
	}
	// A proxy of an earlier release, whose hash covered the Service's
	// ports, is kept while they are the same: an upgrade replaces none.
	w := webWant(false)
	legacy := legacyProxyConfigHash("dockctl_i", "10.222.8.1", svc, b)
	if legacy != "cbcc8d81fcf7a2d0" { // what earlier releases labelled this proxy with
		t.Fatalf("legacy hash %s: no longer the hash earlier releases computed", legacy)
	}
	if legacy == base {
		t.Fatal("the legacy hash is the hash")
	}
	plan := planHelper(helperPlanInput{Observed: obs(proxyCtr(w.Name, legacy, dockerx.StateRunning)), Want: w,
		Pushed: &pushedConfig{ContainerID: "id-" + w.Name + "-" + legacy + "-running", Content: w.Content, Generation: 3}, Generation: 3})
	if len(plan.Ops) != 0 {
		t.Errorf("a proxy of an earlier release with the same ports: %s", plan)
	}
	other := legacyProxyConfigHash("dockctl_i", "10.222.8.1", svcOf("web", "NodePort", "", sport("http", 81, 30080)), b)
	plan = planHelper(helperPlanInput{Observed: obs(proxyCtr(w.Name, other, dockerx.StateRunning)), Want: w, Generation: 3})
	if len(plan.Ops) == 0 || plan.Ops[0].Kind != HelperRemove || plan.Ops[0].Reason != HelperConfigChanged {
		t.Errorf("a proxy of an earlier release made for other ports is kept: %s", plan)
	}
}

func TestProxyConfig(t *testing.T) {
	svc := svcOf("web", "", "", sport("http", 80, 0), sport("metrics", 9100, 0))
	svc.Spec.Ports = append(svc.Spec.Ports, sport("dns", 53, 0))
	svc.Spec.Ports[2].Protocol = "UDP"
	ready := []store.EndpointStatus{
		{Pod: "a", IP: "10.0.0.2", Ready: true, Ports: []store.EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}, {Name: "metrics", Port: 9100, Protocol: "TCP"}}},
		{Pod: "b", IP: "10.0.0.3", Ready: true, Ports: []store.EndpointPort{{Name: "http", Port: 8081, Protocol: "TCP"}, {Name: "dns", Port: 53, Protocol: "UDP"}}},
	}
	got, err := helperapi.Marshal(proxyConfig("default/web", svc, ready))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"generation":0,"service":"default/web","ports":[` +
		`{"name":"http","protocol":"TCP","port":80,"endpoints":[{"ip":"10.0.0.2","port":8080,"pod":"a"},{"ip":"10.0.0.3","port":8081,"pod":"b"}]},` +
		`{"name":"metrics","protocol":"TCP","port":9100,"endpoints":[{"ip":"10.0.0.2","port":9100,"pod":"a"}]},` +
		`{"name":"dns","protocol":"UDP","port":53,"endpoints":[{"ip":"10.0.0.3","port":53,"pod":"b"}]}]}`
	if got != want {
		t.Errorf("config\n%s\nwant\n%s", got, want)
	}
	// No endpoint: an empty list, never null (the proxy refuses at once).
	empty, _ := helperapi.Marshal(proxyConfig("default/web", svc, nil))
	if !strings.Contains(empty, `"endpoints":[]`) || strings.Contains(empty, "null") {
		t.Errorf("config without endpoints: %s", empty)
	}
}

// TestHelperPlanConfigTooLarge: a config over what a command carries is
// created with the stub (no endpoints, generation 0) and pushed on stdin
// to the container the create made; a small one rides in the command.
func TestHelperPlanConfigTooLarge(t *testing.T) {
	svc := svcOf("web", "", "", sport("http", 80, 0))
	for _, tt := range []struct {
		name string
		pods int
		ops  string
	}{
		{"small: in the command", 2, "create:Missing"},
		{"large: stub, then push", 3000, "create:Missing push:ConfigTooLarge"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ready []store.EndpointStatus
			for i := range tt.pods {
				ready = append(ready, store.EndpointStatus{Pod: fmt.Sprintf("web-5d8f9c7b6d-%d", i), IP: fmt.Sprintf("10.222.%d.%d", i/250, i%250+2), Ready: true,
					Ports: []store.EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}})
			}
			content, render := renderer(proxyConfig("default/web", svc, ready), func(c *helperapi.ProxyConfig, g int64) { c.Generation = g })
			stub := renderStub(proxyConfig("default/web", svc, nil))
			w := &helperWant{Name: proxyName("i", "default", "web"), Hash: "h", Mode: helperapi.ModeProxy, Content: content, Render: render, Stub: stub}
			plan := planHelper(helperPlanInput{Want: w, Generation: 4})
			var got []string
			for _, op := range plan.Ops {
				got = append(got, string(op.Kind)+":"+string(op.Reason))
			}
			if strings.Join(got, " ") != tt.ops || !plan.Serves {
				t.Fatalf("ops %q serves %v, want %q", got, plan.Serves, tt.ops)
			}
			create := plan.Ops[0]
			cmdConfig := create.Request.Cmd[len(create.Request.Cmd)-1]
			if len(cmdConfig) > maxCommandConfig {
				t.Errorf("command carries %d bytes of config", len(cmdConfig))
			}
			if tt.pods < 10 {
				if create.Stub || cmdConfig != render(5) {
					t.Errorf("create %s: command config %s, want the full config", create.Line(), cmdConfig)
				}
				return
			}
			push := plan.Ops[1]
			if !create.Stub || create.Generation != 0 || cmdConfig != stub {
				t.Errorf("create %s: command config %.80s, want the stub", create.Line(), cmdConfig)
			}
			if push.ContainerID != "" || push.Name != w.Name || push.Generation != 5 || push.Config != render(5) || plan.Config != render(5) {
				t.Errorf("push %s: %d bytes of config, want generation 5's to the created container", push.Line(), len(push.Config))
			}
		})
	}
}

// TestProxyNameNeverCollidesWithPodMemberName: a Service's proxy name
// (INSTANCE_NAME.NS.svc) and a pod member's name in another namespace
// (INSTANCE_DEP.NS-HASH-N.CONTAINER) share a shape: with a namespace named
// like "team-<hash>-0" (a valid DNS-1123 label) and a pod container named
// "svc", the two objects must still get different Docker names, or one of
// them can never be created (ErrConflict) and a name no longer identifies
// one object of one namespace (svc.md: "container names stay
// unambiguous").
func TestProxyNameNeverCollidesWithPodMemberName(t *testing.T) {
	const instance = "t1"
	hash := "0123456789"[:manifests.HashLength]
	holder := dockerx.ContainerName(instance, "team", "web", hash, 0)
	member := dockerx.MemberName(holder, "svc")
	proxy := proxyName(instance, "team-"+hash+"-0", "web")
	if member == proxy {
		t.Fatalf("pod member of team/web and proxy of Service team-%s-0/web are both named %q", hash, proxy)
	}
}
