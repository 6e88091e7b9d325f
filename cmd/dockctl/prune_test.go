package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// `apply --prune` deletes only with --all or -l, as in kubectl: a bare
// --prune with one file used to delete every other deployment.
func TestApplyPrune(t *testing.T) {
	deployment := func(name, tier string) string {
		return strings.Replace(strings.ReplaceAll(webYAML, "web", name), "  labels: {app: "+name+"}\nspec",
			"  labels: {app: "+name+", tier: "+tier+"}\nspec", 1)
	}
	web, api, db := deployment("web", "front"), deployment("api", "back"), deployment("db", "back")
	setup := func(t *testing.T) []string {
		base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
		if _, errOut, err := run(t, web+"---\n"+api+"---\n"+db, append(base, "apply", "-f", "-")...); err != nil {
			t.Fatalf("apply: %v %s", err, errOut)
		}
		return base
	}
	tests := []struct {
		name    string
		stdin   string
		args    []string
		want    string // output; "" with wantErr
		wantErr string
		left    string // live deployments afterwards
	}{
		{"bare prune is refused", web, []string{"--prune"}, "", "--prune needs --all or -l", "api db web"},
		{"all and selector", web, []string{"--prune", "--all", "-l", "tier=front"}, "", "--all and -l", "api db web"},
		{"all without prune", web, []string{"--all"}, "", "--all", "api db web"},
		{"prune all", web, []string{"--prune", "--all"},
			"deployment/web unchanged\ndeployment/api pruned\ndeployment/db pruned\n", "", "web"},
		{"prune all dry run", web, []string{"--prune", "--all", "--dry-run"},
			"deployment/web unchanged (dry run)\ndeployment/api pruned (dry run)\ndeployment/db pruned (dry run)\n", "", "api db web"},
		// Only what matches the selector is pruned, and, as in kubectl,
		// only what matches it in the files is applied.
		{"prune by selector", api + "---\n" + strings.Replace(web, "image: dockctl-workload:dev", "image: other:1", 1),
			[]string{"--prune", "-l", "tier=back"}, "deployment/api unchanged\ndeployment/db pruned\n", "", "api web"},
		{"prune by selector dry run", api, []string{"--prune", "-l", "tier in (back)", "--dry-run=client"},
			"deployment/api unchanged (dry run)\ndeployment/db pruned (dry run)\n", "", "api db web"},
		{"selector matching nothing in the files", web, []string{"--prune", "-l", "tier=back"}, "", "no deployments", "api db web"},
		{"invalid selector", web, []string{"--prune", "-l", "tier in ("}, "", "selector", "api db web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := setup(t)
			out, errOut, err := run(t, tt.stdin, append(append(base, "apply", "-f", "-"), tt.args...)...)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q (out %q)", err, tt.wantErr, out)
			case tt.wantErr == "" && (err != nil || out != tt.want):
				t.Fatalf("out %q err %v stderr %q, want %q", out, err, errOut, tt.want)
			}
			st := openForTest(t, base)
			recs, err := st.List()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range recs {
				names = append(names, r.Name)
			}
			if got := strings.Join(names, " "); got != tt.left {
				t.Fatalf("live afterwards: %q, want %q", got, tt.left)
			}
			if w, ok := findRecord(recs, "web"); tt.name == "prune by selector" && ok && w.Deployment.Container().Image != "dockctl-workload:dev" {
				t.Fatalf("web does not match -l tier=back but was applied: %s", w.Deployment.Container().Image)
			}
		})
	}
}

func openForTest(t *testing.T, base []string) *store.Store {
	t.Helper()
	st, err := store.OpenReadOnly(base[1], base[3])
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func findRecord(recs []*store.Record, name string) (*store.Record, bool) {
	for _, r := range recs {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}
