package manifests

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// base is a minimal valid manifest. Cases edit it with one line-preserving
// replacement or by appending, so that the expected line numbers below can
// be checked against this listing:
//
//	1 apiVersion        8 matchLabels      15 containers
//	2 kind              9 app: web         16 - name: web
//	3 metadata         10 template         17 image
//	4 name: web        11 metadata         18 ports
//	5 spec             12 labels           19 - containerPort: 8080
//	6 replicas: 1      13 app: web
//	7 selector         14 spec
const base = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 8080
`

// edit replaces old (which must occur exactly once in base) with new.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if n := strings.Count(base, old); n != 1 {
		t.Fatalf("edit: %q occurs %d times in base", old, n)
	}
	return strings.Replace(base, old, new, 1)
}

const (
	labelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

func TestDecodeInvalid(t *testing.T) {
	tests := []struct {
		name  string
		input func(t *testing.T) string
		want  []string
	}{
		{"replicas is a string",
			func(t *testing.T) string { return edit(t, "replicas: 1", `replicas: "three"`) },
			[]string{`t.yaml:6: spec.replicas: expected an integer, got string "three"`}},
		{"replicas is a float",
			func(t *testing.T) string { return edit(t, "replicas: 1", `replicas: 1.5`) },
			[]string{`t.yaml:6: spec.replicas: expected an integer, got number 1.5`}},
		{"replicas out of int32 range",
			func(t *testing.T) string { return edit(t, "replicas: 1", `replicas: 9999999999`) },
			[]string{`t.yaml:6: spec.replicas: integer 9999999999 is out of range`}},
		{"negative replicas",
			func(t *testing.T) string { return edit(t, "replicas: 1", `replicas: -1`) },
			[]string{`t.yaml:6: spec.replicas: must be greater than or equal to 0`}},
		{"replicas beyond the hard bound (item 20: absurd values never reach the planner)",
			func(t *testing.T) string { return edit(t, "replicas: 1", `replicas: 2147483647`) },
			[]string{`t.yaml:6: spec.replicas: must be less than or equal to 100000`}},
		{"mapping where a list is expected",
			func(t *testing.T) string {
				return edit(t, "      containers:\n      - name: web\n        image: nginx:1.25\n        ports:\n        - containerPort: 8080\n",
					"      containers: {name: web}\n")
			},
			[]string{`t.yaml:15: spec.template.spec.containers: expected a list, got a mapping`}},
		{"list where a mapping is expected",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  labels: [app]\n") },
			[]string{
				`t.yaml:3: metadata.name: required`,
				`t.yaml:4: metadata.labels: expected a mapping, got a list`,
			}},
		{"unknown field",
			func(t *testing.T) string { return edit(t, "replicas: 1", "replicaz: 1") },
			[]string{`t.yaml:6: spec: unknown field "replicaz"`}},
		{"unknown field at top level",
			func(t *testing.T) string { return base + "extra: true\n" },
			[]string{`t.yaml:20: unknown field "extra"`}},
		{"runtimeClassName is unsupported",
			func(t *testing.T) string { return base + "      runtimeClassName: gvisor\n" },
			[]string{`t.yaml:20: spec.template.spec.runtimeClassName: unsupported by dockctl`}},
		{"an init container is decoded as strictly as an app container",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: init\n        resizePolicy: []\n"
			},
			[]string{
				`t.yaml:21: spec.template.spec.initContainers[0].image: required`,
				`t.yaml:22: spec.template.spec.initContainers[0].resizePolicy: unsupported by dockctl`,
			}},
		{"initContainers is a list",
			func(t *testing.T) string { return base + "      initContainers: {name: init}\n" },
			[]string{`t.yaml:20: spec.template.spec.initContainers: expected a list, got a mapping`}},
		{"shareProcessNamespace is a boolean",
			func(t *testing.T) string { return base + "      shareProcessNamespace: \"yes\"\n" },
			[]string{`t.yaml:20: spec.template.spec.shareProcessNamespace: expected a boolean, got string "yes"`}},
		{"shareProcessNamespace with hostPID",
			func(t *testing.T) string { return base + "      shareProcessNamespace: true\n      hostPID: true\n" },
			[]string{`t.yaml:20: spec.template.spec.shareProcessNamespace: may not be true when hostPID is true`}},
		{"resizePolicy is unsupported",
			func(t *testing.T) string { return base + "        resizePolicy: []\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].resizePolicy: unsupported by dockctl`}},
		{"resources.claims is unsupported",
			func(t *testing.T) string { return base + "        resources:\n          claims: []\n" },
			[]string{`t.yaml:21: spec.template.spec.containers[0].resources.claims: unsupported by dockctl`}},
		{"wrong apiVersion",
			func(t *testing.T) string { return edit(t, "apiVersion: apps/v1", "apiVersion: v1") },
			[]string{`t.yaml:1: apiVersion: must be "apps/v1", got "v1"`}},
		{"wrong kind",
			func(t *testing.T) string { return edit(t, "kind: Deployment", "kind: NetworkPolicy") },
			[]string{`t.yaml:2: kind: unsupported kind "NetworkPolicy" (NetworkPolicy "web"): dockctl runs ConfigMap, CronJob, DaemonSet, Deployment, Gateway, GatewayClass, HTTPRoute, Ingress, IngressClass, Job, Namespace, PersistentVolumeClaim, Pod, ReferenceGrant, ReplicaSet, Secret, Service, StatefulSet; --skip-unsupported applies the rest without it`}},
		{"a kind of dockctl's under another kind's apiVersion",
			func(t *testing.T) string { return edit(t, "kind: Deployment", "kind: Service") },
			[]string{`t.yaml:1: apiVersion: must be "v1", got "apps/v1"`}},
		{"missing kind",
			func(t *testing.T) string { return edit(t, "kind: Deployment\n", "") },
			[]string{`t.yaml:1: kind: required`}},
		{"invalid name",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  name: Web_1\n") },
			[]string{`t.yaml:4: metadata.name: invalid value "Web_1": ` + labelMsg}},
		{"missing name",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  labels: {app: web}\n") },
			[]string{`t.yaml:3: metadata.name: required`}},
		{"namespace not a DNS-1123 label",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  name: web\n  namespace: Prod_1\n") },
			[]string{`t.yaml:5: metadata.namespace: invalid value "Prod_1": ` + labelMsg}},
		{"missing selector",
			func(t *testing.T) string { return edit(t, "  selector:\n    matchLabels:\n      app: web\n", "") },
			[]string{`t.yaml:5: spec.selector: required`}},
		{"empty selector",
			func(t *testing.T) string {
				return edit(t, "    matchLabels:\n      app: web\n", "    matchLabels: {}\n")
			},
			[]string{`t.yaml:8: spec.selector.matchLabels: required`}},
		{"selector does not match template labels",
			func(t *testing.T) string { return edit(t, "      app: web\n  template", "      app: api\n  template") },
			[]string{`t.yaml:12: spec.template.metadata.labels: does not match spec.selector.matchLabels (missing app=api)`}},
		{"two containers of one name",
			func(t *testing.T) string { return base + "      - name: web\n        image: busybox:1.36\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[1].name: duplicate container name "web" (also spec.template.spec.containers[0].name)`}},
		{"an init container named like an app container",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: web\n        image: busybox:1.36\n"
			},
			[]string{`t.yaml:21: spec.template.spec.initContainers[0].name: duplicate container name "web" (also spec.template.spec.containers[0].name)`}},
		{"two init containers of one name, and an invalid one",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n      - name: init\n        image: busybox:1.36\n      - name: Init_2\n        image: busybox:1.36\n"
			},
			[]string{
				`t.yaml:23: spec.template.spec.initContainers[1].name: duplicate container name "init" (also spec.template.spec.initContainers[0].name)`,
				`t.yaml:25: spec.template.spec.initContainers[2].name: invalid value "Init_2": ` + labelMsg,
			}},
		{"every error names the init container",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: a\n        image: busybox:1.36\n      - name: b\n        imagePullPolicy: Sometimes\n        workingDir: srv\n"
			},
			[]string{
				`t.yaml:23: spec.template.spec.initContainers[1].image: required`,
				`t.yaml:24: spec.template.spec.initContainers[1].imagePullPolicy: unsupported value "Sometimes": must be "Always", "IfNotPresent" or "Never"`,
				`t.yaml:25: spec.template.spec.initContainers[1].workingDir: must be an absolute path`,
			}},
		{"restartPolicy on an app container",
			func(t *testing.T) string { return base + "        restartPolicy: Always\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].restartPolicy: may not be set for non-init containers`}},
		{"init container restartPolicy other than Always",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n        restartPolicy: OnFailure\n"
			},
			[]string{`t.yaml:23: spec.template.spec.initContainers[0].restartPolicy: unsupported value "OnFailure": must be "Always" (a native sidecar) or unset`}},
		{"probes on an init container that is not a sidecar",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n" +
					"        readinessProbe: {exec: {command: [check]}}\n        livenessProbe: {tcpSocket: {port: 80}}\n"
			},
			[]string{
				`t.yaml:23: spec.template.spec.initContainers[0].readinessProbe: may not be set for init containers without restartPolicy=Always`,
				`t.yaml:24: spec.template.spec.initContainers[0].livenessProbe: may not be set for init containers without restartPolicy=Always`,
			}},
		{"a sidecar's probes are checked as an app container's",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: proxy\n        image: busybox:1.36\n        restartPolicy: Always\n" +
					"        readinessProbe: {httpGet: {port: admin}}\n        livenessProbe: {exec: {command: [check]}, successThreshold: 2}\n"
			},
			[]string{
				`t.yaml:24: spec.template.spec.initContainers[0].readinessProbe.httpGet.port: no container port named "admin"`,
				`t.yaml:25: spec.template.spec.initContainers[0].livenessProbe.successThreshold: must be 1 for a liveness probe`,
			}},
		{"a probe names a port of another container",
			func(t *testing.T) string {
				return strings.Replace(base, "        - containerPort: 8080\n", "        - {name: http, containerPort: 8080}\n", 1) +
					"      - name: side\n        image: busybox:1.36\n        readinessProbe: {tcpSocket: {port: http}}\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[1].readinessProbe.tcpSocket.port: no container port named "http"`}},
		{"containerPort declared by two containers",
			func(t *testing.T) string {
				return base + "      - name: side\n        image: busybox:1.36\n        ports:\n        - containerPort: 8080\n"
			},
			[]string{`t.yaml:23: spec.template.spec.containers[1].ports[0].containerPort: 8080/TCP is also declared by spec.template.spec.containers[0]: the containers of a pod share one network namespace`}},
		{"containerPort of an init container declared by an app container",
			func(t *testing.T) string {
				return base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n        ports:\n        - {containerPort: 8080, protocol: TCP}\n"
			},
			[]string{`t.yaml:24: spec.template.spec.initContainers[0].ports[0].containerPort: 8080/TCP is also declared by spec.template.spec.containers[0]: the containers of a pod share one network namespace`}},
		{"hostPort published by two containers",
			func(t *testing.T) string {
				return base + "          hostPort: 80\n      - name: side\n        image: busybox:1.36\n        ports:\n        - containerPort: 9090\n          hostPort: 80\n"
			},
			[]string{`t.yaml:25: spec.template.spec.containers[1].ports[0].hostPort: duplicate hostPort 80/TCP (also published by spec.template.spec.containers[0].ports[0])`}},
		{"hostPort of an init container published by an app container",
			func(t *testing.T) string {
				return base + "          hostPort: 80\n      initContainers:\n      - name: init\n        image: busybox:1.36\n        ports:\n        - {containerPort: 9090, hostPort: 80}\n"
			},
			[]string{`t.yaml:25: spec.template.spec.initContainers[0].ports[0].hostPort: duplicate hostPort 80/TCP (also published by spec.template.spec.containers[0].ports[0])`}},
		{"hostPort of an init container with more than one replica",
			func(t *testing.T) string {
				return strings.Replace(base, "replicas: 1", "replicas: 2", 1) +
					"      initContainers:\n      - name: init\n        image: busybox:1.36\n        ports:\n        - {containerPort: 9090, hostPort: 9090}\n"
			},
			[]string{`t.yaml:24: spec.template.spec.initContainers[0].ports[0].hostPort: may not be used with more than one replica (replicas: 2)`}},
		{"hostPort of a second app container with more than one replica",
			func(t *testing.T) string {
				return strings.Replace(base, "replicas: 1", "replicas: 2", 1) +
					"      - name: side\n        image: busybox:1.36\n        ports:\n        - {containerPort: 9090, hostPort: 9090}\n"
			},
			[]string{`t.yaml:23: spec.template.spec.containers[1].ports[0].hostPort: may not be used with more than one replica (replicas: 2)`}},
		{"volumeMount of an init container names no volume",
			func(t *testing.T) string {
				return base + "      volumes:\n      - name: data\n        emptyDir: {}\n" +
					"      initContainers:\n      - name: init\n        image: busybox:1.36\n        volumeMounts:\n        - {name: cache, mountPath: /cache}\n"
			},
			[]string{`t.yaml:27: spec.template.spec.initContainers[0].volumeMounts[0].name: no volume named "cache" in spec.template.spec.volumes`}},
		{"no containers",
			func(t *testing.T) string {
				return edit(t, "      containers:\n      - name: web\n        image: nginx:1.25\n        ports:\n        - containerPort: 8080\n",
					"      containers: []\n")
			},
			[]string{`t.yaml:15: spec.template.spec.containers: required`}},
		{"invalid container name",
			func(t *testing.T) string { return edit(t, "- name: web", "- name: Web") },
			[]string{`t.yaml:16: spec.template.spec.containers[0].name: invalid value "Web": ` + labelMsg}},
		{"missing image",
			func(t *testing.T) string { return edit(t, "        image: nginx:1.25\n", "        workingDir: /srv\n") },
			[]string{`t.yaml:16: spec.template.spec.containers[0].image: required`}},
		{"invalid imagePullPolicy",
			func(t *testing.T) string { return base + "        imagePullPolicy: Sometimes\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].imagePullPolicy: unsupported value "Sometimes": must be "Always", "IfNotPresent" or "Never"`}},
		{"relative workingDir",
			func(t *testing.T) string { return base + "        workingDir: srv\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].workingDir: must be an absolute path`}},
		{"invalid env name",
			func(t *testing.T) string { return base + "        env:\n        - name: A=1\n          value: x\n" },
			[]string{`t.yaml:21: spec.template.spec.containers[0].env[0].name: invalid value "A=1": a valid environment variable name must consist only of printable ASCII characters other than '='`}},
		{"env value is a number",
			func(t *testing.T) string { return base + "        env:\n        - name: PORT\n          value: 8080\n" },
			[]string{`t.yaml:22: spec.template.spec.containers[0].env[0].value: expected a string, got integer 8080`}},
		{"containerPort out of range",
			func(t *testing.T) string { return edit(t, "containerPort: 8080", "containerPort: 70000") },
			[]string{`t.yaml:19: spec.template.spec.containers[0].ports[0].containerPort: must be between 1 and 65535, inclusive`}},
		{"missing containerPort",
			func(t *testing.T) string { return edit(t, "- containerPort: 8080", "- name: http") },
			[]string{`t.yaml:19: spec.template.spec.containers[0].ports[0].containerPort: required`}},
		{"unsupported protocol",
			func(t *testing.T) string { return base + "          protocol: SCTP\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].ports[0].protocol: unsupported value "SCTP": must be "TCP" or "UDP"`}},
		{"invalid hostIP",
			func(t *testing.T) string { return base + "          hostIP: 300.1.1.1\n          hostPort: 80\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].ports[0].hostIP: invalid value "300.1.1.1": must be an IP address`}},
		{"hostPort with more than one replica",
			func(t *testing.T) string {
				return strings.Replace(base, "replicas: 1", "replicas: 3", 1) + "          hostPort: 80\n"
			},
			[]string{`t.yaml:20: spec.template.spec.containers[0].ports[0].hostPort: may not be used with more than one replica (replicas: 3)`}},
		{"duplicate hostPort",
			func(t *testing.T) string {
				return base + "          hostPort: 80\n        - containerPort: 8081\n          hostPort: 80\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].ports[1].hostPort: duplicate hostPort 80/TCP`}},
		{"duplicate port name",
			func(t *testing.T) string {
				return base + "          name: http\n        - containerPort: 8081\n          name: http\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].ports[1].name: duplicate port name "http"`}},
		{"unknown strategy type",
			func(t *testing.T) string { return edit(t, "  replicas: 1\n", "  strategy: {type: BlueGreen}\n") },
			[]string{`t.yaml:6: spec.strategy.type: unsupported value "BlueGreen": must be "RollingUpdate" or "Recreate"`}},
		{"Recreate with rollingUpdate",
			func(t *testing.T) string {
				return edit(t, "  replicas: 1\n", "  strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}\n")
			},
			[]string{`t.yaml:6: spec.strategy.rollingUpdate: may not be specified when strategy type is "Recreate"`}},
		{"maxSurge neither int nor percent, maxUnavailable negative",
			func(t *testing.T) string {
				return edit(t, "  replicas: 1\n", "  strategy:\n    rollingUpdate:\n      maxSurge: \"25\"\n      maxUnavailable: -1\n")
			},
			[]string{
				`t.yaml:8: spec.strategy.rollingUpdate.maxSurge: invalid value "25": must be an integer or a percentage (e.g. "25%")`,
				`t.yaml:9: spec.strategy.rollingUpdate.maxUnavailable: must be greater than or equal to 0`,
			}},
		{"maxUnavailable above 100%",
			func(t *testing.T) string {
				return edit(t, "  replicas: 1\n", "  strategy: {rollingUpdate: {maxUnavailable: 150%}}\n")
			},
			[]string{`t.yaml:6: spec.strategy.rollingUpdate.maxUnavailable: must not be greater than 100%`}},
		{"maxSurge and maxUnavailable both zero",
			func(t *testing.T) string {
				return edit(t, "  replicas: 1\n", "  strategy:\n    rollingUpdate:\n      maxSurge: 0%\n      maxUnavailable: 0\n")
			},
			[]string{`t.yaml:9: spec.strategy.rollingUpdate.maxUnavailable: may not be 0 when maxSurge is 0`}},
		{"restartPolicy other than Always",
			func(t *testing.T) string { return base + "      restartPolicy: Never\n" },
			[]string{`t.yaml:20: spec.template.spec.restartPolicy: unsupported value "Never": only "Always" is supported`}},
		{"progressDeadlineSeconds not above minReadySeconds",
			func(t *testing.T) string {
				return edit(t, "  replicas: 1\n", "  minReadySeconds: 30\n  progressDeadlineSeconds: 30\n")
			},
			[]string{`t.yaml:7: spec.progressDeadlineSeconds: must be greater than minReadySeconds (30)`}},
		{"unsupported resource",
			func(t *testing.T) string {
				return base + "        resources:\n          limits:\n            ephemeral-storage: 1Gi\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].resources.limits[ephemeral-storage]: unsupported resource "ephemeral-storage": only "cpu", "memory" and "nvidia.com/gpu" are supported`}},
		{"invalid quantity",
			func(t *testing.T) string {
				return base + "        resources:\n          limits:\n            cpu: 1.5x\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].resources.limits[cpu]: invalid quantity "1.5x"`}},
		{"quantity is a list",
			func(t *testing.T) string {
				return base + "        resources:\n          limits:\n            memory: [1Gi]\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].resources.limits[memory]: expected a quantity, got a list`}},
		{"negative quantity",
			func(t *testing.T) string {
				return base + "        resources:\n          requests:\n            memory: -1Gi\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].resources.requests[memory]: must be greater than or equal to 0`}},
		{"requests above limits",
			func(t *testing.T) string {
				return base + "        resources:\n          limits: {cpu: 500m, memory: 64Mi}\n          requests: {cpu: 1, memory: 64Mi}\n"
			},
			[]string{`t.yaml:22: spec.template.spec.containers[0].resources.requests[cpu]: must be less than or equal to cpu limit of 500m`}},
		{"volume without source and volume with two sources",
			func(t *testing.T) string {
				return base + "      volumes:\n      - name: a\n      - name: b\n        emptyDir: {}\n        hostPath: {path: /srv}\n"
			},
			[]string{
				`t.yaml:21: spec.template.spec.volumes[0]: must specify a volume type (one of hostPath, emptyDir, persistentVolumeClaim, configMap, secret, projected, downwardAPI)`,
				`t.yaml:22: spec.template.spec.volumes[1]: may not specify more than 1 volume type`,
			}},
		{"relative hostPath and bad emptyDir medium",
			func(t *testing.T) string {
				return base + "      volumes:\n      - name: a\n        hostPath: {path: srv}\n      - name: b\n        emptyDir: {medium: Disk}\n"
			},
			[]string{
				`t.yaml:22: spec.template.spec.volumes[0].hostPath.path: must be an absolute path`,
				`t.yaml:24: spec.template.spec.volumes[1].emptyDir.medium: unsupported value "Disk": must be "" or "Memory"`,
			}},
		{"persistentVolumeClaim without claimName, with a bad one, beside another source",
			func(t *testing.T) string {
				return base + "      volumes:\n      - name: a\n        persistentVolumeClaim: {readOnly: true}\n      - name: b\n        persistentVolumeClaim: {claimName: Data_1}\n      - name: c\n        emptyDir: {}\n        persistentVolumeClaim: {claimName: data}\n"
			},
			[]string{
				`t.yaml:22: spec.template.spec.volumes[0].persistentVolumeClaim.claimName: required`,
				`t.yaml:24: spec.template.spec.volumes[1].persistentVolumeClaim.claimName: invalid value "Data_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`t.yaml:25: spec.template.spec.volumes[2]: may not specify more than 1 volume type`,
			}},
		{"subPath of a claim",
			func(t *testing.T) string {
				return base + "        volumeMounts:\n        - name: data\n          mountPath: /var/lib/mysql\n          subPath: mysql\n      volumes:\n      - name: data\n        persistentVolumeClaim: {claimName: data}\n"
			},
			[]string{"t.yaml:23: spec.template.spec.containers[0].volumeMounts[0].subPath: " + subPathRefusal("persistentVolumeClaim")}},
		// A container of the pod could make the path a link to / (the
		// daemon follows links in a bind's source): CVE-2017-1002101.
		{"subPath of an emptyDir and of a hostPath",
			func(t *testing.T) string {
				return base + "        volumeMounts:\n        - name: cache\n          mountPath: /host\n          subPath: escape\n        - name: srv\n          mountPath: /x\n          subPath: link\n      volumes:\n      - name: cache\n        emptyDir: {}\n      - name: srv\n        hostPath: {path: /srv/data}\n"
			},
			[]string{
				"t.yaml:23: spec.template.spec.containers[0].volumeMounts[0].subPath: " + subPathRefusal("emptyDir"),
				"t.yaml:26: spec.template.spec.containers[0].volumeMounts[1].subPath: " + subPathRefusal("hostPath"),
			}},
		{"duplicate volume name",
			func(t *testing.T) string {
				return base + "      volumes:\n      - name: a\n        emptyDir: {}\n      - name: a\n        emptyDir: {}\n"
			},
			[]string{`t.yaml:23: spec.template.spec.volumes[1].name: duplicate volume name "a"`}},
		{"volumeMount of a missing volume at a relative path",
			func(t *testing.T) string {
				return base + "        volumeMounts:\n        - name: data\n          mountPath: data\n"
			},
			[]string{
				`t.yaml:21: spec.template.spec.containers[0].volumeMounts[0].name: no volume named "data" in spec.template.spec.volumes`,
				`t.yaml:22: spec.template.spec.containers[0].volumeMounts[0].mountPath: must be an absolute path`,
			}},
		{"probe without handler",
			func(t *testing.T) string { return base + "        readinessProbe:\n          periodSeconds: 5\n" },
			[]string{`t.yaml:20: spec.template.spec.containers[0].readinessProbe: exactly one of exec, httpGet, tcpSocket or grpc is required`}},
		{"probe with two handlers",
			func(t *testing.T) string {
				return base + "        livenessProbe:\n          exec: {command: [check]}\n          tcpSocket: {port: 8080}\n"
			},
			[]string{`t.yaml:20: spec.template.spec.containers[0].livenessProbe: may not specify more than one of exec, httpGet, tcpSocket or grpc`}},
		{"probe on an unknown named port",
			func(t *testing.T) string {
				return base + "        readinessProbe:\n          httpGet: {path: /healthz, port: http}\n"
			},
			[]string{`t.yaml:21: spec.template.spec.containers[0].readinessProbe.httpGet.port: no container port named "http"`}},
		{"probe port missing and negative timing",
			func(t *testing.T) string {
				return base + "        livenessProbe:\n          tcpSocket: {}\n          periodSeconds: -1\n          successThreshold: 2\n"
			},
			[]string{
				`t.yaml:21: spec.template.spec.containers[0].livenessProbe.tcpSocket.port: required`,
				`t.yaml:22: spec.template.spec.containers[0].livenessProbe.periodSeconds: must be greater than or equal to 0`,
				`t.yaml:23: spec.template.spec.containers[0].livenessProbe.successThreshold: must be 1 for a liveness probe`,
			}},
		{"invalid label key and value",
			func(t *testing.T) string {
				return edit(t, "  name: web\n", "  name: web\n  labels: {\"-bad\": ok, tier: \"a b\"}\n")
			},
			[]string{
				`t.yaml:5: metadata.labels[-bad]: invalid label key "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`t.yaml:5: metadata.labels[tier]: invalid label value "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
			}},
		{"label value is a number",
			func(t *testing.T) string {
				return edit(t, "        app: web\n", "        app: web\n        version: 2\n")
			},
			[]string{`t.yaml:14: spec.template.metadata.labels[version]: expected a string, got integer 2`}},
		{"duplicate field",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  name: web\n  name: api\n") },
			[]string{`t.yaml:5: metadata.name: duplicate field (first at line 4)`}},
		{"boolean field given a string",
			func(t *testing.T) string { return edit(t, "  replicas: 1\n", "  paused: \"yes\"\n") },
			[]string{`t.yaml:6: spec.paused: expected a boolean, got string "yes"`}},
		{"several errors in one document are all reported, in line order",
			func(t *testing.T) string {
				s := edit(t, "replicas: 1", "replicas: -2")
				s = strings.Replace(s, "        image: nginx:1.25\n", "        imagez: nginx:1.25\n", 1)
				return s + "      hostIPC: true\n"
			},
			[]string{
				`t.yaml:6: spec.replicas: must be greater than or equal to 0`,
				`t.yaml:16: spec.template.spec.containers[0].image: required`,
				`t.yaml:17: spec.template.spec.containers[0]: unknown field "imagez"`,
				`t.yaml:20: spec.template.spec.hostIPC: unsupported by dockctl`,
			}},
		{"errors in every document of a stream",
			func(t *testing.T) string {
				return edit(t, "replicas: 1", "replicas: x") + "---\n" + strings.Replace(base, "name: web\n", "name: web2\n  uid: ignored\n  bogus: 1\n", 1)
			},
			[]string{
				`t.yaml:6: spec.replicas: expected an integer, got string "x"`,
				`t.yaml:26: metadata: unknown field "bogus"`,
			}},
		{"document that is not a mapping",
			func(t *testing.T) string { return "- a\n- b\n" },
			[]string{`t.yaml:1: document must be a mapping, got a list`}},
		{"YAML syntax error",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  name: web\n   bad: indent\n") },
			[]string{`t.yaml:5: invalid YAML: mapping values are not allowed in this context`}},
		{"non-string mapping key in a struct",
			func(t *testing.T) string { return edit(t, "  name: web\n", "  name: web\n  ? [a]\n  : b\n") },
			[]string{`t.yaml:5: metadata: mapping keys must be strings, got a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input(t)))
			if err == nil {
				t.Fatalf("Decode succeeded with %d documents, want errors:\n%s", len(docs), strings.Join(tt.want, "\n"))
			}
			if docs != nil {
				t.Errorf("Decode returned %d documents alongside an error", len(docs))
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, want ErrorList", err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
		})
	}
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, docs []*Document)
	}{
		{"minimal manifest is defaulted", base, func(t *testing.T, docs []*Document) {
			d := one(t, docs).Deployment
			c := d.Container()
			if d.Replicas() != 1 || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 ||
				d.Spec.Strategy.Type != StrategyRollingUpdate || c.ImagePullPolicy != PullIfNotPresent ||
				c.Ports[0].Protocol != "TCP" || d.Spec.Template.Spec.RestartPolicy != "Always" {
				t.Errorf("not defaulted: %+v", d.Spec)
			}
			if d.Metadata.Namespace != "" {
				t.Errorf("namespace = %q, want it left empty", d.Metadata.Namespace)
			}
		}},
		{"empty documents, comments and null are skipped", "---\n# nothing\n---\n~\n---\n" + base + "---\n", func(t *testing.T, docs []*Document) {
			if d := one(t, docs); d.Line != 6 {
				t.Errorf("document line = %d, want 6", d.Line)
			}
		}},
		{"empty input", "", func(t *testing.T, docs []*Document) {
			if len(docs) != 0 {
				t.Errorf("got %d documents, want 0", len(docs))
			}
		}},
		{"multiple documents keep their order and lines", base + "---\n" + strings.Replace(base, "name: web\n", "name: api\n", 1), func(t *testing.T, docs []*Document) {
			if len(docs) != 2 || docs[0].Deployment.Metadata.Name != "web" || docs[1].Deployment.Metadata.Name != "api" {
				t.Fatalf("got %v, want web then api", names(docs))
			}
			if docs[0].Line != 1 || docs[1].Line != 21 {
				t.Errorf("lines = %d, %d, want 1, 21", docs[0].Line, docs[1].Line)
			}
		}},
		{"status and server-set metadata are ignored", withServerFields(),
			func(t *testing.T, docs []*Document) {
				d := one(t, docs).Deployment
				if d.Status != nil || d.Metadata.Generation != 0 || d.Metadata.CreationTimestamp != nil {
					t.Errorf("server-set fields were decoded: status=%v generation=%d", d.Status, d.Metadata.Generation)
				}
			}},
		{"null values leave fields unset", strings.Replace(base, "  replicas: 1\n", "  replicas: ~\n  strategy: null\n", 1), func(t *testing.T, docs []*Document) {
			if d := one(t, docs).Deployment; d.Replicas() != 1 {
				t.Errorf("replicas = %d, want default 1", d.Replicas())
			}
		}},
		{"full feature set", fullManifest, func(t *testing.T, docs []*Document) {
			d := one(t, docs).Deployment
			c := d.Container()
			if got := c.Resources.Limits["cpu"]; got.String() != "500m" {
				t.Errorf("cpu limit = %s, want 500m", got.String())
			}
			if c.ReadinessProbe.HTTPGet.Port.StrVal != "http" || c.ReadinessProbe.PeriodSeconds != 10 || c.ReadinessProbe.HTTPGet.Scheme != "HTTP" {
				t.Errorf("readiness probe = %+v", c.ReadinessProbe)
			}
			if c.LivenessProbe.TCPSocket.Port.IntVal != 8080 || c.LivenessProbe.FailureThreshold != 3 {
				t.Errorf("liveness probe = %+v", c.LivenessProbe)
			}
			if c.SecurityContext.RunAsUser == nil || *c.SecurityContext.RunAsUser != 0 {
				t.Errorf("runAsUser 0 was lost: %+v", c.SecurityContext)
			}
			if v := d.Spec.Template.Spec.Volumes; len(v) != 2 || v[1].EmptyDir == nil || v[1].EmptyDir.Medium != "Memory" {
				t.Errorf("volumes = %+v", v)
			}
			if d.Spec.Strategy.Type != StrategyRecreate || d.Spec.Strategy.RollingUpdate != nil {
				t.Errorf("strategy = %+v", d.Spec.Strategy)
			}
		}},
		{"a namespace other than default", strings.Replace(base, "  name: web\n", "  name: web\n  namespace: prod\n", 1), func(t *testing.T, docs []*Document) {
			if d := one(t, docs).Deployment; d.Metadata.Namespace != "prod" || d.Metadata.NamespaceOrDefault() != "prod" {
				t.Errorf("namespace = %q", d.Metadata.Namespace)
			}
		}},
		{"JSON input", jsonManifest, func(t *testing.T, docs []*Document) {
			d := one(t, docs).Deployment
			if d.Metadata.Name != "json-web" || d.Replicas() != 2 || d.Container().Env[0].Value != "1" {
				t.Errorf("decoded %+v", d)
			}
		}},
		{"List of deployments", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(base, "\n"), "\n", "\n  ") + "\n", func(t *testing.T, docs []*Document) {
			if d := one(t, docs); d.Line != 4 || d.Deployment.Metadata.Name != "web" {
				t.Errorf("got %s %s", d.Source(), d.Deployment.Metadata.Name)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tt.check(t, docs)
		})
	}
}

func TestDecodeListItemErrors(t *testing.T) {
	in := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a}\n  spec: {replicas: x}\n- kind: Pod\n"
	_, err := Decode("l.yaml", []byte(in))
	want := "l.yaml:7: items[0].spec.replicas: expected an integer, got string \"x\"\n" +
		"l.yaml:7: items[0].spec.selector: required\n" +
		"l.yaml:7: items[0].spec.template.spec.containers: required\n" +
		"l.yaml:8: items[1].apiVersion: required"
	if err == nil || err.Error() != want {
		t.Errorf("errors:\n got: %v\nwant: %s", err, want)
	}
}

// withServerFields is base as `get -o yaml` prints it: with server-set
// metadata, kubectl's template creationTimestamp: null, and a status.
func withServerFields() string {
	s := strings.Replace(base, "  name: web\n", "  name: web\n  uid: 0c4ae1f0\n  resourceVersion: \"42\"\n  generation: 7\n"+
		"  creationTimestamp: \"2024-01-01T00:00:00Z\"\n  selfLink: /x\n  managedFields: [{manager: kubectl}]\n", 1)
	s = strings.Replace(s, "    metadata:\n      labels:\n", "    metadata:\n      creationTimestamp: null\n      labels:\n", 1)
	return s + "status:\n  replicas: 3\n  conditions: [{type: Available}]\n"
}

const fullManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: full
  namespace: default
  labels: {app: full, tier: backend}
  annotations:
    kubernetes.io/change-cause: "deploy 42"
spec:
  replicas: 1
  minReadySeconds: 5
  revisionHistoryLimit: 3
  progressDeadlineSeconds: 120
  paused: false
  selector:
    matchLabels: {app: full}
  strategy:
    type: Recreate
  template:
    metadata:
      labels: {app: full, tier: backend}
      annotations:
        dockctl.io/network: backend
    spec:
      restartPolicy: Always
      terminationGracePeriodSeconds: 10
      hostNetwork: false
      hostPID: false
      volumes:
      - name: config
        hostPath: {path: /etc/full, type: Directory}
      - name: scratch
        emptyDir: {medium: Memory, sizeLimit: 64Mi}
      containers:
      - name: full
        image: registry.local:5000/full@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
        imagePullPolicy: Never
        command: ["/bin/full"]
        args: ["--port", "8080"]
        workingDir: /srv
        env:
        - {name: MODE, value: production}
        - {name: EMPTY}
        ports:
        - {name: http, containerPort: 8080, hostPort: 8080, hostIP: 127.0.0.1, protocol: TCP}
        - {containerPort: 5353, protocol: UDP}
        resources:
          limits: {cpu: 500m, memory: 128Mi}
          requests: {cpu: 0.25, memory: 64Mi}
        volumeMounts:
        - {name: config, mountPath: /etc/full, readOnly: true}
        - {name: scratch, mountPath: /tmp}
        readinessProbe:
          httpGet:
            path: /ready
            port: http
            httpHeaders: [{name: X-Probe, value: "1"}]
          initialDelaySeconds: 2
        livenessProbe:
          tcpSocket: {port: 8080}
        securityContext:
          privileged: false
          readOnlyRootFilesystem: true
          runAsUser: 0
          capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
`

const jsonManifest = `{
	"apiVersion": "apps/v1",
	"kind": "Deployment",
	"metadata": {"name": "json-web"},
	"spec": {
		"replicas": 2,
		"selector": {"matchLabels": {"app": "json-web"}},
		"template": {
			"metadata": {"labels": {"app": "json-web"}},
			"spec": {"containers": [{"name": "web", "image": "nginx", "env": [{"name": "A", "value": "1"}]}]}
		}
	}
}
`

func TestDecodeJSONErrorsHaveLines(t *testing.T) {
	in := strings.Replace(jsonManifest, `"replicas": 2`, `"replicas": "2"`, 1)
	_, err := Decode("w.json", []byte(in))
	want := `w.json:6: spec.replicas: expected an integer, got string "2"`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestDecodeGuardRails(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"too big", base + "# " + strings.Repeat("x", MaxInputSize) + "\n", "t.yaml: input is larger than the 4 MiB limit"},
		{"too deep", strings.Replace(base, "  name: web\n", "  name: web\n  labels: {a: "+deep+"}\n", 1), "t.yaml:5: nesting is deeper than 64 levels"},
		{"much too deep for the parser", "a: " + strings.Repeat("[", 20000), "t.yaml: invalid YAML: exceeded max depth of 10000"},
		{"alias bomb", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`, "t.yaml:7: YAML aliases (*a) are not supported"},
		{"single alias", strings.Replace(base, "      app: web\n  template", "      app: &app web\n  template", 1) + "        env: [{name: APP, value: *app}]\n", "t.yaml:20: YAML aliases (*app) are not supported"},
		{"merge key", strings.Replace(base, "  name: web\n", "  name: web\n  labels: {<<: {a: b}}\n", 1), "t.yaml:5: YAML merge keys (<<) are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if err == nil {
				t.Fatalf("Decode accepted the input (%d documents)", len(docs))
			}
			if err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestDecodeDuplicateNames(t *testing.T) {
	_, err := Decode("t.yaml", []byte(base+"---\n"+base))
	want := `t.yaml:24: metadata.name: duplicate deployment "web" (first defined at t.yaml:4)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestLoadDirectoryStdinAndErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(name string) string { return strings.Replace(base, "name: web\n", "name: "+name+"\n", 1) }
	write("b.yaml", rename("b"))
	write("a.yml", rename("a"))
	write("sub/c.json", strings.Replace(jsonManifest, "json-web", "c", -1))
	write("sub/README.md", "not a manifest")
	write("sub/deeper/d.YAML", rename("d"))

	docs, err := Load([]string{dir, "-"}, strings.NewReader(rename("e")))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := names(docs), "a b c d e"; got != want {
		t.Errorf("names = %q, want %q (lexical order, stdin last)", got, want)
	}
	if got := docs[4].File; got != StdinName {
		t.Errorf("stdin file = %q, want %q", got, StdinName)
	}

	// Errors from every file are reported together, and nothing is returned.
	write("bad/x.yaml", strings.Replace(base, "replicas: 1", "replicas: many", 1))
	write("bad/y.yaml", strings.Replace(base, "image: nginx:1.25", "image: \"\"", 1))
	missing := filepath.Join(dir, "missing.yaml")
	docs, err = Load([]string{filepath.Join(dir, "bad"), missing, "-"}, strings.NewReader(rename("a")+"---\n"+rename("a")))
	if docs != nil {
		t.Errorf("Load returned %d documents alongside errors", len(docs))
	}
	want := strings.Join([]string{
		filepath.Join(dir, "bad/x.yaml") + `:6: spec.replicas: expected an integer, got string "many"`,
		filepath.Join(dir, "bad/y.yaml") + `:17: spec.template.spec.containers[0].image: required`,
		missing + `: no such file or directory`,
		`<stdin>:24: metadata.name: duplicate deployment "a" (first defined at <stdin>:4)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("errors:\n got: %v\nwant: %s", err, want)
	}
}

func TestLoadRefusesBigStdin(t *testing.T) {
	_, err := Load([]string{"-"}, strings.NewReader(strings.Repeat("#", MaxInputSize+1)))
	if want := "<stdin>: input is larger than the 4 MiB limit"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestLoadExamples holds manifests/examples/ to what make demo and the
// README say of it: a two-tier application in the default namespace (api,
// a back end behind a ClusterIP Service; web, a front end that calls it by
// the Service's name and is published by a LoadBalancer Service) next to
// web-sidecar, the pod example; every container runs the local test
// workload and none publishes a hostPort.
func TestLoadExamples(t *testing.T) {
	docs, err := Load([]string{"examples"}, nil)
	if err != nil {
		t.Fatalf("examples do not load: %v", err)
	}
	deployments, services := map[string]*Deployment{}, map[string]*Service{}
	var got []string
	for _, d := range docs {
		switch {
		case d.Deployment != nil:
			deployments[d.Deployment.Metadata.Name] = d.Deployment
			got = append(got, "Deployment/"+d.Deployment.Metadata.Name)
			if ns := d.Deployment.Metadata.NamespaceOrDefault(); ns != DefaultNamespace {
				t.Errorf("%s: namespace %q", d.Source(), ns)
			}
		case d.Service != nil:
			services[d.Service.Metadata.Name] = d.Service
			got = append(got, "Service/"+d.Service.Metadata.Name)
			if ns := d.Service.Metadata.NamespaceOrDefault(); ns != DefaultNamespace {
				t.Errorf("%s: namespace %q", d.Source(), ns)
			}
		default:
			t.Errorf("%s: neither a Deployment nor a Service", d.Source())
		}
	}
	sort.Strings(got)
	if want := "Deployment/api Deployment/web Deployment/web-sidecar Service/api Service/web"; strings.Join(got, " ") != want {
		t.Fatalf("examples = %q, want %q", strings.Join(got, " "), want)
	}
	for name, d := range deployments {
		for _, c := range d.Spec.Template.Spec.AllContainers() {
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					t.Errorf("%s: container %s publishes hostPort %d; examples must not", name, c.Name, p.HostPort)
				}
			}
			if c.Image != "dockctl-workload:dev" {
				t.Errorf("%s: container %s image = %q", name, c.Name, c.Image)
			}
		}
	}
	for name, want := range map[string]int32{"api": 2, "web": 3, "web-sidecar": 2} {
		if r := deployments[name].Replicas(); r != want {
			t.Errorf("%s replicas = %d, want %d", name, r, want)
		}
	}

	// The two tiers: each Service selects its deployment's pods alone and
	// forwards to its named port http, on which the pods are probed ready.
	for _, tt := range []struct {
		service, deployment, typ string
		port                     int32
	}{
		{"api", "api", ServiceTypeClusterIP, 80},
		{"web", "web", ServiceTypeLoadBalancer, 8080},
	} {
		svc := services[tt.service]
		if typ := cmp.Or(svc.Spec.Type, ServiceTypeClusterIP); typ != tt.typ {
			t.Errorf("service %s: type %s, want %s", tt.service, typ, tt.typ)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != tt.port || svc.Spec.Ports[0].TargetPort != intstr.FromString("http") {
			t.Errorf("service %s: ports %+v, want %d → http", tt.service, svc.Spec.Ports, tt.port)
		}
		for name, d := range deployments {
			if selects(svc.Spec.Selector, d.Spec.Template.Metadata.Labels) != (name == tt.deployment) {
				t.Errorf("service %s (selector %v) and deployment %s (pod labels %v)", tt.service, svc.Spec.Selector, name, d.Spec.Template.Metadata.Labels)
			}
		}
		c := deployments[tt.deployment].Spec.Template.Spec.Containers[0]
		if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
			t.Errorf("deployment %s: ports %+v, want http 8080", tt.deployment, c.Ports)
		}
		if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port != intstr.FromString("http") {
			t.Errorf("deployment %s: readinessProbe %+v, want httpGet /readyz on http", tt.deployment, p)
		}
	}
	// web calls api by the Service's short name, on its port.
	if args := deployments["web"].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--backend=http://api/") {
		t.Errorf("web args %q, want --backend=http://api/ (the api Service, port 80)", args)
	}

	// The pod example: an init container, then two app containers, the
	// sidecar probing web over the pod's shared localhost.
	ps := &deployments["web-sidecar"].Spec.Template.Spec
	var containers []string
	for _, c := range ps.AllContainers() {
		containers = append(containers, c.Name)
	}
	if strings.Join(containers, " ") != "init web sidecar" || len(ps.InitContainers) != 1 || ps.InitContainers[0].IsSidecar() {
		t.Errorf("web-sidecar containers = %q (init containers %d)", containers, len(ps.InitContainers))
	}
	if p := ps.FindContainer("sidecar").ReadinessProbe; p == nil || p.Exec == nil ||
		!strings.Contains(strings.Join(p.Exec.Command, " "), "127.0.0.1:8080") {
		t.Errorf("the sidecar does not probe web on localhost: %+v", p)
	}
}

// selects tells whether a Service's selector matches pod labels (every
// pair present; an empty selector matches nothing, as a Service's).
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if l, ok := labels[k]; !ok || l != v {
			return false
		}
	}
	return true
}

func TestValidateBuiltInCode(t *testing.T) {
	docs, err := Decode("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Deployment
	if err := Validate(d); err != nil {
		t.Fatalf("a decoded, defaulted deployment must stay valid: %v", err)
	}
	d.Spec.Replicas = ptr[int32](-1)
	d.Container().Image = ""
	want := "spec.replicas: must be greater than or equal to 0\nspec.template.spec.containers[0].image: required"
	if err := Validate(d); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "web.yaml", Line: 14, Path: "spec.template.spec.containers[0].image", Msg: "required"}, "web.yaml:14: spec.template.spec.containers[0].image: required"},
		{FieldError{File: "web.yaml", Msg: "no such file or directory"}, "web.yaml: no such file or directory"},
		{FieldError{Line: 3, Path: "spec", Msg: "bad"}, "line 3: spec: bad"},
		{FieldError{Path: "spec.replicas", Msg: "bad"}, "spec.replicas: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if err := ErrorList(nil).Err(); err != nil {
		t.Errorf("empty ErrorList.Err() = %v, want nil", err)
	}
}

func one(t *testing.T, docs []*Document) *Document {
	t.Helper()
	if len(docs) != 1 {
		t.Fatalf("got %d documents, want 1", len(docs))
	}
	return docs[0]
}

func names(docs []*Document) string {
	var n []string
	for _, d := range docs {
		n = append(n, d.Meta().Name)
	}
	return strings.Join(n, " ")
}

func subPathRefusal(kind string) string {
	return "unsupported by dockctl on a " + kind + " volume (only on configMap, secret, projected and downwardAPI volumes: on Engine API 1.41 a subPath is a bind that follows links, which a container could point anywhere on the host): mount the whole volume"
}

// Links in a directory are followed to files, as kubectl follows them; a
// dangling one is an error, as it is to kubectl (its objects must not go
// missing silently), but an Emacs lock link (.#name, always dangling).
func TestLoadDirectorySymlinks(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	rename := func(name string) string { return strings.Replace(base, "name: web\n", "name: "+name+"\n", 1) }
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(other, name+".yaml"), []byte(rename(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"a.yaml":     filepath.Join(other, "a.yaml"),
		"dir.yaml":   other, // a link to a directory is not followed
		".#a.yaml":   "me@host.1234:1700000000",
		"gone.yaml":  filepath.Join(other, "gone.yaml"),
		"gone.txt":   filepath.Join(other, "gone.txt"), // not a manifest name
		"sub/b.yaml": filepath.Join(other, "b.yaml"),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	files, unreadable, err := ExpandPath(dir)
	if err != nil || len(unreadable) > 0 {
		t.Fatalf("ExpandPath: %v %v", unreadable, err)
	}
	want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "gone.yaml"), filepath.Join(dir, "sub/b.yaml")}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	_, err = Load([]string{dir}, nil)
	wantErr := filepath.Join(dir, "gone.yaml") + ": symbolic link to " + filepath.Join(other, "gone.yaml") + ": no such file or directory"
	if err == nil || err.Error() != wantErr {
		t.Errorf("Load: %v, want %s", err, wantErr)
	}
}

// A document's explicit false and 0 (non-pointer fields, whose JSON
// omits zeros) are told apart from fields it leaves out or sets to null,
// by path in the object (a List's item without its items[i]), so that
// apply can send them as kubectl does; a pointer keeps its false in the
// JSON, and an ignored field is never stored.
func TestDecodeRecordsExplicitZeros(t *testing.T) {
	const dep = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  minReadySeconds: 0
  paused: null
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostNetwork: false
      shareProcessNamespace: false
      automountServiceAccountToken: false
      containers:
      - name: web
        image: nginx:1.27
        stdin: false
        ports: [{containerPort: 80, hostPort: 0}]
`
	tests := []struct {
		name, src string
		want      map[string]any
	}{
		{"deployment", dep, map[string]any{
			"spec.minReadySeconds":                               int32(0),
			"spec.template.spec.hostNetwork":                     false,
			"spec.template.spec.containers[0].stdin":             false,
			"spec.template.spec.containers[0].ports[0].hostPort": int32(0),
		}},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: web}\n  spec:\n    publishNotReadyAddresses: false\n    ports: [{port: 80}]\n",
			map[string]any{"spec.publishNotReadyAddresses": false}},
		{"none", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\nimmutable: false\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("f.yaml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || !reflect.DeepEqual(docs[0].Zeros, tt.want) {
				t.Fatalf("zeros %#v, want %#v", docs[0].Zeros, tt.want)
			}
		})
	}
}
