//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestPreStopHookBeforeSIGTERMOnRollout: during a rollout, the old
// replica's preStop hook (an httpGet, routed as probes are: directly or
// through the DNS helper) reaches it before its stop signal does.
func TestPreStopHookBeforeSIGTERMOnRollout(t *testing.T) {
	e := newEnv(t)
	e.startController()
	d := testDeployment{name: "hooks", replicas: 1, value: "one",
		extra: "        ports:\n        - containerPort: 8080\n        lifecycle:\n          preStop:\n            httpGet: {path: /prestop, port: 8080}\n"}
	e.apply(d.manifest())
	old := e.waitRunning("hooks", 1, "")[0]

	// Follow the old replica's log until it is removed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logs, ended := followLogs(t, ctx, old.ID)

	d.value = "two"
	e.apply(d.manifest())
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatalf("the old replica's log never ended (still running?); log so far:\n%s", logs.String())
	}
	out := logs.String()
	hook, signal := strings.Index(out, "preStop hook called"), strings.Index(out, "signal received")
	if hook < 0 || signal < 0 || hook > signal {
		t.Fatalf("want the preStop hook before the stop signal; old replica's log:\n%s", out)
	}
	if strings.Count(out, "preStop hook called") != 1 {
		t.Errorf("the preStop hook ran more than once:\n%s", out)
	}
	if !strings.Contains(e.controllerLog(), `msg="preStop hook ran"`) {
		t.Errorf("the controller did not log the hook")
	}
}

// TestGRPCProbeGatesReadiness: a grpc readiness probe (the gRPC health
// service of the workload) makes a replica ready only while it answers
// SERVING: two deployments alike but for --ready-after, probed alike; by
// the time the serving one is ready, the other, running, is not.
func TestGRPCProbeGatesReadiness(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	probe := "        ports:\n        - containerPort: 8080\n        readinessProbe:\n          grpc: {port: 9090, service: ready}\n          periodSeconds: 1\n"
	serving := testDeployment{name: "grpcok", replicas: 1, args: []string{"--grpc-listen", ":9090"}, extra: probe}
	never := testDeployment{name: "grpcno", replicas: 1, args: []string{"--grpc-listen", ":9090", "--ready-after", "1h"}, extra: probe}
	e.apply(serving.manifest() + "---\n" + never.manifest())
	e.waitRunning("grpcno", 1, "")
	eventually(t, 90*time.Second, "get deployments to show grpcok ready", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments")
		return regexpMatch(`(?m)^grpcok\s+1/1\s+`, out), out
	})
	// Its twin was probed as often; it must still be running, not ready.
	e.waitRunning("grpcno", 1, "")
	out := e.mustDockctl("", "get", "deployments")
	if !regexpMatch(`(?m)^grpcno\s+0/1\s+`, out) {
		t.Fatalf("grpcno answers NOT_SERVING and must not be ready:\n%s", out)
	}
	// Once it serves (a revision ready at once), it becomes ready.
	never.args = []string{"--grpc-listen", ":9090"}
	e.apply(never.manifest())
	eventually(t, 90*time.Second, "get deployments to show grpcno ready", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments")
		return regexpMatch(`(?m)^grpcno\s+1/1\s+`, out), out
	})
}
