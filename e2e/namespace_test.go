//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// inNamespace returns the containers of cs in namespace ns (their label;
// none is default, as containers of earlier releases have it).
func inNamespace(cs []container.Summary, ns string) []container.Summary {
	var out []container.Summary
	for _, c := range cs {
		got := c.Labels["io.dockctl.namespace"]
		if got == "" {
			got = "default"
		}
		if got == ns {
			out = append(out, c)
		}
	}
	return out
}

// TestNamespaceSideBySide: a deployment of namespace team and one of the
// same name in default run side by side under one instance, under names
// of their own; `get -A` shows both; deleting team's removes its containers
// only.
func TestNamespaceSideBySide(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	if out := e.mustDockctl("", "create", "namespace", "team"); out != "namespace/team created\n" {
		t.Fatalf("create namespace: %q", out)
	}
	path := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(path, []byte(webManifest(2, "one")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.mustDockctl("", "apply", "-f", path); out != "deployment/web created\n" {
		t.Fatalf("apply: %q", out)
	}
	if out := e.mustDockctl("", "apply", "-n", "team", "-f", path); out != "deployment/web created\n" {
		t.Fatalf("apply -n team: %q", out)
	}
	var def, team []container.Summary
	eventually(t, 2*time.Minute, "2 running replicas of web in each namespace", func() (bool, string) {
		cs := e.deploymentContainers("web")
		def, team = inNamespace(cs, "default"), inNamespace(cs, "team")
		running := 0
		for _, c := range cs {
			if c.State == "running" {
				running++
			}
		}
		return len(def) == 2 && len(team) == 2 && running == 4, describe(cs)
	})
	hash := def[0].Labels["io.dockctl.template-hash"]
	for i := range 2 {
		for _, tt := range []struct {
			c    container.Summary
			want string
		}{
			{def[i], e.instance + "_web-" + hash + "-"},
			{team[i], e.instance + "_web.team-" + hash + "-"},
		} {
			if name := strings.TrimPrefix(tt.c.Names[0], "/"); !strings.HasPrefix(name, tt.want) {
				t.Errorf("container %s, want a name starting %s", name, tt.want)
			}
		}
	}
	eventually(t, time.Minute, "get deployments -A to show both ready", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments", "-A")
		return regexpMatch(`(?m)^NAMESPACE\s+NAME\s+READY`, out) &&
			regexpMatch(`(?m)^default\s+web\s+2/2\s`, out) && regexpMatch(`(?m)^team\s+web\s+2/2\s`, out), out
	})
	if out := e.mustDockctl("", "get", "pods", "-n", "team"); strings.Count(out, "web-"+hash+"-") != 2 {
		t.Errorf("get pods -n team:\n%s", out)
	}

	if out := e.mustDockctl("", "delete", "-n", "team", "deployment", "web", "--wait", "--timeout", "2m"); !strings.Contains(out, "deployment/web deleted") {
		t.Fatalf("delete -n team: %q", out)
	}
	eventually(t, time.Minute, "team's containers gone", func() (bool, string) {
		cs := e.deploymentContainers("web")
		return len(inNamespace(cs, "team")) == 0, describe(cs)
	})
	for _, c := range def {
		assertUntouched(t, c.ID)
	}
	if out := e.mustDockctl("", "get", "deployments", "-A"); regexpMatch(`(?m)^team\s`, out) || !regexpMatch(`(?m)^default\s+web\s+2/2\s`, out) {
		t.Errorf("get deployments -A after the deletion:\n%s", out)
	}
}
