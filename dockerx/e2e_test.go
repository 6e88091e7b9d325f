//go:build e2e

package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/dockctl/dockctl/manifests"
)

// testLabel marks everything this test creates, so cleanup can find it
// even after a failure.
const testLabel = "io.dockctl.test"

func randHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// buildWorkloadImage compiles cmd/workload statically and builds its
// scratch image through the Engine API from an in-memory tar context.
func buildWorkloadImage(t *testing.T, api *client.Client, tag string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "workload")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/workload")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build workload: %v\n%s", err, out)
	}
	dockerfile, err := os.ReadFile("../cmd/workload/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	binData, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"workload", 0o755, binData}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := api.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, Labels: map[string]string{testLabel: "1"},
	})
	if err != nil {
		t.Fatalf("image build: %v", err)
	}
	defer resp.Body.Close()
	if err := readPullStream(resp.Body); err != nil { // same JSON progress format
		t.Fatalf("image build: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := api.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Logf("cleanup image %s: %v", tag, err)
		}
	})
}

func TestE2EContainerLifecycle(t *testing.T) {
	c, err := NewClient(WithPullTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	ver, err := c.ServerVersion(ctx)
	if err != nil || !strings.Contains(ver, "API") {
		t.Fatalf("ServerVersion = %q, %v", ver, err)
	}
	api := c.api.(*negotiating).Client

	suffix := randHex(t)
	instance := "e2e-dockerx-" + suffix
	tag := "dockctl-dockerx-e2e:" + suffix
	// Cleanups run last-registered first: containers go before the image.
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

	// Subscribe before acting, as the controller does.
	evCtx, evCancel := context.WithCancel(ctx)
	defer evCancel()
	evs := c.Events(evCtx, instance)
	select {
	case ev := <-evs:
		if !ev.Gap || ev.Err != nil {
			t.Fatalf("first event %+v, want a Gap without error", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no initial Gap event")
	}

	// Images: no registry is reachable here.
	if err := c.EnsureImage(ctx, tag, manifests.PullNever, nil); err != nil {
		t.Errorf("EnsureImage(Never, present) = %v", err)
	}
	if err := c.EnsureImage(ctx, tag, manifests.PullIfNotPresent, nil); err != nil {
		t.Errorf("EnsureImage(IfNotPresent, present) = %v", err)
	}
	if err := c.EnsureImage(ctx, tag, manifests.PullAlways, nil); err != nil {
		t.Errorf("EnsureImage(Always, present, offline) = %v", err)
	}
	if err := c.EnsureImage(ctx, "dockctl-absent-"+suffix+":x", manifests.PullNever, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("EnsureImage(Never, absent) = %v, want ErrNotFound", err)
	}

	d := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(10))
		d.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "scratch", EmptyDir: &manifests.EmptyDirVolumeSource{}}}
		ctr := &d.Spec.Template.Spec.Containers[0]
		ctr.Image = tag
		ctr.Args = []string{"--message", "e2e says hi"}
		ctr.Env = []manifests.EnvVar{{Name: "DOCKCTL_TEST_VALUE", Value: "v1"}}
		ctr.Ports = []manifests.ContainerPort{{ContainerPort: 8080}}
		ctr.VolumeMounts = []manifests.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		ctr.ReadinessProbe = &manifests.Probe{
			Exec:          &manifests.ExecAction{Command: []string{"/workload", "probe", "http://127.0.0.1:8080/readyz"}},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 3,
		}
	})
	req := CreateRequest{Instance: instance, Name: ContainerName(instance, "", "web", "abc123", 0), TemplateHash: "abc123", From: TemplateOf(d)}
	id, err := c.CreateContainer(ctx, req)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := c.CreateContainer(ctx, req); !errors.Is(err, ErrConflict) {
		t.Errorf("duplicate CreateContainer = %v, want ErrConflict", err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Errorf("StartContainer on a running container = %v, want nil", err)
	}

	// Readiness via the Docker health check, observed through one list.
	var got Container
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := c.ListContainers(ctx, instance)
		if err != nil {
			t.Fatalf("ListContainers: %v", err)
		}
		if len(list) != 1 {
			t.Fatalf("ListContainers = %d containers, want 1", len(list))
		}
		got = list[0]
		if got.Health == HealthHealthy || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got.ID != id || got.Name != req.Name || got.State != StateRunning || got.Health != HealthHealthy ||
		got.Instance != instance || got.Deployment != "web" || got.TemplateHash != "abc123" || got.Labels["app"] != "web" ||
		got.Created.IsZero() {
		t.Errorf("listed %+v", got)
	}

	det, err := c.InspectContainer(ctx, id)
	if err != nil {
		t.Fatalf("InspectContainer: %v", err)
	}
	if det.State != StateRunning || det.Pid == 0 || det.StartedAt.IsZero() || det.Health != HealthHealthy {
		t.Errorf("inspected %+v", det)
	}
	if det.IPAddress == "" || det.HostNetwork {
		t.Errorf("inspect: address %q hostNetwork %v, want a bridge address", det.IPAddress, det.HostNetwork)
	}
	// Exec (liveness probes beside the HEALTHCHECK): exit codes come back.
	for _, tc := range []struct {
		cmd  []string
		code int
	}{
		{[]string{"/workload", "probe", "http://127.0.0.1:8080/healthz"}, 0},
		{[]string{"/workload", "probe", "http://127.0.0.1:1/nothing"}, 1},
	} {
		if code, err := c.Exec(ctx, id, tc.cmd, 5*time.Second); err != nil || code != tc.code {
			t.Errorf("Exec %v = %d, %v; want %d", tc.cmd, code, err, tc.code)
		}
	}
	if _, err := c.InspectContainer(ctx, "dockctl-missing-"+suffix); !errors.Is(err, ErrNotFound) {
		t.Errorf("InspectContainer(missing) = %v, want ErrNotFound", err)
	}

	rc, err := c.Logs(ctx, id, false, "")
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	logs, _ := io.ReadAll(rc)
	rc.Close()
	// stdout and stderr lines, demultiplexed (no 8-byte frame headers).
	if !strings.Contains(string(logs), "workload: listening on") || !strings.Contains(string(logs), `message "e2e says hi"`) ||
		strings.ContainsRune(string(logs), 0) {
		t.Errorf("logs = %q", logs)
	}

	var volName string
	raw, err := api.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range raw.Mounts {
		if m.Destination == "/scratch" {
			volName = m.Name
		}
	}
	if volName == "" {
		t.Errorf("no anonymous volume at /scratch: %+v", raw.Mounts)
	}

	start := time.Now()
	if err := c.StopContainer(ctx, id, 10*time.Second); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %v: the workload ignores SIGTERM", took)
	}
	det, err = c.InspectContainer(ctx, id)
	if err != nil || det.State != StateExited || det.ExitCode != 0 || det.FinishedAt.IsZero() {
		t.Errorf("after stop: %+v, %v", det, err)
	}

	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Errorf("RemoveContainer(missing) = %v, want nil", err)
	}
	if volName != "" {
		if _, err := api.VolumeInspect(ctx, volName); err == nil {
			t.Errorf("emptyDir volume %s survived its container", volName)
			_ = api.VolumeRemove(ctx, volName, true)
		}
	}

	// Events: create, start, die and destroy for our container, in order.
	want := []string{"create", "start", "die", "destroy"}
	timeout := time.After(15 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-evs:
			if ev.Gap {
				t.Fatalf("unexpected Gap: %v", ev.Err)
			}
			if ev.ContainerID != id {
				continue
			}
			if ev.Deployment != "web" || ev.Name != req.Name {
				t.Errorf("event %+v lacks deployment/name", ev)
			}
			if ev.Action == want[0] {
				want = want[1:]
			}
		case <-timeout:
			t.Fatalf("events still missing: %v", want)
		}
	}

	// A die is delivered once Docker has finished handling the exit: a
	// list made on receiving it shows the container exited (Engine 20.10
	// emits die before its list is updated; see settle).
	crash := deployment("crash", func(d *manifests.Deployment) {
		ctr := &d.Spec.Template.Spec.Containers[0]
		ctr.Image = tag
		ctr.Args = []string{"--require-file=/nonexistent"} // exits 1 at once
	})
	for i := range 5 {
		req := CreateRequest{Instance: instance, Name: ContainerName(instance, "", "crash", "abc123", i), TemplateHash: "abc123", From: TemplateOf(crash)}
		id, err := c.CreateContainer(ctx, req)
		if err != nil {
			t.Fatalf("CreateContainer: %v", err)
		}
		if err := c.StartContainer(ctx, id); err != nil {
			t.Fatalf("StartContainer: %v", err)
		}
		timeout := time.After(15 * time.Second)
	wait:
		for {
			select {
			case ev := <-evs:
				if ev.ContainerID == id && ev.Action == "die" {
					break wait
				}
			case <-timeout:
				t.Fatalf("no die event for %s", req.Name)
			}
		}
		list, err := c.ListDeploymentContainers(ctx, instance, "crash")
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range list {
			if ct.ID == id && (ct.State != StateExited || ct.ExitCode != 1) {
				t.Errorf("listed on its die event: %s %s (exit %d), want exited (exit 1)", ct.Name, ct.State, ct.ExitCode)
			}
		}
		if err := c.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// So are pause and unpause (emitted before the list is updated too).
	req = CreateRequest{Instance: instance, Name: ContainerName(instance, "", "pause", "abc123", 0), TemplateHash: "abc123", From: TemplateOf(d)}
	id, err = c.CreateContainer(ctx, req)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	for range 3 {
		for _, step := range []struct {
			action, state string
			call          func(context.Context, string) error
		}{{"pause", StatePaused, api.ContainerPause}, {"unpause", StateRunning, c.UnpauseContainer}} {
			// As a user's docker pause: the list is made on the event, not
			// once the call has returned.
			// Docker may report one pause or unpause twice (its API call and
			// containerd's event each log it); a second one, settled late,
			// belongs to the previous round, not to this call.
			called := time.Now()
			errc := make(chan error, 1)
			go func() { errc <- step.call(ctx, id) }()
			timeout := time.After(15 * time.Second)
		waitStep:
			for {
				select {
				case ev := <-evs:
					if ev.ContainerID == id && ev.Action == step.action && !ev.Time.Before(called) {
						break waitStep
					}
				case <-timeout:
					t.Fatalf("no %s event", step.action)
				}
			}
			list, err := c.ListDeploymentContainers(ctx, instance, "web")
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].State != step.state {
				t.Errorf("listed on its %s event: %s, want %s", step.action, describeList(list), step.state)
			}
			if err := <-errc; err != nil {
				t.Fatalf("%s: %v", step.action, err)
			}
		}
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func describeList(cs []Container) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+" "+c.State)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
