package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/store"
)

// Issue 8 item 7: `rollout status` and `apply --wait` succeed on an
// unchanged deployment whose rollout the controller recorded as complete,
// even when a replica crash-loops afterwards; they still wait for a new
// template, and still fail on a deadline the controller reported.
func TestProgressOfCompleteDeployment(t *testing.T) {
	d := mustDecode(t, webYAML)
	hash := manifests.TemplateHash(&d.Spec.Template)
	rec := &store.Record{Name: "web", Generation: 2, Deployment: *d}
	c := func(ord int, hash, state string) dockerx.Container {
		name := dockerx.ContainerName("default", "", "web", hash, ord)
		return dockerx.Container{ID: "id-" + name, Name: name, Instance: "default", Deployment: "web",
			TemplateHash: hash, State: state, Created: now.Add(-time.Hour)}
	}
	status := func(reason string) *store.Status {
		cond := manifests.DeploymentCondition{Type: manifests.ConditionProgressing, Status: "True", Reason: reason}
		if reason == reconciler.ReasonProgressDeadlineExceeded {
			cond.Status = "False"
		}
		return &store.Status{ObservedGeneration: 2, Conditions: []manifests.DeploymentCondition{cond}}
	}
	crashLooping := []dockerx.Container{c(0, hash, dockerx.StateRunning), c(1, hash, dockerx.StateRunning), c(2, hash, dockerx.StateExited)}
	tests := []struct {
		name                string
		status              *store.Status
		cs                  []dockerx.Container
		complete, deadline  bool
		wantMessageContains string
	}{
		{"complete, a replica crash-loops since", status(reconciler.ReasonNewReplicaSetAvailable), crashLooping, true, false, "successfully rolled out"},
		{"complete but an old replica is back", status(reconciler.ReasonNewReplicaSetAvailable),
			append(crashLooping[:2:2], c(2, hash, dockerx.StateRunning), c(0, "0ld0ld0ld0", dockerx.StateRunning)), false, false, "pending termination"},
		{"still rolling out", status(reconciler.ReasonReplicaSetUpdated), crashLooping, false, false, "updated replicas are available"},
		{"deadline reported", status(reconciler.ReasonProgressDeadlineExceeded), crashLooping, false, true, "exceeded its progress deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := progressOf(rec, tt.status, nil, tt.cs, now)
			if p.complete != tt.complete || p.deadlineExceeded != tt.deadline {
				t.Fatalf("complete %v deadline %v, want %v %v (%+v)", p.complete, p.deadlineExceeded, tt.complete, tt.deadline, p)
			}
			if m := p.message(); !strings.Contains(m, tt.wantMessageContains) {
				t.Fatalf("message %q, want it to contain %q", m, tt.wantMessageContains)
			}
		})
	}
}
