package dockerx

import (
	"context"
	"errors"
	"fmt"
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
		{"20.10.27-ce", false},
		{"20.10.25+azure-2", true},
		{"v20.10.26", true}, // a leading v, as some builds print it
		{"v24.0.7", false},
		{"1.13.1", true},
		{"dev", false},
		{"master", false},
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

// gateAPI is an Engine whose stops and removals of the IDs in blocked
// wait until their channel is closed, whatever their context says (a
// daemon busy with them); the others return at once. It records every
// call's context deadline, and every version query's on versionAsked.
type gateAPI struct {
	fakeAPI
	version      string
	versionErrs  atomic.Int32 // version queries still to fail
	versionAsked chan time.Time
	versionHang  chan struct{} // when set, version queries wait for it
	blocked      map[string]chan struct{}
	entered      chan string // IDs as their stop or removal begins
	calls        sync.Map    // ID -> time.Time, the deadline of its call
	inflight     atomic.Int32
	maxSeen      atomic.Int32
}

func newGateAPI(version string, blocked ...string) *gateAPI {
	g := &gateAPI{version: version, blocked: map[string]chan struct{}{},
		versionAsked: make(chan time.Time, 16), entered: make(chan string, 16)}
	for _, id := range blocked {
		g.blocked[id] = make(chan struct{})
	}
	return g
}

func (g *gateAPI) ServerVersion(ctx context.Context) (types.Version, error) {
	d, _ := ctx.Deadline()
	select {
	case g.versionAsked <- d:
	default:
	}
	if g.versionHang != nil {
		<-g.versionHang
	}
	if g.versionErrs.Add(-1) >= 0 {
		return types.Version{}, errors.New("Error response from daemon: 500 Internal Server Error")
	}
	return types.Version{Version: g.version}, nil
}

func (g *gateAPI) call(ctx context.Context, id string) error {
	n := g.inflight.Add(1)
	defer g.inflight.Add(-1)
	for m := g.maxSeen.Load(); n > m && !g.maxSeen.CompareAndSwap(m, n); m = g.maxSeen.Load() {
	}
	d, _ := ctx.Deadline()
	g.calls.Store(id, d)
	select {
	case g.entered <- id:
	default:
	}
	if ch, ok := g.blocked[id]; ok {
		<-ch
	}
	return nil
}

func (g *gateAPI) ContainerStop(ctx context.Context, id string, _ container.StopOptions) error {
	return g.call(ctx, id)
}

func (g *gateAPI) ContainerRemove(ctx context.Context, id string, _ container.RemoveOptions) error {
	return g.call(ctx, id)
}

func newGateClient(api *gateAPI, hold time.Duration) *Client {
	c := newFakeClient(&api.fakeAPI)
	c.api = api
	c.timeout = 10 * time.Second
	c.leaves = leaveGate{hold: hold}
	return c
}

// waitFor returns what ch delivers; a watchdog only turns a hang into a
// failure, it decides nothing that happens in time.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("still waiting after a minute: %s", what)
		var zero T
		return zero
	}
}

// A stop whose context ends while it waits for the gate (the controller
// shuts down, or the pod's grace period is shortened and the stop is to be
// sent again) returns at once without being sent, and leaves the gate to
// the others.
func TestAStopWhoseContextEndsWhileItWaitsLeavesWithoutTheGate(t *testing.T) {
	api := newGateAPI("20.10.24", "holder")
	c := newGateClient(api, time.Hour)
	holder := make(chan error, 1)
	go func() { holder <- c.RemoveContainer(context.Background(), "holder") }()
	waitFor(t, api.entered, "the first removal to reach Docker")

	ctx, cancel := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() { waiter <- c.StopContainer(ctx, "waiter", time.Minute) }()
	cancel()
	err := waitFor(t, waiter, "a stop whose context ended to give up the gate")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a stop cancelled while waiting = %v, want context.Canceled", err)
	}
	if _, sent := api.calls.Load("waiter"); sent {
		t.Error("a stop cancelled while another held the gate was sent to Docker")
	}

	close(api.blocked["holder"])
	if err := waitFor(t, holder, "the holder's removal"); err != nil {
		t.Fatal(err)
	}
	next := make(chan error, 1)
	go func() { next <- c.RemoveContainer(context.Background(), "next") }()
	if err := waitFor(t, next, "a removal after the cancelled stop left"); err != nil {
		t.Fatal(err)
	}
}

// A call's own deadline bounds Docker's work on it, not its wait for the
// gate: a removal behind others in a long scale-down is still sent with
// its whole timeout, rather than failing for the time it queued.
func TestACallsDeadlineStartsWhenTheGateLetsItThrough(t *testing.T) {
	api := newGateAPI("20.10.24", "holder")
	api.versionErrs.Store(1 << 20) // asked by every call: observes each arrival
	c := newGateClient(api, time.Hour)
	c.timeout = 50 * time.Millisecond
	holder := make(chan error, 1)
	go func() { holder <- c.RemoveContainer(context.Background(), "holder") }()
	waitFor(t, api.versionAsked, "the first removal's version query")
	waitFor(t, api.entered, "the first removal to reach Docker")

	queued := make(chan error, 1)
	go func() { queued <- c.RemoveContainer(context.Background(), "queued") }()
	asked := waitFor(t, api.versionAsked, "the queued removal's version query")
	// Past every deadline the queued removal had when it arrived.
	time.Sleep(time.Until(asked) + time.Millisecond)
	released := time.Now()
	close(api.blocked["holder"])
	for _, ch := range []chan error{holder, queued} {
		if err := waitFor(t, ch, "the removals"); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := api.calls.Load("queued")
	if deadline := d.(time.Time); deadline.Before(released.Add(c.timeout)) {
		t.Errorf("the queued removal reached Docker with %v left of its %v; want its whole timeout from its turn",
			deadline.Sub(released), c.timeout)
	}
}

// An Engine that cannot tell its version is taken as affected, and asked
// again by the next call rather than judged for good.
func TestAnEngineThatCannotTellItsVersionIsGatedAndAskedAgain(t *testing.T) {
	api := newGateAPI("24.0.7")
	api.versionErrs.Store(1)
	c := newGateClient(api, time.Hour)
	for i, want := range []int{1, 1, 1} { // inspects after each stop, cumulated
		if err := c.StopContainer(context.Background(), "c", time.Second); err != nil {
			t.Fatal(err)
		}
		api.mu.Lock()
		got := len(api.inspected)
		api.mu.Unlock()
		if got != want {
			t.Errorf("after stop %d: %d gated stops, want %d", i+1, got, want)
		}
	}
	if n := len(api.versionAsked); n != 2 {
		t.Errorf("the version was asked %d times; want twice (the failure, then the answer)", n)
	}
}

// While one call asks a slow daemon for its version, the others do not
// wait behind it: they pass the gate, taken as affected, unasked.
func TestCallsDoNotWaitBehindAVersionQuery(t *testing.T) {
	api := newGateAPI("20.10.24")
	api.versionHang = make(chan struct{})
	c := newGateClient(api, time.Hour)
	asking := make(chan error, 1)
	go func() { asking <- c.StopContainer(context.Background(), "asking", time.Second) }()
	waitFor(t, api.versionAsked, "the first stop's version query")
	other := make(chan error, 1)
	go func() { other <- c.RemoveContainer(context.Background(), "other") }()
	if err := waitFor(t, other, "a removal while another call asks the version"); err != nil {
		t.Fatal(err)
	}
	close(api.versionHang)
	if err := waitFor(t, asking, "the stop that asked"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.versionAsked); n != 0 {
		t.Errorf("%d more version queries while one was in flight; want none", n)
	}
}

// fakeHolds is the gate's clock in tests: holds end when the test fires
// them.
type fakeHolds struct {
	mu    sync.Mutex
	holds []*fakeHold
}

type fakeHold struct {
	f                func()
	stopped, expired bool
}

func (h *fakeHolds) after(_ time.Duration, f func()) func() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	hold := &fakeHold{f: f}
	h.holds = append(h.holds, hold)
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		pending := !hold.stopped && !hold.expired
		hold.stopped = true
		return pending
	}
}

// expire ends hold i as its timer would, even if it was stopped (a timer
// that fired just before its Stop).
func (h *fakeHolds) expire(i int) {
	h.mu.Lock()
	hold := h.holds[i]
	hold.expired = true
	h.mu.Unlock()
	hold.f()
}

// taken reports whether the gate is held, leaving it as it was.
func taken(g *leaveGate) bool {
	select {
	case g.turns() <- struct{}{}:
		<-g.turns()
		return false
	default:
		return true
	}
}

// Each taking of the gate is given back once: a hold that ends after its
// call released the gate, or a release after its hold ended, never frees
// the turn of the call that came next (two calls in at once).
func TestALateHoldOrReleaseFreesNoOtherCallsTurn(t *testing.T) {
	holds := &fakeHolds{}
	g := &leaveGate{decided: true, serial: true, after: holds.after}
	ctx := context.Background()
	releaseA, held, err := g.enter(ctx, nil, 0)
	if !held || err != nil {
		t.Fatalf("enter = %v, %v; want the gate", held, err)
	}
	releaseA()
	releaseB, _, _ := g.enter(ctx, nil, 0)
	holds.expire(0) // A's hold ends after A gave the gate back
	if !taken(g) {
		t.Fatal("A's late hold freed B's turn")
	}
	holds.expire(1) // B's hold ends: the gate is free
	if taken(g) {
		t.Fatal("B's hold ended and the gate is still taken")
	}
	releaseC, _, _ := g.enter(ctx, nil, 0)
	releaseB() // B returns after its hold gave the gate to C
	releaseA()
	if !taken(g) {
		t.Fatal("a release after its hold ended freed the next call's turn")
	}
	releaseC()
	if taken(g) {
		t.Fatal("C released and the gate is still taken")
	}
}

// Thousands of removals at once (a deleted namespace) pass one at a time,
// all of them, and every hold armed is stopped by its release.
func TestThousandsOfRemovalsPassOneAtATimeAndStopTheirHolds(t *testing.T) {
	const n = 2000
	api := newGateAPI("20.10.24")
	holds := &fakeHolds{}
	c := newGateClient(api, time.Hour)
	c.leaves.after = holds.after
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := c.RemoveContainer(context.Background(), fmt.Sprint("c", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := api.maxSeen.Load(); got != 1 {
		t.Errorf("%d removals ran at once; want 1", got)
	}
	removed := 0
	api.calls.Range(func(any, any) bool { removed++; return true })
	if removed != n {
		t.Errorf("%d of %d removals reached Docker", removed, n)
	}
	holds.mu.Lock()
	defer holds.mu.Unlock()
	stopped := 0
	for _, h := range holds.holds {
		if h.stopped {
			stopped++
		}
	}
	if len(holds.holds) != n || stopped != n {
		t.Errorf("%d holds armed, %d stopped; want %d of each", len(holds.holds), stopped, n)
	}
	if taken(&c.leaves) {
		t.Error("the gate is still taken after every removal returned")
	}
}
