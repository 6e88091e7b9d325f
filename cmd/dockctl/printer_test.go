package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// pr is the printer of -o output.
func pr(t *testing.T, output string) *printer {
	t.Helper()
	p, err := newPrinter(printFlags{output: output})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kindRenderers print a fixture of each kind get lists with a printer
// (single: a get of one name, the first object of the fixture alone).
var kindRenderers = map[string]func(t *testing.T, w io.Writer, p *printer, single bool) error{
	"deployments": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		snap, recs := fixture(t)
		return renderDeployments(w, snap, recs, p, single, false)
	},
	"pods": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		snap := podsFixture(t)
		pods := snap.allPods()
		if single {
			pods = pods[:1]
		}
		return renderPods(w, snap, pods, p, single, false)
	},
	"containers": func(t *testing.T, w io.Writer, p *printer, _ bool) error {
		snap, _ := fixture(t)
		var objs []containerObject
		for _, c := range snap.containers {
			objs = append(objs, snap.containerObject(c))
		}
		return renderContainers(w, snap, objs, p, false)
	},
	"namespaces": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		ns := func(name string, lbls map[string]string, phase corev1.NamespacePhase, age time.Duration) namespaceEntry {
			return namespaceEntry{&store.NamespaceRecord{Namespace: manifests.Namespace{APIVersion: "v1", Kind: "Namespace",
				Metadata: manifests.ObjectMeta{Name: name, Labels: lbls}}, Created: now.Add(-age)}, phase}
		}
		list := []namespaceEntry{
			ns("default", nil, corev1.NamespaceActive, 72*time.Hour),
			ns("team", map[string]string{"team": "a", "tier": "back"}, corev1.NamespaceActive, time.Hour),
			ns("old", map[string]string{"team": "b"}, corev1.NamespaceTerminating, 5*time.Minute),
		}
		if single {
			list = list[1:2]
		}
		return renderNamespaces(w, &snapshot{now: now}, list, p, single)
	},
	"services": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		snap := serviceFixture(t)
		list := inDefault(snap)
		if single {
			list = list[:1]
		}
		return renderServices(w, snap, list, p, single, false)
	},
	"endpoints": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		snap := serviceFixture(t)
		list := keep(inDefault(snap), func(e serviceEntry) bool { return len(e.rec.Service.Spec.Selector) > 0 })
		return renderEndpoints(w, snap, list, p, single, false)
	},
	"configmaps": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		_, cms, _ := configFixture(t)
		return renderConfigMaps(w, fixtureTime.Add(90*time.Minute), inNamespace(cms, cmMeta, "default"), p, single, false)
	},
	"secrets": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		_, _, secs := configFixture(t)
		list := inNamespace(secs, secMeta, "default")
		if single {
			list = list[:1]
		}
		return renderSecrets(w, fixtureTime.Add(90*time.Minute), list, p, single, false)
	},
	"pvc": func(t *testing.T, w io.Writer, p *printer, single bool) error {
		recs, vols := claimFixture()
		rows := bindRows("default", recs, vols, func(m *manifests.ObjectMeta) bool { return m.NamespaceOrDefault() == "default" })
		return renderClaims(w, fixtureTime, rows, p, single, false)
	},
}

// Every output option, on several kinds: golden files are the contract.
func TestGetOutputOptionsGolden(t *testing.T) {
	for _, tt := range []struct {
		golden, kind string
		flags        printFlags
		single       bool
	}{
		{"get-deployments-name", "deployments", printFlags{output: "name"}, false},
		{"get-deployments-show-labels", "deployments", printFlags{showLabels: true}, false},
		{"get-deployments-wide-label-columns", "deployments", printFlags{output: "wide", labelColumns: []string{"app", "example.com/tier"}, showLabels: true}, false},
		{"get-deployments-jsonpath-single", "deployments", printFlags{output: `jsonpath={.metadata.name} {.status.readyReplicas}/{.spec.replicas}{"\n"}`}, true},
		{"get-pods-custom-columns", "pods", printFlags{output: "custom-columns=NAME:.metadata.name,PHASE:.status.phase,RESTARTS:.status.containerStatuses[*].restartCount,NODE:.spec.nodeName"}, false},
		{"get-pods-sort-by-restarts", "pods", printFlags{sortBy: "{.status.containerStatuses[0].restartCount}", labelColumns: []string{"app"}}, false},
		{"get-pods-jsonpath-range", "pods", printFlags{output: `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}`}, false},
		{"get-containers-name", "containers", printFlags{output: "name"}, false},
		{"get-containers-sort-by-name", "containers", printFlags{output: "wide", sortBy: ".name"}, false},
		{"get-namespaces-table-show-labels", "namespaces", printFlags{showLabels: true, labelColumns: []string{"team"}}, false},
		{"get-namespaces-wide", "namespaces", printFlags{output: "wide"}, false},
		{"get-namespaces-jsonpath-as-json-status", "namespaces", printFlags{output: "jsonpath-as-json={.status}"}, true},
		{"get-services-custom-columns", "services", printFlags{output: "custom-columns=NAME:metadata.name,IP:{.spec.clusterIP},PORTS:{.spec.ports[*].port},SELECTOR:.spec.selector.app"}, false},
		{"get-services-sort-by-cluster-ip", "services", printFlags{output: "name", sortBy: "{.spec.clusterIP}"}, false},
		{"get-services-jsonpath-sort-by-age", "services", printFlags{output: "jsonpath={.items[*].metadata.name}", sortBy: ".metadata.creationTimestamp"}, false},
		{"get-endpoints-wide-show-labels", "endpoints", printFlags{output: "wide", showLabels: true}, false},
		{"get-configmaps-jsonpath", "configmaps", printFlags{output: `jsonpath={.items[*].metadata.name}`}, false},
		{"get-configmaps-show-labels-sort-by-name", "configmaps", printFlags{sortBy: ".metadata.name", showLabels: true}, false},
		{"get-secrets-jsonpath-single", "secrets", printFlags{output: `jsonpath={.data.password}`}, true},
		{"get-secrets-custom-columns", "secrets", printFlags{output: "custom-columns=NAME:.metadata.name,TYPE:.type,USER:.data.username"}, false},
		{"get-secrets-name", "secrets", printFlags{output: "name"}, false},
		{"get-pvc-wide", "pvc", printFlags{output: "wide"}, false},
		{"get-pvc-custom-columns-sorted", "pvc", printFlags{output: "custom-columns=NAME:.metadata.name,PHASE:.status.phase,VOLUME:.spec.volumeName", sortBy: ".status.phase"}, false},
	} {
		t.Run(tt.golden, func(t *testing.T) { printGolden(t, tt.golden, tt.kind, tt.flags, tt.single) })
	}
}

// printGolden prints the fixture objects of kind (one when single) with
// flags and compares the output with testdata/NAME.golden.
func printGolden(t *testing.T, name, kind string, flags printFlags, single bool) {
	t.Helper()
	p, err := newPrinter(flags)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := kindRenderers[kind](t, &buf, p, single); err != nil {
		t.Fatal(err)
	}
	golden(t, name, buf.Bytes())
}

// The output flags' mistakes are kubectl's errors.
func TestPrinterErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "one-line")
	if err := os.WriteFile(bad, []byte("NAME TYPE\n.metadata.name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flags printFlags
		want  string
	}{
		{printFlags{output: "bogus"}, `unable to match a printer suitable for the output format "bogus", allowed formats are: ` + allowedFormats},
		{printFlags{output: "json=x"}, `unable to match a printer suitable for the output format "json=x"`},
		{printFlags{output: "jsonpath"}, "template format specified but no template given"},
		{printFlags{output: "jsonpath="}, "template format specified but no template given"},
		{printFlags{output: "jsonpath={.metadata.name"}, "error parsing jsonpath {.metadata.name, unclosed action"},
		{printFlags{output: "jsonpath-as-json={.a[}"}, "error parsing jsonpath {.a[}, "},
		{printFlags{output: "custom-columns"}, "custom-columns format specified but no custom columns given"},
		{printFlags{output: "custom-columns=NAME"}, "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"},
		{printFlags{output: "custom-columns=NAME:{.a"}, "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'"},
		{printFlags{output: "custom-columns-file=" + filepath.Join(dir, "nope")}, "error reading template " + filepath.Join(dir, "nope")},
		{printFlags{output: "custom-columns-file=" + bad}, "number of headers (2) and field specifications (1) don't match"},
		{printFlags{sortBy: "{.a"}, "unexpected path string"},
		{printFlags{sortBy: ".a[x"}, "unterminated array"},
	} {
		t.Run(tt.flags.output+tt.flags.sortBy, func(t *testing.T) {
			_, err := newPrinter(tt.flags)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a multi-line error: %q", err)
			}
		})
	}
	// Errors when printing: a path no object has, values that cannot be ordered.
	for _, tt := range []struct {
		kind  string
		flags printFlags
		want  string
	}{
		{"services", printFlags{sortBy: ".spec.nope"}, `couldn't find any field with path "{.spec.nope}" in the list of objects`},
		{"services", printFlags{sortBy: ".spec.selector"}, "field {.spec.selector} is an unsortable type: map"},
	} {
		p, err := newPrinter(tt.flags)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := kindRenderers[tt.kind](t, &buf, p, false); err == nil || err.Error() != tt.want {
			t.Errorf("%s %+v: err %v, want %q", tt.kind, tt.flags, err, tt.want)
		}
	}
}

// The flags through the command line: get configmaps and secrets read the
// state directory only.
func TestGetOutputFlags(t *testing.T) {
	dir, _, _ := configFixture(t)
	cols := filepath.Join(t.TempDir(), "cols")
	if err := os.WriteFile(cols, []byte("NAME        KEYS\n.metadata.name   {.data}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args      []string
		want, err string
	}{
		{[]string{"get", "cm", "-o", "jsonpath={.items[*].metadata.name}"}, "empty web.config", ""},
		{[]string{"get", "cm", "web.config", "-o", "jsonpath={.metadata.labels.app}"}, "web", ""},
		{[]string{"get", "cm", "-A", "-o", "name", "--sort-by", "{.metadata.namespace}"}, "configmap/empty\nconfigmap/web.config\nconfigmap/web.config\n", ""},
		{[]string{"get", "secrets", "db", "-o", "jsonpath={.data.username}"}, "YWRtaW4=", ""},
		{[]string{"get", "cm", "-L", "app", "--show-labels"}, "NAME         DATA   AGE   APP   LABELS\nempty        0      ", ""},
		{[]string{"get", "cm", "-o", "custom-columns-file=" + cols}, "NAME         KEYS\nempty        <none>\nweb.config   map[", ""},
		{[]string{"get", "cm", "-o", "custom-columns=NAME:.metadata.name", "--label-columns=app,x"}, "NAME\nempty\nweb.config\n", ""},
		{[]string{"get", "cm", "-o", "x"}, "", `unable to match a printer suitable for the output format "x", allowed formats are: `},
		{[]string{"get", "secrets", "-o", "jsonpath={"}, "", "error parsing jsonpath {, unclosed action"},
		{[]string{"get", "pvc", "-o", "custom-columns="}, "", "custom-columns format specified but no custom columns given"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := run(t, "", append([]string{"--state-dir", dir}, tt.args...)...)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("output %q, want it to begin %q", out, tt.want)
			}
		})
	}
}

func TestNaturalLess(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		less bool
	}{
		{"pod-2", "pod-10", true},
		{"pod-10", "pod-2", false},
		{"a", "b", true},
		{"a", "a", false},
		{"a", "ab", true},
		{"web-9-x", "web-09-a", true},
		{"10.222.0.9", "10.222.0.10", true},
	} {
		if got := naturalLess(tt.a, tt.b); got != tt.less {
			t.Errorf("naturalLess(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// --sort-by orders numbers numerically, missing values first, ties kept
// in the listing's order.
func TestSortByNumbers(t *testing.T) {
	p, err := newPrinter(printFlags{output: "name", sortBy: ".n"})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(v any) func() (any, error) { return func() (any, error) { return map[string]any{"n": v}, nil } }
	tab := &table{kind: "x", rows: []row{
		{name: "ten", object: obj(10)}, {name: "nine", object: obj(9)}, {name: "half", object: obj(0.5)},
		{name: "none", object: func() (any, error) { return map[string]any{}, nil }}, {name: "nine-again", object: obj(9)},
	}}
	var buf bytes.Buffer
	if err := p.print(&buf, tab, false, false); err != nil {
		t.Fatal(err)
	}
	if want := "x/none\nx/half\nx/nine\nx/nine-again\nx/ten\n"; buf.String() != want {
		t.Errorf("sorted %q, want %q", buf.String(), want)
	}
}

// What get -o name prints names the object for the other commands, as
// kubectl's: describe $(get deployments -o name) works.
func TestNamesRoundTrip(t *testing.T) {
	for _, arg := range []string{"deployment.apps/web", "pod/web-0", "service/web", "configmap/web", "secret/web", "persistentvolumeclaim/web"} {
		k, _, _ := strings.Cut(arg, "/")
		kind, name, err := resourceArg([]string{arg}, kindAliases[k])
		if err != nil || kind == "" || name != "web" && name != "web-0" {
			t.Errorf("%s: %q %q %v", arg, kind, name, err)
		}
	}
	if kindAliases["deployment.apps"] != kindDeployment || kindAliases["deployments.apps"] != kindDeployment {
		t.Error("deployment.apps is no alias of deployments")
	}
}
