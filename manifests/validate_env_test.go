package manifests

import (
	"strings"
	"testing"
)

// envBase appends env and envFrom lines to the container of base (line 20
// is the first appended line).
func envBase(lines string) string { return base + lines }

func TestEnvSourcesValid(t *testing.T) {
	in := envBase(`        env:
        - name: MODE
          valueFrom:
            configMapKeyRef: {name: app-config, key: mode}
        - name: PASSWORD
          valueFrom:
            secretKeyRef: {name: db.creds, key: password, optional: true}
        - name: POD_NAME
          valueFrom:
            fieldRef: {fieldPath: metadata.name}
        - name: POD_IP
          valueFrom:
            fieldRef: {apiVersion: v1, fieldPath: status.podIP}
        - name: TIER
          valueFrom:
            fieldRef: {fieldPath: "metadata.labels['app']"}
        - name: OWNER
          valueFrom:
            fieldRef: {fieldPath: "metadata.annotations['example.com/owner']"}
        - name: MEM
          valueFrom:
            resourceFieldRef: {resource: limits.memory, divisor: 1Mi}
        - name: CPU
          valueFrom:
            resourceFieldRef: {containerName: web, resource: requests.cpu, divisor: 1m}
        envFrom:
        - configMapRef: {name: app-config}
        - prefix: DB_
          secretRef: {name: db.creds, optional: true}
`)
	docs, err := Decode("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	c := one(t, docs).Deployment.Container()
	if len(c.Env) != 8 || len(c.EnvFrom) != 2 {
		t.Fatalf("env %d, envFrom %d: want 8 and 2", len(c.Env), len(c.EnvFrom))
	}
	if r := c.Env[1].ValueFrom.SecretKeyRef; r == nil || r.Name != "db.creds" || r.Optional == nil || !*r.Optional {
		t.Errorf("secretKeyRef = %+v", r)
	}
	if r := c.Env[6].ValueFrom.ResourceFieldRef; r == nil || r.Divisor == nil || r.Divisor.String() != "1Mi" {
		t.Errorf("resourceFieldRef = %+v", r)
	}
	if ef := c.EnvFrom[1]; ef.Prefix != "DB_" || ef.SecretRef == nil || ef.SecretRef.Name != "db.creds" {
		t.Errorf("envFrom[1] = %+v", ef)
	}
}

func TestEnvSourcesInvalid(t *testing.T) {
	const c0 = "spec.template.spec.containers[0]"
	tests := []struct {
		name  string
		lines string
		want  []string
	}{
		{"no source", "        env:\n        - name: A\n          valueFrom: {}\n",
			[]string{`t.yaml:22: ` + c0 + ".env[0].valueFrom: must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"}},
		{"two sources",
			"        env:\n        - name: A\n          valueFrom:\n            fieldRef: {fieldPath: metadata.name}\n            configMapKeyRef: {name: c, key: k}\n",
			[]string{`t.yaml:22: ` + c0 + ".env[0].valueFrom: may not have more than one field specified at a time"}},
		{"value and valueFrom",
			"        env:\n        - name: A\n          value: x\n          valueFrom:\n            fieldRef: {fieldPath: metadata.name}\n",
			[]string{`t.yaml:23: ` + c0 + ".env[0].valueFrom: may not be specified when `value` is not empty"}},
		{"configMapKeyRef without name or key",
			"        env:\n        - name: A\n          valueFrom:\n            configMapKeyRef: {optional: true}\n",
			[]string{
				`t.yaml:23: ` + c0 + `.env[0].valueFrom.configMapKeyRef.name: required`,
				`t.yaml:23: ` + c0 + `.env[0].valueFrom.configMapKeyRef.key: required`,
			}},
		{"secretKeyRef with a bad name and key",
			"        env:\n        - name: A\n          valueFrom:\n            secretKeyRef: {name: Bad_Name, key: \"a/b\"}\n",
			[]string{
				`t.yaml:23: ` + c0 + `.env[0].valueFrom.secretKeyRef.name: invalid value "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`t.yaml:23: ` + c0 + `.env[0].valueFrom.secretKeyRef.key: invalid value "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
			}},
		{"unsupported fieldPath",
			"        env:\n        - name: A\n          valueFrom:\n            fieldRef: {fieldPath: spec.hostname}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.fieldRef.fieldPath: unsupported value "spec.hostname": must be one of "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs", or metadata.labels['KEY'] or metadata.annotations['KEY']`}},
		{"subscript on another field",
			"        env:\n        - name: A\n          valueFrom:\n            fieldRef: {fieldPath: \"spec.containers['web']\"}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.fieldRef.fieldPath: unsupported value "spec.containers['web']": a subscript is supported on "metadata.labels" and "metadata.annotations" only`}},
		{"bad label key",
			"        env:\n        - name: A\n          valueFrom:\n            fieldRef: {fieldPath: \"metadata.labels['-x']\"}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.fieldRef.fieldPath: invalid label key "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		{"fieldRef of another API version",
			"        env:\n        - name: A\n          valueFrom:\n            fieldRef: {apiVersion: v2, fieldPath: metadata.name}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.fieldRef.apiVersion: unsupported value "v2": must be "v1"`}},
		{"fieldRef without fieldPath",
			"        env:\n        - name: A\n          valueFrom:\n            fieldRef: {apiVersion: v1}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.fieldRef.fieldPath: required`}},
		{"resourceFieldRef of an unknown resource",
			"        env:\n        - name: A\n          valueFrom:\n            resourceFieldRef: {resource: limits.gpu}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.resourceFieldRef.resource: unsupported value "limits.gpu": must be one of "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"`}},
		{"resourceFieldRef without resource",
			"        env:\n        - name: A\n          valueFrom:\n            resourceFieldRef: {divisor: 1m}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.resourceFieldRef.resource: required`}},
		{"cpu divisor",
			"        env:\n        - name: A\n          valueFrom:\n            resourceFieldRef: {resource: limits.cpu, divisor: 1Mi}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.resourceFieldRef.divisor: invalid value "1Mi": only divisor's values 1m and 1 are supported with the cpu resource`}},
		{"memory divisor",
			"        env:\n        - name: A\n          valueFrom:\n            resourceFieldRef: {resource: requests.memory, divisor: 3}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.resourceFieldRef.divisor: invalid value "3": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`}},
		{"resourceFieldRef of an unknown container",
			"        env:\n        - name: A\n          valueFrom:\n            resourceFieldRef: {containerName: nope, resource: limits.cpu}\n",
			[]string{`t.yaml:23: ` + c0 + `.env[0].valueFrom.resourceFieldRef.containerName: no container named "nope" in the pod`}},
		{"envFrom without source",
			"        envFrom:\n        - prefix: X_\n",
			[]string{`t.yaml:21: ` + c0 + ".envFrom[0]: must specify one of: `configMapRef` or `secretRef`"}},
		{"envFrom with both sources",
			"        envFrom:\n        - configMapRef: {name: a}\n          secretRef: {name: b}\n",
			[]string{`t.yaml:22: ` + c0 + ".envFrom[0].secretRef: may not have more than one field specified at a time"}},
		{"envFrom with a bad prefix and no name",
			"        envFrom:\n        - prefix: \"1=\"\n          configMapRef: {optional: true}\n",
			[]string{
				`t.yaml:21: ` + c0 + `.envFrom[0].prefix: invalid value "1=": a valid environment variable name must consist only of printable ASCII characters other than '='`,
				`t.yaml:22: ` + c0 + `.envFrom[0].configMapRef.name: required`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("t.yaml", []byte(envBase(tt.lines)))
			if err == nil {
				t.Fatalf("Decode succeeded, want:\n%s", strings.Join(tt.want, "\n"))
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
		})
	}
}

// TestEnvNamesFollowKubernetes134RelaxedRule: an env[].name and an
// envFrom prefix are taken as a Kubernetes 1.34 API server takes them
// (RelaxedEnvironmentVariableValidation, GA: IsRelaxedEnvVarName): any
// printable ASCII but '=', so a digit first, a dot, a space or a colon is
// a name; an '=', a tab or a letter that is not ASCII is refused.
func TestEnvNamesFollowKubernetes134RelaxedRule(t *testing.T) {
	const refused = "a valid environment variable name must consist only of printable ASCII characters other than '='"
	for _, tt := range []struct {
		name, field, value string // field: "env" or "prefix"; value as YAML
		ok                 bool
	}{
		{"env: a C identifier", "env", `MODE`, true},
		{"env: a digit first", "env", `1st`, true},
		{"env: a dot and a dash", "env", `my.env-name`, true},
		{"env: a space and a colon", "env", `"A B:c"`, true},
		{"env: punctuation", "env", `"~!@#$%^&*()[]{}|;'<>?,/"`, true},
		{"env: an =", "env", `A=1`, false},
		{"env: a tab", "env", `"A\tB"`, false},
		{"env: a letter that is not ASCII", "env", `ÉTÉ`, false},
		{"prefix: a digit first and a dash", "prefix", `1st-`, true},
		{"prefix: a space", "prefix", `"my app "`, true},
		{"prefix: an =", "prefix", `"x="`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := "        env:\n        - name: " + tt.value + "\n          value: x\n"
			if tt.field == "prefix" {
				lines = "        envFrom:\n        - prefix: " + tt.value + "\n          configMapRef: {name: app}\n"
			}
			_, err := Decode("t.yaml", []byte(envBase(lines)))
			switch {
			case tt.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tt.ok && err == nil:
				t.Errorf("accepted, want %q", refused)
			case !tt.ok && !strings.Contains(err.Error(), refused):
				t.Errorf("error %q, want %q", err, refused)
			}
		})
	}
}

func TestSplitFieldPath(t *testing.T) {
	for _, tt := range []struct {
		in, path, sub string
		ok            bool
	}{
		{"metadata.labels['app']", "metadata.labels", "app", true},
		{"metadata.annotations['a.b/c']", "metadata.annotations", "a.b/c", true},
		{"metadata.name", "metadata.name", "", false},
		{"['x']", "['x']", "", false},
	} {
		p, s, ok := SplitFieldPath(tt.in)
		if p != tt.path || s != tt.sub || ok != tt.ok {
			t.Errorf("SplitFieldPath(%q) = %q, %q, %v; want %q, %q, %v", tt.in, p, s, ok, tt.path, tt.sub, tt.ok)
		}
	}
}
