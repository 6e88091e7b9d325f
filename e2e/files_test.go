//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
)

// File volumes (docs/design.md §11), end to end: the controller
// runs in a container, no host path is shared with it, and the tests read
// the files as the pod's containers see them (`workload stat` exec'd in
// the member), and Docker's own export and diff of the containers.

const filesSecret = "TOPSECRET-4242"

func filesBundle(appConf string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data:
  app.conf: "` + appConf + `"
  extra.conf: "x=1"
---
apiVersion: v1
kind: Secret
metadata: {name: db}
type: Opaque
stringData:
  password: "` + filesSecret + `"
  user: admin
`
}

const filesSpec = `      securityContext: {fsGroup: 2000}
      volumes:
      - name: cfg
        configMap: {name: app, defaultMode: 0440}
      - name: creds
        secret:
          secretName: db
          items: [{key: password, path: db/password, mode: 0400}]
      - name: meta
        downwardAPI:
          items:
          - {path: name, fieldRef: {fieldPath: metadata.name}}
          - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - name: all
        projected:
          sources:
          - configMap: {name: app, items: [{key: app.conf, path: app.conf}]}
          - secret: {name: db, items: [{key: user, path: user}]}
          - configMap: {name: absent, optional: true}
      - name: work
        emptyDir: {}
      containers:
      - name: app
        image: IMAGE
        args: ["--listen=:8080"]
        volumeMounts:
        - {name: cfg, mountPath: /etc/app}
        - {name: cfg, mountPath: /etc/pinned/app.conf, subPath: app.conf}
        - {name: creds, mountPath: /etc/creds}
        - {name: meta, mountPath: /etc/meta}
        - {name: all, mountPath: /etc/all}
        - {name: work, mountPath: /work}
`

// cat returns "MODE CONTENT" of a file as container id sees it.
func cat(t testing.TB, id, path string) string {
	t.Helper()
	code, out, errOut := execOutput(t, id, "/workload", "stat", path)
	if code != 0 {
		return "error: " + strings.TrimSpace(errOut)
	}
	return out
}

func TestFileVolumes(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.apply(filesBundle("port=80") + "---\n" + podManifest("files", 1, "", filesSpec))
	e.startController()
	pods := e.waitPods("files", 1, "", podWant{running: []string{"app"}})
	p := pods[0]
	app := p.members["app"].ID

	t.Run("files appear with their modes", func(t *testing.T) {
		for path, want := range map[string]string{
			// fsGroup widens every mode by 0440, as the kubelet does.
			"/etc/app/app.conf":        "0440 port=80",
			"/etc/app/extra.conf":      "0440 x=1",
			"/etc/creds/db/password":   "0440 " + filesSecret,
			"/etc/meta/name":           "0644 " + p.name,
			"/etc/meta/labels":         `0644 app="files"` + "\n" + `pod-template-hash="` + p.hash + `"`,
			"/etc/all/app.conf":        "0644 port=80",
			"/etc/all/user":            "0644 admin",
			"/etc/pinned/app.conf":     "0440 port=80",
			"/etc/app/..data/app.conf": "0440 port=80",
		} {
			if got := cat(t, app, path); got != want {
				t.Errorf("%s: %q, want %q", path, got, want)
			}
		}
		if got := cat(t, app, "/etc/creds/password"); !strings.HasPrefix(got, "error:") {
			t.Errorf("/etc/creds/password: %q, want only the listed item", got)
		}
		// The pod's emptyDir, beside its file volumes, is writable.
		if code, _, errOut := execOutput(t, app, "/workload", "--listen=127.0.0.1:0", "--write-file=/work/probe", "--exit-after=1ms"); code != 0 {
			t.Errorf("write into the emptyDir: exit %d: %s", code, errOut)
		}
	})

	t.Run("secret values are in no writable layer, log or status", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, id := range []string{app, p.holder.ID} {
			changes, err := dockerCli.ContainerDiff(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range changes {
				// Mount points are made in the layer, empty; nothing may be
				// below one.
				inVolume := strings.HasPrefix(c.Path, "/volumes/") && strings.Count(c.Path, "/") > 2
				if strings.Contains(c.Path, "password") || strings.HasPrefix(c.Path, "/etc/creds/") || inVolume {
					t.Errorf("container %s: %s in its writable layer", id[:12], c.Path)
				}
			}
			rc, err := dockerCli.ContainerExport(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(tr)
				if bytes.Contains(b, []byte(filesSecret)) {
					t.Errorf("container %s: docker export holds the secret in %s", id[:12], h.Name)
				}
			}
			rc.Close()
		}
		if log := e.controllerLog(); strings.Contains(log, filesSecret) {
			t.Error("the controller's log holds the secret")
		}
		out := e.mustDockctl("", "get", "deployment", "files", "-o", "yaml")
		out += e.mustDockctl("", "describe", "deployment", "files")
		if strings.Contains(out, filesSecret) {
			t.Error("get/describe show the secret")
		}
	})

	t.Run("a ConfigMap change reaches the running replica, not its subPath", func(t *testing.T) {
		start := time.Now()
		e.apply(filesBundle("port=81"))
		eventually(t, 30*time.Second, "the new app.conf in the running replica", func() (bool, string) {
			got := cat(t, app, "/etc/app/app.conf")
			return got == "0440 port=81", got
		})
		t.Logf("ConfigMap change → file in the running replica: %s", time.Since(start).Round(10*time.Millisecond))
		if got := cat(t, app, "/etc/all/app.conf"); got != "0644 port=81" {
			t.Errorf("projected app.conf: %q, want the new content", got)
		}
		if got := cat(t, app, "/etc/pinned/app.conf"); got != "0440 port=80" {
			t.Errorf("subPath app.conf: %q, want the content of the container's start (as Kubernetes)", got)
		}
		if now, _ := e.pods("files"); len(now) != 1 || now[0].members["app"].ID != app {
			t.Errorf("the replica was replaced for a ConfigMap change: %s", describePods(now, nil))
		}
	})

	t.Run("a holder restart gives a pod with its files again", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dockerCli.ContainerRestart(ctx, p.holder.ID, container.StopOptions{}); err != nil {
			t.Fatal(err)
		}
		var np *podView
		eventually(t, 90*time.Second, "a new pod with its files", func() (bool, string) {
			pods, loose := e.pods("files")
			if len(pods) != 1 || len(loose) > 0 || pods[0].uid == p.uid || !(podWant{running: []string{"app"}}).settled(pods[0]) {
				return false, describePods(pods, loose)
			}
			np = pods[0]
			return true, ""
		})
		if got := cat(t, np.members["app"].ID, "/etc/app/app.conf"); got != "0440 port=81" {
			t.Errorf("app.conf in the new pod: %q", got)
		}
		if got := cat(t, np.members["app"].ID, "/etc/pinned/app.conf"); got != "0440 port=81" {
			t.Errorf("subPath app.conf in the new pod: %q", got)
		}
		p = np
	})

	t.Run("rm -f of a pod leaves no volume behind", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.pod-uid="+p.uid) {
			if err := dockerCli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 90*time.Second, "the removed pod's volumes collected", func() (bool, string) {
			vs := volumes(t, "io.dockctl.instance="+e.instance, "io.dockctl.pod-uid="+p.uid)
			return len(vs) == 0, describeVolumes(vs)
		})
		e.waitPods("files", 1, "", podWant{running: []string{"app"}})
		e.mustDockctl("", "delete", "deployment", "files")
		eventually(t, 90*time.Second, "no file volume left", func() (bool, string) {
			vs := volumes(t, "io.dockctl.instance="+e.instance, "io.dockctl.role=files")
			return len(vs) == 0, describeVolumes(vs)
		})
	})
}

func describeVolumes(vs []volume.Volume) string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	return strings.Join(names, ",")
}

// TestFileVolumesWriterOutsideThePod: a pod that shares its process
// namespace never sees the process that writes its file volumes (it could
// reach them writable through /proc/PID/root before the writer makes
// itself non-dumpable), and a link planted in a file volume — standing in
// for any write primitive — is never bound by a subPath: the next start of
// the container binding it is refused with a ReplicaFailure naming the
// subPath, as the kubelet refuses a subPath leading out of its volume
// (CVE-2017-1002101).
func TestFileVolumesWriterOutsideThePod(t *testing.T) {
	independent(t)
	const spec = `      shareProcessNamespace: true
      volumes:
      - name: cfg
        configMap: {name: app}
      containers:
      - name: app
        image: IMAGE
        args: ["--listen=:8080"]
        volumeMounts:
        - {name: cfg, mountPath: /etc/app}
        - {name: cfg, mountPath: /etc/pinned/app.conf, subPath: app.conf}
`
	e := newEnv(t)
	e.apply(filesBundle("port=80") + "---\n" + podManifest("shared", 1, "", spec))
	e.startController()
	p := e.waitPods("shared", 1, "", podWant{running: []string{"app"}})[0]
	app := p.members["app"].ID

	// Watch the pod's /proc while its ConfigMap changes three times.
	type watch struct {
		out string
		err error
	}
	watched := make(chan watch, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ex, err := dockerCli.ContainerExecCreate(ctx, app, container.ExecOptions{Cmd: []string{"/workload", "procs", "/stop-watch", "helper files"}, AttachStdout: true, AttachStderr: true})
		if err != nil {
			watched <- watch{err: err}
			return
		}
		att, err := dockerCli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
		if err != nil {
			watched <- watch{err: err}
			return
		}
		defer att.Close()
		var stdout, stderr bytes.Buffer
		_, _ = stdcopy.StdCopy(&stdout, &stderr, att.Reader) // until the watch ends
		watched <- watch{out: stdout.String()}
	}()
	for i := 1; i <= 3; i++ {
		conf := fmt.Sprintf("port=%d", 80+i)
		e.apply(filesBundle(conf))
		eventually(t, 60*time.Second, "the ConfigMap change in the running replica", func() (bool, string) {
			got := cat(t, app, "/etc/app/app.conf")
			return got == "0644 "+conf, got
		})
	}
	// The watch ends when /stop-watch exists in the container.
	if code, _, errOut := execOutput(t, app, "/workload", "--listen=127.0.0.1:0", "--write-file=/stop-watch", "--exit-after=1ms"); code != 0 {
		t.Fatalf("stopping the watch: exit %d: %s", code, errOut)
	}
	w := <-watched
	if w.err != nil {
		t.Fatalf("watching the pod's processes: %v", w.err)
	}
	if !strings.Contains(w.out, "scans ") || strings.Contains(w.out, "scans 0\n") {
		t.Errorf("the watch of the pod's processes made no scan: %q", w.out)
	}
	for _, l := range strings.Split(strings.TrimSpace(w.out), "\n") {
		if !strings.HasPrefix(l, "scans ") {
			t.Errorf("the pod saw the files writer's process: %s", l)
		}
	}
	t.Logf("the pod's /proc watched during three ConfigMap changes: %s", strings.TrimSpace(w.out))

	// A link to a host file planted in place of the volume's app.conf.
	vs := volumes(t, "io.dockctl.instance="+e.instance, "io.dockctl.pod-uid="+p.uid, "io.dockctl.role=files")
	if len(vs) != 1 || vs[0].Mountpoint == "" {
		t.Fatalf("the pod's file volume: %s", describeVolumes(vs))
	}
	const marker = "HOST-FILE-dockctl-e2e"
	hostFile := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(hostFile, []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(vs[0].Mountpoint, "app.conf")
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostFile, planted); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := dockerCli.ContainerInspect(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if err := dockerCli.ContainerKill(ctx, app, "KILL"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "a ReplicaFailure naming the subPath", func() (bool, string) {
		rf := e.replicaFailure("shared")
		return strings.Contains(rf, `subPath "app.conf" of volume cfg leads out`), rf
	})
	after, err := dockerCli.ContainerInspect(ctx, app)
	if err == nil && (after.State.Running || after.State.StartedAt != before.State.StartedAt) {
		t.Errorf("the container binding the planted link was started again (started %s, running %v)", after.State.StartedAt, after.State.Running)
	}
	// Whatever runs of the pod now never shows the host's file.
	pods, _ := e.pods("shared")
	for _, q := range pods {
		if m, ok := q.members["app"]; ok && m.State == "running" {
			if got := cat(t, m.ID, "/etc/pinned/app.conf"); strings.Contains(got, marker) {
				t.Errorf("container %s shows the host file through its subPath", m.ID[:12])
			}
		}
	}
}

// TestFileVolumesSubPathNeverReachesAnotherVolume: the subPath check runs
// in a writer that mounts the volume at /volumes/NAME, but the daemon
// binds the subPath from the volume's path on the host,
// DATA-ROOT/volumes/ID/_data. A link planted in the volume — standing in
// for any write primitive — that climbs three levels and comes back by
// "volumes/NAME/_data" is, in the writer's view, inside the volume (links
// "volumes" and NAME to "." and a directory _data there); from the host it
// is the data of the host's Docker volume named NAME, another
// application's. The next start of the container binding it is refused
// with a ReplicaFailure naming the subPath, as the kubelet refuses a
// subPath that leaves its volume on the way (CVE-2017-1002101).
func TestFileVolumesSubPathNeverReachesAnotherVolume(t *testing.T) {
	independent(t)
	victim := "dkx-victim-" + randomSuffix() // a DNS label: also the pod's volume name
	const marker = "ANOTHER-APPS-VOLUME-dockctl-e2e"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, err := dockerCli.VolumeCreate(ctx, volume.CreateOptions{Name: victim, Labels: map[string]string{"io.dockctl.e2e-victim": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dockerCli.VolumeRemove(context.Background(), victim, true); err != nil {
			t.Logf("cleanup volume %s: %v", victim, err)
		}
	})
	if err := os.WriteFile(filepath.Join(v.Mountpoint, "secret"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `      volumes:
      - name: ` + victim + `
        configMap: {name: app}
      containers:
      - name: app
        image: IMAGE
        args: ["--listen=:8080"]
        volumeMounts:
        - {name: ` + victim + `, mountPath: /etc/pinned/app.conf, subPath: app.conf}
`
	e := newEnv(t)
	e.apply(filesBundle("port=80") + "---\n" + podManifest("climb", 1, "", spec))
	e.startController()
	p := e.waitPods("climb", 1, "", podWant{running: []string{"app"}})[0]
	app := p.members["app"].ID
	if got := cat(t, app, "/etc/pinned/app.conf"); got != "0644 port=80" {
		t.Fatalf("the subPath before: %q", got)
	}
	vs := volumes(t, "io.dockctl.instance="+e.instance, "io.dockctl.pod-uid="+p.uid, "io.dockctl.role=files")
	if len(vs) != 1 || vs[0].Mountpoint == "" {
		t.Fatalf("the pod's file volume: %s", describeVolumes(vs))
	}
	dir := vs[0].Mountpoint
	if err := os.MkdirAll(filepath.Join(dir, "_data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_data", "secret"), []byte("decoy"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ name, target string }{
		{"volumes", "."}, {victim, "."}, {"app.conf", "../../../volumes/" + victim + "/_data/secret"},
	} {
		_ = os.Remove(filepath.Join(dir, l.name))
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := dockerCli.ContainerInspect(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if err := dockerCli.ContainerKill(ctx, app, "KILL"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "a ReplicaFailure naming the subPath, or a run showing another volume", func() (bool, string) {
		rf := e.replicaFailure("climb")
		if strings.Contains(rf, `subPath "app.conf" of volume `+victim+` leads out`) {
			return true, rf
		}
		if after, err := dockerCli.ContainerInspect(ctx, app); err == nil && after.State.Running && after.State.StartedAt != before.State.StartedAt {
			return true, "started again"
		}
		return false, rf
	})
	after, err := dockerCli.ContainerInspect(ctx, app)
	if err == nil && after.State.Running && after.State.StartedAt != before.State.StartedAt {
		got := cat(t, app, "/etc/pinned/app.conf")
		t.Errorf("the container binding the planted link was started again, its subPath showing %q", got)
	}
}
