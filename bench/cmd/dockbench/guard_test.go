package main

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// A goal of at most g fails above 1.1·g, one of at least g below g/1.1;
// between the goal and that bound the ratio is over its goal without
// failing, and exactly at either bound it is on the passing side.
func TestGoalJudgesTenPercentPastItAsFailing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		g     goal
		value *float64
		want  string
	}{
		{"at most: well under", goal{Max: 1.2}, f64(0.5), verdictOK},
		{"at most: exactly the goal", goal{Max: 1.2}, f64(1.2), verdictOK},
		{"at most: just past the goal", goal{Max: 1.2}, f64(1.2001), verdictOver},
		{"at most: exactly 10 % past (1.32)", goal{Max: 1.2}, f64(1.32), verdictOver},
		{"at most: exactly 10 % past, computed", goal{Max: 1.15}, f64(1.15 * 1.1), verdictOver},
		{"at most: just over 10 % past", goal{Max: 1.2}, f64(1.3201), verdictFail},
		{"at most: far past", goal{Max: 1.3}, f64(3.73), verdictFail},
		{"at least: well over", goal{Min: 0.9}, f64(1.5), verdictOK},
		{"at least: exactly the goal", goal{Min: 0.9}, f64(0.9), verdictOK},
		{"at least: just under the goal", goal{Min: 0.9}, f64(0.8999), verdictOver},
		{"at least: exactly 10 % past (goal / 1.1)", goal{Min: 0.88}, f64(0.8), verdictOver},
		{"at least: exactly 10 % past, computed", goal{Min: 0.9}, f64(0.9 / 1.1), verdictOver},
		{"at least: just over 10 % past", goal{Min: 0.88}, f64(0.7999), verdictFail},
		{"at least: far past (the gateway's throughput)", goal{Min: 0.8}, f64(0.22), verdictFail},
		{"at most: not measured", goal{Max: 1.2}, nil, verdictNA},
		{"at least: not measured", goal{Min: 0.9}, nil, verdictNA},
		{"not a number", goal{Max: 1.2}, f64(math.NaN()), verdictNA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.g.judge(tc.value); got != tc.want {
				t.Errorf("%s judges %v: %q, want %q", tc.g, deref(tc.value), got, tc.want)
			}
		})
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// The TARGET column reads as the free text it replaces.
func TestGoalPrintsDirectionValueAndWhy(t *testing.T) {
	for _, tc := range []struct {
		g         *goal
		want      string
		wantLimit string
	}{
		{atMost(1.15, "issue 5"), "≤ 1.15× (issue 5)", "> 1.265×"},
		{atMost(2, "issue 2"), "≤ 2× (issue 2)", "> 2.200×"},
		{atLeast(0.9, ""), "≥ 0.9×", "< 0.818×"},
		{atLeast(10, "issue 5"), "≥ 10× (issue 5)", "< 9.091×"},
	} {
		if got := tc.g.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		if got := tc.g.limitText(); got != tc.wantLimit {
			t.Errorf("%s: limitText() = %q, want %q", tc.want, got, tc.wantLimit)
		}
	}
}

// Only ratios with a goal are judged, in the report's order; the others
// are informational.
func TestJudgeRatiosSkipsRatiosWithoutAGoal(t *testing.T) {
	got := judgeRatios([]ratio{
		{Name: "a", Value: f64(1.5), Goal: atMost(1.2, "")},
		{Name: "informational", Value: f64(9)},
		{Name: "b", Goal: atLeast(0.8, "")},
	})
	if len(got) != 2 || got[0].Ratio != "a" || got[0].Verdict != verdictFail || got[1].Ratio != "b" || got[1].Verdict != verdictNA {
		t.Fatalf("judgeRatios = %+v, want a: fail, b: n/a", got)
	}
	if got[0].Target != "≤ 1.2×" || math.Abs(got[0].Limit-1.32) > 1e-12 {
		t.Errorf("a: target %q, fails beyond %v; want ≤ 1.2×, 1.32", got[0].Target, got[0].Limit)
	}
	if got := judgeRatios(nil); got == nil || len(got) != 0 {
		t.Errorf("judgeRatios(nil) = %#v, want an empty array (the JSON's guard: [])", got)
	}
}

// The run fails on a failed ratio, naming it, unless BENCH_GUARD=0; over
// goal and n/a never fail it. A guard failure alone exits 3, any other
// error 1, so that make bench can tell them apart.
func TestGuardErrorAndExitStatus(t *testing.T) {
	js := []judgement{
		{Ratio: "published p50", Verdict: verdictFail},
		{Ratio: "clusterip p50", Verdict: verdictOver},
		{Ratio: "gateway throughput", Verdict: verdictFail},
		{Ratio: "bundle start", Verdict: verdictNA},
		{Ratio: "repair", Verdict: verdictOK},
	}
	sectionErr := errors.New("sections with errors: gateway")
	for _, tc := range []struct {
		name     string
		js       []judgement
		enforced bool
		section  error
		wantExit int
		wantText []string
	}{
		{name: "a failed ratio fails the run", js: js, enforced: true, wantExit: exitGuard,
			wantText: []string{"2 ratio(s) more than 10 % past their goal", "published p50; gateway throughput"}},
		{name: "BENCH_GUARD=0 does not fail it", js: js, enforced: false, wantExit: exitOK},
		{name: "over goal and n/a do not fail it", js: js[1:2:2], enforced: true, wantExit: exitOK},
		{name: "n/a alone does not fail it", js: js[3:4], enforced: true, wantExit: exitOK},
		{name: "nothing judged", enforced: true, wantExit: exitOK},
		{name: "a failed section with a failed ratio is a broken run", js: js, enforced: true, section: sectionErr,
			wantExit: exitError, wantText: []string{"sections with errors: gateway", "published p50"}},
		{name: "a failed section alone", enforced: true, section: sectionErr, wantExit: exitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := guardError(tc.js, tc.enforced)
			if tc.section != nil {
				err = errors.Join(tc.section, err)
			}
			if got := exitCode(err); got != tc.wantExit {
				t.Errorf("exit status %d, want %d (error: %v)", got, tc.wantExit, err)
			}
			for _, s := range tc.wantText {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v, want it to say %q", err, s)
				}
			}
		})
	}
}

// BENCH_GUARD=0 turns the guard off; unset or any other value keeps it.
func TestGuardEnforcedUnlessBenchGuardIsZero(t *testing.T) {
	for v, want := range map[string]bool{"": true, "1": true, "0": false, "yes": true} {
		if got := guardEnforced(func(string) string { return v }); got != want {
			t.Errorf("BENCH_GUARD=%q: enforced %t, want %t", v, got, want)
		}
	}
}

// The GUARD table, golden: every judged ratio with its value, goal, the
// bound it fails beyond and its verdict, then the counts and the failures
// by name (or what would fail, with the guard off).
func TestPrintGuardTable(t *testing.T) {
	js := judgeRatios([]ratio{
		{Name: "latency p50 (iii) / (ii) -p", Value: f64(2.02), Goal: atMost(1.1, "")},
		{Name: "throughput (iv) / (ii) -p", Value: f64(0.83), Goal: atLeast(0.85, "")},
		{Name: "dockctl repair p50 / lower bound p50", Value: f64(1.02), Goal: atMost(1.15, "issue 5")},
		{Name: "realworld: bundle start", Goal: atMost(1.2, "")},
	})
	const table = `GUARD                                 VALUE  GOAL               FAILS     VERDICT
latency p50 (iii) / (ii) -p           2.02×  ≤ 1.1×             > 1.210×  fail
throughput (iv) / (ii) -p             0.83×  ≥ 0.85×            < 0.773×  over goal
dockctl repair p50 / lower bound p50  1.02×  ≤ 1.15× (issue 5)  > 1.265×  ok
realworld: bundle start               n/a    ≤ 1.2×             > 1.320×  n/a
guard: 1 ok, 1 over goal (within 10 %), 1 failed, 1 n/a (not measured: not judged, not failing)
`
	for _, tc := range []struct {
		name     string
		enforced bool
		last     string
	}{
		{"enforced", true, "guard: FAILED: latency p50 (iii) / (ii) -p\n"},
		{"off", false, "guard: off (BENCH_GUARD=0): would fail on latency p50 (iii) / (ii) -p\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printGuard(&b, js, tc.enforced)
			if want := table + tc.last; b.String() != want {
				t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
			}
		})
	}
	var b bytes.Buffer
	printGuard(&b, nil, true)
	if got := b.String(); got != "guard: no ratio with a goal was registered in this run\n" {
		t.Errorf("no judgement: printed %q", got)
	}
}
