//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// privateDockerd is a Docker daemon of the test's own, started in docs/development.md's end-to-end tests
// recommends, so that a test can stop and restart a daemon without touching
// the machine's: its own network namespace (it cannot see or change the
// host's docker0 or iptables), data root, exec root, socket and pidfile, and
// --live-restore so that containers survive its restarts (unless started by
// startPrivateDockerdWithoutLiveRestore: Docker's default, as a host
// reboot or a Docker upgrade leaves it, where a stop stops every
// container and a restart restores none running). It has no default
// bridge: containers in it join privateNetwork (the dockctl.io/network
// annotation), a bridge it creates in its own namespace.
//
// It also gets an empty --config-file: dockerd otherwise reads the machine's
// /etc/docker/daemon.json, and refuses to start when that file sets
// data-root too.
type privateDockerd struct {
	t             testing.TB
	noLiveRestore bool
	dir           string
	cli           *client.Client
	cmd           *exec.Cmd
	done          chan struct{} // closed when the current dockerd has exited
	logf          *os.File
}

func startPrivateDockerd(t testing.TB) *privateDockerd {
	t.Helper()
	return newPrivateDockerd(t, false)
}

// startPrivateDockerdWithoutLiveRestore is startPrivateDockerd with
// Docker's default: no --live-restore.
func startPrivateDockerdWithoutLiveRestore(t testing.TB) *privateDockerd {
	t.Helper()
	return newPrivateDockerd(t, true)
}

func newPrivateDockerd(t testing.TB, noLiveRestore bool) *privateDockerd {
	t.Helper()
	// Fail, not skip, when this machine cannot run it: see privateDockerdGate.
	if skip, reason := privateDockerdGate(os.Geteuid(), exec.LookPath, os.Getenv(skipDaemonRestartEnv)); skip {
		t.Skip(reason)
	} else if reason != "" {
		t.Fatal(reason)
	}
	// Short: the socket path, and containerd's below the exec root, must
	// fit a unix socket address (~100 bytes).
	dir, err := os.MkdirTemp("/tmp", "dkx-")
	if err != nil {
		t.Fatal(err)
	}
	d := &privateDockerd{t: t, dir: dir, noLiveRestore: noLiveRestore}
	t.Cleanup(d.cleanup)
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d.logf, err = os.OpenFile(filepath.Join(dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		t.Fatal(err)
	}
	if d.cli, err = client.NewClientWithOpts(client.WithHost(d.host()), client.WithAPIVersionNegotiation()); err != nil {
		t.Fatal(err)
	}
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	d.createNetwork()
	return d
}

// host is the DOCKER_HOST value for this daemon.
func (d *privateDockerd) host() string { return "unix://" + filepath.Join(d.dir, "docker.sock") }

// start launches dockerd and waits until it answers. unshare execs dockerd
// (no --fork), so the process started here is dockerd itself.
func (d *privateDockerd) start() error {
	args := []string{"--net", "dockerd",
		"--config-file", filepath.Join(d.dir, "daemon.json"),
		"-H", d.host(),
		"--data-root", filepath.Join(d.dir, "data"),
		"--exec-root", filepath.Join(d.dir, "exec"),
		"--pidfile", filepath.Join(d.dir, "docker.pid"),
		"--bridge", "none", "--iptables=false",
	}
	if !d.noLiveRestore {
		args = append(args, "--live-restore")
	}
	cmd := exec.Command("unshare", args...)
	cmd.Stdout, cmd.Stderr = d.logf, d.logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start private dockerd: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	d.cmd, d.done = cmd, done
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := d.cli.Ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("private dockerd exited at start-up:\n%s", d.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private dockerd does not answer: %v\n%s", err, d.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (d *privateDockerd) running() bool {
	if d.done == nil {
		return false
	}
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the PID in the pidfile (with --live-restore its
// containers keep running; without, dockerd stops them first) and waits
// for dockerd to exit.
func (d *privateDockerd) stop() error {
	if !d.running() {
		return nil
	}
	pid := d.cmd.Process.Pid
	if b, err := os.ReadFile(filepath.Join(d.dir, "docker.pid")); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p != pid {
			return fmt.Errorf("pidfile says %d, but the dockerd started here is %d", p, pid)
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(60 * time.Second):
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		return errors.New("private dockerd ignored SIGTERM for 60s; killed")
	}
}

// privateNetwork is the user-defined network of every private daemon.
const privateNetwork = "dockctl-e2e-private"

// createNetwork creates privateNetwork. With --iptables=false and in its own
// network namespace the bridge touches nothing of the machine's.
func (d *privateDockerd) createNetwork() {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.cli.NetworkCreate(ctx, privateNetwork, network.CreateOptions{Driver: "bridge"}); err != nil {
		d.t.Fatalf("create network %s in the private dockerd: %v\n%s", privateNetwork, err, d.logTail())
	}
}

// loadImage copies an image from the machine's daemon into this one
// (docker save | docker load); nothing is pulled.
func (d *privateDockerd) loadImage(ref string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := dockerCli.ImageSave(ctx, []string{ref})
	if err != nil {
		d.t.Fatalf("save %s: %v", ref, err)
	}
	defer rc.Close()
	resp, err := d.cli.ImageLoad(ctx, rc)
	if err != nil {
		d.t.Fatalf("load %s into the private dockerd: %v", ref, err)
	}
	defer resp.Body.Close()
	_, _ = bufio.NewReader(resp.Body).WriteTo(discard{})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func (d *privateDockerd) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "dockerd.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// cleanup removes every container of the private daemon (all of them are
// this test's; it is started again if it is down, since live-restored
// containers outlive it), stops it, unmounts what it left mounted under its
// directory and removes the directory.
func (d *privateDockerd) cleanup() {
	t := d.t
	if d.cli != nil {
		if !d.running() {
			if err := d.start(); err != nil {
				t.Logf("cleanup: restart the private dockerd to remove its containers: %v", err)
			}
		}
		if d.running() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true})
			if err != nil {
				t.Logf("cleanup: list private containers: %v", err)
			}
			for _, c := range cs {
				if err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
					t.Logf("cleanup: remove %s: %v", c.Names, err)
				}
			}
			cancel()
		}
		if t.Failed() {
			t.Logf("private dockerd log (tail):\n%s", d.logTail())
		}
		if err := d.stop(); err != nil {
			t.Logf("cleanup: %v", err)
		}
		d.cli.Close()
	}
	if d.logf != nil {
		d.logf.Close()
	}
	d.killLeftovers()
	d.unmountAll()
	if err := os.RemoveAll(d.dir); err != nil {
		t.Logf("cleanup: remove %s: %v", d.dir, err)
	}
}

// keepTask leaves this daemon in the state a start that raced its
// restore can leave a container in: dockerd shows container id stopped,
// containerd holds no container object of that ID, but its runtime still
// runs a task under it (its shim and process), so that every later start
// of the container is refused with "task <id>: already exists". It is made
// as a mis-ordered exit can make it: ctr runs a task under the ID (dockerd
// adopts it as a start it did not make), an exit event of that task is
// published while it runs (dockerd marks the container exited, and can
// delete neither the running task nor, through its client, the container
// object), and the container object is deleted (a containers Delete, which
// containerd's server allows with a task). It talks to this daemon's own
// containerd socket only, never the machine's. The task's shim is under
// the daemon's directory, so the daemon's cleanup (killLeftovers) ends it.
func (d *privateDockerd) keepTask(id, ref string) {
	d.t.Helper()
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		d.t.Fatalf("ctr (containerd's client, shipped with containerd) is needed to leave a task behind: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := d.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		d.t.Fatalf("save %s from the private dockerd: %v", ref, err)
	}
	defer rc.Close()
	archive := filepath.Join(d.t.TempDir(), "image.tar")
	f, err := os.Create(archive)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := bufio.NewReader(rc).WriteTo(f); err != nil {
		d.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		d.t.Fatal(err)
	}
	sock := filepath.Join(d.dir, "exec", "containerd", "containerd.sock")
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, ctr, append([]string{"--address", sock, "--namespace", "moby"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			d.t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("images", "import", archive)
	run("run", "-d", "docker.io/library/"+ref, id)
	pid := 0
	for _, line := range strings.Split(run("tasks", "list"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			pid, _ = strconv.Atoi(f[1])
		}
	}
	if pid <= 0 {
		d.t.Fatalf("no task %s after ctr run", id)
	}
	eventually(d.t, 30*time.Second, "dockerd to adopt the task's start", func() (bool, string) {
		info, err := d.cli.ContainerInspect(ctx, id)
		return err == nil && info.State.Running && info.State.Pid == pid, fmt.Sprintf("%+v %v", info.State, err)
	})

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		d.t.Fatal(err)
	}
	defer conn.Close()
	mctx := metadata.AppendToOutgoingContext(ctx, "containerd-namespace", "moby")
	call := func(method string, req []byte) {
		var resp rawMessage
		if err := conn.Invoke(mctx, method, rawMessage(req), &resp, grpc.ForceCodec(rawCodec{})); err != nil {
			d.t.Fatalf("%s: %v", method, err)
		}
	}
	// The messages are encoded by hand: the test needs no containerd API
	// module for two calls. TaskExit{container_id, id, pid, exit_status,
	// exited_at}, in PublishRequest{topic, event: Any}.
	now := time.Now()
	exitedAt := pbVarint(pbVarint(nil, 1, uint64(now.Unix())), 2, uint64(now.Nanosecond()))
	exit := pbBytes(pbBytes(nil, 1, []byte(id)), 2, []byte(id))
	exit = pbBytes(pbVarint(pbVarint(exit, 3, uint64(pid)), 4, 137), 5, exitedAt)
	anyExit := pbBytes(pbBytes(nil, 1, []byte("containerd.events.TaskExit")), 2, exit)
	call("/containerd.services.events.v1.Events/Publish", pbBytes(pbBytes(nil, 1, []byte("/tasks/exit")), 2, anyExit))
	eventually(d.t, 30*time.Second, "dockerd to take the task for exited", func() (bool, string) {
		info, err := d.cli.ContainerInspect(ctx, id)
		return err == nil && !info.State.Running, fmt.Sprintf("%+v %v", info.State, err)
	})
	call("/containerd.services.containers.v1.Containers/Delete", pbBytes(nil, 1, []byte(id)))
	if out := run("tasks", "list"); !strings.Contains(out, id) {
		d.t.Fatalf("the task of %s should be kept:\n%s", id, out)
	}
	if out := run("containers", "list"); strings.Contains(out, id) {
		d.t.Fatalf("the containerd container %s should be gone:\n%s", id, out)
	}
}

// pbVarint and pbBytes append a protobuf field (varint, or length-delimited).
func pbVarint(b []byte, field int, v uint64) []byte {
	b = appendUvarint(b, uint64(field)<<3)
	return appendUvarint(b, v)
}

func pbBytes(b []byte, field int, v []byte) []byte {
	b = appendUvarint(b, uint64(field)<<3|2)
	b = appendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// rawMessage is a protobuf message already encoded; rawCodec sends and
// receives it as is.
type rawMessage []byte

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case rawMessage:
		return m, nil
	case *rawMessage:
		return *m, nil
	}
	return nil, fmt.Errorf("rawCodec: %T is not a rawMessage", v)
}

func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*rawMessage) = append(rawMessage(nil), b...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// killLeftovers ends every process of this daemon that outlived its
// stop: a shim (and its container's processes) that the daemon no longer
// knew, or could not remove because it did not start again, keeps running
// after dockerd and containerd are gone, with its -address under a
// directory that is about to be removed. They are found by what ties them
// to this daemon only — its directory in their command line, working
// directory or executable, the IDs of its containers (its data root) in
// their command line or cgroup, and their descendants — never by a
// program's name: other daemons of the machine (the system's, another
// test's private one) have shims of the same name. A process still alive
// after SIGKILL is a leftover: the test fails.
func (d *privateDockerd) killLeftovers() {
	ids := d.containerIDs()
	ps := procsOf([]string{d.dir}, ids)
	if len(ps) == 0 {
		return
	}
	d.t.Logf("cleanup: %d processes of the private dockerd outlived it; killing them: %s", len(ps), procList(ps))
	if alive := killProcs(ps); len(alive) > 0 {
		d.t.Errorf("left behind: processes of the private dockerd still alive after SIGKILL: %s", procList(alive))
	}
}

// containerIDs lists the IDs of the containers this daemon's data root
// holds (whether or not the daemon still lists them).
func (d *privateDockerd) containerIDs() []string {
	ents, err := os.ReadDir(filepath.Join(d.dir, "data", "containers"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range ents {
		if len(e.Name()) == 64 {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// unmountAll unmounts every mount point under the daemon's directory,
// deepest first (dockerd bind-mounts its data root onto itself, and
// overlay mounts of containers may remain).
func (d *privateDockerd) unmountAll() {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == d.dir || strings.HasPrefix(f[4], d.dir+"/")) {
			points = append(points, f[4])
		}
	}
	points = append(points, filepath.Join(d.dir, "data"))
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				d.t.Logf("cleanup: umount %s: %v", p, err)
			}
		}
	}
}

// TestPrivateDockerdLeavesNoProcess: a private daemon's cleanup leaves no
// process of it behind — not its dockerd or containerd, and not a shim
// that outlived them — even when the daemon cannot remove a container
// itself: one whose record it lost (as a restart racing its restore leaves
// a task it no longer knows), or one left running by a daemon that does
// not start again. Each case runs as a subtest, whose cleanup is the one
// under test; the test then counts the processes tied to the daemon's
// directory and its containers' IDs (procsOf), and kills any it finds.
func TestPrivateDockerdLeavesNoProcess(t *testing.T) {
	tests := []struct {
		name string
		// disturb runs with the daemon stopped and a container of it
		// running (live-restore).
		disturb func(t *testing.T, d *privateDockerd, id string)
	}{
		{name: "daemon stopped with a running container", disturb: func(*testing.T, *privateDockerd, string) {}},
		{name: "container record lost by the daemon", disturb: func(t *testing.T, d *privateDockerd, id string) {
			if err := os.RemoveAll(filepath.Join(d.dir, "data", "containers", id)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "daemon that does not start again", disturb: func(t *testing.T, d *privateDockerd, _ string) {
			if err := os.WriteFile(filepath.Join(d.dir, "daemon.json"), []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		var dir, id string
		t.Run(tt.name, func(t *testing.T) {
			d := startPrivateDockerd(t)
			dir = d.dir
			d.loadImage(workloadImage)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			resp, err := d.cli.ContainerCreate(ctx, &container.Config{Image: workloadImage},
				&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			id = resp.ID
			if err := d.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
				t.Fatal(err)
			}
			if ps := procsOf(nil, []string{id}); len(ps) < 2 {
				t.Fatalf("a running container should show its shim and its process: %s", procList(ps))
			}
			if err := d.stop(); err != nil {
				t.Fatal(err)
			}
			if ps := procsOf(nil, []string{id}); len(ps) < 2 {
				t.Fatalf("live-restore: the container should outlive its daemon: %s", procList(ps))
			}
			tt.disturb(t, d, id)
		})
		if dir == "" {
			continue
		}
		waitNoProcs(t, 5*time.Second, fmt.Sprintf("%q (%s, container %.12s)", tt.name, dir, id), []string{dir}, []string{id})
	}
}
