package dockerx

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

// sample is a stats answer with the fields parseStats reads; the rest of
// an answer (blkio, pids, networks) is in the two recorded ones in
// testdata.
func sample(read, preread string, cpu, precpu, usage uint64, memStats string) string {
	return `{"read":"` + read + `","preread":"` + preread + `",` +
		`"cpu_stats":{"cpu_usage":{"total_usage":` + strconv.FormatUint(cpu, 10) + `},"online_cpus":2},` +
		`"precpu_stats":{"cpu_usage":{"total_usage":` + strconv.FormatUint(precpu, 10) + `}},` +
		`"memory_stats":{"usage":` + strconv.FormatUint(usage, 10) + `,"stats":{` + memStats + `}}}`
}

const (
	t0   = "2026-12-04T18:00:00Z"
	t1   = "2026-12-04T18:00:01Z"
	zero = "0001-01-01T00:00:00Z" // how Docker writes a missing time
	mib  = 1 << 20
)

func TestParseStats(t *testing.T) {
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name     string
		body     string
		window   time.Duration
		nanos    uint64
		ws       uint64
		complete bool
	}{
		// Recorded from Engine 20.10 (cgroup v1) for an idle workload: no
		// CPU used over the second, 11.3 MiB used of which 9.4 MiB inactive
		// page cache (its binary, read once).
		{"cgroup v1, idle, recorded", file("stats-cgroup1-idle.json"), 1003460335 * time.Nanosecond, 0, 11816960 - 9904128, true},
		// cgroup v2: 1.5 s of CPU in 1 s, 150 MiB used of which 30 MiB
		// inactive file pages.
		{"cgroup v2, busy", file("stats-cgroup2-busy.json"), time.Second, 1500000000, 120 * mib, true},
		// v1 has both keys: the hierarchical total_inactive_file is the
		// container's (inactive_file is the cgroup's own, without children).
		{"cgroup v1 takes total_inactive_file", sample(t1, t0, 2_250_000_000, 2_000_000_000, 10*mib, `"inactive_file":1048576,"total_inactive_file":2097152`),
			time.Second, 250_000_000, 8 * mib, true},
		{"cgroup v2 takes inactive_file", sample(t1, t0, 2_012_000_000, 2_000_000_000, 12*mib, `"inactive_file":3145728,"file":5242880`),
			time.Second, 12_000_000, 9 * mib, true},
		{"no cache figures: the usage", sample(t1, t0, 2_001_000_000, 2_000_000_000, 5*mib, ``), time.Second, 1_000_000, 5 * mib, true},
		{"more inactive than used: none, as cadvisor", sample(t1, t0, 2_001_000_000, 2_000_000_000, mib, `"inactive_file":2097152`), time.Second, 1_000_000, 0, true},
		// Not a whole second: the rate is over the samples' own interval,
		// rounded down as kubelet's is.
		{"a rate over the samples' interval", sample("2026-12-04T18:00:01.5Z", t0, 2_000_000_001, 2_000_000_000, mib, ``), 1500 * time.Millisecond, 0, mib, true},
		{"1 ns of CPU over 1 ns", sample("2026-12-04T18:00:00.000000001Z", t0, 2_000_000_001, 2_000_000_000, mib, ``), 1, 1_000_000_000, mib, true},
		// A one-shot answer, or a daemon without an earlier sample: no rate.
		{"zero precpu and preread", sample(t1, zero, 2_000_000_000, 0, 4*mib, `"inactive_file":0`), 0, 0, 4 * mib, false},
		{"zero precpu", sample(t1, t0, 2_000_000_000, 0, 4*mib, ``), 0, 0, 4 * mib, false},
		{"zero preread", sample(t1, zero, 2_000_000_000, 1_000_000_000, 4*mib, ``), 0, 0, 4 * mib, false},
		{"counters went back (restarted between the samples)", sample(t1, t0, 1_000_000, 2_000_000_000, 4*mib, ``), 0, 0, 4 * mib, false},
		{"samples out of order", sample(t0, t1, 2_000_000_001, 2_000_000_000, 4*mib, ``), 0, 0, 4 * mib, false},
		// What Docker answers for a container that is not running.
		{"not running", `{"read":"` + zero + `","preread":"` + zero + `","name":"/x","id":"x","cpu_stats":{"cpu_usage":{"total_usage":0}},"memory_stats":{}}`,
			0, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseStats(strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if s.Window != tc.window || s.CPUNanoCores != tc.nanos || s.MemoryWorkingSet != tc.ws || s.Complete() != tc.complete {
				t.Errorf("got window %v, %d nanocores, working set %d, complete %v; want %v, %d, %d, %v",
					s.Window, s.CPUNanoCores, s.MemoryWorkingSet, s.Complete(), tc.window, tc.nanos, tc.ws, tc.complete)
			}
			if tc.name != "not running" && s.Read.IsZero() {
				t.Error("no read time")
			}
		})
	}
	if _, err := parseStats(strings.NewReader(`{"read":`)); err == nil {
		t.Error("a torn answer: no error")
	}
}

// statsAPI answers the stats endpoint only.
type statsAPI struct {
	dockerAPI
	body   string
	err    error
	stream []bool // the stream argument of each call
}

func (f *statsAPI) ContainerStats(_ context.Context, _ string, stream bool) (container.StatsResponseReader, error) {
	f.stream = append(f.stream, stream)
	if f.err != nil {
		return container.StatsResponseReader{}, f.err
	}
	return container.StatsResponseReader{Body: io.NopCloser(strings.NewReader(f.body)), OSType: "linux"}, nil
}

// ContainerStats asks for Docker's two samples (stream=false, not
// one-shot) and maps a vanished container to ErrNotFound.
func TestClientContainerStats(t *testing.T) {
	api := &statsAPI{body: sample(t1, t0, 2_250_000_000, 2_000_000_000, 10*mib, `"total_inactive_file":2097152`)}
	c := &Client{api: api, timeout: time.Second, leaves: leaveGate{decided: true}}
	s, err := c.ContainerStats(context.Background(), "abc")
	if err != nil || s.CPUNanoCores != 250_000_000 || s.MemoryWorkingSet != 8*mib || !s.Complete() {
		t.Fatalf("got %+v %v", s, err)
	}
	if len(api.stream) != 1 || api.stream[0] {
		t.Fatalf("stream arguments %v, want [false]", api.stream)
	}
	api.err = cerrdefs.ErrNotFound.WithMessage("No such container: abc")
	if _, err := c.ContainerStats(context.Background(), "abc"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "stats of container abc") {
		t.Fatalf("a removed container: %v", err)
	}
	// Removed while sampled: 200 and no body, which is gone too; a torn
	// answer is not.
	api.err, api.body = nil, ""
	if _, err := c.ContainerStats(context.Background(), "abc"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "stats of container abc") {
		t.Fatalf("an empty answer: %v", err)
	}
	for _, body := range []string{"not json", `{"read":`} {
		api.body = body
		if _, err := c.ContainerStats(context.Background(), "abc"); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "stats of container abc: decode") {
			t.Fatalf("a bad answer %q: %v", body, err)
		}
	}
}
