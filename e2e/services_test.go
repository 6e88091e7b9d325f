//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// Services, namespaces and DNS (docs/design.md §10), end to end: the
// controller runs as a container with its own --subnet and publishes on
// 127.0.0.1; the tests look from inside the instance network through a
// client replica (e2e/svcclient, driven with docker exec) and from the host
// through the published ports, and they find the data plane's containers by
// the labels of the contract (role proxy/dns, service, namespace).

// newSvcEnv is newEnv for a test of the data plane: when it ends, after the
// usual cleanup by label, nothing of the instance may be left — no
// container, volume, network or image, by label or by name (a helper image
// or instance network without its label would escape the cleanup), and no
// process of any container it created (a shim, a container's process).
func newSvcEnv(t testing.TB) *env {
	t.Helper()
	var e *env
	// Registered first, so it runs after newEnv's cleanup.
	t.Cleanup(func() {
		if e != nil {
			checkNoLeftovers(t, e.instance, e.created.containerIDs())
		}
	})
	e = newEnv(t)
	return e
}

func checkNoLeftovers(t testing.TB, instance string, ids []string) {
	t.Helper()
	// A removed container's shim exits shortly after the removal returns.
	waitNoProcs(t, 10*time.Second, "the containers of instance "+instance, nil, ids)
	label := "io.dockctl.instance=" + instance
	if cs := containers(t, label); len(cs) > 0 {
		t.Errorf("left behind: %s", describe(cs))
	}
	if vs := volumes(t, label); len(vs) > 0 {
		t.Errorf("left behind: volumes %s", volumeNames(vs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nets, err := dockerCli.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		t.Fatalf("list networks: %v", err)
	}
	for _, n := range nets {
		if n.Name == instanceNetwork(instance) || n.Labels["io.dockctl.instance"] == instance {
			t.Errorf("left behind: network %s (labels %v)", n.Name, n.Labels)
			_ = dockerCli.NetworkRemove(ctx, n.ID)
		}
	}
	imgs, err := dockerCli.ImageList(ctx, image.ListOptions{All: true})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if strings.HasPrefix(tag, "dockctl-helper:"+instance+"-") || strings.HasPrefix(tag, "dockctl-holder:"+instance+"-") {
				t.Errorf("left behind: image %s (labels %v): every image dockctl loads must carry its instance label (docs/design.md §4)", tag, img.Labels)
				_, _ = dockerCli.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
			}
		}
	}
}

// instanceNetwork is the name of an instance's network (contract).
func instanceNetwork(instance string) string { return "dockctl_" + instance }

// testSubnet picks the test's --subnet: 10.231.X.0/24 with X derived from
// the test's name (so that a rerun uses the same one, and tests run one
// after the other use different ones), moved on past any subnet a Docker
// network of this daemon already overlaps (another test's leftovers,
// another run, the machine's own networks).
var (
	subnetsMu    sync.Mutex
	subnetsGiven = map[netip.Prefix]bool{}
)

func testSubnet(t testing.TB) string {
	t.Helper()
	// Tests running in parallel list the daemon's networks before either
	// has made its own: a subnet once handed out in this process is not
	// handed out again.
	subnetsMu.Lock()
	defer subnetsMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nets, err := dockerCli.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		t.Fatalf("list networks: %v", err)
	}
	var taken []netip.Prefix
	for _, n := range nets {
		for _, c := range n.IPAM.Config {
			if p, err := netip.ParsePrefix(c.Subnet); err == nil {
				taken = append(taken, p)
			}
		}
	}
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	x := int(h.Sum32() % 256)
	for i := 0; i < 256; i++ {
		p := netip.MustParsePrefix(fmt.Sprintf("10.231.%d.0/24", (x+i)%256))
		free := !subnetsGiven[p]
		for _, o := range taken {
			free = free && !o.Overlaps(p)
		}
		if free {
			subnetsGiven[p] = true
			return p.String()
		}
	}
	t.Fatal("no free /24 in 10.231.0.0/16")
	return ""
}

// startSvcController starts the controller on the test's subnet, with the
// published ports on 127.0.0.1 and a short settle time (the tests wait on
// readiness, not on the settle rule).
func (e *env) startSvcController(subnet string, extra ...string) {
	e.t.Helper()
	e.startController(append([]string{"--subnet", subnet, "--service-address", "127.0.0.1", "--settle-time", "1s"}, extra...)...)
}

// svcDeployment is a deployment of the workload (or of the test client)
// for the Service tests: pods labelled app=<app>, a container port named
// http (8080), and a readiness probe on probePath ("" for none).
type svcDeployment struct {
	ns, name, app string
	replicas      int
	image         string // "" = the workload image
	args          []string
	probePath     string
	grace         int // terminationGracePeriodSeconds; 0 keeps the default
	strategy      string
}

func (d svcDeployment) manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n", d.name)
	if d.ns != "" {
		fmt.Fprintf(&b, "  namespace: %s\n", d.ns)
	}
	fmt.Fprintf(&b, "spec:\n  replicas: %d\n  selector:\n    matchLabels: {app: %s, deployment: %s}\n", d.replicas, d.app, d.name)
	if d.strategy != "" {
		fmt.Fprintf(&b, "  strategy:\n%s\n", d.strategy)
	}
	fmt.Fprintf(&b, "  template:\n    metadata:\n      labels: {app: %s, deployment: %s}\n    spec:\n", d.app, d.name)
	if d.grace > 0 {
		fmt.Fprintf(&b, "      terminationGracePeriodSeconds: %d\n", d.grace)
	}
	img := d.image
	if img == "" {
		img = workloadImage
	}
	fmt.Fprintf(&b, "      containers:\n      - name: app\n        image: %s\n", img)
	if len(d.args) > 0 {
		fmt.Fprintf(&b, "        args: [\"%s\"]\n", strings.Join(d.args, `", "`))
	}
	if img == workloadImage {
		b.WriteString("        ports:\n        - {name: http, containerPort: 8080}\n")
	}
	if d.probePath != "" {
		fmt.Fprintf(&b, "        readinessProbe:\n          httpGet: {path: %s, port: http}\n          periodSeconds: 1\n          failureThreshold: 1\n", d.probePath)
	}
	return b.String()
}

// clientDeployment is one replica of the test client in namespace ns.
func clientDeployment(ns string) svcDeployment {
	return svcDeployment{ns: ns, name: "client", app: "client", replicas: 1, image: clientImage, grace: 2}
}

func namespaceManifest(ns string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
}

// serviceManifest is a Service selecting app=<app>; spec holds the lines
// after the selector (type, clusterIP, ports), indented two spaces.
func serviceManifest(ns, name, app, spec string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n", name)
	if ns != "" {
		fmt.Fprintf(&b, "  namespace: %s\n", ns)
	}
	fmt.Fprintf(&b, "spec:\n  selector: {app: %s}\n%s", app, spec)
	return b.String()
}

// bundle joins manifests into one multi-document file.
func bundle(docs ...string) string { return strings.Join(docs, "---\n") }

// httpPort80 is the ports of a Service port 80 → the named port http.
const httpPort80 = "  ports:\n  - {name: http, port: 80, targetPort: http}\n"

// publishedSpec: type LoadBalancer on port, → the named port http.
func publishedSpec(port int) string {
	return fmt.Sprintf("  type: LoadBalancer\n  ports:\n  - {name: http, port: %d, targetPort: http}\n", port)
}

// podsOf returns the containers of a deployment in a namespace.
func (e *env) podsOf(ns, deployment string) []container.Summary {
	return containers(e.t, "io.dockctl.instance="+e.instance, "io.dockctl.namespace="+ns, "io.dockctl.deployment="+deployment)
}

// waitPodsRunning waits until the deployment has exactly n containers, all
// running.
func (e *env) waitPodsRunning(ns, deployment string, n int) []container.Summary {
	e.t.Helper()
	var cs []container.Summary
	eventually(e.t, 90*time.Second, fmt.Sprintf("%d running replicas of %s/%s", n, ns, deployment), func() (bool, string) {
		cs = e.podsOf(ns, deployment)
		running := 0
		for _, c := range cs {
			if c.State == "running" {
				running++
			}
		}
		return running == n && len(cs) == n, describe(cs)
	})
	return cs
}

// helpers returns the instance's helper containers of a role ("proxy",
// "dns"); for a proxy, of one Service.
func (e *env) helpers(role, ns, service string) []container.Summary {
	labels := []string{"io.dockctl.instance=" + e.instance, "io.dockctl.role=" + role}
	if service != "" {
		labels = append(labels, "io.dockctl.namespace="+ns, "io.dockctl.service="+service)
	}
	return containers(e.t, labels...)
}

// waitHelper waits for exactly one running helper of the role (and
// Service) with an address on the instance network, other than the
// container not (a removed one), and returns its ID and address.
func (e *env) waitHelper(role, ns, service, not string) (id, ip string) {
	e.t.Helper()
	eventually(e.t, 90*time.Second, fmt.Sprintf("a running %s helper %s/%s", role, ns, service), func() (bool, string) {
		cs := e.helpers(role, ns, service)
		if len(cs) != 1 || cs[0].State != "running" || cs[0].ID == not {
			return false, describe(cs)
		}
		id, ip = cs[0].ID, e.netIP(cs[0].ID)
		return ip != "", describe(cs) + " ip " + ip
	})
	return id, ip
}

// netIP is a container's address on the instance network ("" if it is not
// attached).
func (e *env) netIP(id string) string {
	e.t.Helper()
	info := inspect(e.t, id)
	if info.NetworkSettings == nil {
		return ""
	}
	if ep := info.NetworkSettings.Networks[instanceNetwork(e.instance)]; ep != nil {
		return ep.IPAddress
	}
	return ""
}

// clientResult is what e2e/svcclient prints.
type clientResult struct {
	IPs      []string `json:"ips"`
	NotFound bool     `json:"notFound"`
	Rcode    string   `json:"rcode"`
	Status   int      `json:"status"`
	Body     string   `json:"body"`
	Err      string   `json:"err"`
	Millis   int64    `json:"millis"`
}

func (r clientResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// run runs the test client's command in the client container id.
func (e *env) run(id string, args ...string) clientResult {
	e.t.Helper()
	code, out, errOut := execOutput(e.t, id, append([]string{"/svcclient"}, args...)...)
	var r clientResult
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		e.t.Fatalf("svcclient %v exited %d: %s%s", args, code, out, errOut)
	}
	return r
}

// resolvesTo waits until NAME resolves, from the client, to exactly ips.
func (e *env) resolvesTo(client, name string, ips ...string) {
	e.t.Helper()
	sort.Strings(ips)
	want := strings.Join(ips, ",")
	eventually(e.t, 60*time.Second, fmt.Sprintf("%s to resolve to [%s]", name, want), func() (bool, string) {
		r := e.run(client, "resolve", name)
		return strings.Join(r.IPs, ",") == want, r.String()
	})
}

// answers waits until a GET of url from the client answers 200 with a body
// containing want.
func (e *env) answers(client, url, want string) {
	e.t.Helper()
	eventually(e.t, 60*time.Second, fmt.Sprintf("GET %s from the client to answer %q", url, want), func() (bool, string) {
		r := e.run(client, "get", url)
		return r.Status == 200 && strings.Contains(r.Body, want), r.String()
	})
}

// execOutput runs cmd in a running container and returns its exit code,
// stdout and stderr.
func execOutput(t testing.TB, id string, cmd ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ex, err := dockerCli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatalf("exec %v in %s: %v", cmd, id[:12], err)
	}
	att, err := dockerCli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec %v in %s: %v", cmd, id[:12], err)
	}
	var stdout, stderr bytes.Buffer
	_, _ = stdcopy.StdCopy(&stdout, &stderr, att.Reader) // until the command ends
	att.Close()
	res, err := dockerCli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		t.Fatalf("exec %v in %s: %v", cmd, id[:12], err)
	}
	return res.ExitCode, stdout.String(), stderr.String()
}

// inSubnet reports whether ip lies in subnet.
func inSubnet(subnet, ip string) bool {
	p, err1 := netip.ParsePrefix(subnet)
	a, err2 := netip.ParseAddr(ip)
	return err1 == nil && err2 == nil && p.Contains(a)
}

// jsonInts collects every number found under key anywhere in a JSON
// document (the tests do not depend on where `get -o json` puts it).
func jsonInts(t testing.TB, doc, key string) []int {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var out []int
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if n, ok := c.(float64); ok && k == key {
					out = append(out, int(n))
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return out
}

// hostGet GETs url from the host on a new connection (the proxy balances
// connections, not requests): the body of a 200 answer, or an error.
func hostGet(url string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	return bodyOf(&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}, req)
}

// bodyOf sends req and returns the body of a 200 answer; another status
// is an error with the body.
func bodyOf(c *http.Client, req *http.Request) (string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s (Host %s): %s: %s", req.Method, req.URL, req.Host, resp.Status, b)
	}
	return string(b), nil
}

// waitHostAnswers waits until url answers 200 from the host.
func waitHostAnswers(t testing.TB, url, want string) {
	t.Helper()
	eventually(t, 60*time.Second, "GET "+url+" from the host", func() (bool, string) {
		body, err := hostGet(url)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(body, want), body
	})
}

// proxyConfig reads the config a proxy applied last (helperapi.StateFile,
// through the archive API: the image has no shell).
func proxyConfig(t testing.TB, id string) helperapi.ProxyConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, _, err := dockerCli.CopyFromContainer(ctx, id, helperapi.StateFile)
	if err != nil {
		t.Fatalf("read %s of the proxy %s: %v", helperapi.StateFile, id[:12], err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatalf("read %s of the proxy %s: %v", helperapi.StateFile, id[:12], err)
	}
	var pc helperapi.ProxyConfig
	if err := json.NewDecoder(tr).Decode(&pc); err != nil {
		t.Fatalf("decode %s of the proxy %s: %v", helperapi.StateFile, id[:12], err)
	}
	return pc
}

// waitReplicasAnswer waits until n distinct replicas answer a /whoami url
// (the proxy balances connections; 10 per replica finds each of them).
func waitReplicasAnswer(t testing.TB, url string, n int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d replicas to answer through the Service", n), func() (bool, string) {
		seen := map[string]bool{}
		for i := 0; i < 10*n; i++ {
			if body, err := hostGet(url); err == nil {
				seen[strings.TrimSpace(body)] = true
			}
		}
		return len(seen) == n, fmt.Sprint(seen)
	})
}

// The manifests these tests apply are valid: a typo in a builder would
// otherwise show up as a confusing timeout.
func TestServiceManifestsDecode(t *testing.T) {
	for name, m := range map[string]string{
		"dns": bundle(namespaceManifest("ns1"),
			svcDeployment{ns: "ns1", name: "web", app: "web", replicas: 1, args: []string{"--message=x"}}.manifest(),
			serviceManifest("ns1", "web", "web", httpPort80), clientDeployment("ns1").manifest()),
		"headless": bundle(svcDeployment{name: "hl-a", app: "hl", replicas: 2, probePath: "/healthz"}.manifest(),
			serviceManifest("", "hl", "hl", "  clusterIP: None\n  ports:\n  - {name: http, port: 8080, targetPort: http}\n")),
		"published": bundle(svcDeployment{name: "pub", app: "pub", replicas: 2, probePath: "/readyz", grace: 5}.manifest(),
			serviceManifest("", "lb", "pub", publishedSpec(18080)),
			serviceManifest("", "np", "pub", "  type: NodePort\n  ports:\n  - {port: 80, targetPort: 8080}\n")),
	} {
		docs, err := manifests.Decode(name+".yaml", []byte(m))
		if err != nil {
			t.Errorf("%s:\n%s\n%v", name, m, err)
			continue
		}
		services := 0
		for _, d := range docs {
			if d.Service != nil {
				services++
			}
		}
		if services == 0 {
			t.Errorf("%s: no Service decoded", name)
		}
	}
}

// TestServiceDNS (docs/design.md §10): from a replica in ns1,
// web, web.ns1, web.ns1.svc and web.ns1.svc.cluster.local all resolve to
// ns1's ClusterIP; the same short name from default resolves to default's
// Service; a missing name under cluster.local fails as not found. And the
// port remapping of item 4: port 80 → the named container port http (8080).
func TestServiceDNS(t *testing.T) {
	e := newSvcEnv(t)
	subnet := testSubnet(t)
	e.startSvcController(subnet)
	e.apply(bundle(namespaceManifest("ns1"),
		svcDeployment{ns: "ns1", name: "web", app: "web", replicas: 1, args: []string{"--message=web in ns1"}}.manifest(),
		serviceManifest("ns1", "web", "web", httpPort80),
		clientDeployment("ns1").manifest(),
		svcDeployment{name: "web", app: "web", replicas: 1, args: []string{"--message=web in default"}}.manifest(),
		serviceManifest("", "web", "web", httpPort80),
		clientDeployment("default").manifest()))
	client1 := e.waitPodsRunning("ns1", "client", 1)[0].ID
	client0 := e.waitPodsRunning("default", "client", 1)[0].ID
	_, ip1 := e.waitHelper("proxy", "ns1", "web", "")
	_, ip0 := e.waitHelper("proxy", "default", "web", "")
	_, dnsIP := e.waitHelper("dns", "", "", "")
	t.Logf("ClusterIPs: ns1/web %s, default/web %s; DNS server %s; subnet %s", ip1, ip0, dnsIP, subnet)
	if ip1 == ip0 || !inSubnet(subnet, ip1) || !inSubnet(subnet, ip0) || !inSubnet(subnet, dnsIP) {
		t.Fatalf("want two distinct ClusterIPs and the DNS server in %s: %s, %s, %s", subnet, ip1, ip0, dnsIP)
	}
	// The replicas are created with the resolver settings of a pod.
	if dns := inspect(t, client1).HostConfig.DNS; !contains(dns, dnsIP) {
		t.Errorf("client in ns1 has DNS %v, want the instance's DNS server %s", dns, dnsIP)
	}

	t.Run("the four forms in ns1", func(t *testing.T) {
		e := e.in(t)
		for _, name := range []string{"web", "web.ns1", "web.ns1.svc", "web.ns1.svc.cluster.local"} {
			e.resolvesTo(client1, name, ip1)
		}
	})
	t.Run("the same short name in default", func(t *testing.T) {
		e := e.in(t)
		e.resolvesTo(client0, "web", ip0)
		e.resolvesTo(client0, "web.default.svc.cluster.local", ip0)
		e.resolvesTo(client0, "web.ns1", ip1)
	})
	t.Run("a missing name under cluster.local is not found", func(t *testing.T) {
		e := e.in(t)
		// (A bare "nope" would end with a query outside cluster.local,
		// which goes upstream: not this test's business.)
		for _, name := range []string{"nope.ns1.svc.cluster.local", "nope.ns1"} {
			r := e.run(client1, "resolve", name)
			if !r.NotFound || len(r.IPs) > 0 {
				t.Fatalf("resolve %s: %s, want not found (NXDOMAIN)", name, r)
			}
			// A figure for the closing note, not an assertion: the machine
			// is shared.
			t.Logf("lookup of the missing %s failed as not found in %d ms", name, r.Millis)
		}
		// Go's resolver reports NODATA (NOERROR, no answer) as not found
		// too: ask for the RCODE itself. The Kubernetes DNS specification
		// answers a name that does not exist with NXDOMAIN.
		if r := e.run(client1, "rcode", "nope.ns1.svc.cluster.local"); r.Rcode != "NXDOMAIN" || len(r.IPs) > 0 {
			t.Fatalf("A query for nope.ns1.svc.cluster.local: %s, want NXDOMAIN", r)
		}
		// The same query tells an existing name apart.
		if r := e.run(client1, "rcode", "web.ns1.svc.cluster.local"); r.Rcode != "NOERROR" || strings.Join(r.IPs, ",") != ip1 {
			t.Fatalf("A query for web.ns1.svc.cluster.local: %s, want NOERROR with %s", r, ip1)
		}
	})
	t.Run("port 80 to the named target port", func(t *testing.T) {
		e := e.in(t)
		e.answers(client1, "http://web/", "web in ns1")
		e.answers(client1, "http://web.ns1.svc.cluster.local:80/", "web in ns1")
		e.answers(client0, "http://web/", "web in default")
		e.answers(client0, "http://web.ns1/", "web in ns1")
	})
	t.Run("get services shows the ClusterIPs", func(t *testing.T) {
		e := e.in(t)
		out := e.mustDockctl("", "get", "services", "-n", "ns1")
		if !regexpMatch(`(?m)^web\s.*`+regexpQuote(ip1), out) {
			t.Errorf("get services -n ns1 should show web with ClusterIP %s:\n%s", ip1, out)
		}
		out = e.mustDockctl("", "get", "svc", "-A")
		if !strings.Contains(out, ip0) || !strings.Contains(out, ip1) {
			t.Errorf("get svc -A should show both ClusterIPs %s and %s:\n%s", ip0, ip1, out)
		}
	})
}

func regexpQuote(s string) string { return strings.ReplaceAll(s, ".", `\.`) }

// TestServiceHeadless (issue 10 item 3): a headless Service resolves to the
// ready pods' addresses only — of every deployment its selector matches —
// and follows readiness: a pod that turns unready leaves the answer, while
// `get endpoints` still lists it. hl-all, with publishNotReadyAddresses,
// answers every pod, ready or not, as CoreDNS does.
func TestServiceHeadless(t *testing.T) {
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t))
	// hl-a: two pods ready while /healthz answers (until /unhealthy);
	// hl-b: one pod never ready (/healthz fails from the start).
	e.apply(bundle(
		svcDeployment{name: "hl-a", app: "hl", replicas: 2, probePath: "/healthz"}.manifest(),
		svcDeployment{name: "hl-b", app: "hl", replicas: 1, probePath: "/healthz", args: []string{"--unhealthy-after=1ns"}}.manifest(),
		serviceManifest("", "hl", "hl", "  clusterIP: None\n  ports:\n  - {name: http, port: 8080, targetPort: http}\n"),
		serviceManifest("", "hl-all", "hl", "  clusterIP: None\n  publishNotReadyAddresses: true\n  ports:\n  - {name: http, port: 8080, targetPort: http}\n"),
		clientDeployment("default").manifest()))
	client := e.waitPodsRunning("default", "client", 1)[0].ID
	a := e.waitPodsRunning("default", "hl-a", 2)
	b := e.waitPodsRunning("default", "hl-b", 1)
	ipA0, ipA1, ipB := e.netIP(a[0].ID), e.netIP(a[1].ID), e.netIP(b[0].ID)
	if ipA0 == "" || ipA1 == "" || ipB == "" {
		t.Fatalf("pods not on the instance network: %q %q %q", ipA0, ipA1, ipB)
	}
	e.resolvesTo(client, "hl", ipA0, ipA1)
	e.resolvesTo(client, "hl.default.svc.cluster.local", ipA0, ipA1)
	e.resolvesTo(client, "hl-all", ipA0, ipA1, ipB)
	if ps := e.helpers("proxy", "default", "hl"); len(ps) > 0 {
		t.Errorf("a headless Service needs no proxy: %s", describe(ps))
	}

	// The first pod of hl-a turns unready; it stays running.
	if code := execIn(t, a[0].ID, "/workload", "probe", "http://127.0.0.1:8080/unhealthy"); code != 0 {
		t.Fatalf("GET /unhealthy in %s exited %d", a[0].Names[0], code)
	}
	e.resolvesTo(client, "hl", ipA1)
	e.resolvesTo(client, "hl-all", ipA0, ipA1, ipB)
	eventually(t, 60*time.Second, "get endpoints to list the ready and the not-ready addresses", func() (bool, string) {
		out := e.mustDockctl("", "get", "endpoints", "hl", "-o", "json")
		return strings.Contains(out, ipA0) && strings.Contains(out, ipA1) && strings.Contains(out, ipB), out
	})
	if cs := e.podsOf("default", "hl-a"); len(cs) != 2 || cs[0].ID != a[0].ID || cs[0].State != "running" {
		t.Errorf("the unready pod should keep running: %s", describe(cs))
	}
	t.Logf("get ep:\n%s", e.mustDockctl("", "get", "ep"))
}

// TestServicePublished (issue 10 item 5): a LoadBalancer Service answers on
// its port and a NodePort Service on an allocated nodePort, on 127.0.0.1
// from the host; a second Service asking for a host port already taken is
// reported with a PortConflict condition, and Docker is never asked for it.
func TestServicePublished(t *testing.T) {
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t))
	lbPort := freePort(t)
	e.apply(bundle(
		svcDeployment{name: "pub", app: "pub", replicas: 2, probePath: "/readyz", args: []string{"--message=published"}}.manifest(),
		serviceManifest("", "lb", "pub", publishedSpec(lbPort)),
		serviceManifest("", "np", "pub", "  type: NodePort\n  ports:\n  - {port: 80, targetPort: 8080}\n")))
	e.waitPodsRunning("default", "pub", 2)
	waitHostAnswers(t, fmt.Sprintf("http://127.0.0.1:%d/", lbPort), "published")

	var nodePort int
	eventually(t, 60*time.Second, "an allocated nodePort in get svc np -o json", func() (bool, string) {
		out := e.mustDockctl("", "get", "svc", "np", "-o", "json")
		for _, p := range jsonInts(t, out, "nodePort") {
			if p >= 30000 && p <= 32767 {
				nodePort = p
				return true, ""
			}
		}
		return false, out
	})
	t.Logf("nodePort allocated: %d", nodePort)
	if out := e.mustDockctl("", "get", "svc"); !strings.Contains(out, strconv.Itoa(nodePort)) || !strings.Contains(out, strconv.Itoa(lbPort)) {
		t.Errorf("get svc should show the ports %d and %d:\n%s", lbPort, nodePort, out)
	}
	waitHostAnswers(t, fmt.Sprintf("http://127.0.0.1:%d/", nodePort), "published")
	// The proxies publish nothing: the publisher, on the host's network,
	// binds both ports itself, on 127.0.0.1 only (--service-address).
	for _, id := range []string{e.helpersOne("lb"), e.helpersOne("np")} {
		if b := inspect(t, id).HostConfig.PortBindings; len(b) != 0 {
			t.Errorf("proxy %s publishes %v through Docker, want nothing", id[:12], b)
		}
	}
	pubs := e.helpers("publisher", "", "")
	if len(pubs) != 1 {
		t.Fatalf("%d publishers, want 1: %s", len(pubs), describe(pubs))
	}
	if hc := inspect(t, pubs[0].ID).HostConfig; !hc.NetworkMode.IsHost() || len(hc.PortBindings) != 0 {
		t.Errorf("the publisher runs on network %q with Docker publishing %v, want the host's and nothing", hc.NetworkMode, hc.PortBindings)
	}
	for _, p := range []int{lbPort, nodePort} {
		if got := tcpListeners(t, p); got != "127.0.0.1" {
			t.Errorf("port %d listens on %q, want the service address 127.0.0.1 only", p, got)
		}
	}

	t.Run("a second Service on the same port is a PortConflict", func(t *testing.T) {
		e := e.in(t)
		e.apply(serviceManifest("", "lb2", "pub", publishedSpec(lbPort)))
		eventually(t, 60*time.Second, "PortConflict on lb2", func() (bool, string) {
			desc, _ := e.dockctl("", "describe", "service", "lb2")
			js, _ := e.dockctl("", "get", "svc", "lb2", "-o", "json")
			return strings.Contains(desc, "PortConflict") || strings.Contains(js, "PortConflict"), desc + "\n" + js
		})
		t.Logf("describe service lb2:\n%s", e.mustDockctl("", "describe", "service", "lb2"))
		// Not left to Docker: no proxy of lb2 stuck created or exited by
		// a failed port binding.
		for _, c := range e.helpers("proxy", "default", "lb2") {
			if c.State != "running" {
				t.Errorf("proxy of lb2 %s: %s (%s)", c.Names[0], c.State, c.Status)
			}
		}
		// The first holder of the port keeps it.
		waitHostAnswers(t, fmt.Sprintf("http://127.0.0.1:%d/", lbPort), "published")
		if desc := e.mustDockctl("", "describe", "service", "lb"); strings.Contains(desc, "PortConflict") {
			t.Errorf("lb holds its port, but describe shows a conflict:\n%s", desc)
		}
	})
}

// publishedWeb starts a test's controller and a deployment web of the
// workload (with args, ready on /readyz, a grace period of 10 s) behind a
// LoadBalancer Service web on a free port, and waits for its replicas to
// run.
func publishedWeb(t testing.TB, replicas int, args ...string) (e *env, subnet string, port int) {
	t.Helper()
	e = newSvcEnv(t)
	subnet = testSubnet(t)
	e.startSvcController(subnet)
	port = freePort(t)
	e.apply(bundle(
		svcDeployment{name: "web", app: "web", replicas: replicas, probePath: "/readyz", args: args, grace: 10}.manifest(),
		serviceManifest("", "web", "web", publishedSpec(port))))
	e.waitPodsRunning("default", "web", replicas)
	return e, subnet, port
}

// helpersOne returns the ID of the running proxy of a default-namespace
// Service.
func (e *env) helpersOne(service string) string {
	e.t.Helper()
	id, _ := e.waitHelper("proxy", "default", service, "")
	return id
}

// TestServiceRepair (issue 10 item 4 and 9): `docker rm -f` of a Service's
// proxy and of the DNS server: each comes back with the same address (the
// ClusterIP survives re-creation, clients cache it), and traffic resumes.
func TestServiceRepair(t *testing.T) {
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t), "--resync-period", "10m")
	port := freePort(t)
	e.apply(bundle(
		svcDeployment{name: "web", app: "web", replicas: 2, probePath: "/readyz", args: []string{"--message=repaired"}}.manifest(),
		serviceManifest("", "web", "web", publishedSpec(port)),
		clientDeployment("default").manifest()))
	client := e.waitPodsRunning("default", "client", 1)[0].ID
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitHostAnswers(t, url, "repaired")
	proxyID, clusterIP := e.waitHelper("proxy", "default", "web", "")
	dnsID, dnsIP := e.waitHelper("dns", "", "", "")
	e.resolvesTo(client, "web", clusterIP)
	e.answers(client, fmt.Sprintf("http://web:%d/", port), "repaired")

	for _, h := range []struct {
		role, ns, service, id, ip string
		back                      func(e *env) // waits for the traffic that needs it
	}{
		{"proxy", "default", "web", proxyID, clusterIP, func(e *env) {
			waitHostAnswers(e.t, url, "repaired")
			e.answers(client, fmt.Sprintf("http://%s:%d/", clusterIP, port), "repaired")
		}},
		{"dns", "", "", dnsID, dnsIP, func(e *env) {
			e.resolvesTo(client, "web", clusterIP)
			e.answers(client, fmt.Sprintf("http://web:%d/", port), "repaired")
		}},
	} {
		t.Run(h.role, func(t *testing.T) {
			e := e.in(t)
			start := time.Now()
			rmForce(t, h.id)
			id, ip := e.waitHelper(h.role, h.ns, h.service, h.id)
			if ip != h.ip {
				// Clients cache the ClusterIP; replicas have the DNS
				// server's address in their resolver settings.
				t.Fatalf("the new %s helper has address %s, want %s", h.role, ip, h.ip)
			}
			h.back(e)
			t.Logf("repair after rm -f of the %s helper: its replacement started %s later, traffic back %s later",
				h.role, repairTime(t, start, id), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestServiceControllerRestart (issue 10 item 4): with the controller
// stopped, the data plane keeps serving its last endpoints — not one
// request fails; started again, the controller takes a scale-up without
// disturbing the traffic.
func TestServiceControllerRestart(t *testing.T) {
	e, subnet, port := publishedWeb(t, 2, "--drain-delay=1s")
	url := fmt.Sprintf("http://127.0.0.1:%d/whoami", port)
	waitHostAnswers(t, url, "web-")
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	proxyID, _ := e.waitHelper("proxy", "default", "web", "")
	before := proxyConfig(t, proxyID)

	l := startLoad(t, url)
	e.stopController()
	stopping := l.mark("controller stopping")
	// Enough requests for the proxy to have served a while alone; the
	// assertion is on the failures, not on a time.
	l.waitRequests(t, 1000)
	down := l.mark("controller down")
	e.startSvcController(subnet)
	// Until the restarted controller has pushed its own view of the
	// endpoints (it knows nothing of the replicas' readiness until it has
	// probed them), and then some traffic on it.
	eventually(t, 60*time.Second, "a push of both replicas by the restarted controller", func() (bool, string) {
		pc := proxyConfig(t, proxyID)
		return pc.Generation > before.Generation && len(pc.Ports) == 1 && len(pc.Ports[0].Endpoints) == 2, fmt.Sprintf("%+v", pc)
	})
	l.waitRequests(t, 500)
	back := l.mark("controller back")
	e.mustDockctl("", "scale", "deployment", "web", "--replicas", "3")
	e.waitPodsRunning("default", "web", 3)
	e.mustDockctl("", "rollout", "status", "deployment/web", "--timeout", "2m")
	// The new replica joins the Service.
	waitReplicasAnswer(t, url, 3)
	scaled := l.mark("scaled to 3")
	l.stop()
	t.Log(l.report())
	for _, p := range []loadPhase{stopping, down, back, scaled} {
		if p.failures() > 0 {
			t.Errorf("%s", p)
		}
	}
	if t.Failed() {
		t.Errorf("want 0 failed requests; first errors:\n%s", l.firstErrors())
	}
	if ps := e.helpers("proxy", "default", "web"); len(ps) != 1 || ps[0].ID != proxyID {
		t.Errorf("the restarted controller replaced the proxy (%s); it must adopt the one serving: %s", proxyID[:12], describe(ps))
	}
}

// TestServiceUpgradeInPlace (docs/design.md §16): replicas
// that are not on the instance network — as a release before issue 10 made
// them — are connected to it in place by the controller: same container,
// never restarted, and reachable through the Service.
func TestServiceUpgradeInPlace(t *testing.T) {
	e, subnet, port := publishedWeb(t, 2, "--message=upgraded")
	before := e.podsOf("default", "web")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitHostAnswers(t, url, "upgraded")

	e.stopController()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started := map[string]string{}
	for _, c := range before {
		if err := dockerCli.NetworkDisconnect(ctx, instanceNetwork(e.instance), c.ID, false); err != nil {
			t.Fatalf("disconnect %s: %v", c.Names[0], err)
		}
		if ip := e.netIP(c.ID); ip != "" {
			t.Fatalf("%s still on the instance network (%s)", c.Names[0], ip)
		}
		started[c.ID] = inspect(t, c.ID).State.StartedAt
	}
	start := time.Now()
	e.startSvcController(subnet)
	eventually(t, 90*time.Second, "both replicas connected to the instance network again", func() (bool, string) {
		var parts []string
		ok := true
		for _, c := range before {
			ip := e.netIP(c.ID)
			ok = ok && ip != ""
			parts = append(parts, c.Names[0]+"="+ip)
		}
		return ok, strings.Join(parts, " ")
	})
	t.Logf("replicas reconnected %s after the controller started", time.Since(start).Round(time.Millisecond))
	after := e.waitPodsRunning("default", "web", 2)
	for _, c := range after {
		at, ok := started[c.ID]
		if !ok {
			t.Fatalf("replica %s is new: the controller must connect the network in place, not re-create (%s)", c.Names[0], describe(after))
		}
		if now := inspect(t, c.ID).State.StartedAt; now != at {
			t.Errorf("replica %s was restarted: started %s, now %s", c.Names[0], at, now)
		}
	}
	waitHostAnswers(t, url, "upgraded")
	// Both replicas serve again: the proxy learnt their (new) addresses.
	waitReplicasAnswer(t, url+"whoami", 2)
}

// TestServiceHostPortHeldByAHostProcess: a LoadBalancer Service whose port
// a process of the host listens on (this test: no container, so no list
// shows it) keeps its ClusterIP serving — its proxy runs without that
// port — and reports a PortConflict "held by a process of the host", not a
// ProxyFailure; once the process lets go, the port is tried again and
// published. As kube-proxy skips a nodePort it cannot open and keeps the
// Service's other rules.
func TestServiceHostPortHeldByAHostProcess(t *testing.T) {
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e.apply(bundle(
		svcDeployment{name: "web", app: "web", replicas: 1, probePath: "/readyz", args: []string{"--message=held"}}.manifest(),
		serviceManifest("", "web", "web", publishedSpec(port)),
		clientDeployment("default").manifest()))
	client := e.waitPodsRunning("default", "client", 1)[0].ID
	e.waitPodsRunning("default", "web", 1)
	eventually(t, 60*time.Second, "PortConflict held by a process of the host", func() (bool, string) {
		desc, _ := e.dockctl("", "describe", "service", "web")
		return strings.Contains(desc, "PortConflict") && strings.Contains(desc, "held by a process of the host") && !strings.Contains(desc, "ProxyFailure"), desc
	})
	_, ip := e.waitHelper("proxy", "default", "web", "")
	e.answers(client, fmt.Sprintf("http://%s:%d/", ip, port), "held")
	e.answers(client, fmt.Sprintf("http://web:%d/", port), "held")
	for _, c := range e.helpers("proxy", "default", "web") {
		if c.State != "running" {
			t.Errorf("proxy %s: %s (%s)", c.Names[0], c.State, c.Status)
		}
	}

	// The process lets go: the port is tried again (the controller, in a
	// container, cannot see the host's listeners: after the first backoff).
	ln.Close()
	eventually(t, 150*time.Second, "the port published once free", func() (bool, string) {
		body, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", port))
		return err == nil && strings.Contains(body, "held"), fmt.Sprint(body, err)
	})
	eventually(t, 60*time.Second, "the conflict gone", func() (bool, string) {
		desc, _ := e.dockctl("", "describe", "service", "web")
		// The conditions, not the events: the ended condition is
		// recorded as a PortConflictResolved event.
		conds := describedConditions(desc)
		return !strings.Contains(conds, "PortConflict") && !strings.Contains(conds, "ProxyFailure"), desc
	})
}

// describedConditions is the Conditions block of a describe output, up
// to its Events.
func describedConditions(desc string) string {
	_, after, ok := strings.Cut(desc, "Conditions:")
	if !ok {
		return ""
	}
	conds, _, _ := strings.Cut(after, "Events:")
	return conds
}

// TestServicePortAddedKeepsProxy: a port added to a ClusterIP Service is
// pushed to its running proxy, which opens it; the proxy is not replaced,
// so connections open on the Service's other ports are not cut (as
// kube-proxy adds the rules of a new Service port without touching the
// connections of the others).
func TestServicePortAddedKeepsProxy(t *testing.T) {
	e := newSvcEnv(t)
	e.startSvcController(testSubnet(t))
	e.apply(bundle(
		svcDeployment{name: "web", app: "web", replicas: 1, probePath: "/readyz", args: []string{"--message=ports"}}.manifest(),
		serviceManifest("", "web", "web", httpPort80),
		clientDeployment("default").manifest()))
	client := e.waitPodsRunning("default", "client", 1)[0].ID
	e.waitPodsRunning("default", "web", 1)
	proxy, _ := e.waitHelper("proxy", "default", "web", "")
	e.answers(client, "http://web:80/", "ports")

	e.apply(serviceManifest("", "web", "web", "  ports:\n  - {name: http, port: 80, targetPort: http}\n  - {name: alt, port: 81, targetPort: http}\n"))
	e.answers(client, "http://web:81/", "ports")
	e.answers(client, "http://web:80/", "ports")
	cs := e.helpers("proxy", "default", "web")
	if len(cs) != 1 || cs[0].ID != proxy || cs[0].State != "running" {
		t.Errorf("proxies after the port was added: %s; want %.12s, running, kept", describe(cs), proxy)
	}
}
