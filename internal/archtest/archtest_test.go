package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"reflect"
	"slices"
	"testing"
)

// loadModule is the module's import graph as `go list` reads it, for the
// default build and for the e2e build tag (its files import what the
// default build does not): the union of both, test files excluded.
func loadModule(t *testing.T) Graph {
	t.Helper()
	g := Graph{}
	for _, tags := range []string{"", "e2e"} {
		cmd := exec.Command("go", "list", "-e", "-tags", tags, "-json=ImportPath,Imports,Error", "./...")
		cmd.Dir = "../.."
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, stderr.String())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath string
				Imports    []string
				Error      *struct{ Err string }
			}
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("go list -tags %q: decode: %v", tags, err)
			}
			if p.Error != nil {
				t.Fatalf("go list -tags %q: %s: %s", tags, p.ImportPath, p.Error.Err)
			}
			for _, imp := range p.Imports {
				if !slices.Contains(g[p.ImportPath], imp) {
					g[p.ImportPath] = append(g[p.ImportPath], imp)
				}
			}
			if _, ok := g[p.ImportPath]; !ok {
				g[p.ImportPath] = nil
			}
		}
	}
	return g
}

// The module keeps every architecture rule; a violation names the rule and
// the chain of imports that breaks it.
func TestModuleKeepsArchitectureRules(t *testing.T) {
	g := loadModule(t)
	for _, want := range []string{m("manifests"), m("store"), m("dockerx"), m("reconciler"), m("internal/dataplane")} {
		if _, ok := g[want]; !ok {
			t.Fatalf("go list did not list %s: the graph is not the module's", want)
		}
	}
	for _, v := range Check(g, Rules) {
		t.Error(v)
	}
}

// Each rule catches the import it forbids, directly or (unless Direct)
// through other packages of the module, and names the whole chain; the
// exceptions it makes are not reported.
func TestEachRuleCatchesAViolation(t *testing.T) {
	// clean is a graph that keeps every rule, shaped like the module.
	clean := func() Graph {
		return Graph{
			m("manifests"):            {"fmt", "k8s.io/api/core/v1", m("internal/atomicfiles")},
			m("internal/atomicfiles"): {"os"},
			m("internal/helperapi"):   {"encoding/json"},
			m("internal/holder"):      {"debug/elf"},
			m("internal/dataplane"):   {m("internal/helperapi"), m("internal/atomicfiles"), m("internal/clusterdns")},
			m("internal/clusterdns"):  {m("internal/helperapi")},
			m("internal/grpcprobe"):   {"net/http"},
			m("internal/standinapi"):  nil,
			m("internal/dockerfake"):  {m("dockerx"), "github.com/docker/docker/api/types/container"},
			m("cmd/workload"):         {m("internal/standinapi"), "google.golang.org/grpc"},
			m("store"):                {m("manifests")},
			m("dockerx"):              {m("manifests"), m("internal/holder"), "github.com/docker/docker/client"},
			m("reconciler"):           {m("store"), m("dockerx"), m("reconciler/services")},
			m("reconciler/services"):  {m("store"), m("dockerx")},
			m("metrics"):              {m("reconciler")},
			m("bench/cmd/dockbench"):  {m("dockerx"), "github.com/docker/docker/client"},
			m("e2e"):                  {"github.com/docker/docker/client"},
			m("compose"):              {m("manifests"), "github.com/compose-spec/compose-go/v2/cli"},
			m("cmd/dockctl"):          {m("reconciler"), m("store"), m("internal/dataplane"), m("compose")},
		}
	}
	if vs := Check(clean(), Rules); len(vs) != 0 {
		t.Fatalf("the clean graph breaks rules: %v", vs)
	}
	for _, tc := range []struct {
		name string
		// add is the import that breaks the rule: from -> to.
		from, to string
		want     Violation
	}{
		{
			"manifests imports a package of the module directly",
			m("manifests"), m("store"),
			Violation{Rules[0].Name, []string{m("manifests"), m("store")}},
		},
		{
			"manifests reaches one through an internal helper",
			m("internal/atomicfiles"), m("dockerx"),
			Violation{Rules[0].Name, []string{m("manifests"), m("internal/atomicfiles"), m("dockerx")}},
		},
		{
			"store reaches a controller subpackage",
			m("store"), m("reconciler/services"),
			Violation{Rules[1].Name, []string{m("store"), m("reconciler/services")}},
		},
		{
			"store reaches the Docker client through manifests",
			m("manifests"), m("dockerx"),
			Violation{Rules[1].Name, []string{m("store"), m("manifests"), m("dockerx")}},
		},
		{
			"dockerx imports store",
			m("dockerx"), m("store"),
			Violation{Rules[2].Name, []string{m("dockerx"), m("store")}},
		},
		{
			"a package imports cmd/...",
			m("metrics"), m("cmd/dockctl"),
			Violation{Rules[3].Name, []string{m("metrics"), m("cmd/dockctl")}},
		},
		{
			"a subpackage of reconciler imports its parent",
			m("reconciler/services"), m("reconciler"),
			Violation{Rules[4].Name, []string{m("reconciler/services"), m("reconciler")}},
		},
		{
			"store imports the Docker SDK",
			m("store"), "github.com/docker/docker/api/types/container",
			Violation{Rules[5].Name, []string{m("store"), "github.com/docker/docker/api/types/container"}},
		},
		{
			"a controller imports the Docker CLI's config",
			m("reconciler/services"), "github.com/docker/cli/cli/config",
			Violation{Rules[5].Name, []string{m("reconciler/services"), "github.com/docker/cli/cli/config"}},
		},
		{
			"helper code reaches the Docker client through a helper package",
			m("internal/clusterdns"), m("dockerx"),
			Violation{Rules[6].Name, []string{m("internal/dataplane"), m("internal/clusterdns"), m("dockerx")}},
		},
		{
			"the workload links the store",
			m("cmd/workload"), m("store"),
			Violation{Rules[6].Name, []string{m("cmd/workload"), m("store")}},
		},
		{
			"the conversion reaches the store",
			m("compose"), m("store"),
			Violation{Rules[7].Name, []string{m("compose"), m("store")}},
		},
		{
			"a command reads Compose files itself",
			m("cmd/dockctl"), "github.com/compose-spec/compose-go/v2/types",
			Violation{Rules[8].Name, []string{m("cmd/dockctl"), "github.com/compose-spec/compose-go/v2/types"}},
		},
		{
			"a printer links text/template's executor",
			m("cmd/dockctl"), "text/template",
			Violation{Rules[9].Name, []string{m("cmd/dockctl"), "text/template"}},
		},
		{
			"the grpc probe imports grpc-go",
			m("internal/grpcprobe"), "google.golang.org/grpc/health/grpc_health_v1",
			Violation{Rules[10].Name, []string{m("internal/grpcprobe"), "google.golang.org/grpc/health/grpc_health_v1"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := clean()
			g[tc.from] = append(g[tc.from], tc.to)
			got := Check(g, Rules)
			found := false
			for _, v := range got {
				if reflect.DeepEqual(v, tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("Check = %v\nwant among them: %v", got, tc.want)
			}
		})
	}
}

// A rule whose packages are all gone (renamed, moved) is reported rather
// than passing without checking anything.
func TestRuleMatchingNoPackageIsReported(t *testing.T) {
	r := Rule{Name: "gone", From: []string{m("gone/...")}, Forbid: []string{m("store")}}
	got := Check(Graph{m("store"): nil}, []Rule{r})
	if len(got) != 1 || got[0].Rule != "gone" {
		t.Fatalf("Check = %v, want one violation of rule gone", got)
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, pkg string
		want         bool
	}{
		{m("reconciler"), m("reconciler"), true},
		{m("reconciler"), m("reconciler/services"), false},
		{m("reconciler/..."), m("reconciler"), true},
		{m("reconciler/..."), m("reconciler/services"), true},
		{m("reconciler/..."), m("reconcilerx"), false},
		{"github.com/docker/docker/...", "github.com/docker/go-units", false},
	} {
		if got := Match(tc.pattern, tc.pkg); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.pkg, got, tc.want)
		}
	}
}
