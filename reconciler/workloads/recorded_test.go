package workloads

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// countingRunner is a probeRunner that counts its attempts.
type countingRunner struct {
	probeRunner
	runs atomic.Int64
}

func (r *countingRunner) Run(ctx context.Context, t podruntime.ProbeTarget, p *manifests.Probe) error {
	r.runs.Add(1)
	return r.probeRunner.Run(ctx, t, p)
}

// probedSet is StatefulSet db of replicas pods whose container has a
// readiness probe run every second.
func probedSet(replicas string) string {
	return strings.Replace(setYAML(replicas, "Parallel", ""), "        image: busybox\n",
		"        image: busybox\n        readinessProbe: {tcpSocket: {port: 5432}, periodSeconds: 1, failureThreshold: 1}\n", 1)
}

// recorded is what the status of StatefulSet db records of its pods'
// containers (its owner's sync's record), by container ID.
func (f *frame) recorded() map[string]*podruntime.ContainerState {
	f.t.Helper()
	ref := store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}
	obj, err := f.st.LookupObject(ref)
	if err != nil {
		f.t.Fatal(err)
	}
	recs, err := f.st.ReadWorkloadContainers(ref, obj.Created)
	if err != nil {
		f.t.Fatal(err)
	}
	return decodeRecorded(recs[WriterPods], slog.Default())
}

// statusFile is the bytes of StatefulSet db's status file: a write of
// it, whatever it says, changes its updatedAt.
func (f *frame) statusFile() []byte {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.st.Dir(), "workload-status", "statefulset.db.json"))
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// syncUntilRecorded syncs key until done holds of what db's status
// records, the Prober running meanwhile (it probes in real time).
func (f *frame) syncUntilRecorded(key, what string, done func(map[string]*podruntime.ContainerState) bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.sync(key)
		if rec := f.recorded(); done(rec) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("db's status never recorded %s: %+v", what, f.recorded())
		}
		time.Sleep(10 * time.Millisecond) // the prober's next attempt
	}
}

// verdict is the recorded readiness verdict of container id: "none",
// "ready" or "unready".
func verdict(rec map[string]*podruntime.ContainerState, id string) string {
	switch cst := rec[id]; {
	case cst == nil || cst.ProbeReady == nil:
		return "none"
	case *cst.ProbeReady:
		return "ready"
	}
	return "unready"
}

// A workload's readiness verdicts are recorded with the status its sync
// writes (the read commands judge its pods by them), once per change:
// probe runs that say the same write nothing, a changed verdict is
// written, and a removed container's entry goes with it.
func TestProbeVerdictIsRecordedWithTheStatusOnlyWhenItChanges(t *testing.T) {
	runner := &countingRunner{}
	f := newFrameWith(t, func(c *Config) { c.ProbeRunner = runner })
	f.apply(probedSet("2"))
	key := Key(store.KindStatefulSet, "default", "db")
	pods := f.runPods(store.KindStatefulSet, "db", 2)
	// Until the set's own status counts them ready too: the status
	// file then says all it will say while nothing changes.
	f.syncUntilRecorded(key, "two ready verdicts", func(rec map[string]*podruntime.ContainerState) bool {
		for id := range pods {
			if verdict(rec, id) != "ready" || rec[id].ReadySince.IsZero() {
				return false
			}
		}
		st := f.setStatus()
		return st.ReadyReplicas == 2 && st.AvailableReplicas == 2
	})

	before, runs := f.statusFile(), runner.runs.Load()
	for runner.runs.Load() < runs+4 {
		time.Sleep(10 * time.Millisecond) // more probe runs, each passing
	}
	f.rounds(3, time.Second, key)
	if after := f.statusFile(); !bytes.Equal(before, after) {
		t.Errorf("unchanged verdicts rewrote the status:\nbefore %s\nafter  %s", before, after)
	}

	runner.fail.Store(true)
	f.syncUntilRecorded(key, "failing verdicts", func(rec map[string]*podruntime.ContainerState) bool {
		for id := range pods {
			if verdict(rec, id) != "unready" || !rec[id].ReadySince.IsZero() {
				return false
			}
		}
		return true
	})

	f.apply(probedSet("1"))
	f.syncUntil(key, func() bool { return len(f.owned(store.KindStatefulSet, "db")) == 1 })
	f.sync(key)
	rec := f.recorded()
	if len(rec) != 1 {
		t.Errorf("recorded %+v after the scale-down, want the one live container's entry", rec)
	}
	for id := range rec {
		if _, ok := pods[id]; !ok {
			t.Errorf("recorded container %s is none of the set's", id)
		}
	}
}

// A restarted controller keeps the restart counts recorded and trusts no
// recorded verdict: the Prober judges every container afresh, as the
// kubelet's readiness workers start with a failure.
func TestRecordedRestartsSurviveAControllerRestart(t *testing.T) {
	runner := &countingRunner{}
	f := newFrameWith(t, func(c *Config) { c.ProbeRunner = runner })
	f.apply(probedSet("1"))
	key := Key(store.KindStatefulSet, "default", "db")
	ct := first(f.runPods(store.KindStatefulSet, "db", 1))
	if err := f.d.Exit(ct.ID, 1); err != nil {
		t.Fatal(err)
	}
	f.rounds(3, time.Minute, key)
	f.syncUntilRecorded(key, "a restart and a ready verdict", func(rec map[string]*podruntime.ContainerState) bool {
		return rec[ct.ID] != nil && rec[ct.ID].Restarts == 1 && verdict(rec, ct.ID) == "ready"
	})

	f.restart() // a controller without a probe runner: no probe passes
	f.sync(key)
	rec := f.recorded()
	if rec[ct.ID] == nil || rec[ct.ID].Restarts != 1 {
		t.Errorf("recorded %+v after the controller's restart, want its restart kept", rec[ct.ID])
	}
	if v := verdict(rec, ct.ID); v == "ready" {
		t.Errorf("the restarted controller recorded the earlier verdict %s before judging it", v)
	}
}

// An orphan's verdict is recorded by its orphan keeper, in the status of
// its kind and name, and the read commands judge it by that record, not
// by its deleted owner's.
func TestOrphanVerdictIsRecordedByItsKeeper(t *testing.T) {
	runner := &countingRunner{}
	f := newFrameWith(t, func(c *Config) { c.ProbeRunner = runner })
	pods, key := f.orphanOf(probedSet("1"), store.KindStatefulSet, "db", 1)
	ct := first(pods)
	ref := store.ObjectRef{Kind: store.KindStatefulSet, Namespace: "default", Name: "db"}
	judged := func() map[string]*podruntime.ContainerState {
		obj, err := f.st.LookupObject(ref)
		if err != nil {
			t.Fatal(err)
		}
		return RecordedContainers(store.KindStatefulSet, obj, f.st, "default", f.owned(store.KindStatefulSet, "db"), f.clock())
	}
	f.syncUntilRecorded(key, "the orphan's ready verdict", func(map[string]*podruntime.ContainerState) bool {
		return verdict(judged(), ct.ID) == "ready"
	})
	runner.fail.Store(true)
	f.syncUntilRecorded(key, "the orphan's failing verdict", func(map[string]*podruntime.ContainerState) bool {
		return verdict(judged(), ct.ID) == "unready"
	})
}
