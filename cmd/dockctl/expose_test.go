package main

import (
	"strings"
	"testing"
)

const exposeWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web, tier: front}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, ports: [{containerPort: 8080}, {containerPort: 9090, protocol: UDP}]}
`

// expose deployment makes kubectl's Service: the deployment's selector
// and labels, --port and --target-port, else the containers' ports (named
// port-N when several).
func TestExposeDeployment(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"expose-port", []string{"expose", "deployment", "web", "--port=80", "--target-port=8080", "--type=LoadBalancer"}},
		{"expose-introspected", []string{"expose", "deploy/web", "--name=web-all"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			dir := t.TempDir()
			if _, errOut, err := run(t, exposeWeb, "--state-dir", dir, "apply", "-f", "-"); err != nil {
				t.Fatalf("apply: %v %s", err, errOut)
			}
			out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, withFlags(tt.args, "--dry-run=client", "-o", "yaml")...)...)
			if err != nil {
				t.Fatalf("%v stderr %q", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
			out, _, err = run(t, "", append([]string{"--state-dir", dir}, tt.args...)...)
			if err != nil || !strings.HasSuffix(out, " created\n") {
				t.Fatalf("expose: %q %v", out, err)
			}
		})
	}
	if _, _, err := run(t, "", "--state-dir", t.TempDir(), "expose", "deployment", "nothing", "--port=80"); err == nil || !strings.Contains(err.Error(), `"nothing" not found`) {
		t.Fatalf("expose of a missing deployment: %v", err)
	}
}
