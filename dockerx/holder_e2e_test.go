//go:build e2e

package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// holderE2E returns a client, the SDK client under it and a fresh instance
// whose containers, volumes and images are removed by label when the test
// ends, even on failure (containers first: they hold the others).
func holderE2E(t *testing.T) (*Client, *client.Client, string) {
	t.Helper()
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	api := c.api.(*negotiating).Client
	instance := "e2e-holder-" + randHex(t)
	t.Cleanup(func() { removeByInstance(t, api, instance) })
	return c, api, instance
}

// runRaw creates and starts a container with the SDK directly: the holder
// and member configurations of BuildConfig are not this test's subject,
// the image, the namespaces and the volumes are.
func runRaw(t *testing.T, ctx context.Context, api *client.Client, name string, cfg *container.Config, hc *container.HostConfig) string {
	t.Helper()
	resp, err := api.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if err := api.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return resp.ID
}

func errdefsNotFound(err error) bool { return err != nil && errors.Is(classify(err), ErrNotFound) }

func imageIDs(t *testing.T, ctx context.Context, api *client.Client, f filters.Args) []string {
	t.Helper()
	list, err := api.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// vmRSS reads a process's resident memory in kB (the daemon is local).
func vmRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// TestE2EHolderImage: the holder image is loaded once, has the computed
// ID, leaves nothing dangling; its container is tiny, stops at once with
// status 0, and keeps its image from being removed while it exists.
func TestE2EHolderImage(t *testing.T) {
	c, api, instance := holderE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dangling := filters.NewArgs(filters.Arg("dangling", "true"))
	danglingBefore := imageIDs(t, ctx, api, dangling)
	allBefore := imageIDs(t, ctx, api, filters.NewArgs())

	ref, err := c.EnsureHolderImage(ctx, instance)
	if err != nil {
		t.Fatalf("EnsureHolderImage: %v", err)
	}
	again, err := c.EnsureHolderImage(ctx, instance)
	if err != nil || again != ref {
		t.Fatalf("second EnsureHolderImage = %s, %v; want %s", again, err, ref)
	}
	fresh, err := NewClient() // no cached platform: the whole path again
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if third, err := fresh.EnsureHolderImage(ctx, instance); err != nil || third != ref {
		t.Fatalf("EnsureHolderImage from a new client = %s, %v; want %s", third, err, ref)
	}

	info, err := api.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := BuildHolderImage(instance, goarchOf(info.Architecture))
	if err != nil {
		t.Fatal(err)
	}
	// The image's ID is the config digest on the classic image store, the
	// manifest digest on the containerd one (which reports its snapshotter
	// as the storage driver's driver-type).
	wantID := want.ID
	if slices.Contains(info.DriverStatus, [2]string{"driver-type", "io.containerd.snapshotter.v1"}) {
		wantID = want.ManifestDigest
	}
	t.Logf("storage driver %s %v: want image ID %s", info.Driver, info.DriverStatus, wantID)
	insp, err := api.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if ref != want.Ref || insp.ID != wantID || insp.Config.Labels[LabelInstance] != instance || insp.Config.Labels[LabelRole] != RoleHelperImage ||
		!slices.Equal(insp.Config.Entrypoint, []string{"/holder"}) || insp.Os != "linux" {
		t.Errorf("loaded %s: ID %s labels %v entrypoint %v os %s; want %s with ID %s", ref, insp.ID, insp.Config.Labels, insp.Config.Entrypoint, insp.Os, want.Ref, wantID)
	}
	t.Logf("holder image %s: %d bytes (archive %d bytes)", ref, insp.Size, len(want.Tar))

	// Exactly one image carries the instance's label, and no dangling
	// image appeared.
	if ids := imageIDs(t, ctx, api, filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance))); !slices.Equal(ids, []string{wantID}) {
		t.Errorf("images of the instance %v, want only %s", ids, wantID)
	}
	for _, id := range imageIDs(t, ctx, api, dangling) {
		if !slices.Contains(danglingBefore, id) {
			di, err := api.ImageInspect(ctx, id)
			if err == nil && di.Config != nil && di.Config.Labels[LabelInstance] == instance {
				t.Errorf("dangling image %s of this instance", id)
			}
			t.Logf("a dangling image appeared meanwhile (another user of the daemon?): %s", id)
		}
	}
	for _, id := range imageIDs(t, ctx, api, filters.NewArgs()) {
		if !slices.Contains(allBefore, id) && id != wantID {
			t.Logf("docker images -a: %s appeared meanwhile, not ours", id)
		}
	}
	if imgs, err := c.ListHelperImages(ctx, instance); err != nil || len(imgs) != 1 || imgs[0].ID != wantID || !slices.Equal(imgs[0].Tags, []string{ref}) {
		t.Errorf("ListHelperImages = %+v, %v", imgs, err)
	}

	// The holder runs as PID 1 of its container.
	name := ContainerName(instance, "", "web", "abc123", 0)
	id := runRaw(t, ctx, api, name, &container.Config{Image: ref, Labels: map[string]string{LabelInstance: instance, LabelRole: RoleHolder}},
		&container.HostConfig{IpcMode: "shareable"})
	det, err := c.InspectContainer(ctx, id)
	if err != nil || det.State != StateRunning || det.Pid == 0 {
		t.Fatalf("holder %+v, %v", det, err)
	}
	rss := vmRSS(t, det.Pid)
	t.Logf("holder VmRSS: %d kB", rss)
	if rss > 4<<10 {
		t.Errorf("holder VmRSS %d kB, want far below 4 MiB", rss)
	}
	if stats, err := api.ContainerStatsOneShot(ctx, id); err == nil {
		var s container.StatsResponse
		if err := json.NewDecoder(stats.Body).Decode(&s); err == nil {
			t.Logf("holder cgroup memory usage (stats API, includes kernel memory): %d bytes", s.MemoryStats.Usage)
		}
		stats.Body.Close()
	}

	// While a container (even a stopped one) uses it, the image stays.
	start := time.Now()
	if err := c.StopContainer(ctx, id, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("docker stop took %v", took)
	det, err = c.InspectContainer(ctx, id)
	if err != nil || det.State != StateExited || det.ExitCode != 0 || det.OOMKilled {
		t.Errorf("after stop: %+v, %v; want exited 0", det, err)
	}
	if took >= 10*time.Second {
		t.Errorf("stop took %v: the holder was killed after the timeout", took)
	}
	if err := c.RemoveImage(ctx, wantID); !errors.Is(err, ErrConflict) {
		t.Errorf("RemoveImage while a container uses it = %v, want ErrConflict", err)
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveImage(ctx, wantID); err != nil {
		t.Errorf("RemoveImage: %v", err)
	}
	if err := c.RemoveImage(ctx, wantID); err != nil {
		t.Errorf("RemoveImage(gone) = %v, want nil", err)
	}
	if imgs, err := c.ListHelperImages(ctx, instance); err != nil || len(imgs) != 0 {
		t.Errorf("ListHelperImages after removal = %+v, %v", imgs, err)
	}
	if ids := imageIDs(t, ctx, api, filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance))); len(ids) != 0 {
		t.Errorf("images left: %v", ids)
	}
}

// TestE2EPodPlumbing: what a pod with a holder relies on. Two members
// joined to the holder's network namespace talk over localhost; a tmpfs
// emptyDir volume that the holder mounts keeps what one member wrote, after
// that member is gone, for another; volumes are never adopted.
func TestE2EPodPlumbing(t *testing.T) {
	c, api, instance := holderE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	workload := "dockctl-dockerx-e2e:" + randHex(t)
	buildWorkloadImage(t, api, workload) // its cleanup runs after the containers'

	ref, err := c.EnsureHolderImage(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	holderName := ContainerName(instance, "", "web", "abc123", 0)
	pod := PodRef{Name: Hostname("web", "abc123", 0), UID: "3f9a01bc", Holder: holderName}
	vreq := VolumeRequest{Instance: instance, Deployment: "web", TemplateHash: "abc123", Pod: pod, Volume: "cache", Memory: true, SizeBytes: 8 << 20}
	vol, err := c.CreateVolume(ctx, vreq)
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	if again, err := c.CreateVolume(ctx, vreq); err != nil || again != vol {
		t.Errorf("CreateVolume again (ours) = %s, %v; want %s", again, err, vol)
	}
	other := vreq
	other.Pod.UID = "00000000"
	if _, err := api.VolumeCreate(ctx, volume.CreateOptions{Name: VolumeName(holderName, "cache", "00000000"), Labels: map[string]string{testLabel: instance}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateVolume(ctx, other); !errors.Is(err, ErrConflict) {
		t.Errorf("CreateVolume over a volume that is not ours = %v, want ErrConflict", err)
	}
	vols, err := c.ListVolumes(ctx, instance)
	if err != nil || len(vols) != 1 || vols[0].Name != vol || vols[0].Role != RoleEmptyDir || vols[0].PodUID != pod.UID || vols[0].Pod != pod.Name {
		t.Errorf("ListVolumes = %+v, %v", vols, err)
	}
	if v, err := api.VolumeInspect(ctx, vol); err != nil || v.Options["type"] != "tmpfs" || v.Options["o"] != "size=8388608" {
		t.Errorf("volume %s options %v, %v; want tmpfs of 8 MiB", vol, v.Options, err)
	}

	labels := func(role, ctr string) map[string]string {
		l := map[string]string{LabelInstance: instance, LabelDeployment: "web", LabelTemplateHash: "abc123", LabelRole: role, LabelPod: pod.Name, LabelPodUID: pod.UID}
		if ctr != "" {
			l[LabelContainer] = ctr
		}
		return l
	}
	volMount := func(target string) []mount.Mount {
		return []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: target}}
	}
	join := "container:" + holderName
	runRaw(t, ctx, api, holderName,
		&container.Config{Image: ref, Hostname: pod.Name, Labels: labels(RoleHolder, "")},
		&container.HostConfig{IpcMode: "shareable", Mounts: volMount("/volumes/cache")})
	member := func(ctr string, args ...string) string {
		return runRaw(t, ctx, api, MemberName(holderName, ctr),
			&container.Config{Image: workload, Cmd: args, Labels: labels(RoleReplica, ctr)},
			&container.HostConfig{NetworkMode: container.NetworkMode(join), IpcMode: container.IpcMode(join), Mounts: volMount("/cache")})
	}
	a := member("app")
	b := member("sidecar", "--listen", "127.0.0.1:8081")

	// localhost is shared: b reaches a's port, and a reaches b's.
	for _, tt := range []struct{ from, url string }{{b, "http://127.0.0.1:8080/healthz"}, {a, "http://127.0.0.1:8081/healthz"}} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, err := c.Exec(ctx, tt.from, []string{"/workload", "probe", tt.url}, 10*time.Second)
			if err == nil && code == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("probe %s from %s: exit %d, %v", tt.url, tt.from[:12], code, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Written through a: b sees it at once; and once a and b are both
	// gone, a new member still finds it, because the holder kept the tmpfs
	// mounted all along (each mount of an unmounted tmpfs volume is empty).
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	content := []byte("written by app\n")
	if err := tw.WriteHeader(&tar.Header{Name: "note.txt", Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	if err := api.CopyToContainer(ctx, a, "/cache", &tb, container.CopyToContainerOptions{}); err != nil {
		t.Fatalf("write into the volume through app: %v", err)
	}
	readNote := func(id, who string) {
		t.Helper()
		rc, _, err := api.CopyFromContainer(ctx, id, "/cache/note.txt")
		if err != nil {
			t.Fatalf("read the file through %s: %v", who, err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		if _, err := tr.Next(); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(tr)
		if !bytes.Equal(got, content) {
			t.Errorf("%s reads %q, want %q", who, got, content)
		}
	}
	readNote(b, "sidecar")
	for _, id := range []string{a, b} {
		if err := c.StopContainer(ctx, id, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{a, b} { // removals end asynchronously
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := api.ContainerInspect(ctx, id); errdefsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("container %s not removed", id[:12])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	readNote(member("later"), "a member started after the others were gone")

	// In use: the volume stays; once its containers are gone, it goes.
	if err := c.RemoveVolume(ctx, vol); !errors.Is(err, ErrConflict) {
		t.Errorf("RemoveVolume while mounted = %v, want ErrConflict", err)
	}
	list, err := c.ListContainers(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range list {
		if err := c.RemoveContainer(ctx, ctr.ID); err != nil {
			t.Fatal(err)
		}
	}
	// A removal completes asynchronously; wait until the volume is free.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.RemoveVolume(ctx, vol)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrConflict) || time.Now().After(deadline) {
			t.Fatalf("RemoveVolume after the pod: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.RemoveVolume(ctx, vol); err != nil {
		t.Errorf("RemoveVolume(gone) = %v, want nil", err)
	}
	if vols, err := c.ListVolumes(ctx, instance); err != nil || len(vols) != 0 {
		t.Errorf("volumes left: %+v, %v", vols, err)
	}
}
