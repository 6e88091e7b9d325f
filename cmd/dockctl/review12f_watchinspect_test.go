package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A plain `get pods` asks Docker for no container's details (an inspect
// each): the table shows none. `get pods -w` prints the same table, yet
// each of its listings — the first, and one per Docker event or resync —
// inspects every container of every pod (and asks the host's name), as
// the watch builds each pod's whole object only to read its uid
// (rowIdentity). With N pods that is N inspects per change, for nothing.
func TestReview12fGetPodsWatchInspectsNothing(t *testing.T) {
	api, base, run := waitInstance(t)
	for i := range 3 {
		api.addContainer(fmt.Sprintf("t1_web-abc-%d", i), "t1", "web", map[string]string{"app": "web"})
	}
	calls := countCalls(t, api)
	run("", "get", "pods")
	if n := calls.get("inspect") + calls.get("info"); n != 0 {
		t.Fatalf("get pods: %d inspect/info calls, want none", n)
	}
	calls.reset()
	out, done := startWait(t, base, "get", "pods", "-w")
	waitOutput(t, out, "web-abc-2")
	// A change: the listing it brings is printed (web-abc-1 stops).
	api.start("t1_web-abc-0")
	api.setState(httptest.NewRecorder(), "t1_web-abc-1", "exited", "Exited (1) 1 second ago")
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(out.String(), "web-abc-1") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("get -w printed no change:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("get -w ended: %v\n%s", err, out.String())
	default:
	}
	if n, h := calls.get("inspect"), calls.get("info"); n != 0 || h != 0 {
		t.Errorf("get pods -w (a table, as get pods prints): %d container inspects and %d host calls over %d listings, want none",
			n, h, calls.get("list"))
	}
}
