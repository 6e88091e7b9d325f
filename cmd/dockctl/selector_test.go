package main

import (
	"sort"
	"strings"
	"testing"
)

// names returns the first column of a table, header excluded.
func names(table string) []string {
	var out []string
	for i, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if f := strings.Fields(line); i > 0 && len(f) > 0 {
			out = append(out, f[0])
		}
	}
	sort.Strings(out)
	return out
}

// `get containers -l` takes a Kubernetes label selector (=, ==, !=, in,
// notin, key, !key), and an invalid one is an error rather than a filter
// that silently matches everything or nothing.
func TestGetContainersSelector(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "a"})
	f.addContainer("t1_web-abc-1", "t1", "web", map[string]string{"app": "b"})
	f.addContainer("t1_api-abc-0", "t1", "api", nil)
	f.addContainer("t2_web-abc-0", "t2", "web", map[string]string{"app": "a"}) // another instance
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1", "get", "containers"}
	all := "t1_api-abc-0 t1_web-abc-0 t1_web-abc-1"
	tests := []struct {
		args []string
		want string // space-separated names; "" for none
	}{
		{nil, all},
		{[]string{"-l", "app"}, "t1_web-abc-0 t1_web-abc-1"},
		{[]string{"-l", "!app"}, "t1_api-abc-0"},
		{[]string{"-l", "app=a"}, "t1_web-abc-0"},
		{[]string{"-l", "app==a"}, "t1_web-abc-0"},
		{[]string{"-l", "app!=a"}, "t1_api-abc-0 t1_web-abc-1"},
		{[]string{"-l", "app in (a,b)"}, "t1_web-abc-0 t1_web-abc-1"},
		{[]string{"-l", "app in (a, c)"}, "t1_web-abc-0"},
		{[]string{"-l", "app notin (a)"}, "t1_api-abc-0 t1_web-abc-1"},
		{[]string{"-l", "app=c"}, ""},
		{[]string{"-l", "deployment=web"}, "t1_web-abc-0 t1_web-abc-1"},
		{[]string{"-l", "io.dockctl.deployment=api"}, "t1_api-abc-0"},
		{[]string{"-l", "deployment=web,app!=b"}, "t1_web-abc-0"},
		{[]string{"-l", "revision=abc,!app"}, "t1_api-abc-0"},
		{[]string{"t1_web-abc-1"}, "t1_web-abc-1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := run(t, "", append(base, tt.args...)...)
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, errOut)
			}
			if got := strings.Join(names(out), " "); got != tt.want {
				t.Fatalf("got %q, want %q\n%s", got, tt.want, out)
			}
			if tt.want == "" && !strings.Contains(errOut, "No resources found in default namespace") {
				t.Fatalf("stderr %q", errOut)
			}
		})
	}
	if _, _, err := run(t, "", append(base, "t1_web-abc-1", "-l", "app=a")...); err == nil || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("a name and a selector: %v", err)
	}
	for _, bad := range []string{"app in (a", "app=a b", "=a", "app notin", "!app=a"} {
		t.Run("invalid "+bad, func(t *testing.T) {
			_, _, err := run(t, "", append(base, "-l", bad)...)
			if err == nil || !strings.Contains(err.Error(), "selector") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want one error line about the selector, got %v", err)
			}
		})
	}
}

// `get deployments -l` matches the deployments' own metadata.labels, as
// kubectl does.
func TestGetDeploymentsSelector(t *testing.T) {
	startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	front := strings.Replace(webYAML, "  labels: {app: web}\nspec", "  labels: {app: web, tier: front}\nspec", 1)
	api := strings.ReplaceAll(webYAML, "web", "api")
	for _, src := range []string{front, api} {
		if _, errOut, err := run(t, src, append(base, "apply", "-f", "-")...); err != nil {
			t.Fatalf("apply: %v %s", err, errOut)
		}
	}
	tests := []struct {
		sel, want string
	}{
		{"", "api web"},
		{"tier=front", "web"},
		{"tier", "web"},
		{"!tier", "api"},
		{"app in (web,api)", "api web"},
		{"app notin (web)", "api"},
		{"app!=web", "api"},
		{"app=nope", ""},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			args := append(base, "get", "deployments")
			if tt.sel != "" {
				args = append(args, "-l", tt.sel)
			}
			out, errOut, err := run(t, "", args...)
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, errOut)
			}
			if got := strings.Join(names(out), " "); got != tt.want {
				t.Fatalf("got %q, want %q\n%s", got, tt.want, out)
			}
			if tt.want == "" && !strings.Contains(errOut, "No resources found in default namespace") {
				t.Fatalf("stderr %q", errOut)
			}
		})
	}
	// -o json with a selector is a List of the matching ones only.
	out, _, err := run(t, "", append(base, "get", "deployments", "-l", "tier=front", "-o", "json")...)
	if err != nil || !strings.Contains(out, `"kind": "List"`) || !strings.Contains(out, `"name": "web"`) || strings.Contains(out, `"name": "api"`) {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if _, _, err := run(t, "", append(base, "get", "deployments", "-l", "tier in (")...); err == nil || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("invalid selector: %v", err)
	}
}
