package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The realworld section's Compose comparison (BENCHMARKS.md, Real-world
// bundles): a bundle of bundleServices services, each one Deployment of
// the workload with an httpGet readiness probe and a LoadBalancer Service
// published on 127.0.0.1, applied on a fresh instance, next to
// `docker-compose up -d` of the equivalent Compose file (the same image
// and arguments, the same check as a healthcheck, a published port per
// service), both until every published port has answered 200. Rounds
// alternate the two, so that the machine's load weighs on both alike.

// bundleServices is how many services the compared bundle has.
const bundleServices = 5

// bundleProbe is the readiness check of each service: the workload's
// /readyz every 10 s (Kubernetes' default period), as a readinessProbe
// and as a Compose healthcheck.
const bundleProbePath, bundleProbePeriod = "/readyz", 10

// bundleContainer is the workload container's port and readiness probe
// in the bundle's Deployments.
var bundleContainer = fmt.Sprintf("        ports: [{name: http, containerPort: 8080}]\n        readinessProbe:\n          httpGet: {path: %s, port: 8080}\n          periodSeconds: %d\n", bundleProbePath, bundleProbePeriod)

// bundleYAML is the dockctl bundle: per port, a LoadBalancer Service svcI
// publishing it and a Deployment of one replica behind it
// (serviceBundleWith) with the bundle's readiness probe.
func (e *env) bundleYAML(ports []int) string {
	docs := make([]string, len(ports))
	for i, p := range ports {
		docs[i] = e.serviceBundleWith("svc"+strconv.Itoa(i), 1, p, bundleContainer)
	}
	return strings.Join(docs, "---\n")
}

// bundleCompose is the Compose file of the same bundle: per port, a
// service of the workload image with the same arguments, the probe as its
// healthcheck, the port published on 127.0.0.1, and the run's labels (the
// harness's cleanup finds what `down` would leave).
func (e *env) bundleCompose(ports []int) string {
	var b strings.Builder
	b.WriteString("version: '2.4'\nservices:\n")
	for i, p := range ports {
		fmt.Fprintf(&b, "  svc%d:\n    image: %s\n    command: [\"--listen=:8080\"]\n", i, e.image)
		fmt.Fprintf(&b, "    ports: [\"127.0.0.1:%d:8080\"]\n", p)
		fmt.Fprintf(&b, "    labels: {%s: %q, %s: realworld-compose}\n", benchLabel, e.runID, setLabel)
		fmt.Fprintf(&b, "    healthcheck:\n      test: [\"CMD\", \"/workload\", \"probe\", \"http://127.0.0.1:8080%s\"]\n      interval: %ds\n", bundleProbePath, bundleProbePeriod)
	}
	return b.String()
}

// hostTargets are the ports on 127.0.0.1, as allAnswer's targets.
func hostTargets(ports []int) []svcTarget {
	out := make([]svcTarget, len(ports))
	for i, p := range ports {
		out[i] = svcTarget{"svc" + strconv.Itoa(i), "127.0.0.1:" + strconv.Itoa(p)}
	}
	return out
}

// freePorts returns n free TCP ports of the host.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// bundleVsCompose records both figures and their ratio: rounds of each,
// alternating, their p50 the ratio's terms.
func bundleVsCompose(ctx context.Context, e *env, s settings, rep *report) error {
	rounds := 3
	if s.Quick {
		rounds = 2
	}
	dockctlName := fmt.Sprintf("apply → every port answering: %d Deployments + %d LoadBalancer Services (readiness httpGet, period %ds), fresh instance", bundleServices, bundleServices, bundleProbePeriod)
	composeName := fmt.Sprintf("docker-compose up -d → every port answering: the same %d services (healthcheck alike)", bundleServices)
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		rep.na(realworldSection, composeName, "no docker-compose on this host")
		rep.na(realworldSection, dockctlName, "nothing to compare with: no docker-compose on this host")
		return nil
	}
	var ofDockctl, ofCompose []time.Duration
	var errs []error
	for r := range rounds {
		d, err := composeUntilAnswering(ctx, e, compose, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("compose round %d: %w", r+1, err))
		} else {
			ofCompose = append(ofCompose, d)
		}
		d, err = bundleUntilAnswering(ctx, e, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("dockctl round %d: %w", r+1, err))
		} else {
			ofDockctl = append(ofDockctl, d)
		}
	}
	rep.latencies(realworldSection, dockctlName, ofDockctl)
	rep.latencies(realworldSection, composeName, ofCompose)
	rep.ratio("realworld: bundle start vs Compose, apply → every port answering / docker-compose up -d → every port answering (p50)",
		realworldSection+"/"+dockctlName+" p50", realworldSection+"/"+composeName+" p50", atMost(1.2, ""))
	return errors.Join(errs...)
}

// bundleUntilAnswering runs one dockctl round: a controller of a new
// instance, the bundle applied, every port waited for; then the
// controller stopped and the instance uninstalled.
func bundleUntilAnswering(ctx context.Context, e *env, round int) (d time.Duration, err error) {
	ports, err := freePorts(bundleServices)
	if err != nil {
		return 0, err
	}
	c, err := e.startController(ctx, "bundle"+strconv.Itoa(round), realworldResync, "", "--service-address", "127.0.0.1")
	if err != nil {
		return 0, err
	}
	defer func() {
		c.stop()
		if uerr := c.dockctl(ctx, "", "uninstall"); uerr != nil {
			err = errors.Join(err, fmt.Errorf("uninstall: %w", uerr))
		}
	}()
	start := time.Now()
	if err := c.apply(ctx, e.bundleYAML(ports)); err != nil {
		return 0, err
	}
	if err := allAnswer(ctx, hostTargets(ports), 2*time.Minute); err != nil {
		return 0, fmt.Errorf("%w\ncontroller log:\n%s", err, c.logTail())
	}
	return time.Since(start), nil
}

// composeUntilAnswering runs one Compose round: `up -d` of the bundle's
// Compose file, every port waited for; then `down`.
func composeUntilAnswering(ctx context.Context, e *env, compose string, round int) (d time.Duration, err error) {
	ports, err := freePorts(bundleServices)
	if err != nil {
		return 0, err
	}
	dir := filepath.Join(e.tmp, "compose-"+strconv.Itoa(round))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	file := filepath.Join(dir, "docker-compose.yml")
	if err := os.WriteFile(file, []byte(e.bundleCompose(ports)), 0o644); err != nil {
		return 0, err
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, compose, append([]string{"-p", "bench-" + e.runID + "-compose" + strconv.Itoa(round), "-f", file}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("docker-compose %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	start := time.Now()
	// Its network and containers go with `down`, whatever the round did.
	defer func() {
		if derr := run("down", "-v", "--timeout", "1"); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	if err := run("up", "-d"); err != nil {
		return 0, err
	}
	if err := allAnswer(ctx, hostTargets(ports), 2*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
