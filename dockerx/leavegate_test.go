package dockerx

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
)

func TestLeavesDeadlockByEngineVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"20.10.24", true},
		{"20.10.24+dfsg1", true}, // Debian bookworm's docker.io
		{"20.10.26", true},
		{"20.10.27", false},
		{"20.10", true},
		{"19.03.12", true},
		{"18.09.1-ce", true},
		{"23.0.0", false},
		{"24.0.7", false},
		{"28.2.2", false},
		{"dev", false},
		{"", false},
	} {
		if got := leavesDeadlock(tc.version); got != tc.want {
			t.Errorf("leavesDeadlock(%q) = %v, want %v", tc.version, got, tc.want)
		}
	}
}

// stopAPI counts the stops and removals in flight at once; every stop
// waits until proceed is closed.
type stopAPI struct {
	fakeAPI
	version  string
	proceed  chan struct{}
	inflight atomic.Int32
	maxSeen  atomic.Int32
	versions atomic.Int32
}

func (s *stopAPI) ServerVersion(context.Context) (types.Version, error) {
	s.versions.Add(1)
	return types.Version{Version: s.version}, nil
}

func (s *stopAPI) enter() func() {
	n := s.inflight.Add(1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { s.inflight.Add(-1) }
}

func (s *stopAPI) ContainerStop(ctx context.Context, _ string, _ container.StopOptions) error {
	defer s.enter()()
	select {
	case <-s.proceed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stopAPI) ContainerRemove(context.Context, string, container.RemoveOptions) error {
	defer s.enter()()
	time.Sleep(time.Millisecond)
	return nil
}

func newStopClient(version string, hold time.Duration) (*Client, *stopAPI) {
	api := &stopAPI{version: version, proceed: make(chan struct{})}
	c := newFakeClient(&api.fakeAPI)
	c.api = api
	c.timeout = 10 * time.Second
	c.leaves = leaveGate{hold: hold}
	return c, api
}

// stopAll stops n containers at once and removes n more, as a scale-down
// does, once every stop has been sent.
func stopAll(t *testing.T, c *Client, api *stopAPI, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := c.StopContainer(context.Background(), "c"+string(rune('a'+i)), time.Second); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := c.RemoveContainer(context.Background(), "r"+string(rune('a'+i))); err != nil {
				t.Error(err)
			}
		}()
	}
	time.AfterFunc(20*time.Millisecond, func() { close(api.proceed) })
	wg.Wait()
}

func TestStopsAndRemovalsRunOneAtATimeOnAnEngineWithTheLeaveDeadlock(t *testing.T) {
	c, api := newStopClient("20.10.24+dfsg1", time.Minute)
	stopAll(t, c, api, 6)
	if got := api.maxSeen.Load(); got != 1 {
		t.Errorf("%d stops or removals ran at once on 20.10.24; want 1", got)
	}
	if got := api.versions.Load(); got != 1 {
		t.Errorf("the Engine's version was asked %d times; want once", got)
	}
	// The inspect after each stop waits for Docker's exit handling.
	if got := len(api.inspected); got != 6 {
		t.Errorf("%d inspects after 6 stops; want 6", got)
	}
}

func TestStopsAndRemovalsRunTogetherOnAFixedEngine(t *testing.T) {
	c, api := newStopClient("28.2.2", time.Minute)
	stopAll(t, c, api, 6)
	if got := api.maxSeen.Load(); got < 2 {
		t.Errorf("at most %d stop or removal ran at once on 28.2.2; want them in parallel", got)
	}
	if got := len(api.inspected); got != 0 {
		t.Errorf("%d inspects after stops on a fixed Engine; want none", got)
	}
}

// A container that does not exit within hold (it drains within its grace
// period) lets the next stop through: a slow stop never holds the others
// for its whole grace period.
func TestASlowStopGivesTheGateBackAfterItsHold(t *testing.T) {
	c, api := newStopClient("20.10.24", 10*time.Millisecond)
	first := make(chan error, 1)
	go func() { first <- c.StopContainer(context.Background(), "slow", time.Minute) }()
	// The second stop gets through while the first is still waiting.
	second := make(chan error, 1)
	go func() { second <- c.RemoveContainer(context.Background(), "next") }()
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a removal waited for a slow stop beyond the gate's hold")
	}
	close(api.proceed)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// blockingRemoveAPI's removals wait until proceed is closed.
type blockingRemoveAPI struct {
	stopAPI
}

func (b *blockingRemoveAPI) ContainerRemove(ctx context.Context, _ string, _ container.RemoveOptions) error {
	select {
	case <-b.proceed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A removal Docker does not finish at once (a container it cannot kill)
// gives the gate back after its hold, as a slow stop does.
func TestASlowRemovalGivesTheGateBackAfterItsHold(t *testing.T) {
	c, _ := newStopClient("20.10.24", 10*time.Millisecond)
	b := &blockingRemoveAPI{stopAPI: stopAPI{version: "20.10.24", proceed: make(chan struct{})}}
	c.api = b
	first := make(chan error, 1)
	go func() { first <- c.RemoveContainer(context.Background(), "stuck") }()
	second := make(chan error, 1)
	go func() {
		stopped := make(chan error, 1)
		go func() { stopped <- c.StopContainer(context.Background(), "next", time.Second) }()
		second <- <-stopped
	}()
	// The stop waits on proceed too; it must at least have been sent
	// while the removal still holds on.
	deadline := time.Now().Add(30 * time.Second)
	for b.inflight.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if b.inflight.Load() == 0 {
		t.Fatal("a stop waited for a slow removal beyond the gate's hold")
	}
	close(b.proceed)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}
