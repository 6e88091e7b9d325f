package main

import (
	"reflect"
	"strings"
	"testing"
)

// The recovery section reads its figures from go test's benchmark line,
// with or without the GOMAXPROCS suffix, and from no other benchmark's.
func TestParseBenchLineReadsTheNamedBenchmarksMetrics(t *testing.T) {
	const name = "BenchmarkColdRecovery/pods=100_services=10"
	for _, tc := range []struct {
		name    string
		out     string
		want    map[string]float64
		wantErr string
	}{
		{
			name: "GOMAXPROCS suffix",
			out: "goos: linux\nBenchmarkColdRecovery/pods=100_services=10-2   \t       1\t        27.21 dockctl-s\t        26.69 docker-s\t         1.019 ratio\t         0 ns/op\n" +
				"--- BENCH: BenchmarkColdRecovery/pods=100_services=10-2\nPASS\n",
			want: map[string]float64{"dockctl-s": 27.21, "docker-s": 26.69, "ratio": 1.019, "ns/op": 0},
		},
		{
			name: "no suffix at GOMAXPROCS 1",
			out:  name + " 1 9.3 dockctl-s 7.1 docker-s\n",
			want: map[string]float64{"dockctl-s": 9.3, "docker-s": 7.1},
		},
		{
			name:    "another size only",
			out:     "BenchmarkColdRecovery/pods=30_services=3-2 1 9.3 dockctl-s\n",
			wantErr: "no result line",
		},
		{
			name:    "a longer name beginning with it",
			out:     name + "-extra-2 1 9.3 dockctl-s\n",
			wantErr: "no result line",
		},
		{
			name:    "a value without its unit",
			out:     name + "-2 1 9.3 dockctl-s 7.1\n",
			wantErr: "value-unit pairs",
		},
		{
			name:    "not a number",
			out:     name + "-2 1 fast dockctl-s\n",
			wantErr: "invalid syntax",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBenchLine(tc.out, name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// A benchmark skipped by the e2e tests' opt-out is told from one that
// ran, with the reason the test gave.
func TestBenchSkippedGivesTheReason(t *testing.T) {
	for _, tc := range []struct {
		name, out, why string
		skipped        bool
	}{
		{"ran", "BenchmarkColdRecovery/pods=100_services=10-2 1 27 dockctl-s\nPASS\n", "", false},
		{"skipped", "--- SKIP: BenchmarkColdRecovery/pods=100_services=10\n    privdockerd_test.go:68: a private dockerd needs root (skipped: DOCKCTL_E2E_SKIP_DAEMON_RESTART=1)\nPASS\n",
			"privdockerd_test.go:68: a private dockerd needs root (skipped: DOCKCTL_E2E_SKIP_DAEMON_RESTART=1)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, skipped := benchSkipped(tc.out)
			if why != tc.why || skipped != tc.skipped {
				t.Errorf("got %q, %t; want %q, %t", why, skipped, tc.why, tc.skipped)
			}
		})
	}
}

// A failure's excerpt leaves out the private daemon's own log lines.
func TestBenchTailLeavesOutTheDaemonsLog(t *testing.T) {
	out := "a\n    time=\"x\" level=info msg=\"shim disconnected\"\nb\nc\n"
	if got := benchTail(out, 2); got != "b\nc" {
		t.Errorf("got %q", got)
	}
	if got := benchTail(out, 10); got != "a\nb\nc" {
		t.Errorf("got %q", got)
	}
}
