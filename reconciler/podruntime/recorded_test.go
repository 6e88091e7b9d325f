package podruntime

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// A recorded ready verdict holds only for the run it was given in: the
// read commands drop it for a container Docker shows started after it
// was first seen ready, not running, or of no known ready time; a
// failing verdict and the restart count are kept as recorded.
func TestCurrentVerdictsDropAnEarlierRunsReadyVerdict(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	yes, no := true, false
	for _, tt := range []struct {
		name      string
		state     string
		status    string
		rec       ContainerState
		wantReady *bool
	}{
		{"ready in its current run", dockerx.StateRunning, "Up 5 minutes", ContainerState{ProbeReady: &yes, ReadySince: now.Add(-time.Minute)}, &yes},
		{"started again after it was ready", dockerx.StateRunning, "Up 5 seconds", ContainerState{ProbeReady: &yes, ReadySince: now.Add(-time.Minute)}, nil},
		{"ready within its uptime's resolution", dockerx.StateRunning, "Up About a minute", ContainerState{ProbeReady: &yes, ReadySince: now.Add(-90 * time.Second)}, &yes},
		{"no ready time", dockerx.StateRunning, "Up 5 minutes", ContainerState{ProbeReady: &yes}, nil},
		{"exited", dockerx.StateExited, "Exited (1) 3 seconds ago", ContainerState{ProbeReady: &yes, ReadySince: now.Add(-time.Minute)}, nil},
		{"an uptime Docker does not word", dockerx.StateRunning, "", ContainerState{ProbeReady: &yes, ReadySince: now.Add(-time.Minute)}, &yes},
		{"failing", dockerx.StateRunning, "Up 5 seconds", ContainerState{ProbeReady: &no}, &no},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.Restarts = 3
			c := dockerx.Container{ID: "c1", State: tt.state, Status: tt.status}
			recorded := map[string]*ContainerState{"c1": &tt.rec, "gone": {Restarts: 1}}
			got := CurrentVerdicts(recorded, []dockerx.Container{c}, now)
			cst := got["c1"]
			if cst == nil || cst.Restarts != 3 {
				t.Fatalf("judged %+v, want the recorded restarts", cst)
			}
			if (cst.ProbeReady == nil) != (tt.wantReady == nil) || cst.ProbeReady != nil && *cst.ProbeReady != *tt.wantReady {
				t.Errorf("verdict %v, want %v", cst.ProbeReady, tt.wantReady)
			}
			if got["gone"] != nil {
				t.Errorf("a container not listed is judged: %+v", got["gone"])
			}
			if tt.rec.ProbeReady == nil || recorded["c1"] != &tt.rec {
				t.Errorf("the record was changed: %+v", recorded["c1"])
			}
		})
	}
}

// An owner's record is its live containers' restarts and verdicts only,
// and a Runtime with no memory of the owner recalls the restarts from it,
// never the verdict.
func TestRecordedAndRecall(t *testing.T) {
	r := NewRuntime(RuntimeConfig{})
	t.Cleanup(r.Stop)
	yes := true
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	states := r.memory.of("k")
	states["probed"] = &ContainerState{ProbeReady: &yes, ReadySince: since, Restarts: 1, CrashCount: 2, NotBefore: since}
	states["plain"] = &ContainerState{ReadySince: since}
	states["gone"] = &ContainerState{Restarts: 4}
	observed := []dockerx.Container{{ID: "probed"}, {ID: "plain"}}
	rec := r.Recorded("k", observed)
	want := ContainerState{ProbeReady: &yes, ReadySince: since, Restarts: 1}
	if len(rec) != 1 || rec["probed"] == nil || *rec["probed"].ProbeReady != true || !rec["probed"].ReadySince.Equal(want.ReadySince) ||
		rec["probed"].Restarts != 1 || rec["probed"].CrashCount != 0 || !rec["probed"].NotBefore.IsZero() {
		t.Errorf("recorded %+v, want only %+v", rec, want)
	}

	// A container waiting out its backoff records when it may start
	// again, while it is exited or never started; a running one does not.
	states["exited"] = &ContainerState{Restarts: 2, CrashCount: 3, NotBefore: since}
	states["running"] = &ContainerState{Restarts: 2, NotBefore: since}
	states["created"] = &ContainerState{NotBefore: since}
	backoff := r.Recorded("k", []dockerx.Container{{ID: "exited", State: dockerx.StateExited}, {ID: "running", State: dockerx.StateRunning}, {ID: "created", State: dockerx.StateCreated}})
	if got := backoff["exited"]; got == nil || !got.NotBefore.Equal(since) || got.Restarts != 2 || got.CrashCount != 0 {
		t.Errorf("exited in backoff recorded %+v, want restarts 2 and notBefore %v only", got, since)
	}
	if got := backoff["running"]; got == nil || !got.NotBefore.IsZero() {
		t.Errorf("running recorded %+v, want its restarts without a backoff", got)
	}
	if got := backoff["created"]; got == nil || !got.NotBefore.Equal(since) {
		t.Errorf("never started in backoff recorded %+v, want notBefore %v", got, since)
	}

	loads := 0
	load := func() map[string]*ContainerState { loads++; return rec }
	r.Recall("k", load)
	if loads != 0 {
		t.Errorf("a Runtime that remembers the owner loaded its record")
	}
	r2 := NewRuntime(RuntimeConfig{})
	t.Cleanup(r2.Stop)
	r2.Recall("k", load)
	got := r2.memory.of("k")["probed"]
	if loads != 1 || got == nil || got.Restarts != 1 || got.ProbeReady != nil || !got.ReadySince.IsZero() {
		t.Errorf("recalled %+v (%d loads), want the restarts only", got, loads)
	}
}
