//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
)

// Environment from configuration (docs/manifests.md), end to end: a
// Deployment whose environment refers to a ConfigMap and a Secret that do
// not exist yet waits for them — a ReplicaFailure naming them, no
// container — and runs as soon as they are applied, with the variables
// Docker shows on the container (docker inspect), status.podIP its
// address on the instance network — which get pods and describe pod show,
// with the node and the host's address — and the Secret's value nowhere in
// what dockctl prints or logs.
func TestEnvFromConfigMapAndSecret(t *testing.T) {
	independent(t)
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
	// What a kubectl user reads of the pod: its address (the one it
	// read), the node (the Docker host) and the host's address (the
	// instance network's gateway), when its container started, and in
	// its spec the Secret's reference, never the value.
	host, err := dockerCli.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := dockerCli.NetworkInspect(ctx, instanceNetwork(e.instance), network.InspectOptions{})
	if err != nil || len(nw.IPAM.Config) == 0 {
		t.Fatalf("instance network: %v %+v", err, nw.IPAM)
	}
	gateway, pod := nw.IPAM.Config[0].Gateway, info.Config.Hostname
	started, err := time.Parse(time.RFC3339Nano, info.State.StartedAt)
	if err != nil {
		t.Fatal(err)
	}
	got := e.mustDockctl("", "get", "pod", pod, "-o", "jsonpath={.status.podIP} {.spec.nodeName} {.status.hostIP} {.status.containerStatuses[0].state.running.startedAt}")
	if want := strings.Join([]string{ip.IPAddress, host.Name, gateway, started.UTC().Format(time.RFC3339)}, " "); got != want {
		t.Errorf("podIP nodeName hostIP startedAt: %q, want %q", got, want)
	}
	wide := e.mustDockctl("", "get", "pods", "-o", "wide", "--no-headers")
	if f := strings.Fields(wide); len(f) < 7 || f[0] != pod || f[5] != ip.IPAddress || f[6] != host.Name {
		t.Errorf("get pods -o wide --no-headers: %q, want %s … %s %s", wide, pod, ip.IPAddress, host.Name)
	}
	podYAML := e.mustDockctl("", "get", "pod", pod, "-o", "yaml")
	describePod := e.mustDockctl("", "describe", "pod", pod)
	if !strings.Contains(podYAML, "secretKeyRef:") {
		t.Errorf("get pod -o yaml lacks the Secret's reference:\n%s", podYAML)
	}
	for _, want := range []string{"Node:         " + host.Name + "/" + gateway + "\n", "IP:           " + ip.IPAddress + "\n", "Started:"} {
		if !strings.Contains(describePod, want) {
			t.Errorf("describe pod lacks %q:\n%s", want, describePod)
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
		"get pod -o yaml":     podYAML,
		"describe pod":        describePod,
	} {
		if strings.Contains(out, secret) {
			t.Errorf("the Secret's value is in the %s", what)
		}
	}
}

// TestServiceEnvVarsOnTheDaemon: a Service applied in the same bundle as a
// Deployment gives its containers the kubelet's Service variables
// ({SVC}_SERVICE_HOST … {SVC}_PORT_{PORT}_{PROTO}_ADDR, envvars.FromServices),
// as Docker shows them on the container, with the address `get service`
// shows; a pod with enableServiceLinks: false gets none.
func TestServiceEnvVarsOnTheDaemon(t *testing.T) {
	e := newEnv(t)
	e.startController()
	e.apply(`apiVersion: v1
kind: Service
metadata: {name: redis-master}
spec:
  selector: {app: redis}
  ports:
  - {name: redis, port: 6379, targetPort: 6379}
---
` + testDeployment{name: "web", replicas: 1}.manifest() + "---\n" +
		testDeployment{name: "quiet", replicas: 1, spec: ""}.manifest() + "      enableServiceLinks: false\n")
	web := e.waitRunning("web", 1, "")
	quiet := e.waitRunning("quiet", 1, "")
	var ip string
	eventually(t, 60*time.Second, "redis-master's clusterIP", func() (bool, string) {
		ip, _ = e.dockctl("", "get", "service", "redis-master", "-o", "jsonpath={.spec.clusterIP}")
		return ip != "" && ip != "<pending>", ip
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := dockerCli.ContainerInspect(ctx, web[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REDIS_MASTER_SERVICE_HOST=" + ip, "REDIS_MASTER_SERVICE_PORT=6379",
		"REDIS_MASTER_SERVICE_PORT_REDIS=6379", "REDIS_MASTER_PORT=tcp://" + ip + ":6379",
		"REDIS_MASTER_PORT_6379_TCP=tcp://" + ip + ":6379", "REDIS_MASTER_PORT_6379_TCP_PROTO=tcp",
		"REDIS_MASTER_PORT_6379_TCP_PORT=6379", "REDIS_MASTER_PORT_6379_TCP_ADDR=" + ip} {
		if !slices.Contains(info.Config.Env, want) {
			t.Errorf("web's env %q lacks %q", info.Config.Env, want)
		}
	}
	info, err = dockerCli.ContainerInspect(ctx, quiet[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range info.Config.Env {
		if strings.HasPrefix(kv, "REDIS_MASTER_") {
			t.Errorf("enableServiceLinks: false, yet %q", kv)
		}
	}
}
