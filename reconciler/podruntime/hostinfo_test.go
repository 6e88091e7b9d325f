package podruntime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// countingHost answers HostInfo with info or err and counts the calls.
type countingHost struct {
	info  dockerx.HostInfo
	err   error
	calls int
}

func (c *countingHost) HostInfo(context.Context) (dockerx.HostInfo, error) {
	c.calls++
	return c.info, c.err
}

func TestHostInfoCacheAsksOnceAndKeepsTheAnswer(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := &countingHost{info: dockerx.HostInfo{Name: "node1", CPUs: 4, Memory: 8 << 30}}
	var h HostInfoCache
	if got := h.Known(); got != (dockerx.HostInfo{}) {
		t.Errorf("Known before any Get = %+v, want empty", got)
	}
	for range 3 {
		if got := h.Get(context.Background(), host, log); got != host.info {
			t.Errorf("Get = %+v, want %+v", got, host.info)
		}
	}
	if host.calls != 1 {
		t.Errorf("HostInfo asked %d times, want once", host.calls)
	}
	if got := h.Known(); got != host.info {
		t.Errorf("Known = %+v, want %+v", got, host.info)
	}
}

func TestHostInfoCacheReadsAFailureOrNoHostInfoerAsEmpty(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := &countingHost{err: errors.New("daemon busy")}
	var h HostInfoCache
	for range 2 {
		if got := h.Get(context.Background(), host, log); got != (dockerx.HostInfo{}) {
			t.Errorf("Get after a failure = %+v, want empty", got)
		}
	}
	if host.calls != 1 {
		t.Errorf("HostInfo asked %d times right after a failure, want once", host.calls)
	}
	var none HostInfoCache
	if got := none.Get(context.Background(), struct{}{}, log); got != (dockerx.HostInfo{}) {
		t.Errorf("Get of a Docker without HostInfo = %+v, want empty", got)
	}
}
