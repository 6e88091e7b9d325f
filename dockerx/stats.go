package dockerx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"

	"github.com/docker/docker/api/types/container"
)

// ContainerStats is one container's CPU and memory usage, the two figures
// kubelet reports to metrics-server (and `kubectl top` prints).
type ContainerStats struct {
	// Read is when Docker took the sample; zero when the container was not
	// running (Docker then answers with empty stats).
	Read time.Time
	// Window is the time between Docker's two samples that CPUNanoCores is
	// averaged over; zero when Docker gave no earlier sample to compare
	// with (then there is no CPU figure).
	Window time.Duration
	// CPUNanoCores is the CPU used over Window, in billionths of a core:
	// kubelet's usageNanoCores.
	CPUNanoCores uint64
	// MemoryWorkingSet is the memory in use in bytes, less the inactive
	// file cache the kernel can reclaim first: what kubelet (cadvisor)
	// calls the working set, what its evictions and `kubectl top` go by.
	MemoryWorkingSet uint64
}

// Complete reports whether s has both figures, as metrics-server requires
// of a container before it reports one.
func (s ContainerStats) Complete() bool { return !s.Read.IsZero() && s.Window > 0 }

// ContainerStats reads a container's usage from the stats endpoint without
// streaming, which answers after two of Docker's samples (about a second
// apart: its collector's period) so that the CPU figure is a rate over that
// second. It is not the one-shot form, which gives one sample and no rate.
// A container that is not running gives empty stats (Complete false); one
// that is gone, or removed while sampled, an error wrapping ErrNotFound.
func (c *Client) ContainerStats(ctx context.Context, id string) (ContainerStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	r, err := c.api.ContainerStats(ctx, id, false)
	if err != nil {
		return ContainerStats{}, mapErr("stats of container "+id, err)
	}
	defer r.Body.Close()
	s, err := parseStats(r.Body)
	if errors.Is(err, io.EOF) {
		// 200 and nothing: the container was removed while its two
		// samples were awaited (the daemon's subscription closed without
		// an answer). It is gone, as a 404 says.
		return ContainerStats{}, &mappedError{sentinel: ErrNotFound,
			err: fmt.Errorf("stats of container %s: empty answer: removed while sampled", id)}
	}
	if err != nil {
		return ContainerStats{}, fmt.Errorf("stats of container %s: %w", id, err)
	}
	return s, nil
}

// parseStats turns one answer of the stats endpoint (Linux) into usage.
// CPU is Δ(container CPU time) / Δ(wall time) between the two samples
// (cpu_stats against precpu_stats, read against preread), as kubelet
// computes usageNanoCores; not Docker's CPU% formula, which divides by the
// host's CPU time and scales by the number of CPUs. Memory is the working
// set as cadvisor computes it: usage less inactive file pages
// (total_inactive_file under cgroup v1, inactive_file under v2), never
// below zero.
func parseStats(r io.Reader) (ContainerStats, error) {
	var v container.StatsResponse
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		return ContainerStats{}, fmt.Errorf("decode: %w", err)
	}
	if v.Read.IsZero() {
		return ContainerStats{}, nil
	}
	s := ContainerStats{Read: v.Read, MemoryWorkingSet: workingSet(v.MemoryStats)}
	pre, cur := v.PreCPUStats.CPUUsage.TotalUsage, v.CPUStats.CPUUsage.TotalUsage
	wall := v.Read.Sub(v.PreRead)
	// No earlier sample (zero preread or precpu: a one-shot answer, or a
	// daemon that had none yet), or counters that went back (the
	// container restarted between the samples): no rate to give.
	if v.PreRead.IsZero() || pre == 0 || cur < pre || wall <= 0 {
		return s, nil
	}
	hi, lo := bits.Mul64(cur-pre, uint64(time.Second))
	if hi >= uint64(wall) {
		return s, nil // more cores than fit in 64 bits: nonsense
	}
	s.CPUNanoCores, _ = bits.Div64(hi, lo, uint64(wall))
	s.Window = wall
	return s, nil
}

// workingSet is cadvisor's working set: usage less inactive file pages.
func workingSet(m container.MemoryStats) uint64 {
	inactive, v1 := m.Stats["total_inactive_file"]
	if !v1 {
		inactive = m.Stats["inactive_file"]
	}
	if inactive >= m.Usage {
		return 0
	}
	return m.Usage - inactive
}
