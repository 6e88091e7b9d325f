package manifests

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateProbesAndHooks(t *testing.T) {
	sidecar := func(extra string) string {
		return edit(t, "    spec:\n", "    spec:\n      initContainers:\n      - name: init\n        image: busybox:1.36\n"+extra)
	}
	tests := []struct {
		name  string
		input string
		want  []string // nil: valid
	}{
		{"startup, grpc and both hooks", base + `        startupProbe:
          httpGet: {path: /healthz, port: 8080}
          failureThreshold: 30
          periodSeconds: 1
        readinessProbe:
          grpc: {port: 9090, service: ready}
        lifecycle:
          postStart:
            exec: {command: [touch, /started]}
          preStop:
            sleep: {seconds: 5}
`, nil},
		{"preStop httpGet on a named port and tcpSocket postStart", edit(t, "        - containerPort: 8080\n", "        - containerPort: 8080\n          name: http\n") + `        lifecycle:
          preStop:
            httpGet: {path: /quit, port: http}
          postStart:
            tcpSocket: {port: 8080}
`, nil},
		{"sleep of zero seconds", base + "        lifecycle:\n          preStop:\n            sleep: {seconds: 0}\n", nil},
		{"sidecar with hooks and a startup probe", sidecar("        restartPolicy: Always\n        startupProbe:\n          exec: {command: [check]}\n        lifecycle:\n          preStop:\n            exec: {command: [drain]}\n"), nil},
		{"startup probe successThreshold", base + "        startupProbe:\n          tcpSocket: {port: 8080}\n          successThreshold: 2\n",
			[]string{`t.yaml:22: spec.template.spec.containers[0].startupProbe.successThreshold: must be 1 for a liveness probe`}},
		{"grpc port out of range", base + "        livenessProbe:\n          grpc: {port: 70000}\n",
			[]string{`t.yaml:21: spec.template.spec.containers[0].livenessProbe.grpc.port: must be between 1 and 65535, inclusive`}},
		{"grpc and exec together", base + "        readinessProbe:\n          grpc: {port: 9090}\n          exec: {command: [check]}\n",
			[]string{`t.yaml:20: spec.template.spec.containers[0].readinessProbe: may not specify more than one of exec, httpGet, tcpSocket or grpc`}},
		{"hook without handler", base + "        lifecycle:\n          preStop: {}\n",
			[]string{`t.yaml:21: spec.template.spec.containers[0].lifecycle.preStop: must specify a handler type (exec, httpGet, tcpSocket or sleep)`}},
		{"hook with two handlers", base + "        lifecycle:\n          postStart:\n            exec: {command: [a]}\n            sleep: {seconds: 1}\n",
			[]string{`t.yaml:21: spec.template.spec.containers[0].lifecycle.postStart: may not specify more than one handler type`}},
		{"hook exec without command", base + "        lifecycle:\n          preStop:\n            exec: {}\n",
			[]string{`t.yaml:22: spec.template.spec.containers[0].lifecycle.preStop.exec.command: required`}},
		{"sleep longer than the grace period", edit(t, "    spec:\n", "    spec:\n      terminationGracePeriodSeconds: 10\n") + "        lifecycle:\n          preStop:\n            sleep: {seconds: 11}\n",
			[]string{`t.yaml:23: spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds: must be non-negative and less than terminationGracePeriodSeconds (10)`}},
		{"negative sleep", base + "        lifecycle:\n          preStop:\n            sleep: {seconds: -1}\n",
			[]string{`t.yaml:22: spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds: must be non-negative and less than terminationGracePeriodSeconds (30)`}},
		{"hook httpGet on an unknown port name and bad scheme", base + "        lifecycle:\n          preStop:\n            httpGet: {port: admin, scheme: FTP}\n",
			[]string{
				`t.yaml:22: spec.template.spec.containers[0].lifecycle.preStop.httpGet.port: no container port named "admin"`,
				`t.yaml:22: spec.template.spec.containers[0].lifecycle.preStop.httpGet.scheme: unsupported value "FTP": must be "HTTP" or "HTTPS"`,
			}},
		{"init container with hooks and a startup probe", sidecar("        startupProbe:\n          exec: {command: [check]}\n        lifecycle:\n          preStop:\n            exec: {command: [drain]}\n"),
			[]string{
				`t.yaml:18: spec.template.spec.initContainers[0].startupProbe: may not be set for init containers without restartPolicy=Always`,
				`t.yaml:20: spec.template.spec.initContainers[0].lifecycle: may not be set for init containers without restartPolicy=Always`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if len(docs) != 1 {
					t.Fatalf("got %d documents", len(docs))
				}
				return
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T (%v), want ErrorList", err, err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
		})
	}
}

func TestStartupProbeAndHookDefaults(t *testing.T) {
	docs, err := Decode("t.yaml", []byte(base+"        startupProbe:\n          httpGet: {port: 8080}\n        lifecycle:\n          preStop:\n            httpGet: {port: 8080}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := docs[0].Deployment.Spec.Template.Spec.Containers[0]
	sp := c.StartupProbe
	if sp.TimeoutSeconds != 1 || sp.PeriodSeconds != 10 || sp.SuccessThreshold != 1 || sp.FailureThreshold != 3 || sp.HTTPGet.Path != "/" || sp.HTTPGet.Scheme != "HTTP" {
		t.Errorf("startupProbe defaults: %+v %+v", sp, sp.HTTPGet)
	}
	if h := c.Lifecycle.PreStop.HTTPGet; h.Path != "/" || h.Scheme != "HTTP" {
		t.Errorf("preStop httpGet defaults: %+v", h)
	}
}
