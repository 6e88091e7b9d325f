//go:build e2e

package dockerx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// svcE2E returns a client (with opts), the SDK client under it and a fresh
// instance; what the test makes is removed when it ends, even on failure:
// containers, volumes and images by the instance's label, then the
// networks of the instance or of the test's label.
func svcE2E(t *testing.T, opts ...Option) (*Client, *client.Client, string) {
	t.Helper()
	c, err := NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	api := c.api.(*negotiating).Client
	instance := "e2e-svc-" + randHex(t)
	t.Cleanup(func() { removeNetworks(t, api, instance) }) // last: containers hold them
	t.Cleanup(func() { removeByInstance(t, api, instance) })
	return c, api, instance
}

// removeNetworks removes the networks labelled with the instance or with
// the test label set to it.
func removeNetworks(t *testing.T, api *client.Client, instance string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range []filters.Args{
		filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance)),
		filters.NewArgs(filters.Arg("label", testLabel+"="+instance)),
	} {
		list, err := api.NetworkList(ctx, network.ListOptions{Filters: f})
		if err != nil {
			t.Logf("cleanup list networks: %v", err)
			continue
		}
		for _, n := range list {
			if err := api.NetworkRemove(ctx, n.ID); err != nil {
				t.Logf("cleanup remove network %s: %v", n.Name, err)
			}
		}
	}
}

// ensureTestNetwork makes the instance's network on a /24 of 10.254.0.0/16
// that no network of the daemon overlaps (other users of the daemon may
// take one meanwhile: then another is tried). Its lower half is Docker's
// IPRange, its upper half for static addresses.
func ensureTestNetwork(t *testing.T, ctx context.Context, c *Client, instance string) Network {
	t.Helper()
	for attempt := 0; attempt < 10; attempt++ {
		nets, err := c.ListNetworks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		third := rand.N(250) + 1
		subnet := netip.MustParsePrefix(fmt.Sprintf("10.254.%d.0/24", third))
		if slices.ContainsFunc(nets, func(n Network) bool {
			p, err := netip.ParsePrefix(n.Subnet)
			return err == nil && p.Overlaps(subnet)
		}) {
			continue
		}
		req := NetworkRequest{Instance: instance, Name: NetworkName(instance), Subnet: subnet.String(),
			IPRange: fmt.Sprintf("10.254.%d.0/25", third), Gateway: fmt.Sprintf("10.254.%d.1", third)}
		n, err := c.EnsureNetwork(ctx, req)
		if err != nil && strings.Contains(err.Error(), "overlaps") {
			continue
		}
		if err != nil {
			t.Fatalf("EnsureNetwork: %v", err)
		}
		return n
	}
	t.Fatal("no free /24 in 10.254.0.0/16 after 10 attempts")
	return Network{}
}

// workloadE2E is svcE2E with the workload image (its tag) and the
// instance's network.
func workloadE2E(t *testing.T, ctx context.Context) (*Client, *client.Client, string, Network, string) {
	t.Helper()
	c, api, instance := svcE2E(t)
	tag := "dockctl-dockerx-e2e:" + randHex(t)
	buildWorkloadImage(t, api, tag)
	t.Cleanup(func() { removeByInstance(t, api, instance) }) // before the image
	return c, api, instance, ensureTestNetwork(t, ctx, c, instance), tag
}

// staticAddr is the n-th address of the network's upper (static) half.
func staticAddr(n Network, i int) string {
	a := netip.MustParsePrefix(n.Subnet).Addr().As4()
	a[3] = byte(128 + i)
	return netip.AddrFrom4(a).String()
}

// TestE2ENetwork: the instance network is created with its IPAM, found
// again as it is, listed; a network of that name that is not dockctl's is
// never adopted nor removed; a running container is connected in place
// with a static address; a network in use stays, and goes once unused.
func TestE2ENetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, api, instance, n, tag := workloadE2E(t, ctx)
	if n.Name != "dockctl_"+instance || n.ID == "" || n.Labels[LabelInstance] != instance || n.Labels[LabelRole] != RoleNetwork ||
		!strings.HasSuffix(n.IPRange, ".0/25") || !strings.HasSuffix(n.Gateway, ".1") {
		t.Errorf("EnsureNetwork = %+v", n)
	}
	insp, err := api.NetworkInspect(ctx, n.ID, network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if insp.Driver != "bridge" || len(insp.IPAM.Config) != 1 || insp.IPAM.Config[0].Subnet != n.Subnet || insp.IPAM.Config[0].IPRange != n.IPRange {
		t.Errorf("daemon's network: driver %s IPAM %+v", insp.Driver, insp.IPAM)
	}
	again, err := c.EnsureNetwork(ctx, NetworkRequest{Instance: instance, Name: n.Name, Subnet: "10.253.0.0/24"})
	if err != nil || again.ID != n.ID || again.Subnet != n.Subnet {
		t.Errorf("second EnsureNetwork (asking another subnet) = %+v, %v; want the network as it is", again, err)
	}
	list, err := c.ListNetworks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(list, func(l Network) bool { return l.ID == n.ID }); i < 0 || list[i].Subnet != n.Subnet ||
		!slices.ContainsFunc(list, func(l Network) bool { return l.Name == "bridge" && l.Subnet != "" }) {
		t.Errorf("ListNetworks = %+v", list)
	}

	// Not dockctl's: never adopted, never removed.
	foreign := "dockctl_" + instance + "-foreign"
	if _, err := api.NetworkCreate(ctx, foreign, network.CreateOptions{Driver: "bridge", Labels: map[string]string{testLabel: instance}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnsureNetwork(ctx, NetworkRequest{Instance: instance, Name: foreign, Subnet: "10.253.0.0/24"}); !errors.Is(err, ErrConflict) ||
		!strings.Contains(err.Error(), "is not dockctl's network") {
		t.Errorf("EnsureNetwork of a foreign network = %v, want ErrConflict", err)
	}
	if err := c.RemoveNetwork(ctx, foreign); !errors.Is(err, ErrConflict) {
		t.Errorf("RemoveNetwork of a foreign network = %v, want ErrConflict", err)
	}
	if _, err := api.NetworkInspect(ctx, foreign, network.InspectOptions{}); err != nil {
		t.Errorf("the foreign network is gone: %v", err)
	}

	// A replica of an earlier release, on the default bridge, connected in
	// place with a static address.
	req := request(deployment("web", nil))
	req.Instance, req.Name = instance, ContainerName(instance, "", "web", "5d8f7c9b6", 0)
	req.From.Template.Spec.Containers[0].Image = tag
	id, err := c.CreateContainer(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	ip := staticAddr(n, 2)
	ep := EndpointSettings{IPv4: ip, Aliases: []string{"web-5d8f7c9b6-0"}}
	if err := c.ConnectNetwork(ctx, n.Name, id, ep); err != nil {
		t.Fatalf("ConnectNetwork: %v", err)
	}
	if err := c.ConnectNetwork(ctx, n.Name, id, ep); err != nil {
		t.Errorf("ConnectNetwork again = %v, want nil", err)
	}
	det, err := c.InspectContainer(ctx, id)
	if err != nil || det.Networks[n.Name] != ip || det.Networks["bridge"] == "" || det.State != StateRunning {
		t.Errorf("after the connect: %+v, %v; want %s on %s, still running", det.Networks, err, ip, n.Name)
	}
	cs, err := c.ListContainers(ctx, instance)
	if err != nil || len(cs) != 1 || cs[0].Networks[n.Name] != ip || cs[0].Namespace != "default" {
		t.Errorf("listed %+v, %v", cs, err)
	}
	// A static address already held: refused.
	other := req
	other.Name = ContainerName(instance, "", "web", "5d8f7c9b6", 1)
	oid, err := c.CreateContainer(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, oid); err != nil {
		t.Fatal(err)
	}
	if err := c.ConnectNetwork(ctx, n.Name, oid, EndpointSettings{IPv4: ip}); err == nil || !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("ConnectNetwork with a taken address = %v", err)
	}
	// Docker keeps the refused network in the running container's
	// configuration, without an endpoint: not reported as connected.
	if det, err := c.InspectContainer(ctx, oid); err != nil || len(det.Networks) != 1 || det.Networks["bridge"] == "" {
		t.Errorf("after a refused connect: %v, %v; want the default bridge only", det.Networks, err)
	}
	if cs, err := c.ListContainers(ctx, instance); err != nil || len(cs) != 2 ||
		len(cs[slices.IndexFunc(cs, func(ct Container) bool { return ct.ID == oid })].Networks) != 1 {
		t.Errorf("listed after a refused connect: %+v, %v", cs, err)
	}
	// A connect that succeeds replaces that configuration: the container
	// then restarts (it would not otherwise: "Address already in use").
	ip2 := staticAddr(n, 3)
	if err := c.ConnectNetwork(ctx, n.Name, oid, EndpointSettings{IPv4: ip2}); err != nil {
		t.Fatalf("ConnectNetwork with a free address after a refused one: %v", err)
	}
	if err := c.StopContainer(ctx, oid, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, oid); err != nil {
		t.Errorf("start after the repairing connect: %v", err)
	}
	if det, err := c.InspectContainer(ctx, oid); err != nil || det.Networks[n.Name] != ip2 {
		t.Errorf("restarted: %v, %v; want %s on %s", det.Networks, err, ip2, n.Name)
	}

	// In use: kept; unused: removed; gone: nil.
	if err := c.RemoveNetwork(ctx, n.Name); !errors.Is(err, ErrConflict) {
		t.Errorf("RemoveNetwork in use = %v, want ErrConflict", err)
	}
	for _, cid := range []string{id, oid} {
		if err := c.RemoveContainer(ctx, cid); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RemoveNetwork(ctx, n.Name); err != nil {
		t.Errorf("RemoveNetwork = %v", err)
	}
	if err := c.RemoveNetwork(ctx, n.Name); err != nil {
		t.Errorf("RemoveNetwork of a removed network = %v, want nil", err)
	}
}

// buildBinary builds a main package statically (CGO_ENABLED=0) into the
// test's directory.
func buildBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// helperE2E builds the main package pkg statically and makes it the helper
// image of a fresh instance (svcE2E), on its network.
func helperE2E(t *testing.T, ctx context.Context, pkg, name string) (*Client, *client.Client, string, Network, string) {
	t.Helper()
	c, api, instance := svcE2E(t, WithHelperBinary(buildBinary(t, pkg, name)))
	n := ensureTestNetwork(t, ctx, c, instance)
	ref, err := c.EnsureHelperImage(ctx, instance)
	if err != nil {
		t.Fatalf("EnsureHelperImage: %v", err)
	}
	return c, api, instance, n, ref
}

// waitLogs waits until the container's logs contain want.
func waitLogs(t *testing.T, ctx context.Context, c *Client, id, want string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rc, err := c.Logs(ctx, id, false, "all")
		if err == nil {
			var b bytes.Buffer
			_, err = io.Copy(&b, rc)
			rc.Close()
			if strings.Contains(b.String(), want) {
				return b.String()
			}
			if err == nil {
				err = fmt.Errorf("logs so far: %q", b.String())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs of %s never contained %q: %v", id, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestE2EHelperImage: dockctl, built static, packaged by EnsureHelperImage
// (loaded once, listed with the helper images, kept while a container
// uses it), runs as a helper container: `/dockctl --help` prints its usage.
// The helper has its labels, restart policy always, its static address and
// its published port.
func TestE2EHelperImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, api, instance, n, ref := helperE2E(t, ctx, "../cmd/dockctl", "dockctl")
	if again, err := c.EnsureHelperImage(ctx, instance); err != nil || again != ref {
		t.Errorf("second EnsureHelperImage = %s, %v", again, err)
	}
	if !strings.HasPrefix(ref, "dockctl-helper:"+instance+"-") {
		t.Errorf("ref %s", ref)
	}
	imgs, err := c.ListHelperImages(ctx, instance)
	if err != nil || len(imgs) != 1 || !slices.Equal(imgs[0].Tags, []string{ref}) {
		t.Fatalf("ListHelperImages = %+v, %v", imgs, err)
	}
	insp, err := api.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if insp.Config.Entrypoint != nil || insp.Config.Labels[LabelRole] != RoleHelperImage || insp.Os != "linux" {
		t.Errorf("image: entrypoint %v labels %v os %s", insp.Config.Entrypoint, insp.Config.Labels, insp.Os)
	}

	port := freePort(t)
	req := HelperRequest{
		Instance: instance, Namespace: "shop", Name: instance + "_web.shop_svc", Role: RoleProxy, Service: "web", ConfigHash: "c0ffee",
		Image: ref, Cmd: []string{helperapi.Binary, "--help"},
		Network: PodNetwork{Name: n.Name, IPv4: staticAddr(n, 1), Aliases: []string{"web.shop.svc"}},
		Ports:   []PortBinding{{HostIP: "127.0.0.1", HostPort: port, ContainerPort: 80, Protocol: "TCP"}},
	}
	id, err := c.CreateHelper(ctx, req)
	if err != nil {
		t.Fatalf("CreateHelper: %v", err)
	}
	if _, err := c.CreateHelper(ctx, req); !errors.Is(err, ErrConflict) {
		t.Errorf("second CreateHelper = %v, want ErrConflict", err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	logs := waitLogs(t, ctx, c, id, "Usage:")
	if !strings.Contains(logs, "dockctl") {
		t.Errorf("logs %q", logs)
	}
	ci, err := api.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ep := ci.NetworkSettings.Networks[n.Name]
	if ci.HostConfig.RestartPolicy.Name != container.RestartPolicyAlways || ep == nil || ep.IPAMConfig == nil || ep.IPAMConfig.IPv4Address != req.Network.IPv4 ||
		!slices.Contains(ep.Aliases, "web.shop.svc") || len(ci.HostConfig.PortBindings["80/tcp"]) != 1 || ci.HostConfig.PortBindings["80/tcp"][0].HostIP != "127.0.0.1" {
		t.Errorf("helper: restart %q endpoint %+v bindings %v", ci.HostConfig.RestartPolicy.Name, ep, ci.HostConfig.PortBindings)
	}
	cs, err := c.ListContainers(ctx, instance)
	if err != nil || len(cs) != 1 || cs[0].Role != RoleProxy || cs[0].Namespace != "shop" || cs[0].Service != "web" || cs[0].ConfigHash != "c0ffee" {
		t.Errorf("listed %+v, %v", cs, err)
	}

	// Docker keeps the image of an existing container: the controller's
	// collection of helper images can never take it.
	if err := c.RemoveImage(ctx, imgs[0].ID); !errors.Is(err, ErrConflict) {
		t.Errorf("RemoveImage in use = %v, want ErrConflict", err)
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveImage(ctx, imgs[0].ID); err != nil {
		t.Errorf("RemoveImage unused = %v", err)
	}
}

// TestE2EExecOutput: a helper that keeps running (testdata/helperbin
// packaged as the helper image) answers execs with its stdout and exit
// code; output is capped; a command past its timeout is an error; a
// container that does not run refuses an exec.
func TestE2EExecOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, _, instance, n, ref := helperE2E(t, ctx, "./testdata/helperbin", "helperbin")
	id, err := c.CreateHelper(ctx, HelperRequest{Instance: instance, Name: instance + "_dns", Role: RoleDNS, Image: ref,
		Cmd: []string{helperapi.Binary, "serve"}, Network: PodNetwork{Name: n.Name, IPv4: staticAddr(n, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ExecOutput(ctx, id, []string{helperapi.Binary, "print", "x", "0"}, 30*time.Second); !errors.Is(err, ErrConflict) {
		t.Errorf("exec in a created container = %v, want ErrConflict", err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		cmd      []string
		wantExit int
		wantOut  string
	}{
		{"stdout and exit 0, stderr apart", []string{helperapi.Binary, "print", `{"generation":7}`, "0"}, 0, `{"generation":7}`},
		{"a failure's exit code", []string{helperapi.Binary, "print", "stale", "3"}, 3, "stale"},
		{"output capped", []string{helperapi.Binary, "flood", "200000"}, 0, strings.Repeat("x", MaxExecOutput)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exit, out, err := c.ExecOutput(ctx, id, tt.cmd, 30*time.Second)
			if err != nil || exit != tt.wantExit || string(out) != tt.wantOut {
				t.Errorf("ExecOutput = %d, %d bytes %.60q, %v; want %d, %d bytes %.60q", exit, len(out), out, err, tt.wantExit, len(tt.wantOut), tt.wantOut)
			}
		})
	}
	// A config over an argument's 128 KiB goes on stdin: the command
	// reads it all and sees its end.
	in := bytes.Repeat([]byte("y"), 300000)
	if exit, out, err := c.ExecInput(ctx, id, []string{helperapi.Binary, "count"}, in, 30*time.Second); err != nil || exit != 0 || string(out) != "300000" {
		t.Errorf("ExecInput of %d bytes = %d, %q, %v; want exit 0, every byte read", len(in), exit, out, err)
	}
	start := time.Now()
	_, _, err = c.ExecOutput(ctx, id, []string{helperapi.Binary, "sleep", "60"}, 2*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ExecOutput past its timeout = %v, want DeadlineExceeded", err)
	}
	t.Logf("an exec past its 2s timeout returned after %v", time.Since(start))
	exit, out, err := c.ExecOutput(ctx, id, []string{"/no/such/command"}, 30*time.Second)
	t.Logf("exec of a missing command: exit %d, output %q, err %v", exit, out, err)
	if err == nil && exit == 0 {
		t.Error("exec of a missing command succeeded")
	}
}

// TestE2EPodNetwork: replicas created with a PodNetwork are on the
// instance network with their static or dynamic address, their aliases
// and resolver settings; the annotation's network is joined as well; and
// one replica reaches another by a short name that only the search list
// completes to its dotted alias (Docker's embedded DNS, ndots:5).
func TestE2EPodNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, api, instance, n, tag := workloadE2E(t, ctx)
	extra := "dockctl-e2e-extra-" + randHex(t)
	if _, err := api.NetworkCreate(ctx, extra, network.CreateOptions{Driver: "bridge", Labels: map[string]string{testLabel: instance}}); err != nil {
		t.Fatal(err)
	}

	search := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	create := func(name, ip string, aliases []string) string {
		t.Helper()
		d := deployment(name, func(d *manifests.Deployment) {
			d.Metadata.Namespace = "shop"
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: extra}
			d.Spec.Template.Spec.Containers[0].Image = tag
		})
		req := CreateRequest{Instance: instance, Name: instance + "_" + name + ".shop-5d8f7c9b6-0", TemplateHash: "5d8f7c9b6", From: TemplateOf(d),
			Namespace: "shop", Network: &PodNetwork{Name: n.Name, IPv4: ip, Aliases: aliases,
				// The instance's DNS server would be here; the embedded DNS
				// answers the aliases before forwarding anything to it.
				DNS: []string{staticAddr(n, 0)}, DNSSearch: search, DNSOptions: []string{"ndots:5"}}}
		id, err := c.CreateContainer(ctx, req)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if err := c.StartContainer(ctx, id); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		return id
	}
	webIP := staticAddr(n, 5)
	web := create("web", webIP, []string{"web.shop.svc.cluster.local"})
	client := create("client", "", nil)

	det, err := c.InspectContainer(ctx, web)
	if err != nil || det.Networks[n.Name] != webIP || det.Networks[extra] == "" || len(det.Networks) != 2 {
		t.Errorf("web's networks %v, %v; want %s on %s and an address on %s", det.Networks, err, webIP, n.Name, extra)
	}
	cs, err := c.ListContainers(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range cs {
		lo, hi := netip.MustParsePrefix(n.IPRange), netip.MustParsePrefix(n.Subnet)
		a, aerr := netip.ParseAddr(ct.Networks[n.Name])
		if ct.Namespace != "shop" || aerr != nil || !hi.Contains(a) || (ct.ID == client && !lo.Contains(a)) || ct.Networks[extra] == "" {
			t.Errorf("%s listed in namespace %q with networks %v", ct.Name, ct.Namespace, ct.Networks)
		}
	}
	ci, err := api.ContainerInspect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if hc := ci.HostConfig; string(hc.NetworkMode) != n.Name || !slices.Equal(hc.DNSSearch, search) || !slices.Equal(hc.DNSOptions, []string{"ndots:5"}) ||
		!slices.Equal(hc.DNS, []string{staticAddr(n, 0)}) || ci.Config.Hostname != "client-5d8f7c9b6-0" {
		t.Errorf("client: mode %s dns %v search %v options %v hostname %s", hc.NetworkMode, hc.DNS, hc.DNSSearch, hc.DNSOptions, ci.Config.Hostname)
	}
	if ep := ci.NetworkSettings.Networks[extra]; ep == nil || !slices.Contains(ep.Aliases, "client") {
		t.Errorf("client on the additional network: %+v, want the deployment's alias", ep)
	}

	// "web" has no dot: the search list makes it web.shop.svc.cluster.local
	// (the first name tried), web's alias on the instance network. The
	// full name, rooted: unrooted, ndots:5 would try it with the search
	// suffixes first, which Docker's embedded DNS forwards to the
	// instance's DNS server, absent here (answering NXDOMAIN at once for
	// them is that server's job).
	for _, url := range []string{"http://web:8080/", "http://web.shop.svc.cluster.local.:8080/", "http://" + webIP + ":8080/"} {
		deadline := time.Now().Add(60 * time.Second)
		for {
			exit, out, err := c.ExecOutput(ctx, client, []string{"/workload", "probe", url}, 30*time.Second)
			if err == nil && exit == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("client → %s: exit %d, %q, %v", url, exit, out, err)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
