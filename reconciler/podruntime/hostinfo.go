package podruntime

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// HostInfoer is the Docker call that tells the host's name and capacity
// (spec.nodeName, and what resourceFieldRefs report for a limit a
// container does not set); a Docker without it reports none.
type HostInfoer interface {
	HostInfo(ctx context.Context) (dockerx.HostInfo, error)
}

// hostRetry is how long after a failure the host is asked again: not at
// every pod's create.
const hostRetry = time.Minute

// HostInfoCache remembers the Docker host's name and capacity, asked
// once. The zero value is empty and ready; it is safe for concurrent use.
type HostInfoCache struct {
	mu   sync.Mutex
	host *dockerx.HostInfo
	// failed is when the host information last could not be had.
	failed time.Time
}

// Get returns the host's information, asking docker (a HostInfoer, or
// not) the first time and a minute after a failure, which it logs; an
// unknown host reads as empty.
func (h *HostInfoCache) Get(ctx context.Context, docker any, log *slog.Logger) dockerx.HostInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.host != nil {
		return *h.host
	}
	hi, ok := docker.(HostInfoer)
	if !ok {
		return dockerx.HostInfo{}
	}
	if !h.failed.IsZero() && time.Since(h.failed) < hostRetry {
		return dockerx.HostInfo{}
	}
	info, err := hi.HostInfo(ctx)
	if err != nil {
		h.failed = time.Now()
		log.Warn("host information unavailable: spec.nodeName and unset limits read as empty", "err", err)
		return dockerx.HostInfo{}
	}
	h.host = &info
	return info
}

// Known returns the host's information if it was had already, else
// empty, never asking: for callers without a context (a sweep).
func (h *HostInfoCache) Known() dockerx.HostInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.host != nil {
		return *h.host
	}
	return dockerx.HostInfo{}
}
