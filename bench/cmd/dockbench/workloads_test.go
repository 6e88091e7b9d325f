package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/cronschedule"
	"github.com/dockctl/dockctl/manifests"
)

func TestCronFiringsKeepsTheMarginBeforeTheFirstMinute(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2026, 12, 7, h, m, s, 0, time.UTC) }
	tests := []struct {
		name           string
		now            time.Time
		n              int
		wantApply      time.Time
		wantBoundaries []time.Time
	}{
		{"early in the minute: apply now, fire at the next", at(5, 0, 10), 1, at(5, 0, 10), []time.Time{at(5, 1, 0)}},
		{"exactly the margin left: apply now", at(5, 0, 52), 2, at(5, 0, 52), []time.Time{at(5, 1, 0), at(5, 2, 0)}},
		{"less than the margin left: apply at the minute, fire at the one after", at(5, 0, 55), 3,
			at(5, 1, 0), []time.Time{at(5, 2, 0), at(5, 3, 0), at(5, 4, 0)}},
		{"on the minute: the next is a whole minute away", at(5, 0, 0), 1, at(5, 0, 0), []time.Time{at(5, 1, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apply, bs := cronFirings(tt.now, 8*time.Second, tt.n)
			if !apply.Equal(tt.wantApply) || !reflect.DeepEqual(bs, tt.wantBoundaries) {
				t.Errorf("cronFirings(%s) = %s, %v; want %s, %v", tt.now.Format(time.TimeOnly), apply, bs, tt.wantApply, tt.wantBoundaries)
			}
		})
	}
}

func TestCronLatenessIsEachJobsStartAfterItsScheduledMinute(t *testing.T) {
	b1 := time.Date(2026, 12, 7, 5, 1, 0, 0, time.UTC)
	b2 := b1.Add(time.Minute)
	starts := map[string]time.Time{
		cronschedule.JobName("a", b1): b1.Add(300 * time.Millisecond),
		cronschedule.JobName("b", b1): b1.Add(1200 * time.Millisecond),
		cronschedule.JobName("a", b2): b2.Add(250 * time.Millisecond),
		// A Job of a minute not measured is not a sample.
		cronschedule.JobName("a", b2.Add(time.Minute)): b2.Add(time.Minute),
	}
	late, missing := cronLateness([]string{"a", "b"}, []time.Time{b1, b2}, starts)
	wantLate := []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond, 250 * time.Millisecond}
	if !reflect.DeepEqual(late, wantLate) {
		t.Errorf("lateness = %v, want %v", late, wantLate)
	}
	if want := []string{cronschedule.JobName("b", b2)}; !reflect.DeepEqual(missing, want) {
		t.Errorf("missing = %v, want %v", missing, want)
	}
}

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

func TestParseStatusReadsWhatTheSectionWaitsOn(t *testing.T) {
	tests := []struct {
		name      string
		out       string
		ready3    bool
		complete  bool
		jobFailed bool
	}{
		{"no status yet", `{"kind":"Job","metadata":{"name":"j"}}`, false, false, false},
		{"three ready", `{"status":{"replicas":3,"readyReplicas":3}}`, true, false, false},
		{"two ready", `{"status":{"readyReplicas":2}}`, false, false, false},
		{"complete", `{"status":{"succeeded":100,"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}`, false, true, false},
		{"complete not yet true", `{"status":{"conditions":[{"type":"Complete","status":"False"}]}}`, false, false, false},
		{"failed", `{"status":{"failed":7,"conditions":[{"type":"Failed","status":"True"}]}}`, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseStatus([]byte(tt.out))
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := readyReplicas(3)(st); ok != tt.ready3 {
				t.Errorf("3 ready = %t, want %t", ok, tt.ready3)
			}
			ok, err := jobComplete(st)
			if ok != tt.complete || (err != nil) != tt.jobFailed {
				t.Errorf("jobComplete = %t, %v; want %t, failed %t", ok, err, tt.complete, tt.jobFailed)
			}
		})
	}
	if _, err := parseStatus([]byte("not json")); err == nil {
		t.Error("parseStatus of no JSON: no error")
	}
}

func TestCallsInWindowCountsOnlyWhatHappenedInIt(t *testing.T) {
	before := map[string]int64{"list": 10, "events": 1, "inspect": 4}
	after := map[string]int64{"list": 14, "events": 1, "inspect": 4, "create": 1, "start": 1}
	total, writes, byOp := callsInWindow(before, after)
	if total != 6 || writes != 2 || byOp != "in the window: create 1, list 4, start 1" {
		t.Errorf("callsInWindow = %d, %d, %q", total, writes, byOp)
	}
	if _, _, byOp := callsInWindow(before, before); byOp != "none in the window" {
		t.Errorf("no calls: %q", byOp)
	}
}

// The section's manifests are decoded as apply decodes them: a field
// dockctl does not know would make the measurement fail at run time.
func TestWorkloadManifestsDecode(t *testing.T) {
	e := &env{runID: "b0", image: "dockctl-workload:bench-b0"}
	probe := "        readinessProbe:\n          httpGet: {path: /readyz, port: 8080}\n          periodSeconds: 1\n"
	for name, doc := range map[string]string{
		"statefulset": e.statefulSetYAML(wlStatefulSet, 3, probe),
		"job":         e.jobYAML(wlJob, 100, 10),
		"cronjob":     e.cronJobYAML(wlCronPrefix+"-00", "* * * * *"),
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := manifests.Decode("bench.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 {
				t.Fatalf("%d documents, want 1", len(docs))
			}
		})
	}
}
