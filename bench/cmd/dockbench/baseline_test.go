package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/testenv"
)

// -baseline takes one revision; a value git would read as an option, or
// that cannot be a revision, is refused before anything is built.
func TestParseFlagsBaseline(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    options
		wantErr string
	}{
		{nil, options{}, ""},
		{[]string{"-swarm-marker", "/tmp/m"}, options{swarmMarker: "/tmp/m"}, ""},
		{[]string{"-baseline", "fd9c938"}, options{baseline: "fd9c938"}, ""},
		{[]string{"-baseline=main~3", "-swarm-marker", "m"}, options{baseline: "main~3", swarmMarker: "m"}, ""},
		{[]string{"-baseline", "--upload-pack=x"}, options{}, "cannot start with '-'"},
		{[]string{"-baseline", "fd9c938 main"}, options{}, "no white space"},
		{[]string{"-baseline"}, options{}, "flag needs an argument"},
		{[]string{"fd9c938"}, options{}, "unexpected arguments"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags(%q) = %+v, %v; want an error with %q", tc.args, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseFlags(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
			}
		})
	}
}

// The two binaries alternate which runs first, measurement after
// measurement.
func TestOrderAlternates(t *testing.T) {
	before, after := side{label: "before"}, side{label: "after"}
	var got []string
	for i := 0; i < 4; i++ {
		o := order(i, before, after)
		got = append(got, o[0].label+","+o[1].label)
	}
	if want := "before,after after,before before,after after,before"; strings.Join(got, " ") != want {
		t.Errorf("orders %v, want %s", got, want)
	}
}

// Each ratio of the comparison is this tree's figure over the baseline's
// same figure; one whose figures were not both measured stays empty.
func TestBaselineRatiosAreAfterOverBefore(t *testing.T) {
	r := &report{}
	f := func(section, label, name string, v float64) {
		r.value(baselineSection(section, label), name, v, "ms")
	}
	f(baselineRepair, "before", dockctlRepair+" p50", 400)
	f(baselineRepair, "after", dockctlRepair+" p50", 300)
	f(baselineRepair, "before", dockctlRepair+" p90", 500)
	f(baselineRepair, "after", dockctlRepair+" p90", 1000)
	f(baselineScale, "before", "dockctl 0 → 20", 8000)
	f(baselineScale, "after", "dockctl 0 → 20", 6000)
	f(baselineIdle, "before", "controller CPU, % of one core", 2)
	// No "after" of the idle CPU: its ratio stays n/a.
	for _, q := range baselineRatios(20) {
		// after/before compares two revisions, not dockctl with its
		// anchor: informational, never judged by the guard.
		if q.Goal != nil {
			t.Errorf("%s has the goal %s, want none", q.Name, q.Goal)
		}
		r.ratio(q.Name, q.Num, q.Den, q.Goal)
	}
	r.finish()
	got := map[string]float64{}
	for _, q := range r.Ratios {
		if q.Value != nil {
			got[q.Name] = *q.Value
		}
	}
	want := map[string]float64{
		"after/before: repair after rm -f: " + dockctlRepair + " p50": 0.75,
		"after/before: repair after rm -f: " + dockctlRepair + " p90": 2,
		"after/before: scale: dockctl 0 → 20":                         0.75,
	}
	if len(got) != len(want) {
		t.Errorf("ratios with a value: %v, want %v", got, want)
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
	if n := len(r.Ratios); n != len(baselineRatios(20)) {
		t.Errorf("%d ratios, want every one of baselineRatios listed", n)
	}
}

// The baseline is built from a worktree of the revision, not from the
// tree: a main package that prints its revision's word, built from a
// commit the tree has moved on from; the worktree is gone once built.
func TestBuildBaselineBuildsTheRevisionAndRemovesItsWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Unavailable(t, "no git: %v", err) // dockbench needs git only with -baseline
	}
	root, tmp := t.TempDir(), t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(word string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, "cmd", "dockctl"), 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"go.mod":              "module example.com/m\n\ngo 1.22\n",
			"cmd/dockctl/main.go": "package main\n\nfunc main() { println(\"" + word + "\") }\n",
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git("init", "-q")
	write("before")
	git("add", ".")
	git("commit", "-q", "-m", "before")
	rev := git("rev-parse", "--short", "HEAD")
	write("after")
	git("commit", "-q", "-am", "after")

	e := &env{root: root, tmp: tmp, cleanups: &cleanupStack{}}
	b, err := e.buildBaseline(context.Background(), rev)
	if err != nil {
		t.Fatal(err)
	}
	defer e.cleanups.run()
	out, err := exec.Command(b.bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "before" {
		t.Errorf("the baseline binary printed %q (%v), want the revision's \"before\"", out, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "baseline-src")); !os.IsNotExist(err) {
		t.Errorf("the baseline worktree is still there (%v)", err)
	}
	if wt := git("worktree", "list"); strings.Count(wt, "\n") != 0 {
		t.Errorf("git still lists the baseline worktree:\n%s", wt)
	}
	if _, err := e.buildBaseline(context.Background(), "no-such-revision"); err == nil || !strings.Contains(err.Error(), "not a commit") {
		t.Errorf("an unknown revision: %v, want an error saying it is not a commit", err)
	}
}
