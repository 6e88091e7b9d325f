package main

import (
	"strings"
	"testing"
)

// api-resources prints the kind table as kubectl api-resources prints a
// server's kinds; the golden files are the contract.
func TestAPIResourcesGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"api-resources", nil},
		{"api-resources-namespaced-false-name", []string{"--namespaced=false", "-o", "name"}},
		{"api-resources-namespaced-true", []string{"--namespaced=true", "--no-headers"}},
		{"api-resources-apps-wide", []string{"--api-group=apps", "-o", "wide"}},
		{"api-resources-sort-by-kind-name", []string{"--sort-by=kind", "-o", "name"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			out, errOut, err := run(t, "", append([]string{"api-resources"}, tt.args...)...)
			if err != nil || errOut != "" {
				t.Fatalf("%v %s", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
		})
	}
}

// Every kind of the table is a row, under the names get accepts: a
// resource listed is a resource get, describe and delete understand.
func TestAPIResourcesListsEveryKindUnderNamesGetAccepts(t *testing.T) {
	out, _, err := run(t, "", "api-resources", "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(kinds) {
		t.Fatalf("%d rows, want one per kind (%d):\n%s", len(lines), len(kinds), out)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if _, ok := kindAlias(f[0]); !ok {
			t.Errorf("resource %q is not a name the commands accept", f[0])
		}
		if len(f) == 5 {
			for _, s := range strings.Split(f[1], ",") {
				if k, ok := kindAlias(s); !ok || apiResources[k].resource != f[0] {
					t.Errorf("short name %q of %s is not an alias of it", s, f[0])
				}
			}
		}
	}
}

// The flags' mistakes are kubectl's errors; get without a kind points at
// api-resources, as kubectl's.
func TestAPIResourcesErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"api-resources", "-o", "json"}, "--output json is not available"},
		{[]string{"api-resources", "--sort-by=age"}, "--sort-by accepts only name or kind"},
		{[]string{"api-resources", "--namespaced=maybe"}, `invalid argument "maybe" for --namespaced`},
		{[]string{"api-resources", "pods"}, `unknown command "pods" for "dockctl api-resources"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := run(t, "", tt.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
	_, errOut, _ := run(t, "", "get")
	if !strings.Contains(errOut, `Use "dockctl api-resources" for a complete list of supported resources.`) {
		t.Errorf("get without a kind: %q does not point at api-resources", errOut)
	}
}
