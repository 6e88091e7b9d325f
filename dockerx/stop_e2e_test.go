//go:build e2e

package dockerx

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/dockctl/dockctl/manifests"
)

// TestE2EStopKillsAfterTimeout checks what the graceful stop (docs/design.md
// §8) relies on: Docker's stop API waits for a container that ignores its
// stop signal until the timeout, then kills it (exit 137), and the
// container can then be removed.
func TestE2EStopKillsAfterTimeout(t *testing.T) {
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api := c.api.(*negotiating).Client
	suffix := randHex(t)
	instance := "e2e-dockerx-stop-" + suffix
	tag := "dockctl-dockerx-e2e:" + suffix
	buildWorkloadImage(t, api, tag)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, err := api.ContainerList(ctx, container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance))})
		if err != nil {
			t.Logf("cleanup list: %v", err)
			return
		}
		for _, s := range list {
			if err := api.ContainerRemove(ctx, s.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
				t.Logf("cleanup remove %s: %v", s.ID, err)
			}
		}
	})

	d := deployment("stubborn", func(d *manifests.Deployment) {
		ctr := &d.Spec.Template.Spec.Containers[0]
		ctr.Image = tag
		ctr.Args = []string{"--ignore-sigterm"}
	})
	id, err := c.CreateContainer(ctx, CreateRequest{Instance: instance, Name: ContainerName(instance, "", "stubborn", "abc123", 0), TemplateHash: "abc123", From: TemplateOf(d)})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	// A SIGTERM that came before the workload ignores it would end it at
	// once: wait for its word.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rc, err := c.Logs(ctx, id, false, "")
		if err != nil {
			t.Fatalf("Logs: %v", err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if strings.Contains(string(b), "ignoring SIGTERM") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workload never said it ignores SIGTERM: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	const grace = 2 * time.Second
	start := time.Now()
	if err := c.StopContainer(ctx, id, grace); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	// A lower bound only: a slow machine makes it longer, never shorter.
	if took := time.Since(start); took < grace-200*time.Millisecond {
		t.Errorf("stop returned after %v: the container did not wait for its grace period of %v", took, grace)
	}
	det, err := c.InspectContainer(ctx, id)
	if err != nil || det.State != StateExited || det.ExitCode != 137 {
		t.Errorf("after stop: %+v, %v; want exited with 137 (killed)", det, err)
		if rc, err := c.Logs(ctx, id, false, ""); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Logf("logs: %s", b)
		}
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
}
