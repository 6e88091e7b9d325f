//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dockctl/dockctl/dockerx"
)

// BenchmarkColdRecovery measures how long an installed controller's pods
// and Services take to serve again after a Docker daemon restart without
// live-restore (as a host reboot or a Docker upgrade leaves it: every
// container stops), against the same containers of the same image that
// Docker itself restarts (`--restart always`) with Docker's own names for
// them (network aliases, as Compose gives its services), in one private
// daemon each (docs/development.md, the end-to-end tests), one after the
// other (each daemon emptied and stopped before the other side starts;
// the sides take turns at going first when b.N > 1).
//
// dockctl's pods run with restart policy "no" (docs/design.md §8): the
// controller restarts them; its Service proxies and DNS server run under
// restart policy "always" and serve their last configuration until the
// controller pushes the pods' new addresses. The controller runs as
// `dockctl install` runs it, a container with restart policy
// unless-stopped in the same daemon, so it too must come back first.
//
// Each size is D Deployments of 5 replicas and D/2 ClusterIP Services,
// Service svcJ selecting Deployments 2J and 2J+1 (a label svc: svcJ on
// their template), on port 8080. Docker's side is the same containers
// with the alias svcJ on the network. Each side's figure is from the
// start of the daemon (its process launched) until both hold: every
// container of the pods runs, and every Service answers from inside the
// daemon's network — a checker container (e2e/svcclient, restart policy
// "always" on both sides, on the instance network with a pod's resolver
// settings for dockctl) GETs http://svcJ:8080/ by name until an answer
// comes from one of svcJ's own pods (their DOCKCTL_TEST_VALUE), timed by
// the checker to 100 ms (svcclient answers). The pods have no readiness
// probe, as Docker's containers have no health check, so running is ready
// on both sides.
//
//	make recovery                                           # both sizes
//	make recovery RECOVERY_BENCH=pods=30_services=3         # one size
//	RECOVERY_LOG=/tmp/ctl.log make recovery                 # also the controller's log
//
// Figures: docker-s and dockctl-s (seconds, both conditions), ratio
// (dockctl ÷ Docker; the speed goal is ≤ 1.1×), and each side's time to
// its pods alone (-pods-s) and to its Services alone (-svc-s).
func BenchmarkColdRecovery(b *testing.B) {
	for _, size := range coldSizes {
		b.Run(size.name(), func(b *testing.B) {
			var docker, dockctl coldTimes
			for i := range b.N {
				// The sides take turns at going first (with -benchtime
				// 2x: AB BA), so that a machine whose load drifts does
				// not always favour the same one.
				if i%2 == 0 {
					docker = docker.plus(coldRecoveryOfDocker(b, size))
					dockctl = dockctl.plus(coldRecoveryOfDockctl(b, size))
				} else {
					dockctl = dockctl.plus(coldRecoveryOfDockctl(b, size))
					docker = docker.plus(coldRecoveryOfDocker(b, size))
				}
			}
			n := float64(b.N)
			b.ReportMetric(docker.total.Seconds()/n, "docker-s")
			b.ReportMetric(dockctl.total.Seconds()/n, "dockctl-s")
			b.ReportMetric(dockctl.total.Seconds()/docker.total.Seconds(), "ratio")
			b.ReportMetric(docker.pods.Seconds()/n, "docker-pods-s")
			b.ReportMetric(dockctl.pods.Seconds()/n, "dockctl-pods-s")
			b.ReportMetric(docker.services.Seconds()/n, "docker-svc-s")
			b.ReportMetric(dockctl.services.Seconds()/n, "dockctl-svc-s")
			// The time per op is the set-up's, not a figure.
			b.ReportMetric(0, "ns/op")
		})
	}
}

// coldSize is one size of the benchmark: deployments × replicas pods
// behind deployments/2 Services.
type coldSize struct{ deployments, replicas int }

// coldSizes: the small size for a quick look, and speed goal 3's (100
// pods in 20 Deployments, 10 Services).
var coldSizes = []coldSize{{6, 5}, {20, 5}}

func (s coldSize) pods() int     { return s.deployments * s.replicas }
func (s coldSize) services() int { return s.deployments / 2 }
func (s coldSize) name() string  { return fmt.Sprintf("pods=%d_services=%d", s.pods(), s.services()) }

// serviceOf is the Service that selects Deployment i.
func serviceOf(i int) string { return fmt.Sprintf("svc%d", i/2) }

// manifests are dockctl's side: Deployment webI of the size's replicas,
// its pods labelled and valued with their Service's name, and ClusterIP
// Service svcJ on port 8080 selecting that label.
func (s coldSize) manifests() string {
	var docs []string
	for i := range s.deployments {
		svc := serviceOf(i)
		docs = append(docs, testDeployment{name: fmt.Sprintf("web%d", i), replicas: s.replicas, value: svc, labels: "svc: " + svc}.manifest())
	}
	for j := range s.services() {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc%[1]d\nspec:\n  selector: {svc: svc%[1]d}\n  ports:\n  - {port: 8080, targetPort: 8080}\n", j))
	}
	return strings.Join(docs, "---\n")
}

// targets is what the checker asks: each Service's URL by its short name
// and what an answer of one of its own pods holds.
func (s coldSize) targets() []string {
	var args []string
	for j := range s.services() {
		svc := fmt.Sprintf("svc%d", j)
		args = append(args, "http://"+svc+":8080/", "DOCKCTL_TEST_VALUE="+svc+"\n")
	}
	return args
}

// coldTimes are one side's figures, from the daemon's start: until both
// conditions held (total), until its pods ran, until its Services answered.
type coldTimes struct{ total, pods, services time.Duration }

func (t coldTimes) plus(u coldTimes) coldTimes {
	return coldTimes{t.total + u.total, t.pods + u.pods, t.services + u.services}
}

// coldRecoveryOfDocker runs the pods' containers under Docker's own
// restart policy "always" in a private daemon without live-restore, each
// with its Service's name as a network alias, restarts the daemon, and
// returns the times from its start until all run again and every name
// answers.
func coldRecoveryOfDocker(b *testing.B, size coldSize) coldTimes {
	b.Helper()
	d := startPrivateDockerdWithoutLiveRestore(b)
	d.loadImage(workloadImage)
	d.loadImage(clientImage)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const label = "dockctl-bench=cold"
	always := container.RestartPolicy{Name: container.RestartPolicyAlways}
	for i := range size.deployments {
		svc := serviceOf(i)
		for r := range size.replicas {
			cfg := &container.Config{Image: workloadImage, Env: []string{"DOCKCTL_TEST_VALUE=" + svc}, Labels: map[string]string{"dockctl-bench": "cold"}}
			hc := &container.HostConfig{RestartPolicy: always}
			nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{privateNetwork: {Aliases: []string{svc}}}}
			c, err := d.cli.ContainerCreate(ctx, cfg, hc, nc, nil, fmt.Sprintf("cold-%d-%d", i, r))
			if err != nil {
				b.Fatalf("create: %v", err)
			}
			if err := d.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
				b.Fatalf("start: %v", err)
			}
		}
	}
	pods := func(timeout time.Duration) { waitRunningOn(b, d.cli, size.pods(), timeout, label) }
	checker := startChecker(b, d, &container.HostConfig{RestartPolicy: always}, privateNetwork)
	pods(3 * time.Minute)
	waitAnswered(b, d, checker, size, 3*time.Minute)
	took := restartAndTime(b, d, pods, checker, size)
	// The other side is measured alone, not beside these containers (the
	// daemon's cleanup, at the end of the size, finds it empty).
	removeAllAndStop(b, d)
	return took
}

// removeAllAndStop removes every container of d and stops it.
func removeAllAndStop(b *testing.B, d *privateDockerd) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		b.Fatalf("list the private daemon's containers: %v", err)
	}
	for _, c := range cs {
		if err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			b.Fatalf("remove %s: %v", c.Names, err)
		}
	}
	if err := d.stop(); err != nil {
		b.Fatal(err)
	}
}

// coldRecoveryOfDockctl installs a controller in a private daemon without
// live-restore, applies the size's Deployments and Services, restarts the
// daemon and returns the times from its start until all pods run again
// and every Service answers.
func coldRecoveryOfDockctl(b *testing.B, size coldSize) coldTimes {
	b.Helper()
	e := newEnv(b)
	d := startPrivateDockerdWithoutLiveRestore(b) // registered after newEnv's cleanup: runs before it
	e.cliEnv = append(os.Environ(), "DOCKER_HOST="+d.host())
	d.loadImage(workloadImage)
	d.loadImage(clientImage)
	e.mustDockctl("", "install", "--timeout", "2m")
	e.apply(size.manifests())
	pods := func(timeout time.Duration) {
		for i := range size.deployments {
			waitRunningOn(b, d.cli, size.replicas, timeout, "io.dockctl.instance="+e.instance, fmt.Sprintf("io.dockctl.deployment=web%d", i))
		}
	}
	pods(5 * time.Minute)
	// The checker resolves as a pod of the default namespace does
	// (docs/design.md §10, DNS): dockctl's DNS server, the search list,
	// ndots:5. It is no pod: Docker restarts it, as on Docker's side.
	hc := &container.HostConfig{
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways},
		DNS:           []string{dnsAddress(b, d, e.instance)},
		DNSSearch:     []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"},
		DNSOptions:    []string{"ndots:5"},
	}
	checker := startChecker(b, d, hc, dockerx.NetworkName(e.instance))
	waitAnswered(b, d, checker, size, 3*time.Minute)
	took := restartAndTime(b, d, pods, checker, size)
	if path := os.Getenv("RECOVERY_LOG"); path != "" {
		// Where the time went: the controller's log, with Docker's
		// timestamps, from the restart on.
		b.Logf("daemon started at %s; the controller's log is in %s", time.Now().Add(-took.total).UTC().Format(time.RFC3339Nano), path)
		saveControllerLog(b, d, "dockctl-"+e.instance+"-controller", path)
	}
	// As Docker's side: the other side is not measured beside these.
	removeAllAndStop(b, d)
	return took
}

// dnsAddress waits for the instance's DNS server to run and returns its
// address on the instance network.
func dnsAddress(b *testing.B, d *privateDockerd, instance string) string {
	b.Helper()
	cs := waitRunningOn(b, d.cli, 1, 2*time.Minute, dockerx.LabelInstance+"="+instance, dockerx.LabelRole+"="+dockerx.RoleDNS)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := d.cli.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		b.Fatalf("inspect the DNS server: %v", err)
	}
	ep := info.NetworkSettings.Networks[dockerx.NetworkName(instance)]
	if ep == nil || ep.IPAddress == "" {
		b.Fatalf("the DNS server has no address on %s: %+v", dockerx.NetworkName(instance), info.NetworkSettings.Networks)
	}
	return ep.IPAddress
}

// startChecker runs the test client (waiting for SIGTERM: it is driven
// with exec) on net with hc, and returns its ID.
func startChecker(b *testing.B, d *privateDockerd, hc *container.HostConfig, net string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := &container.Config{Image: clientImage, Labels: map[string]string{"dockctl-bench": "checker"}}
	nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{net: {}}}
	c, err := d.cli.ContainerCreate(ctx, cfg, hc, nc, nil, "checker")
	if err != nil {
		b.Fatalf("create the checker: %v", err)
	}
	if err := d.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		b.Fatalf("start the checker: %v", err)
	}
	return c.ID
}

// waitAnswered waits until every Service of size has answered the checker.
func waitAnswered(b *testing.B, d *privateDockerd, checker string, size coldSize, timeout time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := firstAnswers(ctx, d.cli, checker, size.targets()); err != nil {
		b.Fatal(err)
	}
}

// firstAnswers runs `svcclient answers` in the checker, again for the
// targets not answered yet, until each has answered, and returns when the
// last of them first did (the checker's clock, which is the host's). The
// checker need not run yet: after a daemon restart it is waited for.
func firstAnswers(ctx context.Context, cli *client.Client, checker string, targets []string) (time.Time, error) {
	var last time.Time
	left := targets
	var why string
	for len(left) > 0 {
		if info, err := cli.ContainerInspect(ctx, checker); err != nil || !info.State.Running {
			why = fmt.Sprintf("the checker does not run (%v)", err)
		} else {
			cmd := append([]string{"/svcclient", "answers", "30s"}, left...)
			code, out, errOut, err := execOn(ctx, cli, checker, cmd...)
			var r struct {
				Answers []struct {
					URL  string `json:"url"`
					At   int64  `json:"at"`
					Last string `json:"last"`
				} `json:"answers"`
			}
			switch {
			case err != nil:
				why = err.Error()
			case code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Answers) != len(left)/2:
				why = fmt.Sprintf("svcclient answers exited %d: %s%s", code, out, errOut)
			default:
				var still []string
				var missed []string
				for i, a := range r.Answers {
					if a.At == 0 {
						still = append(still, left[2*i], left[2*i+1])
						missed = append(missed, a.URL+": "+a.Last)
						continue
					}
					if at := time.Unix(0, a.At); at.After(last) {
						last = at
					}
				}
				left, why = still, strings.Join(missed, "; ")
				continue
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("not every Service answered the checker: %s", why)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return last, nil
}

// execOn runs cmd in a running container of cli's daemon and returns its
// exit code, stdout and stderr.
func execOn(ctx context.Context, cli *client.Client, id string, cmd ...string) (int, string, string, error) {
	ex, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, "", "", fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return 0, "", "", fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	var stdout, stderr bytes.Buffer
	_, _ = stdcopy.StdCopy(&stdout, &stderr, att.Reader) // until the command ends
	att.Close()
	res, err := cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return 0, "", "", fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	return res.ExitCode, stdout.String(), stderr.String(), nil
}

// restartAndTime stops the private daemon (stopping every container: no
// live-restore), starts it again and returns the times from the start
// until pods says all are back (it fails the benchmark after its
// timeout) and until every Service of size has answered the checker.
// The daemon's own start-up is counted on both sides alike.
func restartAndTime(b *testing.B, d *privateDockerd, pods func(timeout time.Duration), checker string, size coldSize) coldTimes {
	b.Helper()
	if err := d.stop(); err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	if err := d.start(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type answered struct {
		at  time.Time
		err error
	}
	svc := make(chan answered, 1)
	go func() {
		at, err := firstAnswers(ctx, d.cli, checker, size.targets())
		svc <- answered{at, err}
	}()
	pods(5 * time.Minute)
	t := coldTimes{pods: time.Since(started)}
	a := <-svc
	if a.err != nil {
		b.Fatal(a.err)
	}
	t.services = a.at.Sub(started)
	t.total = max(t.pods, t.services)
	if t.services < 0 {
		b.Fatalf("a Service answered %s before the daemon started: the checker's clock is not the host's", -t.services)
	}
	return t
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
