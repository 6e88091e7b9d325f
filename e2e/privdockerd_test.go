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
)

// privateDockerd is a Docker daemon of the test's own, started as DESIGN §7
// recommends, so that a test can stop and restart a daemon without touching
// the machine's: its own network namespace (it cannot see or change the
// host's docker0 or iptables), data root, exec root, socket and pidfile, and
// --live-restore so that containers survive its restarts. It has no default
// bridge: containers in it join privateNetwork (the dockctl.io/network
// annotation), a bridge it creates in its own namespace.
//
// It also gets an empty --config-file: dockerd otherwise reads the machine's
// /etc/docker/daemon.json, and refuses to start when that file sets
// data-root too.
type privateDockerd struct {
	t    *testing.T
	dir  string
	cli  *client.Client
	cmd  *exec.Cmd
	done chan struct{} // closed when the current dockerd has exited
	logf *os.File
}

func startPrivateDockerd(t *testing.T) *privateDockerd {
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
	d := &privateDockerd{t: t, dir: dir}
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
		"--bridge", "none", "--iptables=false", "--live-restore",
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
// containers keep running) and waits for dockerd to exit.
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
	d.unmountAll()
	if err := os.RemoveAll(d.dir); err != nil {
		t.Logf("cleanup: remove %s: %v", d.dir, err)
	}
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
