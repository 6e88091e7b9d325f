package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The regression guard (BENCHMARKS.md, Regression guard): after a run,
// every ratio with a goal and a value is judged against its goal, and the
// run fails when one has drifted more than guardTolerance past it. A
// ratio is a quotient of two figures of the same run, so the guard judges
// what dockctl adds on this machine, not the machine's speed.

// guardTolerance is how far past its goal a ratio may drift before the
// guard fails the run: a ratio of at most g fails above 1.1·g, one of at
// least g below g/1.1 (the same factor either way, so that a goal and its
// inverse, ≤ 1.2 and ≥ 1/1.2, fail at inverse values).
const guardTolerance = 1.1

// guardEpsilon keeps a ratio that equals a bound in decimal (1.32 against
// 1.1 × 1.2) on the side of the bound that decimal gives: float64 products
// of decimal fractions land a few ulps either way.
const guardEpsilon = 1e-9

// goal is what a ratio should be: at most Max, or at least Min — exactly
// one of them is set. Why says whose goal it is, printed after it.
type goal struct {
	Max float64 `json:"max,omitempty"`
	Min float64 `json:"min,omitempty"`
	Why string  `json:"why,omitempty"`
}

// atMost and atLeast are the two kinds of goal.
func atMost(v float64, why string) *goal  { return &goal{Max: v, Why: why} }
func atLeast(v float64, why string) *goal { return &goal{Min: v, Why: why} }

// String is the goal as the TARGET column prints it: "≤ 1.2× (Why)".
func (g goal) String() string {
	s := "≥ " + trimFloat(g.Min) + "×"
	if g.Max > 0 {
		s = "≤ " + trimFloat(g.Max) + "×"
	}
	if g.Why != "" {
		s += " (" + g.Why + ")"
	}
	return s
}

// limit is the value past which the guard fails: 1.1·Max, or Min/1.1.
func (g goal) limit() float64 {
	if g.Max > 0 {
		return g.Max * guardTolerance
	}
	return g.Min / guardTolerance
}

// limitText is the failing side of limit, as the GUARD table prints it.
func (g goal) limitText() string {
	if g.Max > 0 {
		return "> " + strconv.FormatFloat(g.limit(), 'f', 3, 64) + "×"
	}
	return "< " + strconv.FormatFloat(g.limit(), 'f', 3, 64) + "×"
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// The verdicts of the guard.
const (
	verdictOK   = "ok"
	verdictOver = "over goal" // past the goal, within the tolerance: printed, not failing
	verdictFail = "fail"      // more than the tolerance past the goal
	verdictNA   = "n/a"       // not measured this run: neither passing nor failing
)

// judge gives the verdict on value v against g; nil is a ratio this run
// could not compute.
func (g goal) judge(v *float64) string {
	if v == nil || math.IsNaN(*v) {
		return verdictNA
	}
	x, lim := *v, g.limit()
	if g.Max > 0 {
		switch {
		case x > lim*(1+guardEpsilon):
			return verdictFail
		case x > g.Max*(1+guardEpsilon):
			return verdictOver
		}
		return verdictOK
	}
	switch {
	case x < lim*(1-guardEpsilon):
		return verdictFail
	case x < g.Min*(1-guardEpsilon):
		return verdictOver
	}
	return verdictOK
}

// judgement is one row of the GUARD table and of the JSON's "guard" array.
type judgement struct {
	Ratio   string   `json:"ratio"`
	Value   *float64 `json:"value"`
	Goal    goal     `json:"goal"`
	Target  string   `json:"target"` // the goal as printed
	Limit   float64  `json:"failBeyond"`
	Verdict string   `json:"verdict"`
}

// judgeRatios judges every ratio that has a goal, in the report's order;
// a ratio without one is informational and not judged.
func judgeRatios(ratios []ratio) []judgement {
	out := []judgement{}
	for _, q := range ratios {
		if q.Goal == nil {
			continue
		}
		out = append(out, judgement{
			Ratio: q.Name, Value: q.Value, Goal: *q.Goal, Target: q.Goal.String(),
			Limit: q.Goal.limit(), Verdict: q.Goal.judge(q.Value),
		})
	}
	return out
}

// guardEnforced reads BENCH_GUARD: "0" prints the verdicts without failing
// the run (to take figures on a tree known to miss a goal); anything else,
// unset included, fails it.
func guardEnforced(getenv func(string) string) bool {
	return getenv("BENCH_GUARD") != "0"
}

// errGuard is a run whose only fault is a ratio the guard failed: main
// exits with exitGuard for it, so that `make bench` can tell it from a
// broken run and still run the Go benchmarks.
type errGuard struct{ failed []string }

func (e errGuard) Error() string {
	return fmt.Sprintf("regression guard: %d ratio(s) more than %.0f %% past their goal: %s",
		len(e.failed), (guardTolerance-1)*100, strings.Join(e.failed, "; "))
}

// guardError is the run's error for these verdicts: nil when none failed,
// or when the guard is not enforced (BENCH_GUARD=0).
func guardError(js []judgement, enforced bool) error {
	var failed []string
	for _, j := range js {
		if j.Verdict == verdictFail {
			failed = append(failed, j.Ratio)
		}
	}
	if len(failed) == 0 || !enforced {
		return nil
	}
	return errGuard{failed: failed}
}

// The exit statuses of dockbench.
const (
	exitOK    = 0
	exitError = 1 // a section failed, or the run could not start
	exitUsage = 2
	exitGuard = 3 // every section ran; the guard failed a ratio
)

// exitCode maps run's error to the exit status: a guard failure alone is
// exitGuard; any other error — run joins a guard failure to a section's
// error — exitError.
func exitCode(err error) int {
	switch err.(type) {
	case nil:
		return exitOK
	case errGuard:
		return exitGuard
	}
	return exitError
}

// printGuard prints the GUARD table and one line on its outcome.
func printGuard(w io.Writer, js []judgement, enforced bool) {
	if len(js) == 0 {
		fmt.Fprintln(w, "guard: no ratio with a goal was registered in this run")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GUARD\tVALUE\tGOAL\tFAILS\tVERDICT")
	counts := map[string]int{}
	var failed []string
	for _, j := range js {
		v := "n/a"
		if j.Value != nil {
			v = fmt.Sprintf("%.2f×", *j.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Ratio, v, j.Target, j.Goal.limitText(), j.Verdict)
		counts[j.Verdict]++
		if j.Verdict == verdictFail {
			failed = append(failed, j.Ratio)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "guard: %d ok, %d over goal (within %.0f %%), %d failed, %d n/a (not measured: not judged, not failing)\n",
		counts[verdictOK], counts[verdictOver], (guardTolerance-1)*100, counts[verdictFail], counts[verdictNA])
	switch {
	case len(failed) == 0:
	case enforced:
		fmt.Fprintf(w, "guard: FAILED: %s\n", strings.Join(failed, "; "))
	default:
		fmt.Fprintf(w, "guard: off (BENCH_GUARD=0): would fail on %s\n", strings.Join(failed, "; "))
	}
}
