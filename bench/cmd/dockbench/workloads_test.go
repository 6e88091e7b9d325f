package main

import (
	"fmt"
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

// The section's manifests are decoded as apply decodes them (a field
// dockctl does not know would fail the measurement at run time), with the
// settings the figures are named after and the run label on the pods.
func TestWorkloadManifestsDecode(t *testing.T) {
	e := &env{runID: "b0", image: "dockctl-workload:bench-b0"}
	probe := "        readinessProbe:\n          httpGet: {path: /readyz, port: 8080}\n          periodSeconds: 1\n"
	decode := func(t *testing.T, doc string) *manifests.Document {
		t.Helper()
		docs, err := manifests.Decode("bench.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 1 {
			t.Fatalf("%d documents, want 1", len(docs))
		}
		return docs[0]
	}
	t.Run("statefulset", func(t *testing.T) {
		s := decode(t, e.statefulSetYAML(wlStatefulSet, 3, probe)).StatefulSet
		if s == nil || s.Spec.PodManagementPolicy != "OrderedReady" || s.Spec.Replicas == nil || *s.Spec.Replicas != 3 {
			t.Fatalf("decoded %+v, want a StatefulSet of 3, OrderedReady", s)
		}
		c := s.Spec.Template.Spec.Containers[0]
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("readinessProbe %+v, want httpGet /readyz", c.ReadinessProbe)
		}
		if s.Spec.Template.Metadata.Labels[benchLabel] != "b0" {
			t.Errorf("template labels %v lack the run label", s.Spec.Template.Metadata.Labels)
		}
	})
	t.Run("job", func(t *testing.T) {
		j := decode(t, e.jobYAML(wlJob, 100, 10)).Job
		if j == nil || j.Spec.Completions == nil || *j.Spec.Completions != 100 || j.Spec.Parallelism == nil || *j.Spec.Parallelism != 10 {
			t.Fatalf("decoded %+v, want 100 completions at parallelism 10", j)
		}
		if args := j.Spec.Template.Spec.Containers[0].Args; len(args) != 2 || args[1] != "--exit-after="+wlJobExitAfter {
			t.Errorf("args %v, want the short-lived workload", args)
		}
	})
	t.Run("cronjob", func(t *testing.T) {
		cj := decode(t, e.cronJobYAML(wlCronPrefix+"-00", "* * * * *")).CronJob
		if cj == nil || cj.Spec.Schedule != "* * * * *" {
			t.Fatalf("decoded %+v, want schedule every minute", cj)
		}
		if l := cj.Spec.JobTemplate.Spec.Template.Metadata.Labels; l[benchLabel] != "b0" {
			t.Errorf("pod labels %v lack the run label", l)
		}
	})
}

// The Job's trace pairs the i-th exit with the (p+i)-th create, its
// replacement's, and times the first wave to the p-th start.
func TestJobTraceTimesEachRefillAndTheFirstWave(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name       string
		trace      jobTrace
		p          int
		wantWave   float64
		wantRefill []float64
	}{
		{"two slots, out of order", jobTrace{
			creates: []time.Time{at(100), at(0), at(1500), at(1300)},
			starts:  []time.Time{at(300), at(500)},
			dies:    []time.Time{at(1400), at(1200)},
		}, 2, 500, []float64{100, 100}},
		{"more exits than creates after the first wave", jobTrace{
			creates: []time.Time{at(0), at(1300)},
			starts:  []time.Time{at(200)},
			dies:    []time.Time{at(1200), at(2600)},
		}, 1, 200, []float64{100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &report{}
			tt.trace.figures(rep, "s", "x", t0, tt.p)
			if got := rep.lookup(fmt.Sprintf("s/x: to the %d-th start (first wave running)", tt.p)); got == nil || *got != tt.wantWave {
				t.Errorf("first wave %v, want %v ms", got, tt.wantWave)
			}
			var samples []float64
			for _, f := range rep.Figures {
				if f.Name == "x: exit → its replacement's create p50" {
					samples = f.Samples
				}
			}
			if !reflect.DeepEqual(samples, tt.wantRefill) {
				t.Errorf("refills %v, want %v ms", samples, tt.wantRefill)
			}
		})
	}
}
