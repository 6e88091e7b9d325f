package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/go-connections/nat"

	"github.com/dockctl/dockctl/dockerx"
)

// servicesSection holds the Services figures (BENCHMARKS.md, Services):
// failed requests during a rolling update through a published port, the
// Service proxy's overhead, and DNS lookup times from a replica, each beside
// what plain Docker, Compose and Swarm give.
const servicesSection = "services"

// svcReplicas is the Deployment's size in the failure measurements (a
// rollout restart of 4 replicas, a scale 4 → 1 → 4).
const svcReplicas = 4

// Labels and roles of the Service helper containers (docs/design.md §4),
// spelled here until dockerx exports them on this branch.
const (
	labelService = "io.dockctl.service"
	roleProxy    = "proxy"
	roleDNS      = "dns"
)

// The proxy-overhead paths, all to the same workload answering GET / on
// port 8080.
const (
	pathDirect    = "(i) container directly (its IP on a user network)"
	pathPublished = "(ii) Docker -p 127.0.0.1:P:8080 (docker-proxy)"
	pathService   = "(iii) dockctl Service published port (dockctl publisher → pod)"
	pathClusterIP = "(iv) dockctl Service ClusterIP from the host (dockctl proxy → pod)"
	pathPod       = "(i') dockctl pod directly (its IP on the instance network)"
)

// errNoServices says that the dockctl under test predates Services: its
// figures are reported as not measured, with this reason, not as zero.
type errNoServices struct{ why string }

func (e errNoServices) Error() string {
	return "this dockctl has no Services yet (" + e.why + "): the dockctl figures of the services section need issue 10"
}

// loadTarget is one path of the proxy-overhead measurement.
type loadTarget struct{ label, addr string }

// benchServices measures, side by side: Compose recreating a published
// service, the same workload reached directly and through Docker's -p, DNS
// lookups on a plain user network, and then, when dockctl has Services,
// the same things through a dockctl Service (Swarm's routing mesh is
// measured in the Swarm section, which owns the swarm).
func benchServices(ctx context.Context, e *env, s settings, rep *report) error {
	// The section's own containers on user networks go one at a time,
	// stopped first, before the run's removal by label (8 in parallel,
	// by force). Once, at load average 16, Engine 20.10 kept the sandbox
	// of the -p container after such a removal: the run's network was left
	// with one endpoint counted and none to remove, so that no one can
	// remove it until the daemon restarts. The gentler order is a
	// precaution, not a proven cure.
	defer e.stopRemoveSets(context.Background(), "published", "dnsprobe-usernet", "dnsprobe-replica")
	var errs []error
	fail := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	fail("compose", measureComposeRecreate(ctx, e, rep))

	targets, err := startPublishedBaseline(ctx, e)
	if err != nil {
		fail("the -p baseline", err)
		for _, p := range []string{pathDirect, pathPublished} {
			rep.na(servicesSection, "proxy overhead "+p, err.Error())
		}
	}
	if err := e.buildProbeImage(ctx); err != nil {
		fail("the DNS probe image", err)
		rep.na(servicesSection, "DNS lookup from a container on a plain user network", err.Error())
	} else {
		fail("DNS on a plain user network", measureDNSBaseline(ctx, e, s, rep))
	}

	dk, err := startDockctlServices(ctx, e)
	if err != nil {
		fail("dockctl", err)
		fail("proxy overhead", measureOverhead(ctx, s, rep, servicesSection, targets))
		naDockctlServices(rep, s, err)
		recordOverheadRatios(rep)
		return errors.Join(errs...)
	}
	defer dk.c.stop()
	fail("proxy overhead", measureOverhead(ctx, s, rep, servicesSection, append(targets, dk.targets...)))
	recordOverheadRatios(rep)
	fail("DNS from a replica", measureDNSFromReplica(ctx, e, s, rep, dk))
	fail("dockctl failures", measureDockctlFailures(ctx, e, s, rep, dk))
	return errors.Join(errs...)
}

// ---- the -p baseline --------------------------------------------------

// startPublishedBaseline starts one workload container on the run's user
// network, published with -p 127.0.0.1:P:8080, and returns paths (i) and
// (ii) to it. The container lives until the section's cleanup.
func startPublishedBaseline(ctx context.Context, e *env) ([]loadTarget, error) {
	un, err := e.benchNetwork(ctx)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("dockbench-%s-published", e.runID)
	resp, err := e.cli.ContainerCreate(ctx,
		&container.Config{Image: e.image, Cmd: []string{"--listen=:8080"}, Labels: e.labels("published"), Hostname: "published",
			ExposedPorts: nat.PortSet{"8080/tcp": {}}},
		&container.HostConfig{NetworkMode: container.NetworkMode(un),
			PortBindings: nat.PortMap{"8080/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}}}},
		nil, nil, name)
	if err != nil {
		return nil, err
	}
	if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return nil, err
	}
	ip, err := e.ipOn(ctx, resp.ID, un)
	if err != nil {
		return nil, err
	}
	targets := []loadTarget{
		{pathDirect, net.JoinHostPort(ip, "8080")},
		{pathPublished, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
	}
	for _, t := range targets {
		if err := waitHTTP(ctx, t.addr, 3, 30*time.Second); err != nil {
			return nil, fmt.Errorf("%s: %w", t.label, err)
		}
	}
	return targets, nil
}

// stopRemoveSets stops and removes the containers of the given sets, one
// at a time.
func (e *env) stopRemoveSets(ctx context.Context, sets ...string) {
	for _, set := range sets {
		cs, err := e.list(ctx, setLabel+"="+set)
		if err != nil {
			logf("  cleanup: list %s: %v", set, err)
			continue
		}
		for _, c := range cs {
			timeout := 2
			if err := e.cli.ContainerStop(ctx, c.ID, container.StopOptions{Timeout: &timeout}); err != nil {
				logf("  cleanup: stop %s: %v", shortID(c.ID), err)
			}
			if err := e.remove(ctx, c.ID); err != nil {
				logf("  cleanup: remove %s: %v", shortID(c.ID), err)
			}
		}
	}
}

// ipOn returns a container's IPv4 address on a network.
func (e *env) ipOn(ctx context.Context, id, network string) (string, error) {
	info, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	if info.NetworkSettings != nil {
		if ep := info.NetworkSettings.Networks[network]; ep != nil && ep.IPAddress != "" {
			return ep.IPAddress, nil
		}
	}
	return "", fmt.Errorf("container %s has no address on network %s", shortID(id), network)
}

// ---- proxy overhead ---------------------------------------------------

// measureOverhead loads each path with s.LoadConcurrency keep-alive
// clients for s.LoadDuration in all, split into s.LoadRounds rounds that
// visit the paths in turn, so that a change in the machine's load during
// the run affects every path alike. The figures go to section.
func measureOverhead(ctx context.Context, s settings, rep *report, section string, targets []loadTarget) error {
	if len(targets) == 0 {
		return nil
	}
	per := s.LoadDuration / time.Duration(s.LoadRounds)
	acc := make([]loadResult, len(targets))
	var errs []error
	failed := make([]error, len(targets))
	for round := 0; round < s.LoadRounds; round++ {
		for i, t := range targets {
			if failed[i] != nil {
				continue
			}
			r, err := runLoad(ctx, t.addr, s.LoadConcurrency, per)
			if err != nil {
				failed[i] = err
				continue
			}
			acc[i].Latencies = append(acc[i].Latencies, r.Latencies...)
			acc[i].Failed += r.Failed
			acc[i].Elapsed += r.Elapsed
		}
	}
	for i, t := range targets {
		name := "proxy overhead " + t.label
		if failed[i] != nil {
			rep.na(section, name, failed[i].Error())
			errs = append(errs, fmt.Errorf("%s: %w", t.label, failed[i]))
			continue
		}
		r := acc[i]
		sort.Slice(r.Latencies, func(a, b int) bool { return r.Latencies[a] < r.Latencies[b] })
		n := len(r.Latencies)
		detail := fmt.Sprintf("%d requests in %s, %d clients, keep-alive, %s", n, r.Elapsed.Round(time.Millisecond), s.LoadConcurrency, t.addr)
		if r.Failed > 0 {
			detail += fmt.Sprintf(", %d failed", r.Failed)
		}
		rep.count(section, name+" p50", us(percentile(r.Latencies, 0.50)), "µs", "")
		rep.count(section, name+" p99", us(percentile(r.Latencies, 0.99)), "µs", "")
		rep.count(section, name+" throughput", float64(n)/r.Elapsed.Seconds(), "req/s", detail)
		logf("  %s: p50 %s p99 %s, %.0f req/s", t.label, percentile(r.Latencies, 0.5), percentile(r.Latencies, 0.99), float64(n)/r.Elapsed.Seconds())
	}
	return errors.Join(errs...)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// overheadGoals are the goals of the proxy-overhead ratios, per path and
// figure (p50, p99, throughput), each over Docker's -p: the published
// Service's two hops within 1.1× of -p's one (throughput 0.9×), the
// ClusterIP's one hop within 1.2× at p50 (throughput 0.85×). The bench
// reaches the ClusterIP from the host, through the same one hop (dockctl
// proxy → pod) a pod's request crosses. Paths and figures missing here are
// informational.
var overheadGoals = map[string]map[string]*goal{
	pathService:   {"p50": atMost(1.1, ""), "p99": atMost(1.1, ""), "throughput": atLeast(0.9, "")},
	pathClusterIP: {"p50": atMost(1.2, ""), "throughput": atLeast(0.85, "")},
}

// recordOverheadRatios compares every path with Docker's own -p.
func recordOverheadRatios(rep *report) {
	pre := servicesSection + "/proxy overhead "
	for _, p := range []string{pathService, pathClusterIP, pathPod, pathDirect} {
		short := p[:strings.IndexByte(p, ' ')]
		goals := overheadGoals[p]
		rep.ratio("latency p50 "+short+" / (ii) -p", pre+p+" p50", pre+pathPublished+" p50", goals["p50"])
		rep.ratio("latency p99 "+short+" / (ii) -p", pre+p+" p99", pre+pathPublished+" p99", goals["p99"])
		rep.ratio("throughput "+short+" / (ii) -p", pre+p+" throughput", pre+pathPublished+" throughput", goals["throughput"])
	}
}

// ---- DNS --------------------------------------------------------------

// The names looked up. The first two are the figures BENCHMARKS.md sets a
// target for (DNS lookup time from a replica); the short forms show what a
// program in a pod meets with the search list and ndots:5 (a missing short
// name tries every search domain, then the name itself, which goes
// upstream).
const (
	dnsMissingFQDN  = "nosuch-svc.default.svc.cluster.local."
	dnsOutside      = "example.invalid."
	dnsMissingShort = "nosuch-svc"
)

// buildProbeImage builds the DNS probe (bench/cmd/dnsprobe, static) into
// an image FROM scratch, once per run.
func (e *env) buildProbeImage(ctx context.Context) error {
	e.mu.Lock()
	built := e.probeBuilt
	e.mu.Unlock()
	if built {
		return nil
	}
	dir := filepath.Join(e.tmp, "dnsprobe")
	if err := e.goBuild(ctx, "./bench/cmd/dnsprobe", filepath.Join(dir, "dnsprobe"), "-s -w"); err != nil {
		return err
	}
	if err := e.buildImage(ctx, e.probeTag(), dir,
		"FROM scratch\nCOPY dnsprobe /dnsprobe\nENTRYPOINT [\"/dnsprobe\"]\nCMD [\"sleep\"]\n"); err != nil {
		return err
	}
	e.mu.Lock()
	e.probeBuilt = true
	e.mu.Unlock()
	return nil
}

func (e *env) probeTag() string { return "dockbench-dnsprobe:" + e.runID }

// dnsSettings are a container's resolver settings, as Docker takes them.
type dnsSettings struct {
	Network                  string
	Servers, Search, Options []string
}

// startProbe starts the DNS probe container on a network with the given
// resolver settings and returns its ID.
func (e *env) startProbe(ctx context.Context, set string, d dnsSettings) (string, error) {
	name := fmt.Sprintf("dockbench-%s-%s", e.runID, set)
	resp, err := e.cli.ContainerCreate(ctx,
		&container.Config{Image: e.probeTag(), Labels: e.labels(set), Hostname: set},
		&container.HostConfig{NetworkMode: container.NetworkMode(d.Network),
			DNS: d.Servers, DNSSearch: d.Search, DNSOptions: d.Options},
		nil, nil, name)
	if err != nil {
		return "", err
	}
	if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return "", err
	}
	return resp.ID, nil
}

// dnsResult is one line of `dnsprobe lookup`.
type dnsResult struct {
	Name   string  `json:"name"`
	Ms     float64 `json:"ms"`
	Result string  `json:"result"`
	Detail string  `json:"detail"`
}

// probeLookups runs `dnsprobe lookup` in the probe container (docker exec:
// the exec's own cost is outside the timed lookups) and records one figure
// per name: the median, with the results and the slowest beside it.
func probeLookups(ctx context.Context, rep *report, id, where string, n int, names map[string]string) error {
	args := []string{"exec", id, "/dnsprobe", "lookup", "-n", strconv.Itoa(n), "-timeout", dnsLookupTimeout.String()}
	order := sortedKeys(names)
	args = append(args, order...)
	out, err := dockerCLI(ctx, args...)
	if err != nil {
		return err
	}
	byName := map[string][]dnsResult{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r dnsResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("dnsprobe output %q: %w", sc.Text(), err)
		}
		byName[r.Name] = append(byName[r.Name], r)
	}
	for _, name := range order {
		rs := byName[name]
		fig := fmt.Sprintf("DNS lookup from %s: %s", where, names[name])
		if len(rs) == 0 {
			rep.na(servicesSection, fig, "dnsprobe gave no result")
			continue
		}
		ms := make([]float64, len(rs))
		results := map[string]int{}
		for i, r := range rs {
			ms[i] = r.Ms
			k := r.Result
			if r.Result != "ok" && r.Result != "not found" && r.Detail != "" {
				k += " (" + r.Detail + ")"
			}
			results[k]++
		}
		sort.Float64s(ms)
		var parts []string
		for _, k := range sortedKeys(results) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, results[k]))
		}
		detail := fmt.Sprintf("median of %d, slowest %s; %s", len(ms), formatValue(ms[len(ms)-1]*1000, "µs"), strings.Join(parts, ", "))
		rep.count(servicesSection, fig, ms[(len(ms)-1)/2]*1000, "µs", detail)
		logf("  DNS from %s: %s: %v", where, name, ms)
	}
	return nil
}

// dnsLookupTimeout bounds one lookup; the probe stops repeating a name
// that timed out.
const dnsLookupTimeout = 15 * time.Second

// measureDNSBaseline times the same lookups from a container on a plain
// user-defined network (Docker's embedded DNS, forwarding to the host's
// resolvers): what a container gets without dockctl's DNS server.
func measureDNSBaseline(ctx context.Context, e *env, s settings, rep *report) error {
	un, err := e.benchNetwork(ctx)
	if err != nil {
		return err
	}
	id, err := e.startProbe(ctx, "dnsprobe-usernet", dnsSettings{Network: un})
	if err != nil {
		return err
	}
	return probeLookups(ctx, rep, id, "a container on a plain user network (Docker's DNS → host resolvers)", s.DNSLookups,
		map[string]string{
			dnsMissingFQDN: "missing name under cluster.local (" + dnsMissingFQDN + ")",
			dnsOutside:     "name outside (" + dnsOutside + ")",
		})
}

// measureDNSFromReplica starts the probe with a replica's network and
// resolver settings (copied from a running replica, so they are the ones
// dockctl gives) and times the lookups there.
func measureDNSFromReplica(ctx context.Context, e *env, s settings, rep *report, dk *dockctlServices) error {
	where := "a replica (dockctl DNS)"
	names := map[string]string{
		dnsMissingFQDN:  "missing name under cluster.local (" + dnsMissingFQDN + ")",
		dnsOutside:      "name outside (" + dnsOutside + ")",
		dnsMissingShort: "missing short name through the search list (" + dnsMissingShort + ", ndots:5)",
		dk.name:         "existing Service, short name (" + dk.name + ")",
	}
	err := e.buildProbeImage(ctx)
	if err == nil && len(dk.dns.Servers) == 0 {
		err = fmt.Errorf("dockctl's replicas have no DNS server set (HostConfig.Dns is empty), so a lookup there would not reach dockctl's DNS")
	}
	if err != nil {
		for _, v := range names {
			rep.na(servicesSection, "DNS lookup from "+where+": "+v, err.Error())
		}
		return err
	}
	rep.note("services: DNS from a replica: network %s, nameservers %v (the DNS helper's address: %s), search %v, options %v",
		dk.dns.Network, dk.dns.Servers, orDefault(dk.dnsHelperIP, "not found"), dk.dns.Search, dk.dns.Options)
	id, err := e.startProbe(ctx, "dnsprobe-replica", dk.dns)
	if err == nil {
		err = probeLookups(ctx, rep, id, where, s.DNSLookups, names)
	}
	if err != nil {
		for _, v := range names {
			rep.na(servicesSection, "DNS lookup from "+where+": "+v, err.Error())
		}
	}
	return err
}

// ---- dockctl ----------------------------------------------------------

// dockctlServices is a controller with a LoadBalancer Service in front of
// a Deployment, ready to be measured.
type dockctlServices struct {
	c           *controller
	name        string // of the Deployment and the Service
	port        int    // the Service's port, published on 127.0.0.1
	addr        string // 127.0.0.1:port
	targets     []loadTarget
	dns         dnsSettings // a replica's
	dnsHelperIP string
}

// startDockctlServices starts a controller publishing Services on
// 127.0.0.1, applies a bundle of a 1-replica Deployment (readinessProbe on
// /readyz) and a LoadBalancer Service, and waits until the published port
// answers. An errNoServices says the dockctl under test has no Services.
func startDockctlServices(ctx context.Context, e *env) (*dockctlServices, error) {
	help, _ := exec.CommandContext(ctx, e.dockctlBin, "controller", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--service-address") {
		return nil, errNoServices{"its controller has no --service-address flag"}
	}
	c, err := e.startController(ctx, "svc", 30*time.Second, "", "--service-address", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.stop()
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dk := &dockctlServices{c: c, name: "svcweb", port: port, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := c.apply(ctx, e.serviceBundle(dk.name, 1, port)); err != nil {
		// Today's refusal: `unsupported kind "Service"`.
		if strings.Contains(err.Error(), `kind "Service"`) {
			return nil, errNoServices{fmt.Sprintf("apply refuses a Service: %v", err)}
		}
		return nil, err
	}
	if err := dk.waitReady(ctx, 1); err != nil {
		return nil, fmt.Errorf("%w\ncontroller log:\n%s", err, c.logTail())
	}

	network := "dockctl_" + c.instance
	proxy, err := e.helper(ctx, c.instance, roleProxy, dk.name)
	if err != nil {
		return nil, err
	}
	clusterIP, err := e.ipOn(ctx, proxy, network)
	if err != nil {
		return nil, fmt.Errorf("the Service's ClusterIP (its proxy's address): %w", err)
	}
	pods, err := e.list(ctx, "io.dockctl.deployment="+dk.name)
	if err != nil || len(running(pods)) == 0 {
		return nil, fmt.Errorf("no running replica of %s: %v", dk.name, err)
	}
	pod := running(pods)[0]
	podIP, err := e.ipOn(ctx, pod, network)
	if err != nil {
		return nil, err
	}
	info, err := e.cli.ContainerInspect(ctx, pod)
	if err != nil {
		return nil, err
	}
	dk.dns = dnsSettings{Network: network, Servers: info.HostConfig.DNS, Search: info.HostConfig.DNSSearch, Options: info.HostConfig.DNSOptions}
	if id, err := e.helper(ctx, c.instance, roleDNS, ""); err == nil {
		dk.dnsHelperIP, _ = e.ipOn(ctx, id, network)
	}
	dk.targets = []loadTarget{
		{pathService, dk.addr},
		{pathClusterIP, net.JoinHostPort(clusterIP, strconv.Itoa(port))},
		{pathPod, net.JoinHostPort(podIP, "8080")},
	}
	for _, t := range dk.targets {
		if err := waitHTTP(ctx, t.addr, 3, 30*time.Second); err != nil {
			return nil, fmt.Errorf("%s: %w", t.label, err)
		}
	}
	logf("  dockctl Service %s: published %s, ClusterIP %s, pod %s", dk.name, dk.addr, clusterIP, podIP)
	ok = true
	return dk, nil
}

// waitReady waits until n replicas run, the rollout is complete (dockctl's
// own view: ready replicas) and the published port answers.
func (dk *dockctlServices) waitReady(ctx context.Context, n int) error {
	if err := dk.c.waitDeployment(ctx, dk.name, n); err != nil {
		return err
	}
	return waitHTTP(ctx, dk.addr, 10, time.Minute)
}

// waitDeployment waits until n replicas of the Deployment name run and
// its rollout is complete (dockctl's own view: ready replicas).
func (c *controller) waitDeployment(ctx context.Context, name string, n int) error {
	if _, err := c.e.waitRunning(ctx, n, 2*time.Minute, "io.dockctl.deployment="+name); err != nil {
		return err
	}
	return c.dockctl(ctx, "", "rollout", "status", "deployment", name, "--timeout", "2m")
}

// rolloutRestart runs `dockctl rollout restart` of the Deployment name
// and waits until none of its replicas running before runs and n others
// do.
func (c *controller) rolloutRestart(ctx context.Context, name string, n int) error {
	sel := "io.dockctl.deployment=" + name
	cs, err := c.e.list(ctx, sel)
	if err != nil {
		return err
	}
	old := running(cs)
	if err := c.dockctl(ctx, "", "rollout", "restart", "deployment", name); err != nil {
		return err
	}
	return c.e.waitReplaced(ctx, sel, old, n, 3*time.Minute)
}

// helper returns the ID of the instance's helper container of a role (and
// Service, for a proxy), found by its labels as the controller adopts it.
func (e *env) helper(ctx context.Context, instance, role, service string) (string, error) {
	f := filters.NewArgs(filters.Arg("label", dockerx.LabelInstance+"="+instance), filters.Arg("label", dockerx.LabelRole+"="+role))
	if service != "" {
		f.Add("label", labelService+"="+service)
	}
	cs, err := e.cli.ContainerList(ctx, container.ListOptions{Filters: f})
	if err != nil {
		return "", err
	}
	if len(cs) != 1 {
		return "", fmt.Errorf("expected one running %s helper of instance %s (service %q), found %d", role, instance, service, len(cs))
	}
	return cs[0].ID, nil
}

// serviceBundle is the applied bundle: a LoadBalancer Service publishing
// port on the controller's --service-address, and a Deployment of the
// workload with a readinessProbe, Kubernetes' default rolling update
// (25 % surge, 25 % unavailable: one up, one down of 4) and the run label.
func (e *env) serviceBundle(name string, replicas, port int) string {
	return e.serviceBundleWith(name, replicas, port, readyHTTPContainer)
}

// serviceBundleWith is serviceBundle with container as the lines of the
// workload container after its arguments (ports, probes).
func (e *env) serviceBundleWith(name string, replicas, port int, container string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  type: LoadBalancer
  selector: {app: %[1]s}
  ports:
  - {name: http, port: %[2]d, targetPort: 8080}
---
`, name, port) + e.deploymentYAML(name, replicas, "", container)
}

// readyHTTPContainer is the workload container's port 8080 and
// readinessProbe (GET /readyz every second) in the Deployments behind a
// Service or the gateway.
const readyHTTPContainer = `        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`

// naDockctlServices reports every dockctl figure of the section as not
// measured, with the reason.
func naDockctlServices(rep *report, s settings, err error) {
	why := err.Error()
	if i := strings.IndexByte(why, '\n'); i > 0 {
		why = why[:i]
	}
	if errors.As(err, new(errNoServices)) {
		why = "this dockctl has no Services yet: see the notes"
	}
	for _, p := range []string{pathService, pathClusterIP, pathPod} {
		rep.na(servicesSection, "proxy overhead "+p, why)
	}
	for _, op := range dockctlOps(s) {
		for _, m := range trafficModes {
			rep.na(servicesSection, fmt.Sprintf("%s, %s: failed requests", op, m.name), why)
		}
	}
	rep.na(servicesSection, "DNS lookup from a replica (dockctl DNS)", why)
}

const (
	opRolloutRestart = "dockctl rollout restart, 4 replicas behind a LoadBalancer Service"
	opScaleCycle     = "dockctl scale 4 → 1 → 4 behind a LoadBalancer Service"
)

func dockctlOps(s settings) []string {
	if s.SvcScaleCycle {
		return []string{opRolloutRestart, opScaleCycle}
	}
	return []string{opRolloutRestart}
}

// measureDockctlFailures scales the Deployment to 4, then counts failed
// requests through the published port during `dockctl rollout restart`
// and during a scale 4 → 1 → 4.
func measureDockctlFailures(ctx context.Context, e *env, s settings, rep *report, dk *dockctlServices) error {
	sel := "io.dockctl.deployment=" + dk.name
	scale := func(ctx context.Context, n int) error {
		return dk.c.dockctl(ctx, "", "scale", "deployment", dk.name, "--replicas", strconv.Itoa(n))
	}
	if err := scale(ctx, svcReplicas); err != nil {
		return err
	}
	if err := dk.waitReady(ctx, svcReplicas); err != nil {
		return err
	}
	time.Sleep(settle)
	var errs []error
	for _, op := range dockctlOps(s) {
		var fn func(context.Context) error
		switch op {
		case opRolloutRestart:
			fn = func(ctx context.Context) error {
				if err := dk.c.rolloutRestart(ctx, dk.name, svcReplicas); err != nil {
					return err
				}
				return dk.waitReady(ctx, svcReplicas)
			}
		case opScaleCycle:
			fn = func(ctx context.Context) error {
				if err := scale(ctx, 1); err != nil {
					return err
				}
				if _, err := e.waitRunning(ctx, 1, 2*time.Minute, sel); err != nil {
					return err
				}
				if err := scale(ctx, svcReplicas); err != nil {
					return err
				}
				return dk.waitReady(ctx, svcReplicas)
			}
		}
		t0 := time.Now()
		res, err := measureFailures(ctx, dk.addr, fn)
		if err != nil {
			for _, m := range trafficModes {
				rep.na(servicesSection, fmt.Sprintf("%s, %s: failed requests", op, m.name), err.Error())
			}
			errs = append(errs, fmt.Errorf("%s: %w", op, err))
			continue
		}
		logf("  %s took %s", op, time.Since(t0).Round(100*time.Millisecond))
		recordFailures(rep, servicesSection, op, res)
		time.Sleep(settle)
	}
	return errors.Join(errs...)
}

// waitReplaced polls until none of the old containers runs and n others
// matching selector do.
func (e *env) waitReplaced(ctx context.Context, selector string, old []string, n int, timeout time.Duration) error {
	was := map[string]bool{}
	for _, id := range old {
		was[id] = true
	}
	deadline := time.Now().Add(timeout)
	for {
		cs, err := e.list(ctx, selector)
		if err != nil {
			return err
		}
		oldLeft, fresh := 0, 0
		for _, id := range running(cs) {
			if was[id] {
				oldLeft++
			} else {
				fresh++
			}
		}
		if oldLeft == 0 && fresh == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %d new containers of %s: %d old and %d new running", timeout, n, selector, oldLeft, fresh)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ---- Compose ----------------------------------------------------------

const composeOp = "docker-compose up -d of a changed service (recreate), published port"

// measureComposeRecreate counts failed requests to a Compose service's
// published port while `docker-compose up -d` recreates it for a changed
// environment value: Compose v1 stops the old container, then starts the
// new one on the same host port.
func measureComposeRecreate(ctx context.Context, e *env, rep *report) error {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		for _, m := range trafficModes {
			rep.na(servicesSection, fmt.Sprintf("%s, %s: failed requests", composeOp, m.name), "docker-compose is not installed")
		}
		return nil
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(e.tmp, "compose")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, "docker-compose.yml")
	project := "dockbench" + e.runID
	compose := func(ctx context.Context, args ...string) error {
		cmd := exec.CommandContext(ctx, bin, append([]string{"-p", project, "-f", file}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("docker-compose %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	write := func(greeting string) error {
		return os.WriteFile(file, []byte(e.composeFile(port, greeting)), 0o644)
	}
	if err := write("v1"); err != nil {
		return err
	}
	// Down removes the project's containers and network; it is also on the
	// run's cleanups (a signal), and the run's label finds whatever is left.
	var once sync.Once
	var downErr error
	down := func() error {
		once.Do(func() {
			cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			downErr = compose(cctx, "down", "--remove-orphans", "-t", "2")
		})
		return downErr
	}
	e.cleanups.push("docker-compose down "+project, down)
	defer func() {
		if err := down(); err != nil {
			rep.note("services: %v", err)
		}
	}()
	if err := compose(ctx, "up", "-d"); err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitHTTP(ctx, addr, 3, 30*time.Second); err != nil {
		return err
	}
	time.Sleep(settle)
	res, err := measureFailures(ctx, addr, func(ctx context.Context) error {
		if err := write("v2"); err != nil {
			return err
		}
		if err := compose(ctx, "up", "-d"); err != nil {
			return err
		}
		return waitHTTP(ctx, addr, 1, 30*time.Second)
	})
	if err != nil {
		for _, m := range trafficModes {
			rep.na(servicesSection, fmt.Sprintf("%s, %s: failed requests", composeOp, m.name), err.Error())
		}
		return err
	}
	recordFailures(rep, servicesSection, composeOp, res)
	return nil
}

// composeFile is a Compose v1 file of one published workload service,
// its containers and network labelled with the run.
func (e *env) composeFile(port int, greeting string) string {
	return fmt.Sprintf(`version: "2.4"
services:
  web:
    image: %[1]s
    command: ["--listen=:8080"]
    environment: {GREETING: %[2]q}
    ports: ["127.0.0.1:%[3]d:8080"]
    labels: {%[4]s: %[5]q, %[6]s: compose}
networks:
  default:
    labels: {%[4]s: %[5]q}
`, e.image, greeting, port, benchLabel, e.runID, setLabel)
}
