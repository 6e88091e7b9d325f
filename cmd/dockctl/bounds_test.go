package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Item 20: a replica dockctl is stopping gracefully shows as Terminating,
// not ready, in `get containers`, whatever Docker still says of it.
func TestContainerTerminating(t *testing.T) {
	snap, _ := fixture(t)
	c := snap.containers[0] // running and ready in the fixture
	if o := snap.containerObject(c); o.Phase != "Running" || !o.Ready {
		t.Fatalf("before: %s ready=%v, want Running and ready", o.Phase, o.Ready)
	}
	snap.statuses["default/web"].Extra["controller"] = json.RawMessage(`{"rollout":{},"containers":{"` + c.ID + `":{"stopDeadline":"2026-03-01T10:00:00Z"}}}`)
	snap.views = nil
	if o := snap.containerObject(c); o.Phase != "Terminating" || o.Ready {
		t.Fatalf("while stopping: %s ready=%v, want Terminating and not ready", o.Phase, o.Ready)
	}
}

// Item 20: the controller's bounds are flags with documented defaults, and
// a value that would disable them is refused before anything starts.
func TestControllerBoundFlags(t *testing.T) {
	cmd := newControllerCommand(&globalOptions{})
	for flag, want := range map[string]string{"max-replicas": "1000", "max-grace-period": "5m0s"} {
		f := cmd.Flags().Lookup(flag)
		if f == nil || f.DefValue != want {
			t.Fatalf("--%s: %+v, want default %s", flag, f, want)
		}
	}
	for _, args := range [][]string{{"--max-replicas", "0"}, {"--max-replicas", "100001"}, {"--max-grace-period", "0s"}} {
		cmd := newControllerCommand(&globalOptions{stateDir: t.TempDir()})
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Fatalf("%v: err = %v, want a refusal naming the flag", args, err)
		}
	}
}

// Item 20: `scale` keeps the hard bound `apply` enforces.
func TestScaleRefusesAbsurdReplicas(t *testing.T) {
	cmd := newScaleCommand(&globalOptions{stateDir: t.TempDir(), instance: "default"})
	cmd.SetArgs([]string{"deployment", "web", "--replicas", "2147483647"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "<= 100000") {
		t.Fatalf("err = %v, want the hard bound", err)
	}
}
