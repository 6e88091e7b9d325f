package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// gatewaySection holds the gateway figures (BENCHMARKS.md, Gateway): an
// Ingress's requests through dockctl's gateway beside Docker's -p straight
// to one replica of the same workload, failed requests through the
// gateway during a rollout of its backend, and the time from `apply` of an
// Ingress to its first answered request.
const gatewaySection = "gateway"

// The gateway's paths; (ii) is the services section's -p baseline.
const (
	pathGateway   = "(v) dockctl gateway, Ingress on 127.0.0.1 (gateway helper → pod)"
	opGatewayRoll = "dockctl rollout restart, 1 replica behind an Ingress"
	gwName        = "gwweb"
)

// benchGateway measures, side by side in one run: the same workload (one
// replica) through Docker's -p and through an Ingress of dockctl's
// gateway under the proxy-overhead load of the services section (its
// clients and rounds: traffic.go); the time from `apply` of the Ingress to
// its first 200 (the gateway helper is created for the first route); and
// the failed requests through the gateway during `rollout restart`.
func benchGateway(ctx context.Context, e *env, s settings, rep *report) error {
	defer e.stopRemoveSets(context.Background(), "published")
	var errs []error
	var targets []loadTarget
	base, err := startPublishedBaseline(ctx, e)
	if err != nil {
		errs = append(errs, fmt.Errorf("the -p baseline: %w", err))
		rep.na(gatewaySection, "proxy overhead "+pathPublished, err.Error())
	}
	for _, t := range base {
		if t.label == pathPublished {
			targets = append(targets, t)
		}
	}
	gw, err := startDockctlGateway(ctx, e, rep)
	if gw != nil {
		defer gw.c.stop()
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("dockctl: %w", err))
		why := firstLine(err.Error())
		for _, name := range []string{"proxy overhead " + pathGateway, "time from apply of an Ingress to its first answered request"} {
			rep.na(gatewaySection, name, why)
		}
		for _, m := range trafficModes {
			rep.na(gatewaySection, fmt.Sprintf("%s, %s: failed requests", opGatewayRoll, m.name), why)
		}
		errs = append(errs, measureOverhead(ctx, s, rep, gatewaySection, targets))
		return errors.Join(errs...)
	}
	targets = append(targets, loadTarget{pathGateway, gw.addr})
	errs = append(errs, measureOverhead(ctx, s, rep, gatewaySection, targets))
	pre := gatewaySection + "/proxy overhead "
	rep.ratio("latency p50 (v) gateway / (ii) -p", pre+pathGateway+" p50", pre+pathPublished+" p50", atMost(1.3, ""))
	rep.ratio("latency p99 (v) gateway / (ii) -p", pre+pathGateway+" p99", pre+pathPublished+" p99", nil)
	rep.ratio("throughput (v) gateway / (ii) -p", pre+pathGateway+" throughput", pre+pathPublished+" throughput", atLeast(0.8, ""))
	errs = append(errs, gw.measureRollout(ctx, rep))
	return errors.Join(errs...)
}

// dockctlGateway is a controller serving one Ingress (every host, path
// /) to a 1-replica Deployment behind a ClusterIP Service.
type dockctlGateway struct {
	c    *controller
	addr string // the gateway's HTTP port on 127.0.0.1
}

// startDockctlGateway starts a controller whose gateway publishes on
// 127.0.0.1 (ports of its own: 80 and 443 need --allow-host-ports),
// applies the Deployment and Service and waits for the rollout, then
// applies the Ingress and records how long its first answer took. Once
// the controller runs, gw is returned with any error: the caller stops it.
func startDockctlGateway(ctx context.Context, e *env, rep *report) (*dockctlGateway, error) {
	help, _ := exec.CommandContext(ctx, e.dockctlBin, "controller", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--gateway-http-port") {
		return nil, errors.New("this dockctl has no gateway (its controller has no --gateway-http-port flag)")
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	httpsPort, err := freePort()
	for err == nil && httpsPort == httpPort {
		httpsPort, err = freePort()
	}
	if err != nil {
		return nil, err
	}
	c, err := e.startController(ctx, "gw", 30*time.Second, "", "--service-address", "127.0.0.1",
		"--gateway-http-port", strconv.Itoa(httpPort), "--gateway-https-port", strconv.Itoa(httpsPort))
	if err != nil {
		return nil, err
	}
	gw := &dockctlGateway{c: c, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))}
	if err := c.apply(ctx, e.gatewayBackendBundle(gwName)); err != nil {
		return gw, err
	}
	if err := gw.c.waitDeployment(ctx, gwName, 1); err != nil {
		return gw, fmt.Errorf("%w\ncontroller log:\n%s", err, c.logTail())
	}
	time.Sleep(settle)
	t0 := time.Now()
	if err := c.apply(ctx, gatewayIngress(gwName)); err != nil {
		return gw, err
	}
	took, err := firstAnswer(ctx, gw.addr, 2*time.Minute)
	if err != nil {
		return gw, fmt.Errorf("%w\ncontroller log:\n%s", err, c.logTail())
	}
	rep.duration(gatewaySection, "time from apply of an Ingress to its first answered request", took)
	logf("  Ingress applied at %s, first 200 through %s after %s", t0.Format("15:04:05.000"), gw.addr, took.Round(time.Millisecond))
	rep.note("gateway: the time to the first answer includes the gateway helper's creation: no route was served before the Ingress")
	return gw, waitHTTP(ctx, gw.addr, 10, time.Minute)
}

// measureRollout counts the failed requests through the gateway during
// `rollout restart` of the backend, until the old replica is gone and the
// new one ready.
func (gw *dockctlGateway) measureRollout(ctx context.Context, rep *report) error {
	t0 := time.Now()
	res, err := measureFailures(ctx, gw.addr, func(ctx context.Context) error {
		if err := gw.c.rolloutRestart(ctx, gwName, 1); err != nil {
			return err
		}
		return gw.c.waitDeployment(ctx, gwName, 1)
	})
	if err != nil {
		for _, m := range trafficModes {
			rep.na(gatewaySection, fmt.Sprintf("%s, %s: failed requests", opGatewayRoll, m.name), err.Error())
		}
		return fmt.Errorf("%s: %w", opGatewayRoll, err)
	}
	logf("  %s took %s", opGatewayRoll, time.Since(t0).Round(100*time.Millisecond))
	recordFailures(rep, gatewaySection, opGatewayRoll, res)
	return nil
}

// firstAnswer polls addr with a new connection every 10 ms until a GET
// answers 200 and returns how long that took from now.
func firstAnswer(ctx context.Context, addr string, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	if err := pollHTTP(ctx, addr, 1, timeout, 10*time.Millisecond); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// gatewayBackendBundle is the Ingress's backend: a ClusterIP Service
// (port 80 → 8080) and a 1-replica Deployment of the workload with the
// services section's readinessProbe and rolling update.
func (e *env) gatewayBackendBundle(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector: {app: %[1]s}
  ports:
  - {name: http, port: 80, targetPort: 8080}
---
`, name) + e.deploymentYAML(name, 1, "", readyHTTPContainer)
}

// gatewayIngress routes every host's / to the Service name: the
// harness's requests carry "Host: dockbench" (traffic.go), which a rule
// without a host matches.
func gatewayIngress(name string) string {
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: %[1]s
spec:
  rules:
  - http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service: {name: %[1]s, port: {number: 80}}
`, name)
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
