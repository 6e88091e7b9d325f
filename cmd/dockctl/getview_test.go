package main

import (
	"bytes"
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
