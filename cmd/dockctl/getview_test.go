package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// --no-headers: every kind's table, wide and custom-columns output is the
// one with headers without its first line, as kubectl's; the other
// formats have no header to leave out.
func TestNoHeaders(t *testing.T) {
	for kind, render := range kindRenderers {
		for _, output := range []string{"table", "wide", "custom-columns=NAME:.metadata.name", "name"} {
			t.Run(kind+" "+output, func(t *testing.T) {
				var with, without bytes.Buffer
				if err := render(t, &with, pr(t, output), false); err != nil {
					t.Fatal(err)
				}
				p, err := newPrinter(printFlags{output: output, noHeaders: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := render(t, &without, p, false); err != nil {
					t.Fatal(err)
				}
				want := with.String()
				if output != "name" {
					header, rest, ok := strings.Cut(want, "\n")
					if !ok || rest == "" || !strings.Contains(header, "NAME") {
						t.Fatalf("the fixture prints no header and rows:\n%s", want)
					}
					want = rest
				}
				// The columns are as wide as their cells without the
				// header's: compare the cells.
				if got := fields(without.String()); got != fields(want) {
					t.Errorf("--no-headers:\n%s\nwant the cells of:\n%s", without.String(), want)
				}
			})
		}
	}
}

// --no-headers through the command line, and under get -w, whose stream
// then never has a header either (TestWatchFirstListingIsGets holds the
// rest of a watch to get's output).
func TestNoHeadersFlag(t *testing.T) {
	dir, _, _ := configFixture(t)
	for _, args := range [][]string{
		{"get", "cm", "--no-headers"},
		{"get", "cm", "-o", "wide", "--no-headers", "--show-labels"},
		{"get", "secrets", "-A", "--no-headers"},
		{"get", "cm", "-o", "custom-columns=N:.metadata.name", "--no-headers"},
	} {
		out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v %s", args, err, errOut)
		}
		if out == "" || strings.Contains(out, "NAME") || strings.HasPrefix(out, "N\n") {
			t.Errorf("%v printed a header, or nothing:\n%s", args, out)
		}
	}
	p, err := newPrinter(printFlags{output: "wide", noHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	wp := &watchPrinter{p: p, events: true}
	tab := &table{columns: []string{"NAME", "AGE"}, wide: []string{"X"}}
	var out bytes.Buffer
	for _, c := range []watchChange{
		{watchAdded, watchedRow{row: row{name: "a"}, cells: []string{"a", "1s", "x"}}},
		{watchModified, watchedRow{row: row{name: "a"}, cells: []string{"a", "2s", "y"}}},
	} {
		if err := wp.print(&out, tab, false, []watchChange{c}); err != nil {
			t.Fatal(err)
		}
	}
	if want := "ADDED      a   1s   x\nMODIFIED   a   2s   y\n"; out.String() != want {
		t.Errorf("get -w --no-headers:\n%q\nwant\n%q", out.String(), want)
	}
}

// fields are a table's cells, a line each, single-spaced.
func fields(table string) string {
	var out []string
	for _, line := range strings.Split(table, "\n") {
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return strings.Join(out, "\n")
}

// allTables are the listings get all prints with p for serviceFixture's
// default namespace, as each kind's getter hands them to the printer: its
// pods, Services and deployment.
func allTables(t *testing.T, p *printer) []listing {
	t.Helper()
	snap := serviceFixture(t)
	var tables []listing
	capture := *p
	capture.capture = func(tab *table, all bool) { tables = append(tables, listing{tab, all}) }
	var pods []podEntry
	for _, e := range snap.allPods() {
		if e.Namespace == "default" {
			pods = append(pods, e)
		}
	}
	for _, err := range []error{
		renderPods(io.Discard, snap, pods, &capture, false, false),
		renderServices(io.Discard, snap, inDefault(snap), &capture, false, false),
		renderDeployments(io.Discard, snap, snap.records, &capture, false, false),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return tables
}

// get all prints as kubectl prints several kinds: a table per kind, names
// prefixed with the kind, a blank line between two (none with
// --no-headers); -o name each kind's names; -o json one List of them all.
func TestPrintKinds(t *testing.T) {
	for _, tt := range []struct {
		golden string
		flags  printFlags
	}{
		{"get-all-table", printFlags{}},
		{"get-all-wide-no-headers", printFlags{output: "wide", noHeaders: true}},
		{"get-all-name", printFlags{output: "name"}},
		{"get-all-json", printFlags{output: "json"}},
		{"get-all-custom-columns-sorted", printFlags{output: "custom-columns=KIND:.kind,NAME:.metadata.name", sortBy: ".metadata.name"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			p, err := newPrinter(tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := p.printKinds(&buf, allTables(t, p), true); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, buf.Bytes())
		})
	}
}

// get all through the command line, against a Docker of one replica: the
// kinds in kubectl's order, from one listing of Docker; a name looked for
// in each kind; the notice once when there is nothing; kubectl's errors.
func TestGetAll(t *testing.T) {
	d := startFakeDaemon(t)
	dir := t.TempDir()
	controllerBeating(t, dir, "t1")
	base := []string{"--state-dir", dir, "--instance", "t1"}
	const services = `apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
`
	if _, errOut, err := run(t, webYAML+"---\n"+services, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	d.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	for _, tt := range []struct {
		args       []string
		want       []string // lines the output begins with, in order; "" a blank line
		stderr     string
		err        string
		otherLines bool // more lines may follow
	}{
		{args: []string{"get", "all"}, want: []string{"NAME ", "pod/web-abc-0 ", "", "NAME ", "service/db ", "service/web ", "",
			"NAME ", "deployment.apps/web "}},
		{args: []string{"get", "all", "-o", "name"}, want: []string{"pod/web-abc-0", "service/db", "service/web", "deployment.apps/web"}},
		{args: []string{"get", "all", "--no-headers", "-l", "app=web"}, want: []string{"pod/web-abc-0 ", "service/web ", "deployment.apps/web "}},
		{args: []string{"get", "all", "-o", "jsonpath={.items[*].kind}"}, want: []string{"Pod Service Service Deployment"}},
		{args: []string{"get", "all", "web"}, want: []string{"NAME ", "service/web ", "", "NAME ", "deployment.apps/web "},
			err: `pods "web" not found`},
		{args: []string{"get", "all", "-l", "app=nope"}, stderr: "No resources found in default namespace of instance \"t1\".\n"},
		{args: []string{"get", "all", "-n", "team", "-o", "json"}, want: []string{"{", `    "apiVersion": "v1",`, `    "items": [],`}, otherLines: true},
		{args: []string{"get", "all", "-w"}, err: "you may only specify a single resource type"},
		{args: []string{"get", "all", "web", "-l", "app"}, err: "name cannot be provided when a selector is specified"},
		{args: []string{"get", "all", "-l", "app in (a"}, err: "Unable to find"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := run(t, "", append(base, tt.args...)...)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err %v, want %q (stderr %q)", err, tt.err, errOut)
			}
			if errOut != tt.stderr {
				t.Errorf("stderr %q, want %q", errOut, tt.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if out == "" {
				lines = nil
			}
			if len(lines) < len(tt.want) || !tt.otherLines && len(lines) != len(tt.want) {
				t.Fatalf("output:\n%s\nwant lines beginning %q", out, tt.want)
			}
			for i, w := range tt.want {
				if w == "" && lines[i] != "" || !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d %q, want it to begin %q\n%s", i, lines[i], w, out)
				}
			}
		})
	}
}
