//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// TestSelfHealing walks through the core promise: declared replicas are kept
// true through every kind of manual interference, and nothing outside the
// instance is ever touched.
func TestSelfHealing(t *testing.T) {
	independent(t)
	e := newEnv(t)
	// Containers dockctl must leave alone throughout: one with no dockctl
	// label at all, and one of another instance with the same deployment name.
	unlabelled := bystander(t, "e2e-unlabelled-"+e.instance, map[string]string{})
	otherInstance := bystander(t, "e2e-other-"+e.instance, map[string]string{
		"io.dockctl.instance": "other-" + e.instance, "io.dockctl.deployment": "web",
	})
	t.Cleanup(func() { removeByLabel(t, "io.dockctl.instance=other-"+e.instance) })

	e.startController()
	if out := e.apply(webManifest(3, "one")); !strings.Contains(out, "deployment/web created") {
		t.Fatalf("apply output: %q", out)
	}
	cs := e.waitRunning("web", 3, "")
	hash := cs[0].Labels["io.dockctl.template-hash"]

	// Ready at once, available once the settle time (5 s) has passed.
	eventually(t, time.Minute, "get deployments to show 3 ready, up to date and available", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments")
		return regexpMatch(`(?m)^web\s+3/3\s+3\s+3\s+`, out), out
	})
	if again := e.apply(webManifest(3, "one")); !strings.Contains(again, "deployment/web unchanged") {
		t.Fatalf("second apply: %q", again)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("rm -f is repaired", func(t *testing.T) {
		victim := cs[0].ID
		// -v as well, as everywhere in these tests: a container's anonymous
		// volumes (emptyDir, an image's VOLUME) outlive a plain rm -f, and
		// a test run must leave the host as it found it.
		if err := dockerCli.ContainerRemove(ctx, victim, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Fatal(err)
		}
		after := e.waitRunning("web", 3, hash)
		for _, c := range after {
			if c.ID == victim {
				t.Fatalf("removed container %s is back?", victim)
			}
		}
	})

	t.Run("docker stop is undone", func(t *testing.T) {
		victim := e.deploymentContainers("web")[1].ID
		timeout := 1
		if err := dockerCli.ContainerStop(ctx, victim, container.StopOptions{Timeout: &timeout}); err != nil {
			t.Fatal(err)
		}
		after := e.waitRunning("web", 3, hash)
		found := false
		for _, c := range after {
			found = found || c.ID == victim
		}
		if !found {
			t.Fatalf("stopped container was replaced instead of started again: %s", describe(after))
		}
	})

	t.Run("docker kill is undone", func(t *testing.T) {
		victim := e.deploymentContainers("web")[2].ID
		if err := dockerCli.ContainerKill(ctx, victim, "KILL"); err != nil {
			t.Fatal(err)
		}
		// Restarted, not replaced: the same container runs again (a
		// replacement would show up as a new ID and the victim gone).
		after := e.waitRunning("web", 3, hash)
		found := false
		for _, c := range after {
			found = found || c.ID == victim
		}
		if !found {
			t.Fatalf("killed container was replaced instead of started again: %s", describe(after))
		}
	})

	t.Run("docker pause is undone", func(t *testing.T) {
		victim := e.deploymentContainers("web")[0].ID
		if err := dockerCli.ContainerPause(ctx, victim); err != nil {
			t.Fatal(err)
		}
		e.waitRunning("web", 3, hash)
	})

	t.Run("labelled stray is removed", func(t *testing.T) {
		resp, err := dockerCli.ContainerCreate(ctx, &container.Config{Image: workloadImage, Labels: map[string]string{
			"io.dockctl.instance": e.instance, "io.dockctl.deployment": "web",
		}}, nil, nil, nil, "e2e-stray-"+e.instance)
		if err != nil {
			t.Fatal(err)
		}
		// The controller may remove the stray between create and start (its
		// create event is enough); then the start fails — the container is
		// gone, or still being removed — which is fine.
		if err := dockerCli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			info, ierr := dockerCli.ContainerInspect(ctx, resp.ID)
			removing := ierr != nil || info.State.Status == "removing" || info.State.Dead || strings.Contains(err.Error(), "marked for removal")
			if !removing {
				t.Fatal(err)
			}
		}
		eventually(t, 60*time.Second, "the stray to be removed", func() (bool, string) {
			_, err := dockerCli.ContainerInspect(ctx, resp.ID)
			return err != nil, "stray still exists"
		})
		e.waitRunning("web", 3, hash)
	})

	t.Run("scale 3 to 5 to 1", func(t *testing.T) {
		e.mustDockctl("", "scale", "deployment", "web", "--replicas", "5")
		e.waitRunning("web", 5, hash)
		e.mustDockctl("", "scale", "deployment/web", "--replicas", "1")
		e.waitRunning("web", 1, hash)
	})

	t.Run("env change replaces every container", func(t *testing.T) {
		e.mustDockctl("", "scale", "deployment", "web", "--replicas", "3")
		before := e.waitRunning("web", 3, hash)
		if out := e.apply(webManifest(3, "two")); !strings.Contains(out, "deployment/web configured") {
			t.Fatalf("apply: %q", out)
		}
		var after []container.Summary
		eventually(t, 60*time.Second, "a new template hash", func() (bool, string) {
			after = e.deploymentContainers("web")
			return len(after) > 0 && after[0].Labels["io.dockctl.template-hash"] != hash, describe(after)
		})
		newHash := after[0].Labels["io.dockctl.template-hash"]
		after = e.waitRunning("web", 3, newHash)
		old := map[string]bool{}
		for _, c := range before {
			old[c.ID] = true
		}
		for _, c := range after {
			if old[c.ID] {
				t.Fatalf("container %s of the old template survived", c.Names[0])
			}
		}
		info, err := dockerCli.ContainerInspect(ctx, after[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !contains(info.Config.Env, "DOCKCTL_TEST_VALUE=two") {
			t.Fatalf("env of the new container: %v", info.Config.Env)
		}
	})

	t.Run("delete removes every container", func(t *testing.T) {
		out := e.mustDockctl("", "delete", "deployment", "web", "--wait", "--timeout", "60s")
		if !strings.Contains(out, "deployment/web deleted") {
			t.Fatalf("delete: %q", out)
		}
		if cs := e.deploymentContainers("web"); len(cs) != 0 {
			t.Fatalf("left after delete: %s", describe(cs))
		}
	})

	assertUntouched(t, unlabelled)
	assertUntouched(t, otherInstance)
}

// TestEmptyStateDirLeavesOrphans: a controller pointed at an empty state
// directory must not wipe the instance's containers: they are orphans,
// reported and left running.
func TestEmptyStateDirLeavesOrphans(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	e.apply(webManifest(2, "one"))
	before := e.waitRunning("web", 2, "")
	e.stopController()
	for _, c := range before {
		assertUntouched(t, c.ID) // stopping the controller never stops workloads
	}

	e.stateDir = t.TempDir() // same instance, state directory lost
	e.startController()
	eventually(t, 30*time.Second, "the orphans to be reported", func() (bool, string) {
		log := e.controllerLog()
		return strings.Count(log, "orphan container left running") >= 2, log
	})
	// Several resync periods (2s) pass; nothing may be removed.
	time.Sleep(5 * time.Second)
	for _, c := range before {
		assertUntouched(t, c.ID)
	}
	out := e.mustDockctl("", "get", "containers")
	if strings.Count(out, "(orphan)") != 2 {
		t.Fatalf("get containers should mark 2 orphans:\n%s", out)
	}
}

// TestBadManifestStoresNothing: one invalid document in a set means nothing
// is stored, and the error names file, line and field.
func TestBadManifestStoresNothing(t *testing.T) {
	independent(t)
	e := newEnv(t)
	good := webManifest(1, "x")
	bad := strings.Replace(webManifest(1, "x"), "name: web\nspec", "name: api\nspec", 1)
	bad = strings.Replace(bad, "image: "+workloadImage, "image: \"\"", 1)
	out, err := e.dockctl(good+"---\n"+bad, "apply", "-f", "-")
	if err == nil {
		t.Fatalf("apply of an invalid set succeeded:\n%s", out)
	}
	if !regexpMatch(`<stdin>:\d+: spec\.template\.spec\.containers\[0\]\.image`, out) {
		t.Fatalf("error should name file, line and field:\n%s", out)
	}
	if out, err := e.dockctl("", "get", "deployments", "-o", "json"); err != nil || strings.Contains(out, `"web"`) {
		t.Fatalf("something was stored: %v\n%s", err, out)
	}
}
