package dockerfake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

const holderImg = "holder:1"

// pod is a pod of two app containers, "app" and "side", created in e: its
// holder and members (not started).
type pod struct {
	holder  string            // ID
	members map[string]string // template container name → ID
	ref     dockerx.PodRef
}

func createPod(t *testing.T, e *Engine, name string, mutate func(ps *manifests.PodSpec)) pod {
	t.Helper()
	ctx := context.Background()
	d := deployment(name, func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.Containers = []manifests.Container{{Name: "app", Image: img}, {Name: "side", Image: img}}
		if mutate != nil {
			mutate(ps)
		}
	})
	base := dockerx.ContainerName("i", "", name, "h", 0)
	p := pod{members: map[string]string{}, ref: dockerx.PodRef{Name: dockerx.Hostname(name, "h", 0), UID: "0123abcd", Holder: base}}
	var err error
	p.holder, err = e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: base, TemplateHash: "h", From: dockerx.TemplateOf(d),
		Role: dockerx.RoleHolder, Pod: &p.ref, Image: holderImg})
	if err != nil {
		t.Fatalf("create holder: %v", err)
	}
	for _, c := range []string{"app", "side"} {
		p.members[c], err = e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: dockerx.MemberName(base, c), TemplateHash: "h",
			From: dockerx.TemplateOf(d), Pod: &p.ref, Container: c})
		if err != nil {
			t.Fatalf("create member %s: %v", c, err)
		}
	}
	return p
}

func mustStart(t *testing.T, e *Engine, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := e.StartContainer(context.Background(), id); err != nil {
			t.Fatalf("start %s: %v", short(id), err)
		}
	}
}

func inspect(t *testing.T, e *Engine, id string) dockerx.ContainerDetails {
	t.Helper()
	d, err := e.InspectContainer(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A member is bound at create to its holder's ID: a holder missing at
// create is refused (its IPC join is checked there); a holder that is not
// running cannot be joined at start (409); a removed holder is "No such
// container" (404) even when another container took its name.
func TestJoinedStartNeedsItsRunningHolder(t *testing.T) {
	ctx := context.Background()
	e := New(img, holderImg)
	p := createPod(t, e, "web", nil)
	app := p.members["app"]

	err := e.StartContainer(ctx, app)
	if !errors.Is(err, dockerx.ErrConflict) || !strings.Contains(err.Error(), "cannot join network of a non running container") {
		t.Fatalf("start of a member of a created holder = %v, want ErrConflict (cannot join network of a non running container)", err)
	}
	if st, _ := state(t, e, app); st != dockerx.StateCreated {
		t.Fatalf("member %s after a refused start, want created", st)
	}
	mustStart(t, e, p.holder, app)

	if err := e.StopContainer(ctx, p.holder, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(ctx, p.members["side"]); !errors.Is(err, dockerx.ErrConflict) {
		t.Fatalf("start of a member of an exited holder = %v, want ErrConflict", err)
	}

	// Held in `removing` (otherwise the removal may end before the next
	// call on a loaded machine).
	e.HoldRemovals(true)
	if err := e.RemoveContainer(ctx, p.holder); err != nil {
		t.Fatal(err)
	}
	// Removing (its name still taken): not running, so a conflict.
	if err := e.StartContainer(ctx, p.members["side"]); !errors.Is(err, dockerx.ErrConflict) {
		t.Fatalf("start of a member of a holder being removed = %v, want ErrConflict", err)
	}
	e.HoldRemovals(false) // finishes it
	waitGone(t, e, p.holder)
	// A new holder under the same name is another container.
	again, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: p.ref.Holder, TemplateHash: "h",
		From: dockerx.TemplateOf(deployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers = []manifests.Container{{Name: "app", Image: img}, {Name: "side", Image: img}}
		})), Role: dockerx.RoleHolder, Pod: &p.ref, Image: holderImg})
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, again)
	err = e.StartContainer(ctx, p.members["side"])
	if !errors.Is(err, dockerx.ErrNotFound) || !strings.Contains(err.Error(), "No such container: "+p.holder) {
		t.Fatalf("start of a member of a removed holder = %v, want ErrNotFound naming the old holder's ID", err)
	}
}

func TestJoinedCreateOfAMissingHolder(t *testing.T) {
	ctx := context.Background()
	e := New(img, holderImg)
	d := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.Containers = []manifests.Container{{Name: "app", Image: img}, {Name: "side", Image: img}}
	})
	ref := dockerx.PodRef{Name: "web-h-0", UID: "0123abcd", Holder: "i_web-h-0"}
	_, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "i_web-h-0.app", TemplateHash: "h", From: dockerx.TemplateOf(d), Pod: &ref, Container: "app"})
	// Docker answers 400: neither "not found" nor a conflict to retry.
	if err == nil || !strings.Contains(err.Error(), "No such container: i_web-h-0") ||
		errors.Is(err, dockerx.ErrNotFound) || errors.Is(err, dockerx.ErrConflict) {
		t.Fatalf("create of a member of a missing holder = %v, want a plain No such container error", err)
	}
	if got := e.Snapshot(); len(got) != 0 {
		t.Fatalf("a refused create left %v", got)
	}

	// A network join alone is resolved at start, by name.
	id, err := e.add(dockerx.Container{Name: "netonly", Image: img, Labels: map[string]string{dockerx.LabelInstance: "i"}}, "create",
		&namespaces{network: "container:late"}, nil)
	if err != nil {
		t.Fatalf("create with network container:<missing> = %v, want success", err)
	}
	if err := e.StartContainer(ctx, id); !errors.Is(err, dockerx.ErrNotFound) {
		t.Fatalf("start with network container:<missing> = %v, want ErrNotFound", err)
	}
	late, err := e.Add(dockerx.Container{Name: "late", Image: img, Labels: map[string]string{dockerx.LabelInstance: "i"}}, "create")
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, late, id)
}

// Only a shareable IPC namespace can be joined; the holder's is.
func TestJoinedIPCNeedsAShareableDonor(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	donor, err := e.Add(dockerx.Container{Name: "private", Image: img, Labels: map[string]string{dockerx.LabelInstance: "i"}}, "create")
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, donor)
	id, err := e.add(dockerx.Container{Name: "m", Image: img, Labels: map[string]string{dockerx.LabelInstance: "i"}}, "create",
		&namespaces{network: "container:private", ipc: "container:private"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(ctx, id); err == nil || !strings.Contains(err.Error(), "non-shareable IPC") {
		t.Fatalf("start joining a private IPC namespace = %v, want non-shareable IPC", err)
	}
}

// When the holder stops, however it stops, the members in its PID
// namespace (shareProcessNamespace) die with it; the others keep running,
// stranded in a namespace the holder no longer has, until they are
// started again.
func TestHolderStopTakesItsPIDNamespaceAlong(t *testing.T) {
	ctx := context.Background()
	stops := map[string]func(e *Engine, id string) error{
		"stop":   func(e *Engine, id string) error { return e.StopContainer(ctx, id, time.Second) },
		"kill":   func(e *Engine, id string) error { return e.Kill(id) },
		"rm -f":  func(e *Engine, id string) error { return e.RemoveContainer(ctx, id) },
		"silent": func(e *Engine, id string) error { return e.KillSilently(id) },
	}
	for how, stop := range stops {
		for _, share := range []bool{false, true} {
			name := map[bool]string{false: "own-pid", true: "shared-pid"}[share]
			t.Run(how+"/"+name, func(t *testing.T) {
				e := New(img, holderImg)
				p := createPod(t, e, "web", func(ps *manifests.PodSpec) { ps.ShareProcessNamespace = &share })
				mustStart(t, e, p.holder, p.members["app"], p.members["side"])
				events, cancel := subscribe(t, e)
				defer cancel()
				if err := stop(e, p.holder); err != nil {
					t.Fatal(err)
				}
				for _, c := range []string{"app", "side"} {
					id := p.members[c]
					st, _ := state(t, e, id)
					if share {
						if st != dockerx.StateExited {
							t.Errorf("%s: %s after its PID namespace's init died, want exited", c, st)
						}
						if how != "silent" {
							waitEvent(t, events, id, "die")
						}
						continue
					}
					if st != dockerx.StateRunning || !e.Stranded(id) {
						t.Errorf("%s: %s, stranded %v; want running and stranded", c, st, e.Stranded(id))
					}
				}
			})
		}
	}
}

// A member stays in the namespace it joined: a restarted holder has new
// ones, which the member joins when it is started again.
func TestStrandedUntilRestarted(t *testing.T) {
	ctx := context.Background()
	e := New(img, holderImg)
	p := createPod(t, e, "web", nil)
	app := p.members["app"]
	mustStart(t, e, p.holder, app)
	if e.Stranded(app) || e.Stranded(p.holder) {
		t.Fatal("stranded right after start")
	}
	if err := e.Kill(p.holder); err != nil {
		t.Fatal(err)
	}
	mustStart(t, e, p.holder)
	if !e.Stranded(app) {
		t.Fatal("a member of a restarted holder is not stranded")
	}
	if err := e.StopContainer(ctx, app, time.Second); err != nil {
		t.Fatal(err)
	}
	if e.Stranded(app) {
		t.Fatal("an exited member reported stranded")
	}
	mustStart(t, e, app)
	if e.Stranded(app) {
		t.Fatal("a restarted member is still stranded")
	}
}

// `docker rm -f` of a holder succeeds while members run joined to it.
func TestRemoveHolderWithMembers(t *testing.T) {
	ctx := context.Background()
	e := New(img, holderImg)
	p := createPod(t, e, "web", nil)
	mustStart(t, e, p.holder, p.members["app"], p.members["side"])
	if err := e.RemoveContainer(ctx, p.holder); err != nil {
		t.Fatalf("rm -f of a holder with running members = %v", err)
	}
	waitGone(t, e, p.holder)
	if st, _ := state(t, e, p.members["app"]); st != dockerx.StateRunning || !e.Stranded(p.members["app"]) {
		t.Fatalf("member %s after its holder's removal, want running and stranded", st)
	}
	if err := e.Kill(p.members["app"]); err != nil {
		t.Fatal(err)
	}
	if err := e.StartContainer(ctx, p.members["app"]); !errors.Is(err, dockerx.ErrNotFound) {
		t.Fatalf("start of a member whose holder is gone = %v, want ErrNotFound", err)
	}
}

// Inspect and list report what Docker reports: the holder owns the
// address, a member has none, the host network has none; roles and pod
// labels are parsed.
func TestJoinedInspectAndList(t *testing.T) {
	ctx := context.Background()
	e := New(img, holderImg)
	p := createPod(t, e, "web", nil)
	hp := createPod(t, e, "edge", func(ps *manifests.PodSpec) { ps.HostNetwork = true })
	mustStart(t, e, p.holder, p.members["app"], hp.holder, hp.members["app"])
	if d := inspect(t, e, p.holder); d.IPAddress == "" || d.HostNetwork {
		t.Errorf("holder: address %q host %v, want a bridge address", d.IPAddress, d.HostNetwork)
	}
	if d := inspect(t, e, p.members["app"]); d.IPAddress != "" || d.HostNetwork {
		t.Errorf("member: address %q host %v, want none (Docker shows no network settings)", d.IPAddress, d.HostNetwork)
	}
	if d := inspect(t, e, hp.holder); d.IPAddress != "" || !d.HostNetwork {
		t.Errorf("hostNetwork holder: address %q host %v, want host without address", d.IPAddress, d.HostNetwork)
	}

	cs, err := e.ListDeploymentContainers(ctx, "i", "web")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]dockerx.Container{}
	for _, c := range cs {
		got[c.Name] = c
	}
	h := got[p.ref.Holder]
	if h.Role != dockerx.RoleHolder || h.Pod != p.ref.Name || h.PodUID != p.ref.UID || h.ContainerName != "" {
		t.Errorf("holder listed as %+v", h)
	}
	m := got[dockerx.MemberName(p.ref.Holder, "side")]
	if m.Role != dockerx.RoleReplica || m.Pod != p.ref.Name || m.PodUID != p.ref.UID || m.ContainerName != "side" {
		t.Errorf("member listed as %+v", m)
	}
	// A container without role label (an earlier release's) is a replica.
	if _, err := e.Add(dockerx.Container{Name: "old", Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web"}}, ""); err != nil {
		t.Fatal(err)
	}
	cs, _ = e.ListDeploymentContainers(ctx, "i", "web")
	for _, c := range cs {
		if c.Name == "old" && c.Role != dockerx.RoleReplica {
			t.Errorf("unlabelled container has role %q, want replica", c.Role)
		}
	}
}

func subscribe(t *testing.T, e *Engine) (<-chan dockerx.Event, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	evs := e.Events(ctx, "i")
	select {
	case ev := <-evs:
		if !ev.Gap {
			t.Fatalf("first event %+v, want a gap", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no first event")
	}
	return evs, cancel
}

func waitEvent(t *testing.T, evs <-chan dockerx.Event, id, action string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-evs:
			if ev.ContainerID == id && ev.Action == action {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event for %s", action, short(id))
		}
	}
}
