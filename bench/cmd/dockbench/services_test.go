package main

import "testing"

// The proxy-overhead ratios carry the goals over Docker's -p: the
// published Service within 1.1× at p50 and p99 and 0.9× in throughput, the
// ClusterIP within 1.2× at p50 and 0.85× in throughput; the pod and the
// container reached directly are informational.
func TestOverheadRatiosCarryTheirGoals(t *testing.T) {
	rep := &report{}
	recordOverheadRatios(rep)
	want := map[string]string{
		"latency p50 (iii) / (ii) -p": "≤ 1.1×",
		"latency p99 (iii) / (ii) -p": "≤ 1.1×",
		"throughput (iii) / (ii) -p":  "≥ 0.9×",
		"latency p50 (iv) / (ii) -p":  "≤ 1.2×",
		"latency p99 (iv) / (ii) -p":  "",
		"throughput (iv) / (ii) -p":   "≥ 0.85×",
		"latency p50 (i') / (ii) -p":  "",
		"throughput (i') / (ii) -p":   "",
		"latency p50 (i) / (ii) -p":   "",
	}
	got := map[string]string{}
	for _, q := range rep.Ratios {
		got[q.Name] = ""
		if q.Goal != nil {
			got[q.Name] = q.Goal.String()
		}
	}
	if len(rep.Ratios) != 12 {
		t.Errorf("%d ratios, want p50, p99 and throughput of 4 paths", len(rep.Ratios))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: goal %q (registered %t), want %q", name, g, ok, w)
		}
	}
}
