package main

import (
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
