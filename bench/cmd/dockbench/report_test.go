package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CronJob lateness (workloads.go) is reported through latencies: p50
// and max are nearest-rank over the samples, whatever their order.
func TestReportLatenciesGiveNearestRankP50AndMax(t *testing.T) {
	rep := &report{}
	var samples []time.Duration
	for _, ms := range []int{900, 100, 500, 300, 700} {
		samples = append(samples, time.Duration(ms)*time.Millisecond)
	}
	rep.latencies("s", "late", samples)
	want := map[string]float64{"s/late p50": 500, "s/late p90": 900, "s/late max of 5": 900}
	for key, v := range want {
		if got := rep.lookup(key); got == nil || *got != v {
			t.Errorf("%s = %v, want %v", key, got, v)
		}
	}
}

// A ratio with a goal prints it in the TARGET column and is judged in the
// GUARD table after the ratios; an informational one is printed and not
// judged; the JSON carries the goal, its text and the verdicts.
func TestReportPrintsAndWritesTheGuard(t *testing.T) {
	rep := &report{Settings: settings{Guard: true}}
	rep.value("s", "dockctl", 150, "ms")
	rep.value("s", "direct", 100, "ms")
	rep.value("s", "docker -p", 1000, "req/s")
	rep.value("s", "gateway", 220, "req/s")
	rep.ratio("dockctl / direct", "s/dockctl", "s/direct", atMost(1.2, "issue 5"))
	rep.ratio("gateway / -p", "s/gateway", "s/docker -p", atLeast(0.8, ""))
	rep.ratio("direct / dockctl", "s/direct", "s/dockctl", nil)
	rep.ratio("missing / direct", "s/missing", "s/direct", atMost(1.1, ""))
	var b bytes.Buffer
	rep.print(&b)
	out := b.String()
	ratios := strings.Index(out, "RATIO")
	guard := strings.Index(out, "GUARD")
	if ratios < 0 || guard < ratios {
		t.Fatalf("want the RATIO table, then the GUARD table:\n%s", out)
	}
	for _, line := range []string{
		"dockctl / direct  1.50×  ≤ 1.2× (issue 5)\n",
		"gateway / -p      0.22×  ≥ 0.8×\n",
		"direct / dockctl  0.67×  \n",
		"missing / direct  n/a    ≤ 1.1×\n",
		"dockctl / direct  1.50×  ≤ 1.2× (issue 5)  > 1.320×  fail\n",
		"gateway / -p      0.22×  ≥ 0.8×            < 0.727×  fail\n",
		"missing / direct  n/a    ≤ 1.1×            > 1.210×  n/a\n",
		"guard: FAILED: dockctl / direct; gateway / -p\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("want the line %q in\n%s", line, out)
		}
	}
	if strings.Contains(out[guard:], "direct / dockctl") {
		t.Errorf("an informational ratio was judged:\n%s", out[guard:])
	}

	path := filepath.Join(t.TempDir(), "out.json")
	if err := rep.writeJSON(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Settings struct {
			Guard bool `json:"guard"`
		} `json:"settings"`
		Ratios []struct {
			Name   string `json:"name"`
			Target string `json:"target"`
			Goal   *goal  `json:"goal"`
		} `json:"ratios"`
		Guard []struct {
			Ratio   string   `json:"ratio"`
			Value   *float64 `json:"value"`
			Goal    goal     `json:"goal"`
			Target  string   `json:"target"`
			Limit   float64  `json:"failBeyond"`
			Verdict string   `json:"verdict"`
		} `json:"guard"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Settings.Guard {
		t.Error("settings.guard is false, want true")
	}
	if q := got.Ratios[0]; q.Target != "≤ 1.2× (issue 5)" || q.Goal == nil || q.Goal.Max != 1.2 || q.Goal.Why != "issue 5" {
		t.Errorf("ratios[0] = %+v, want target ≤ 1.2× (issue 5) and goal max 1.2", q)
	}
	if q := got.Ratios[2]; q.Target != "" || q.Goal != nil {
		t.Errorf("the informational ratio has target %q, goal %v", q.Target, q.Goal)
	}
	want := []struct{ ratio, verdict string }{{"dockctl / direct", verdictFail}, {"gateway / -p", verdictFail}, {"missing / direct", verdictNA}}
	if len(got.Guard) != len(want) {
		t.Fatalf("guard = %+v, want %v", got.Guard, want)
	}
	for i, w := range want {
		if j := got.Guard[i]; j.Ratio != w.ratio || j.Verdict != w.verdict {
			t.Errorf("guard[%d] = %+v, want %s: %s", i, j, w.ratio, w.verdict)
		}
	}
	if j := got.Guard[1]; j.Value == nil || *j.Value != 0.22 || j.Goal.Min != 0.8 || j.Target != "≥ 0.8×" || math.Abs(j.Limit-0.8/1.1) > 1e-12 {
		t.Errorf("guard[1] = %+v, want value 0.22, goal min 0.8, failing below 0.727", j)
	}
	if got.Guard[2].Value != nil {
		t.Errorf("an unmeasured ratio has value %v in the JSON, want null", *got.Guard[2].Value)
	}
}

// An absolute goal is judged as the figure over its target: the ratio's
// denominator is the target itself, named in the JSON, and a figure this
// run did not measure leaves it n/a.
func TestReportRatioToTargetDividesByTheTarget(t *testing.T) {
	rep := &report{Settings: settings{Guard: true}}
	rep.value("s", "rss", 165, "MiB")
	rep.ratioToTarget("rss / 150 MiB", "s/rss", 150, "150 MiB", atMost(1, "issue 28"))
	rep.ratioToTarget("cpu / 1 %", "s/cpu", 1, "1 %", atMost(1, "issue 28"))
	rep.finish()
	if v := rep.Ratios[0].Value; v == nil || math.Abs(*v-1.1) > 1e-9 {
		t.Errorf("rss / 150 MiB = %v, want 1.1", v)
	}
	if rep.Ratios[0].Den != "target 150 MiB" {
		t.Errorf("denominator %q, want it to name the target", rep.Ratios[0].Den)
	}
	if rep.Ratios[1].Value != nil {
		t.Errorf("cpu / 1 %% = %v, want n/a: no cpu figure", *rep.Ratios[1].Value)
	}
	verdicts := map[string]string{}
	for _, j := range rep.Guard {
		verdicts[j.Ratio] = j.Verdict
	}
	if verdicts["rss / 150 MiB"] != verdictOver || verdicts["cpu / 1 %"] != verdictNA {
		t.Errorf("verdicts %v, want rss over goal (within 10 %%) and cpu n/a", verdicts)
	}
}
