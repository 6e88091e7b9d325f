//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Environment from configuration (issue 11 item 2), end to end: a
// Deployment whose environment refers to a ConfigMap and a Secret that do
// not exist yet waits for them — a ReplicaFailure naming them, no
// container — and runs as soon as they are applied, with the variables
// Docker shows on the container (docker inspect), status.podIP its
// address on the instance network, and the Secret's value nowhere in what
// dockctl prints or logs.
func TestEnvFromConfigMapAndSecret(t *testing.T) {
	const secret = "e2e-s3cr3t-Zq7"
	e := newEnv(t)
	deployment := testDeployment{name: "web", replicas: 1, extra: `        env:
        - name: MODE
          valueFrom:
            configMapKeyRef: {name: app-config, key: mode}
        - name: PASSWORD
          valueFrom:
            secretKeyRef: {name: db, key: password}
        - name: MAYBE
          valueFrom:
            configMapKeyRef: {name: absent, key: k, optional: true}
        - name: POD_NAME
          valueFrom:
            fieldRef: {fieldPath: metadata.name}
        - name: POD_IP
          valueFrom:
            fieldRef: {fieldPath: status.podIP}
        - name: URL
          value: "db://$(PASSWORD)@$(MODE)"
        envFrom:
        - prefix: CFG_
          configMapRef: {name: app-config}
`}.manifest()
	config := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {mode: fast, level: "3"}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: %s}
`, secret)
	e.startController()
	e.apply(deployment)

	eventually(t, 60*time.Second, "a ReplicaFailure naming the ConfigMap and the Secret", func() (bool, string) {
		out, _ := e.dockctl("", "describe", "deployment", "web")
		return strings.Contains(out, "ConfigMap default/app-config not found") && strings.Contains(out, "Secret default/db not found"), out
	})
	if cs := e.deploymentContainers("web"); len(cs) != 0 {
		t.Fatalf("containers created while their references are missing: %s", describe(cs))
	}

	e.apply(config)
	cs := e.waitRunning("web", 1, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := dockerCli.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	env := info.Config.Env
	ip := info.NetworkSettings.Networks[instanceNetwork(e.instance)]
	if ip == nil || ip.IPAddress == "" {
		t.Fatalf("replica not on the instance network: %+v", info.NetworkSettings.Networks)
	}
	for _, want := range []string{"MODE=fast", "PASSWORD=" + secret, "CFG_mode=fast", "CFG_level=3",
		"POD_NAME=" + info.Config.Hostname, "POD_IP=" + ip.IPAddress, "URL=db://" + secret + "@fast"} {
		if !slices.Contains(env, want) {
			t.Errorf("the container's env %q lacks %q", env, want)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "MAYBE=") {
			t.Errorf("an optional missing reference is set: %q", kv)
		}
	}
	eventually(t, 60*time.Second, "the ReplicaFailure to clear", func() (bool, string) {
		out, _ := e.dockctl("", "describe", "deployment", "web")
		// Above its Events: the FailedCreate of the wait stays listed
		// there, as kubectl describe keeps it, once the condition clears.
		state, _, _ := strings.Cut(out, "\nEvents:")
		return !strings.Contains(state, "not found"), out
	})
	for what, out := range map[string]string{
		"controller log":      e.controllerLog(),
		"describe deployment": e.mustDockctl("", "describe", "deployment", "web"),
		"get -o yaml":         e.mustDockctl("", "get", "deployment", "web", "-o", "yaml"),
	} {
		if strings.Contains(out, secret) {
			t.Errorf("the Secret's value is in the %s", what)
		}
	}
}
