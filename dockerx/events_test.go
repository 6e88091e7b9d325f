package dockerx

import (
	"context"
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
)

// stream is one fake subscription: messages to deliver, then how it ends.
type stream struct {
	connectErr error // the subscription fails immediately
	msgs       []events.Message
	endErr     error // the stream breaks with this after msgs; nil keeps it open
}

func fakeStreams(ss []stream) func(int) (<-chan events.Message, <-chan error) {
	return func(call int) (<-chan events.Message, <-chan error) {
		msgs := make(chan events.Message)
		errs := make(chan error, 1)
		if call >= len(ss) {
			return msgs, errs // stays open and silent
		}
		s := ss[call]
		if s.connectErr != nil {
			errs <- s.connectErr
			return msgs, errs
		}
		go func() {
			for _, m := range s.msgs {
				msgs <- m
			}
			if s.endErr != nil {
				errs <- s.endErr
			}
		}()
		return msgs, errs
	}
}

func msg(action, id, deployment string) events.Message {
	return events.Message{
		Type: events.ContainerEventType, Action: events.Action(action),
		Actor:    events.Actor{ID: id, Attributes: map[string]string{"name": "n-" + id, LabelDeployment: deployment}},
		TimeNano: time.Unix(100, 5).UnixNano(),
	}
}

// nextEvent is the next event of ch, failing t after 5 s.
func nextEvent(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("timeout")
	}
	return Event{}
}

// heldBack fails t if ch sends an event within 50 ms: the events to settle
// are held back while their inspect waits.
func heldBack(t *testing.T, ch <-chan Event) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("got %+v before the changes were settled", ev)
	case <-time.After(50 * time.Millisecond):
	}
}

var errUnexpectedEOF = errors.New("unexpected EOF")

func TestEventsReconnectAndGaps(t *testing.T) {
	refused := errors.New("connection refused")
	f := &fakeAPI{events: fakeStreams([]stream{
		{msgs: []events.Message{msg("create", "c1", "web"), msg("start", "c1", "web")}, endErr: io.EOF},
		{connectErr: refused}, // daemon down: no Gap for a failed attempt
		{connectErr: refused},
		{msgs: []events.Message{msg("health_status: healthy", "c1", "web")}, endErr: errUnexpectedEOF},
		{msgs: []events.Message{msg("die", "c2", "")}},
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := newFakeClient(f).Events(ctx, "default")

	type want struct {
		gap        bool
		gapErr     error
		down       error // a Down event with this error
		action, id string
		deployment string
	}
	wants := []want{
		{gap: true},
		{action: "create", id: "c1", deployment: "web"},
		{action: "start", id: "c1", deployment: "web"},
		{down: io.EOF},  // the stream broke: reported at once,
		{down: refused}, // and so is every failed attempt,
		{down: refused}, // not only the reconnect
		{gap: true, gapErr: refused},
		{action: "health_status: healthy", id: "c1", deployment: "web"},
		{down: errUnexpectedEOF},
		{gap: true},
		{action: "die", id: "c2"},
	}
	for i, w := range wants {
		var ev Event
		select {
		case ev = <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d: timeout", i)
		}
		if ev.Down != (w.down != nil) {
			t.Fatalf("event %d = %+v, want %+v", i, ev, w)
		}
		if ev.Down {
			if ev.Gap || ev.Action != "" || ev.Deployment != "" || ev.Err == nil || ev.Err.Error() != w.down.Error() {
				t.Fatalf("event %d = %+v, want Down with %v", i, ev, w.down)
			}
			continue
		}
		if ev.Gap != w.gap || ev.Action != w.action || ev.ContainerID != w.id || ev.Deployment != w.deployment {
			t.Fatalf("event %d = %+v, want %+v", i, ev, w)
		}
		if i == 0 && ev.Err != nil {
			t.Errorf("first Gap carries error %v, want nil", ev.Err)
		}
		if w.gapErr != nil && !errors.Is(ev.Err, w.gapErr) {
			t.Errorf("event %d: Gap error %v, want %v", i, ev.Err, w.gapErr)
		}
		if i > 0 && ev.Gap && ev.Err == nil {
			t.Errorf("event %d: reconnect Gap without the reason", i)
		}
		if !ev.Gap && (ev.Name != "n-"+w.id || !ev.Time.Equal(time.Unix(100, 5))) {
			t.Errorf("event %d: name %q time %v", i, ev.Name, ev.Time)
		}
	}

	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return // closed once ctx is done
			}
		case <-deadline:
			t.Fatal("channel not closed after cancel")
		}
	}
}

// TestEventsSettled: a die, pause or unpause is delivered only once an
// inspect of its container has returned (Docker has finished with it, so a
// list shows the change), without holding back the events that follow it;
// one still held when the subscription ends is dropped, and the channel
// closes.
func TestEventsSettled(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeAPI{inspectGate: gate, events: fakeStreams([]stream{
		{msgs: []events.Message{msg("die", "c1", "web"), msg("start", "c2", "web"), msg("pause", "c3", "api"), msg("unpause", "c4", "api")}},
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := newFakeClient(f).Events(ctx, "default")
	next := func() Event { t.Helper(); return nextEvent(t, ch) }
	if ev := next(); !ev.Gap {
		t.Fatalf("first event %+v, want the Gap", ev)
	}
	if ev := next(); ev.Action != "start" || ev.ContainerID != "c2" {
		t.Fatalf("got %+v, want c2's start while the others are held", ev)
	}
	heldBack(t, ch)
	close(gate)
	got := map[string]string{}
	for range 3 {
		ev := next()
		got[ev.ContainerID] = ev.Action + " " + ev.Deployment
	}
	if got["c1"] != "die web" || got["c3"] != "pause api" || got["c4"] != "unpause api" {
		t.Fatalf("held events %v, want c1's die, c3's pause and c4's unpause", got)
	}
	f.mu.Lock()
	inspected := append([]string(nil), f.inspected...)
	f.mu.Unlock()
	sort.Strings(inspected)
	if strings.Join(inspected, " ") != "c1 c3 c4" {
		t.Errorf("inspected %v, want c1, c3 and c4", inspected)
	}

	// A die held when the subscription ends is dropped: the channel closes.
	f2 := &fakeAPI{inspectGate: make(chan struct{}), events: fakeStreams([]stream{{msgs: []events.Message{msg("die", "c4", "web")}}})}
	ctx2, cancel2 := context.WithCancel(context.Background())
	ch2 := newFakeClient(f2).Events(ctx2, "default")
	if ev := <-ch2; !ev.Gap {
		t.Fatalf("first event %+v, want the Gap", ev)
	}
	for {
		f2.mu.Lock()
		n := len(f2.inspected)
		f2.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel2()
	select {
	case ev, ok := <-ch2:
		if ok {
			t.Fatalf("got %+v after cancel, want the channel closed", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed after cancel")
	}
}

func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 100 * time.Millisecond, 5 * time.Second} {
		for range 100 {
			if j := jitter(d); j > d || j < d/2 {
				t.Fatalf("jitter(%v) = %v, want in [%v, %v]", d, j, d/2, d)
			}
		}
	}
}

func TestFromMessage(t *testing.T) {
	at := time.Unix(100, 5)
	for _, tt := range []struct {
		name  string
		attrs map[string]string
		want  Event
	}{
		{"replica of an earlier release: default namespace", map[string]string{"name": "i_web-abc-0", LabelDeployment: "web"},
			Event{Action: "start", ContainerID: "c1", Name: "i_web-abc-0", Deployment: "web", Namespace: "default", Time: at}},
		{"replica of a namespace", map[string]string{"name": "i_web.shop-abc-0", LabelInstance: "i", LabelDeployment: "web", LabelRole: RoleReplica, LabelNamespace: "shop"},
			Event{Action: "start", ContainerID: "c1", Name: "i_web.shop-abc-0", Deployment: "web", Role: RoleReplica, Namespace: "shop", Time: at}},
		{"proxy helper", map[string]string{"name": "i_web.shop_svc", LabelRole: RoleProxy, LabelNamespace: "shop", LabelService: "web"},
			Event{Action: "start", ContainerID: "c1", Name: "i_web.shop_svc", Role: RoleProxy, Namespace: "shop", Time: at}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := events.Message{Type: events.ContainerEventType, Action: "start",
				Actor: events.Actor{ID: "c1", Attributes: tt.attrs}, TimeNano: at.UnixNano()}
			if got := fromMessage(m); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fromMessage =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestEventsWithExitsSendsADieAtOnce: a die is sent at once, Unsettled,
// with its exit code, then again once settled; Events sends only the
// settled one, and a pause is held back by both.
func TestEventsWithExitsSendsADieAtOnce(t *testing.T) {
	die := msg("die", "c1", "web")
	die.Actor.Attributes["exitCode"] = "3"
	gate := make(chan struct{})
	f := &fakeAPI{inspectGate: gate, events: fakeStreams([]stream{{msgs: []events.Message{die, msg("pause", "c2", "web")}}})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := newFakeClient(f).EventsWithExits(ctx, "default")
	next := func() Event { t.Helper(); return nextEvent(t, ch) }
	if ev := next(); !ev.Gap {
		t.Fatalf("first event %+v, want the Gap", ev)
	}
	if ev := next(); ev.Action != "die" || ev.ContainerID != "c1" || !ev.Unsettled || ev.ExitCode != 3 {
		t.Fatalf("got %+v, want c1's die at once, unsettled, exit code 3", ev)
	}
	heldBack(t, ch)
	close(gate)
	got := map[string]string{}
	for range 2 {
		ev := next()
		if ev.Unsettled {
			t.Errorf("held event %+v is unsettled", ev)
		}
		got[ev.ContainerID] = ev.Action
	}
	if got["c1"] != "die" || got["c2"] != "pause" {
		t.Fatalf("held events %v, want c1's die and c2's pause", got)
	}
}

// TestFromMessageExitCode: a die carries its exitCode; one unparsable is
// a failure, never a success.
func TestFromMessageExitCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		code string
		want int
	}{
		{"success", "0", 0},
		{"failure", "137", 137},
		{"unparsable", "", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := msg("die", "c1", "web")
			if tt.code != "" {
				m.Actor.Attributes["exitCode"] = tt.code
			}
			if got := fromMessage(m).ExitCode; got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}
