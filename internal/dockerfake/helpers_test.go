package dockerfake

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

func proxyReq(image string) dockerx.HelperRequest {
	return dockerx.HelperRequest{
		Instance: "i", Namespace: "shop", Name: "i_web.shop_svc", Role: dockerx.RoleProxy, Service: "web", ConfigHash: "c0ffee",
		Image: image, Cmd: []string{"/dockctl", "helper", "proxy", "--config", "{}"},
		Network: dockerx.PodNetwork{Name: "dockctl_i", IPv4: "10.222.0.130", Aliases: []string{"web.shop.svc"}},
		Ports:   []dockerx.PortBinding{{HostIP: "127.0.0.1", HostPort: 30080, ContainerPort: 80}},
	}
}

func TestFakeHelpers(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	ensureNet(t, e)
	ref := HelperImageRef("i")
	if !strings.HasPrefix(ref, "dockctl-helper:i-") || HelperImageRef("j") == ref {
		t.Errorf("HelperImageRef = %s", ref)
	}
	if _, err := e.CreateHelper(ctx, proxyReq(ref)); !errors.Is(err, dockerx.ErrNotFound) {
		t.Fatalf("create before EnsureHelperImage = %v, want ErrNotFound (no such image)", err)
	}
	boom := errors.New("boom")
	e.OnHelperImage = func(string) error { return boom }
	if _, err := e.EnsureHelperImage(ctx, "i"); !errors.Is(err, boom) {
		t.Errorf("EnsureHelperImage = %v, want the hook's error", err)
	}
	e.OnHelperImage = nil
	if got, err := e.EnsureHelperImage(ctx, "i"); err != nil || got != ref {
		t.Fatalf("EnsureHelperImage = %s, %v; want %s", got, err, ref)
	}
	if _, err := e.EnsureHolderImage(ctx, "i"); err != nil {
		t.Fatal(err)
	}
	imgs, err := e.ListHelperImages(ctx, "i")
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, im := range imgs {
		tags = append(tags, im.Tags...)
	}
	if len(imgs) != 2 || !strings.Contains(strings.Join(tags, " "), ref) || !strings.Contains(strings.Join(tags, " "), HolderImageRef("i")) {
		t.Errorf("ListHelperImages = %+v, want the holder and the helper image", imgs)
	}

	id, err := e.CreateHelper(ctx, proxyReq(ref))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateHelper(ctx, proxyReq(ref)); !errors.Is(err, dockerx.ErrConflict) {
		t.Errorf("second create = %v, want ErrConflict", err)
	}
	bad := proxyReq(ref)
	bad.Role = dockerx.RoleReplica
	if _, err := e.CreateHelper(ctx, bad); err == nil || !strings.Contains(err.Error(), "is not a helper's") {
		t.Errorf("create with a replica's role = %v", err)
	}
	evs, cancel := subscribe(t, e)
	defer cancel()
	mustStart(t, e, id)
	c := listed(t, e, id)
	if c.Role != dockerx.RoleProxy || c.Namespace != "shop" || c.Service != "web" || c.ConfigHash != "c0ffee" || c.Deployment != "" ||
		!reflect.DeepEqual(c.Networks, map[string]string{"dockctl_i": "10.222.0.130"}) || c.Image != ref {
		t.Errorf("helper listed as %+v", c)
	}
	if got := e.Aliases(id, "dockctl_i"); !reflect.DeepEqual(got, []string{"web.shop.svc"}) {
		t.Errorf("aliases %v", got)
	}
	for _, im := range imgs {
		if strings.Contains(strings.Join(im.Tags, ""), "dockctl-helper") {
			if err := e.RemoveImage(ctx, im.ID); !errors.Is(err, dockerx.ErrConflict) {
				t.Errorf("RemoveImage of the helper image in use = %v, want ErrConflict", err)
			}
		}
	}

	// Docker restarts a helper whose process exits (restart policy
	// always): die, then start, its static address kept.
	if err := e.Exit(id, 2); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, evs, id, "die")
	waitEvent(t, evs, id, "start")
	if c := listed(t, e, id); c.State != dockerx.StateRunning || c.Networks["dockctl_i"] != "10.222.0.130" {
		t.Errorf("after its process exited: %s %v, want running again", c.State, c.Networks)
	}
	if n := e.Calls()["create:helper"]; n != 3 {
		t.Errorf("%d helper creates counted, want 3", n)
	}
	// A replica is not restarted by Docker.
	r := create(t, e, "web-0")
	mustStart(t, e, r)
	if err := e.Exit(r, 1); err != nil {
		t.Fatal(err)
	}
	if st, _ := state(t, e, r); st != dockerx.StateExited {
		t.Errorf("replica after exit: %s", st)
	}
}

func TestFakeExecOutput(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	id := create(t, e, "web-0")
	if _, _, err := e.ExecOutput(ctx, id, []string{"x"}, time.Second); !errors.Is(err, dockerx.ErrConflict) || !strings.Contains(err.Error(), "is not running") {
		t.Errorf("exec in a created container = %v, want ErrConflict", err)
	}
	mustStart(t, e, id)
	if code, out, err := e.ExecOutput(ctx, id, []string{"x"}, time.Second); code != 0 || out != nil || err != nil {
		t.Errorf("exec without a handler = %d, %q, %v; want 0, nothing", code, out, err)
	}
	var got []string
	e.HandleExec(func(cid string, cmd []string) (int, []byte) {
		got = append(got, cid+" "+strings.Join(cmd, " "))
		if cmd[0] == "flood" {
			return 0, bytes.Repeat([]byte("x"), dockerx.MaxExecOutput+1)
		}
		return 3, []byte(`{"generation":2}`)
	})
	code, out, err := e.ExecOutput(ctx, "web-0", []string{"/dockctl", "helper", "push"}, time.Second) // by name, as Docker resolves it
	if code != 3 || string(out) != `{"generation":2}` || err != nil {
		t.Errorf("ExecOutput = %d, %q, %v", code, out, err)
	}
	if _, out, _ := e.ExecOutput(ctx, id, []string{"flood"}, time.Second); len(out) != dockerx.MaxExecOutput {
		t.Errorf("output of %d bytes, want it capped at %d", len(out), dockerx.MaxExecOutput)
	}
	if want := []string{id + " /dockctl helper push", id + " flood"}; !reflect.DeepEqual(got, want) {
		t.Errorf("handler saw %v, want %v", got, want)
	}
	e.HandleExecInput(func(_ string, _ []string, stdin []byte) (int, []byte) { return 0, stdin })
	if _, out, _ := e.ExecInput(ctx, id, []string{"/dockctl", "helper", "push", "--config", "-"}, []byte(`{"generation":3}`), time.Second); string(out) != `{"generation":3}` {
		t.Errorf("the handler read stdin %q", out)
	}
	if err := e.Pause(id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.ExecOutput(ctx, id, []string{"x"}, time.Second); !errors.Is(err, dockerx.ErrConflict) || !strings.Contains(err.Error(), "paused") {
		t.Errorf("exec in a paused container = %v, want ErrConflict", err)
	}
	if _, _, err := e.ExecOutput(ctx, "nope", []string{"x"}, time.Second); !errors.Is(err, dockerx.ErrNotFound) {
		t.Errorf("exec in a missing container = %v, want ErrNotFound", err)
	}
	e.DaemonDown()
	if _, _, err := e.ExecOutput(ctx, id, []string{"x"}, time.Second); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Errorf("exec with the daemon down = %v, want ErrUnreachable", err)
	}
	if n := e.Calls()["exec:output"]; n != 8 {
		t.Errorf("%d execs counted, want 8", n)
	}
}

// Events carry the container's namespace: its label, else the default.
func TestFakeEventsNamespace(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	evs, cancel := subscribe(t, e)
	defer cancel()
	old := create(t, e, "old") // no namespace label: an earlier release's
	d := deployment("web", nil)
	d.Metadata.Namespace = "shop"
	shop, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "i_web.shop-h-0", TemplateHash: "h", From: dockerx.TemplateOf(d), Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{old: "default", shop: "shop"}
	deadline := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-evs:
			if ns, ok := want[ev.ContainerID]; ok && ev.Action == "create" {
				if ev.Namespace != ns {
					t.Errorf("create event of %s: namespace %q, want %q", ev.Name, ev.Namespace, ns)
				}
				delete(want, ev.ContainerID)
			}
		case <-deadline:
			t.Fatalf("no create event for %v", want)
		}
	}
	if c := listed(t, e, shop); c.Namespace != "shop" {
		t.Errorf("listed namespace %q", c.Namespace)
	}
}
