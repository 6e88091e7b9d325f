//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// BenchmarkColdRecovery measures how long the pods of an installed
// controller take to run again after a Docker daemon restart without
// live-restore (as a host reboot or a Docker upgrade leaves it: every
// container stops), against the same number of containers of the same
// image that Docker itself restarts (`--restart always`), in one private
// daemon (docs/development.md, the end-to-end tests), one after the
// other.
//
// dockctl's pods run with restart policy "no" (docs/design.md §8): the
// controller restarts them. It runs as `dockctl install` runs it, a
// container with restart policy unless-stopped in the same daemon, so it
// too must come back first. Each side's figure is from the start of the
// daemon (its process launched) until every one of its containers runs;
// the pods have no readiness probe, as Docker's containers have no health
// check, so running is ready on both sides. Services are not part of it.
//
//	make recovery                        # both sizes
//	make recovery RECOVERY_BENCH=pods=30 # one size
//	RECOVERY_LOG=/tmp/ctl.log make recovery   # also the controller's log
//
// Figures: docker-s and dockctl-s (seconds), and ratio (dockctl ÷
// Docker; the speed goal is ≤ 1.1×).
func BenchmarkColdRecovery(b *testing.B) {
	for _, size := range []struct{ deployments, replicas int }{{6, 5}, {20, 5}} {
		b.Run(fmt.Sprintf("pods=%d", size.deployments*size.replicas), func(b *testing.B) {
			var docker, dockctl time.Duration
			for range b.N {
				docker += coldRecoveryOfDocker(b, size.deployments*size.replicas)
				dockctl += coldRecoveryOfDockctl(b, size.deployments, size.replicas)
			}
			b.ReportMetric(docker.Seconds()/float64(b.N), "docker-s")
			b.ReportMetric(dockctl.Seconds()/float64(b.N), "dockctl-s")
			b.ReportMetric(dockctl.Seconds()/docker.Seconds(), "ratio")
			// The time per op is the set-up's, not a figure.
			b.ReportMetric(0, "ns/op")
		})
	}
}

// coldRecoveryOfDocker runs n containers of the workload under Docker's
// own restart policy "always" in a private daemon without live-restore,
// restarts the daemon, and returns the time from its start until all n
// run again.
func coldRecoveryOfDocker(b *testing.B, n int) time.Duration {
	b.Helper()
	d := startPrivateDockerdWithoutLiveRestore(b)
	d.loadImage(workloadImage)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const label = "dockctl-bench=cold"
	for i := range n {
		cfg := &container.Config{Image: workloadImage, Labels: map[string]string{"dockctl-bench": "cold"}}
		hc := &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways}}
		nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{privateNetwork: {}}}
		c, err := d.cli.ContainerCreate(ctx, cfg, hc, nc, nil, fmt.Sprintf("cold-%d", i))
		if err != nil {
			b.Fatalf("create: %v", err)
		}
		if err := d.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			b.Fatalf("start: %v", err)
		}
	}
	waitRunningOn(b, d.cli, n, 3*time.Minute, label)
	return restartAndTime(b, d, func(timeout time.Duration) {
		waitRunningOn(b, d.cli, n, timeout, label)
	})
}

// coldRecoveryOfDockctl installs a controller in a private daemon without
// live-restore, applies deployments × replicas pods, restarts the daemon
// and returns the time from its start until all of them run again.
func coldRecoveryOfDockctl(b *testing.B, deployments, replicas int) time.Duration {
	b.Helper()
	e := newEnv(b)
	d := startPrivateDockerdWithoutLiveRestore(b) // registered after newEnv's cleanup: runs before it
	e.cliEnv = append(os.Environ(), "DOCKER_HOST="+d.host())
	d.loadImage(workloadImage)
	e.mustDockctl("", "install", "--timeout", "2m")
	var docs []string
	for i := range deployments {
		docs = append(docs, testDeployment{name: fmt.Sprintf("web%d", i), replicas: replicas}.manifest())
	}
	e.apply(strings.Join(docs, "---\n"))
	converged := func(timeout time.Duration) {
		for i := range deployments {
			waitRunningOn(b, d.cli, replicas, timeout, "io.dockctl.instance="+e.instance, fmt.Sprintf("io.dockctl.deployment=web%d", i))
		}
	}
	converged(5 * time.Minute)
	took := restartAndTime(b, d, converged)
	if path := os.Getenv("RECOVERY_LOG"); path != "" {
		// Where the time went: the controller's log, with Docker's
		// timestamps, from the restart on.
		b.Logf("daemon started at %s; the controller's log is in %s", time.Now().Add(-took).UTC().Format(time.RFC3339Nano), path)
		saveControllerLog(b, d, "dockctl-"+e.instance+"-controller", path)
	}
	return took
}

// restartAndTime stops the private daemon (stopping every container: no
// live-restore), starts it again and returns the time from the start
// until running says all are back (it fails the benchmark after its
// timeout). The daemon's own start-up is counted on both sides alike.
func restartAndTime(b *testing.B, d *privateDockerd, running func(timeout time.Duration)) time.Duration {
	b.Helper()
	if err := d.stop(); err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	if err := d.start(); err != nil {
		b.Fatal(err)
	}
	running(5 * time.Minute)
	return time.Since(started)
}

// saveControllerLog writes the installed controller's log in the private
// daemon, with Docker's timestamps, to path.
func saveControllerLog(b *testing.B, d *privateDockerd, name, path string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := d.cli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
	if err != nil {
		b.Errorf("controller log: %v", err)
		return
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Errorf("controller log: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, rc); err != nil {
		b.Errorf("controller log: %v", err)
	}
}
