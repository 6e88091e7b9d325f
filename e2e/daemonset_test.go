//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// daemonSetManifest is DaemonSet agent (RollingUpdate, the default
// maxUnavailable 1 and maxSurge 0) serving version.
func daemonSetManifest(version string) string {
	return strings.NewReplacer("IMAGE", workloadImage, "VERSION", version).Replace(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: IMAGE
        args: ["--message=agent VERSION"]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`)
}

// daemonSetStatus is the part of a DaemonSet's status the test reads.
type daemonSetStatus struct {
	Desired   int `json:"desiredNumberScheduled"`
	Current   int `json:"currentNumberScheduled"`
	Ready     int `json:"numberReady"`
	Updated   int `json:"updatedNumberScheduled"`
	Available int `json:"numberAvailable"`
}

// TestDaemonSetRollingUpdate: a DaemonSet runs one pod on this host
// (docs/design.md §17.2); a template change replaces it under
// RollingUpdate's defaults — the old pod removed before the new one is
// created (maxSurge 0) — its status counts the new pod updated, and
// `rollout status daemonset/agent` exits 0.
func TestDaemonSetRollingUpdate(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	ev := watchPodEvents(t, e.instance, "io.dockctl.instance="+e.instance, "io.dockctl.owner-kind=DaemonSet", "io.dockctl.owner=agent")
	start := time.Now()
	e.apply(daemonSetManifest("v1"))
	status := func() (daemonSetStatus, string) {
		out, err := e.dockctl("", "get", "daemonset", "agent", "-o", "jsonpath={.status}")
		var s daemonSetStatus
		if err != nil || json.Unmarshal([]byte(out), &s) != nil {
			return s, out
		}
		return s, out
	}
	running := func(version string) (string, string) {
		cs := containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.owner-kind=DaemonSet", "io.dockctl.owner=agent")
		if len(cs) != 1 || cs[0].State != "running" {
			return "", describe(cs)
		}
		info := inspect(t, cs[0].ID)
		if !strings.Contains(strings.Join(info.Args, " "), "agent "+version) {
			return "", fmt.Sprintf("%s args %v", describe(cs), info.Args)
		}
		return cs[0].ID, describe(cs)
	}
	var first string
	eventually(t, 60*time.Second, "one ready pod of agent at v1", func() (bool, string) {
		id, state := running("v1")
		s, out := status()
		first = id
		return id != "" && s == daemonSetStatus{1, 1, 1, 1, 1}, state + " status " + out
	})
	t.Logf("pod ready %s after apply", time.Since(start).Round(time.Millisecond))

	mark := len(ev.events())
	e.apply(daemonSetManifest("v2"))
	eventually(t, 60*time.Second, "one ready pod of agent at v2, counted updated", func() (bool, string) {
		id, state := running("v2")
		s, out := status()
		return id != "" && id != first && s == daemonSetStatus{1, 1, 1, 1, 1}, state + " status " + out
	})
	roll := ev.events()[mark:]
	if got := podsOf(roll, "create"); len(got) != 1 {
		t.Errorf("the update created pods %v, want one (events %v)", got, roll)
	}
	if got := podsOf(roll, "destroy"); len(got) != 1 {
		t.Errorf("the update removed pods %v, want one (events %v)", got, roll)
	} else if !before(roll, "destroy "+got[0], "create "+podsOf(roll, "create")[0]) {
		t.Errorf("the new pod was created before the old one was removed (maxSurge 0): %v", roll)
	}
	if out, err := e.dockctl("", "rollout", "status", "daemonset/agent", "--timeout", "30s"); err != nil {
		t.Errorf("rollout status daemonset/agent: %v\n%s", err, out)
	} else if !strings.Contains(out, `daemon set "agent" successfully rolled out`) {
		t.Errorf("rollout status daemonset/agent says %q", out)
	}
	t.Logf("rolled out %s after apply", time.Since(start).Round(time.Millisecond))
}
