package services

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The pure planner of a helper container — a Service's proxy, or the
// instance's DNS server — as the deployments' planner is for replicas:
// from what is observed and what is wanted, the operations (each with its
// cause) that make one container of the wanted name and config hash run
// and serve the wanted config. A helper is never replaced for a change of
// what it serves (endpoints, records: pushed, acknowledged), only for a
// change of what Docker fixes at create time (address, published ports,
// the helper protocol): see proxyConfigHash. A Service's ports are what
// it serves: a port added, renamed or removed is pushed.

// HelperOpKind is what one planned operation does to a helper.
type HelperOpKind string

const (
	HelperCreate  HelperOpKind = "create"  // create and start, serving the config in its command
	HelperStart   HelperOpKind = "start"   // start a stopped helper (it serves its state file)
	HelperUnpause HelperOpKind = "unpause" // resume a paused helper
	HelperRemove  HelperOpKind = "remove"  // remove at once (rm -f)
	HelperPush    HelperOpKind = "push"    // exec `helper push --config JSON`; exit 0 is the ack
)

// HelperReason is why an op is planned, for code and tests.
type HelperReason string

const (
	HelperMissing       HelperReason = "Missing"        // no helper: create
	HelperConfigChanged HelperReason = "ConfigChanged"  // create-time settings changed: replace
	HelperDuplicate     HelperReason = "Duplicate"      // another container claims to be this helper
	HelperDead          HelperReason = "Dead"           // Docker cannot start it again
	HelperUnwanted      HelperReason = "Unwanted"       // no helper is wanted (deleted, headless…)
	HelperStopped       HelperReason = "Stopped"        // exited: start
	HelperNeverStarted  HelperReason = "NeverStarted"   // created, never started
	HelperPaused        HelperReason = "Paused"         // unpause
	HelperResync        HelperReason = "Resync"         // what it serves is unknown (controller started): push
	HelperNewContainer  HelperReason = "NewContainer"   // another container than the one last pushed to: push
	HelperChanged       HelperReason = "Changed"        // what it must serve changed: push
	HelperTooLarge      HelperReason = "ConfigTooLarge" // created with a stub config (the config exceeds an argument): push
	HelperSecret        HelperReason = "ConfigSecret"   // created with a stub config (the config holds keys): push
	HelperHostPorts     HelperReason = "HostPorts"      // created or started binding host ports itself: push, whose ack names the ports not bound
)

// maxCommandConfig is the largest config a create puts in the helper's
// command. Linux refuses any argument over 128 KiB (MAX_ARG_STRLEN:
// execve fails with E2BIG, and so the start); a larger config is pushed
// on stdin right after the create, which starts from its Stub. Half the
// limit leaves room for what Docker and the kernel add.
const maxCommandConfig = 64 << 10

// HelperOp is one operation of a helper plan.
type HelperOp struct {
	ID          int
	Kind        HelperOpKind
	Name        string // container name
	ContainerID string // "" for a create
	Reason      HelperReason
	Cause       string
	// Generation is, for a create or a push, the config's generation.
	Generation int64
	// Request is, for a create, the helper to create (the executor fills
	// in the image); Config is, for a push, the config to push.
	Request *dockerx.HelperRequest
	Config  string
	// Stub is, for a create, that its command carries the stub config
	// (nothing to serve, generation 0): the config follows in a push
	// whose ContainerID is "" (the container this create made).
	Stub bool
	// ControlSocket is, for a push, the helper's control socket when it
	// is not helperapi.ControlSocket (a helper on the host's network:
	// helperapi.HostControlSocket).
	ControlSocket string
}

// Line renders the op for Plan.String, goldens and the log.
func (o HelperOp) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s reason=%s", o.ID, o.Kind, o.Name, o.Reason)
	if o.Request != nil {
		fmt.Fprintf(&b, " hash=%s ip=%s", o.Request.ConfigHash, o.Request.Network.IPv4)
		for _, p := range o.Request.Ports {
			fmt.Fprintf(&b, " publish=%s:%d->%d/%s", p.HostIP, p.HostPort, p.ContainerPort, p.Protocol)
		}
	}
	if o.Generation != 0 {
		fmt.Fprintf(&b, " generation=%d", o.Generation)
	}
	if o.Stub {
		b.WriteString(" stub")
	}
	fmt.Fprintf(&b, " cause=%q", o.Cause)
	return b.String()
}

// HelperPlan is the outcome of planning one helper.
type HelperPlan struct {
	Ops []HelperOp
	// Serves: once the ops are carried out, the helper serves the wanted
	// config (a drain waiting on it may end). False while it restarts, or
	// when none is wanted.
	Serves bool
	// Config is the wanted config as served once executed (with its
	// generation), for the log and goldens; "" when none is wanted.
	Config string
	// Wait: a container of the wanted name is still being removed; the
	// create waits for Docker to free the name (a requeue, not an error).
	Wait bool
}

// String renders the plan deterministically, for golden tests and people.
func (p HelperPlan) String() string {
	var b strings.Builder
	for _, op := range p.Ops {
		b.WriteString(op.Line())
		b.WriteByte('\n')
	}
	if len(p.Ops) == 0 {
		b.WriteString("(nothing to do)\n")
	}
	if p.Wait {
		b.WriteString("wait: the name is being freed\n")
	}
	if p.Serves {
		fmt.Fprintf(&b, "serves: %s\n", p.Config)
	}
	return b.String()
}

// pushedConfig is what a helper container acknowledged last, as this
// controller knows it (in memory: a restarted controller pushes again).
type pushedConfig struct {
	ContainerID string
	Content     string // the config without its generation
	Generation  int64
	// Unbound are the ports the helper said it could not bind (a helper
	// binding host ports itself: the gateway, the publisher).
	Unbound []helperapi.UnboundPort
}

// helperWant is the helper wanted.
type helperWant struct {
	Name string
	Hash string
	// Also are other hashes of the same create-time settings, by the
	// rules of an earlier release: a helper labelled with one is kept.
	Also []string
	// Request is the helper to create, Cmd aside.
	Request dockerx.HelperRequest
	// Mode is the helper's serving mode (helperapi.ModeProxy or ModeDNS).
	Mode string
	// Args are the serving mode's flags besides --config (--listen-host,
	// --host-ports, --control-socket of a helper on the host's network).
	Args []string
	// ControlSocket is the control socket its pushes reach ("":
	// helperapi.ControlSocket).
	ControlSocket string
	// Content is the config without its generation (comparable), Render
	// the config with one: what is created or pushed.
	Content string
	Render  func(generation int64) string
	// Stub is the config with nothing to serve (no endpoints, no records)
	// at generation 0: a create's command when the config is too large.
	Stub string
	// StubAlways: the create's command always carries the Stub, and the
	// config follows on the push's stdin, never in an argument (the
	// gateway's holds TLS keys; docs/design.md §10).
	StubAlways bool
	// HostPorts: it binds host ports itself (the gateway, the publisher;
	// docs/design.md §10) and only a push's ack says which it could not:
	// the create's command carries the Stub and the config follows in a
	// push, and a start of it is followed by a push too.
	HostPorts bool
	// Change says what changed since the last push, for the cause.
	Change string
}

// helperPlanInput is everything planHelper looks at.
type helperPlanInput struct {
	Observed []dockerx.Container // the helpers of this key, of this instance
	Want     *helperWant         // nil: none is wanted
	Unwanted string              // why none is wanted, for the removals' cause
	Pushed   *pushedConfig       // nil: unknown since the controller started
	// Generation is the last generation acknowledged: creates and pushes
	// use the next one.
	Generation int64
}

// planHelper decides the ops that make the wanted helper run and serve
// its config. It is pure.
func planHelper(in helperPlanInput) HelperPlan {
	var plan HelperPlan
	obs := append([]dockerx.Container(nil), in.Observed...)
	sort.Slice(obs, func(i, j int) bool {
		return obs[i].Name < obs[j].Name || (obs[i].Name == obs[j].Name && obs[i].ID < obs[j].ID)
	})
	w := in.Want
	var keep *dockerx.Container
	if w != nil {
		for i := range obs {
			c := &obs[i]
			if c.Name == w.Name && w.hashes(c.ConfigHash) && c.State != dockerx.StateDead && c.State != dockerx.StateRemoving {
				keep = c
				break
			}
		}
	}
	add := func(op HelperOp) {
		op.ID = len(plan.Ops) + 1
		plan.Ops = append(plan.Ops, op)
	}
	for i := range obs {
		c := &obs[i]
		if c == keep || c.State == dockerx.StateRemoving {
			continue
		}
		op := HelperOp{Kind: HelperRemove, Name: c.Name, ContainerID: c.ID}
		switch {
		case w == nil:
			op.Reason, op.Cause = HelperUnwanted, in.Unwanted
		case c.Name != w.Name:
			op.Reason, op.Cause = HelperDuplicate, fmt.Sprintf("labelled as this helper, but named other than %s", w.Name)
		case !w.hashes(c.ConfigHash):
			op.Reason, op.Cause = HelperConfigChanged, fmt.Sprintf("created for config %s, %s wanted (address or published ports changed)", orNone(c.ConfigHash), w.Hash)
		default:
			op.Reason, op.Cause = HelperDead, "container is dead"
		}
		add(op)
	}
	if w == nil {
		return plan
	}
	gen := in.Generation + 1
	plan.Config = w.Render(gen)
	if keep == nil {
		for _, c := range obs {
			if c.Name == w.Name && c.State == dockerx.StateRemoving {
				// Docker still holds the name (and the address): the
				// create would fail.
				plan.Wait, plan.Config = true, ""
				return plan
			}
		}
		req := w.Request
		req.Name, req.ConfigHash = w.Name, w.Hash
		req.Cmd = append(append([]string{helperapi.Binary, "helper", w.Mode}, w.Args...), "--config", plan.Config)
		create := HelperOp{Kind: HelperCreate, Name: w.Name, Reason: HelperMissing, Cause: "no " + w.Mode + " helper runs",
			Generation: gen, Request: &req}
		if !w.StubAlways && !w.HostPorts && (len(plan.Config) <= maxCommandConfig || w.Stub == "") {
			add(create)
			plan.Serves = true
			return plan
		}
		req.Cmd[len(req.Cmd)-1] = w.Stub
		create.Generation, create.Stub = 0, true
		add(create)
		reason, cause := HelperTooLarge, fmt.Sprintf("config of %d bytes, over the %d a command carries: pushed on stdin after the create", len(plan.Config), maxCommandConfig)
		switch {
		case w.StubAlways:
			reason, cause = HelperSecret, "the config holds keys: pushed on stdin after the create, never in an argument"
		case w.HostPorts:
			reason, cause = HelperHostPorts, "it binds host ports itself: pushed after the create, its ack names a port it could not bind"
		}
		add(HelperOp{Kind: HelperPush, Name: w.Name, Reason: reason, Generation: gen, Config: plan.Config, Cause: cause, ControlSocket: w.ControlSocket})
		plan.Serves = true
		return plan
	}
	switch keep.State {
	case dockerx.StateExited:
		add(HelperOp{Kind: HelperStart, Name: keep.Name, ContainerID: keep.ID, Reason: HelperStopped, Cause: "stopped"})
	case dockerx.StateCreated:
		add(HelperOp{Kind: HelperStart, Name: keep.Name, ContainerID: keep.ID, Reason: HelperNeverStarted, Cause: "created but never started"})
	case dockerx.StatePaused:
		add(HelperOp{Kind: HelperUnpause, Name: keep.Name, ContainerID: keep.ID, Reason: HelperPaused, Cause: "paused"})
	case dockerx.StateRestarting:
		// Docker's restart policy is bringing it back with its state
		// file; a push waits for it to run (an event queues the key).
		plan.Config = ""
		return plan
	}
	var reason HelperReason
	var cause string
	switch p := in.Pushed; {
	case w.HostPorts && len(plan.Ops) > 0 && plan.Ops[len(plan.Ops)-1].ContainerID == keep.ID:
		// Started or unpaused: which of its ports it bound again only a
		// push's ack says.
		reason, cause = HelperHostPorts, "restarted, binding host ports itself: its ack names a port it could not bind"
	case p == nil:
		reason, cause = HelperResync, "what it serves is unknown since the controller started"
	case p.ContainerID != keep.ID:
		reason, cause = HelperNewContainer, "not the container last pushed to"
	case p.Content != w.Content:
		reason, cause = HelperChanged, orNone(w.Change)
	}
	if reason != "" {
		add(HelperOp{Kind: HelperPush, Name: keep.Name, ContainerID: keep.ID, Reason: reason, Cause: cause, Generation: gen, Config: plan.Config, ControlSocket: w.ControlSocket})
	} else {
		plan.Config = w.Render(in.Generation)
	}
	plan.Serves = true
	return plan
}

// hashes reports whether a helper created with config hash h has the
// create-time settings wanted.
func (w *helperWant) hashes(h string) bool {
	return h == w.Hash || slices.Contains(w.Also, h)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// helperProtocolVersion is part of every helper's config hash: a release
// whose helpers speak another protocol (command line, control socket,
// config meaning) bumps it, and its helpers are replaced. Nothing else of
// a release is: an upgrade never recreates a proxy under traffic.
const helperProtocolVersion = 1

// proxyName is the container name of a Service's proxy:
// INSTANCE_NAME.NS_svc. The "_" before "svc" keeps it apart from every
// replica and member name, whose part after the instance has none (a pod
// member INSTANCE_DEP.NS-HASH-N.svc could otherwise be a proxy's name).
func proxyName(instance, namespace, name string) string {
	return instance + "_" + name + "." + namespace + "_svc"
}

// dnsName is the container name of the instance's DNS server.
func dnsName(instance string) string { return instance + "_dns" }

// configHash hashes what Docker fixes when it creates a helper.
func configHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("config hash: %v", err)) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// proxyConfigHash covers what a proxy is created with and cannot change
// while it runs: its network and address, its published ports, and the
// helper protocol. Not its listeners (the Service's ports), nor its
// endpoints: both are pushed, and the proxy opens and closes listeners
// without touching the connections of the others. Nor its image: an
// upgrade of dockctl keeps proxies running.
func proxyConfigHash(network, clusterIP string, bindings []dockerx.PortBinding) string {
	return configHash(struct {
		Protocol  int
		Network   string
		ClusterIP string
		Bindings  []dockerx.PortBinding
	}{Protocol: helperProtocolVersion, Network: network, ClusterIP: clusterIP, Bindings: bindings})
}

// legacyProxyConfigHash is proxyConfigHash as earlier releases computed
// it, with the Service's ports: a proxy they made for the ports svc has
// now is kept, not replaced by an upgrade of dockctl.
func legacyProxyConfigHash(network, clusterIP string, svc *manifests.Service, bindings []dockerx.PortBinding) string {
	type port struct {
		Name, Protocol string
		Port           int32
	}
	v := struct {
		Protocol  int
		Network   string
		ClusterIP string
		Ports     []port
		Bindings  []dockerx.PortBinding
	}{Protocol: helperProtocolVersion, Network: network, ClusterIP: clusterIP, Bindings: bindings}
	for _, p := range svc.Spec.Ports {
		v.Ports = append(v.Ports, port{p.Name, p.Protocol, p.Port})
	}
	return configHash(v)
}

// proxyConfig is a Service proxy's complete config (generation 0): one
// listener per Service port, each with the ready endpoints that have that
// port.
func proxyConfig(key string, svc *manifests.Service, ready []store.EndpointStatus) helperapi.ProxyConfig {
	cfg := helperapi.ProxyConfig{Service: key, Ports: []helperapi.ProxyPort{}}
	for _, sp := range svc.Spec.Ports {
		pp := helperapi.ProxyPort{Name: sp.Name, Protocol: sp.Protocol, Port: int(sp.Port), Endpoints: []helperapi.Endpoint{}}
		for _, ep := range ready {
			for _, p := range ep.Ports {
				if p.Name == sp.Name && p.Protocol == sp.Protocol {
					pp.Endpoints = append(pp.Endpoints, helperapi.Endpoint{IP: ep.IP, Port: int(p.Port), Pod: ep.Pod})
				}
			}
		}
		cfg.Ports = append(cfg.Ports, pp)
	}
	return cfg
}

// renderer returns the content (generation 0) of a config and a function
// that renders it with a generation; set is the config's generation field.
func renderer[T any](cfg T, set func(*T, int64)) (string, func(int64) string) {
	render := func(gen int64) string {
		c := cfg
		set(&c, gen)
		s, err := helperapi.Marshal(c)
		if err != nil {
			panic(err) // plain data: cannot fail
		}
		return s
	}
	return render(0), render
}

// renderStub renders a config with nothing to serve, at generation 0.
func renderStub[T any](cfg T) string {
	s, err := helperapi.Marshal(cfg)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return s
}

// endpointChange describes how the ready endpoints changed, for a push's
// cause: "+web-1 -web-0".
func endpointChange(before, after []store.EndpointStatus) string {
	was := map[string]bool{}
	for _, e := range before {
		if e.Ready {
			was[e.Pod] = true
		}
	}
	var parts []string
	is := map[string]bool{}
	for _, e := range after {
		if !e.Ready {
			continue
		}
		is[e.Pod] = true
		if !was[e.Pod] {
			parts = append(parts, "+"+e.Pod)
		}
	}
	for _, e := range before {
		if e.Ready && !is[e.Pod] {
			parts = append(parts, "-"+e.Pod)
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "endpoints changed"
	}
	return "ready endpoints " + strings.Join(parts, " ")
}
