//go:build e2e

package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/manifests"
)

// TestE2EPodHolderAndMembers creates a pod through CreateContainer with the
// configurations BuildConfig makes — a holder and two members — and proves
// on the real daemon what pods rely on: the members share localhost, the
// holder's hostname and its PID namespace (shareProcessNamespace), a port
// published on the holder reaches a member, and both emptyDir volumes (a
// disk one and a tmpfs one), mounted by the holder and the members, are one
// volume each.
func TestE2EPodHolderAndMembers(t *testing.T) {
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := c.api.(*negotiating).Client
	suffix := randHex(t)
	instance := "e2e-dockerx-pod-" + suffix
	tag := "dockctl-dockerx-e2e:" + suffix
	// Cleanups run last-registered first: containers, then volumes and the
	// holder image, then the workload image.
	buildWorkloadImage(t, api, tag)
	t.Cleanup(func() { removeByInstance(t, api, instance) })
	holderTag, err := c.EnsureHolderImage(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}

	hostPort := freePort(t)
	uid := randHex(t)
	d := deployment("web", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.ShareProcessNamespace = ptr(true)
		ps.TerminationGracePeriodSeconds = ptr(int64(5))
		ps.Volumes = []manifests.Volume{
			{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}},
			{Name: "ram", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory", SizeLimit: ptr(resource.MustParse("8Mi"))}},
		}
		ps.Containers = []manifests.Container{
			{
				Name: "app", Image: tag, Args: []string{"--listen", ":8080", "--message", "from app"},
				Ports:        []manifests.ContainerPort{{ContainerPort: 8080, HostPort: int32(hostPort), HostIP: "127.0.0.1"}},
				VolumeMounts: []manifests.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "ram", MountPath: "/ram"}},
			},
			{
				Name: "side", Image: tag, Args: []string{"--listen", ":8081", "--message", "from side"},
				VolumeMounts: []manifests.VolumeMount{{Name: "cache", MountPath: "/data"}, {Name: "ram", MountPath: "/ram"}},
			},
		}
	})
	const hash = "abc123"
	base := ContainerName(instance, "", "web", hash, 0)
	pod := &PodRef{Name: Hostname("web", hash, 0), UID: uid, Holder: base}

	// The pod's volumes, as the controller will make them (pods.md
	// "Volumes"): labelled, the Memory one a tmpfs of EmptyDirSize.
	for _, v := range d.Spec.Template.Spec.Volumes {
		opts := volume.CreateOptions{Name: VolumeName(base, v.Name, uid), Driver: "local", Labels: map[string]string{
			LabelInstance: instance, LabelDeployment: "web", LabelTemplateHash: hash, LabelRole: RoleEmptyDir,
			LabelPod: pod.Name, LabelPodUID: uid, testLabel: "1",
		}}
		if v.EmptyDir.Medium == "Memory" {
			opts.DriverOpts = map[string]string{"type": "tmpfs", "device": "tmpfs",
				"o": fmt.Sprintf("size=%d", EmptyDirSize(&d.Spec.Template.Spec, &v))}
		}
		if _, err := api.VolumeCreate(ctx, opts); err != nil {
			t.Fatalf("create volume %s: %v", opts.Name, err)
		}
	}

	holderID, err := c.CreateContainer(ctx, CreateRequest{Instance: instance, Name: base, TemplateHash: hash, From: TemplateOf(d),
		Role: RoleHolder, Pod: pod, Image: holderTag})
	if err != nil {
		t.Fatalf("create holder: %v", err)
	}
	if err := c.StartContainer(ctx, holderID); err != nil {
		t.Fatalf("start holder: %v", err)
	}
	ids := map[string]string{}
	for _, name := range []string{"app", "side"} {
		id, err := c.CreateContainer(ctx, CreateRequest{Instance: instance, Name: MemberName(base, name), TemplateHash: hash,
			From: TemplateOf(d), Pod: pod, Container: name})
		if err != nil {
			t.Fatalf("create member %s: %v", name, err)
		}
		if err := c.StartContainer(ctx, id); err != nil {
			t.Fatalf("start member %s: %v", name, err)
		}
		ids[name] = id
	}

	// The published port is the holder's, the server behind it the app
	// member's, which has the holder's hostname (the pod name).
	body := httpGetEventually(t, fmt.Sprintf("http://127.0.0.1:%d/", hostPort))
	if !strings.Contains(body, "from app") || !strings.Contains(body, "hostname: "+pod.Name) {
		t.Errorf("GET through the holder's hostPort = %q, want the app member's answer with hostname %s", body, pod.Name)
	}

	// localhost is shared: each member reaches the other's server.
	for from, url := range map[string]string{"side": "http://127.0.0.1:8080/healthz", "app": "http://127.0.0.1:8081/healthz"} {
		if code, err := c.Exec(ctx, ids[from], []string{"/workload", "probe", url}, 30*time.Second); err != nil || code != 0 {
			t.Errorf("probe %s from %s = %d, %v; want 0 (shared localhost)", url, from, code, err)
		}
	}

	// The PID namespace is the holder's: the holder is its PID 1, so the
	// members' servers are not.
	for name, id := range ids {
		if pid := loggedPID(t, c, ctx, id); pid == "1" {
			t.Errorf("member %s runs as PID 1: it did not join the holder's PID namespace", name)
		}
	}

	// Inspect: the address is the holder's; a member has none.
	if det, err := c.InspectContainer(ctx, holderID); err != nil || det.IPAddress == "" {
		t.Errorf("holder: %+v, %v; want a bridge address", det, err)
	}
	if det, err := c.InspectContainer(ctx, ids["app"]); err != nil || det.IPAddress != "" || det.State != StateRunning {
		t.Errorf("member: %+v, %v; want running without an address of its own", det, err)
	}

	// Each emptyDir is one volume: what one member writes, the other member
	// and the holder read (through the archive API: the scratch images have
	// no shell), for the disk volume and for the tmpfs one.
	for _, tc := range []struct{ from, fromPath, to, toPath, holderPath string }{
		{"app", "/cache", "side", "/data", "/volumes/cache"},
		{"side", "/ram", "app", "/ram", "/volumes/ram"},
	} {
		content := "written by " + tc.from + " " + randHex(t)
		putFile(t, api, ctx, ids[tc.from], tc.fromPath, "note", content)
		if got := getFile(t, api, ctx, ids[tc.to], tc.toPath+"/note"); got != content {
			t.Errorf("%s read %q at %s/note, want %q written by %s at %s", tc.to, got, tc.toPath, content, tc.from, tc.fromPath)
		}
		if got := getFile(t, api, ctx, holderID, tc.holderPath+"/note"); got != content {
			t.Errorf("holder read %q at %s/note, want %q", got, tc.holderPath, content)
		}
	}
	raw, err := api.ContainerInspect(ctx, ids["side"])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range raw.Mounts {
		if want := map[string]string{"/data": VolumeName(base, "cache", uid), "/ram": VolumeName(base, "ram", uid)}[m.Destination]; m.Name != want {
			t.Errorf("side mounts %q at %s, want %q", m.Name, m.Destination, want)
		}
	}
	if vol, err := api.VolumeInspect(ctx, VolumeName(base, "ram", uid)); err != nil || vol.Options["type"] != "tmpfs" || vol.Options["o"] != "size=8388608" {
		t.Errorf("ram volume %+v, %v; want a tmpfs of 8Mi", vol, err)
	}

	// Members go first, then the holder; then nothing uses the volumes.
	for _, id := range []string{ids["app"], ids["side"], holderID} {
		if err := c.RemoveContainer(ctx, id); err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
	}
	for _, v := range []string{"cache", "ram"} {
		if err := api.VolumeRemove(ctx, VolumeName(base, v, uid), false); err != nil {
			t.Errorf("remove volume %s once the pod is gone: %v", v, err)
		}
	}
}

// removeByInstance removes the containers, then the volumes and images,
// labelled with the instance (volumes a test made by hand may carry
// testLabel=instance instead): what a failed test leaves behind.
func removeByInstance(t *testing.T, api *client.Client, instance string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	byInstance := filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance))
	list, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: byInstance})
	if err != nil {
		t.Logf("cleanup list containers: %v", err)
	}
	for _, s := range list {
		if err := api.ContainerRemove(ctx, s.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Logf("cleanup remove %s: %v", s.ID, err)
		}
	}
	for _, f := range []filters.Args{byInstance, filters.NewArgs(filters.Arg("label", testLabel+"="+instance))} {
		vols, err := api.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			t.Logf("cleanup list volumes: %v", err)
			continue
		}
		for _, v := range vols.Volumes {
			if err := api.VolumeRemove(ctx, v.Name, false); err != nil {
				t.Logf("cleanup remove volume %s: %v", v.Name, err)
			}
		}
	}
	imgs, err := api.ImageList(ctx, image.ListOptions{All: true, Filters: byInstance})
	if err != nil {
		t.Logf("cleanup list images: %v", err)
		return
	}
	for _, img := range imgs {
		if _, err := api.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Logf("cleanup remove image %s: %v", img.ID, err)
		}
	}
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// httpGetEventually GETs url until it answers 200, within a generous
// deadline (the member's server starts after its create and start).
func httpGetEventually(t *testing.T, url string) string {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			err = fmt.Errorf("status %s, read error %v", resp.Status, rerr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var pidLine = regexp.MustCompile(`workload: pid (\d+),`)

// loggedPID waits for the workload's startup line and returns the PID it
// has in its PID namespace.
func loggedPID(t *testing.T, c *Client, ctx context.Context, id string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rc, err := c.Logs(ctx, id, false, "")
		if err != nil {
			t.Fatalf("logs: %v", err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if m := pidLine.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid line in the logs of %s: %s", id, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// putFile writes name into dir of a container through the archive API.
func putFile(t *testing.T, api *client.Client, ctx context.Context, id, dir, name, content string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := api.CopyToContainer(ctx, id, dir, &buf, container.CopyToContainerOptions{}); err != nil {
		t.Fatalf("copy %s into %s of %s: %v", name, dir, id, err)
	}
}

// getFile reads one file of a container through the archive API ("" if
// it is missing).
func getFile(t *testing.T, api *client.Client, ctx context.Context, id, path string) string {
	t.Helper()
	rc, _, err := api.CopyFromContainer(ctx, id, path)
	if err != nil {
		t.Logf("copy %s from %s: %v", path, id, err)
		return ""
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatalf("copy %s from %s: %v", path, id, err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatalf("copy %s from %s: %v", path, id, err)
	}
	return string(b)
}
