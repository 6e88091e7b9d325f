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
	// The one die event is settled by the event stream with an inspect of
	// that container (dockerx's settle, so that the next list shows it
	// exited): that one is not the listings'.
	const settles = 1
	if n, h := calls.get("inspect"), calls.get("info"); n > settles || h != 0 {
		t.Errorf("get pods -w (a table, as get pods prints): %d container inspects (%d the event stream's) and %d host calls over %d listings, want none",
			n, settles, h, calls.get("list"))
	}
}

// A get of some pods by name prints those pods' objects only, and asks
// Docker about their containers only (TestPodDetailsAsked: "an inspect of
// each container of the pods printed, once"). Several names (`get pods A
// B -o json`, or `get pod/A deployment/web -o yaml`) list the kind whole
// and pick the names out, and the inspect, made once for every pod
// listed, covers every container of the instance: 2 pods printed, 6
// inspected.
func TestReview12fGetNamedPodsInspectsOnlyThem(t *testing.T) {
	api, _, run := waitInstance(t)
	for i := range 6 {
		api.addContainer(fmt.Sprintf("t1_web-abc-%d", i), "t1", "web", map[string]string{"app": "web"})
	}
	calls := countCalls(t, api)
	for _, args := range [][]string{
		{"get", "pods", "web-abc-0", "web-abc-1", "-o", "json"},
		{"get", "pod/web-abc-0", "pod/web-abc-1", "deployment/web", "-o", "yaml"},
	} {
		calls.reset()
		out := run("", args...)
		if n := strings.Count(out, "containerID: docker://") + strings.Count(out, `"containerID": "docker://`); n != 2 {
			t.Fatalf("%v: %d pods' containers printed, want 2:\n%s", args, n, out)
		}
		if n := calls.get("inspect"); n != 2 {
			t.Errorf("%v: %d container inspects for the 2 pods printed (one container each), want 2", args, n)
		}
	}
}
