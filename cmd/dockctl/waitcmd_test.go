package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func TestParseWaitFor(t *testing.T) {
	tests := []struct {
		in      string
		want    waitCondition
		wantErr bool
	}{
		{in: "delete", want: waitCondition{delete: true}},
		{in: "condition=Available", want: waitCondition{typ: "Available", value: "True"}},
		{in: "condition=Available=false", want: waitCondition{typ: "Available", value: "false"}},
		{in: "condition=ReplicaFailure=True", want: waitCondition{typ: "ReplicaFailure", value: "True"}},
		{in: "condition=", wantErr: true},
		{in: "condition==True", wantErr: true},
		{in: "jsonpath={.status.readyReplicas}=2", wantErr: true},
		{in: "available", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseWaitFor(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseWaitFor(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("parseWaitFor(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestConditionMet(t *testing.T) {
	available := []manifests.DeploymentCondition{{Type: "Available", Status: "True"}, {Type: "Progressing", Status: "True"}}
	rec := &store.Record{Generation: 3}
	tests := []struct {
		name   string
		c      waitCondition
		status *store.Status
		want   bool
	}{
		{"met", waitCondition{typ: "Available", value: "True"}, &store.Status{ObservedGeneration: 3, Conditions: available}, true},
		{"case-insensitive", waitCondition{typ: "available", value: "true"}, &store.Status{ObservedGeneration: 3, Conditions: available}, true},
		{"stale generation", waitCondition{typ: "Available", value: "True"}, &store.Status{ObservedGeneration: 2, Conditions: available}, false},
		{"other value", waitCondition{typ: "Available", value: "False"}, &store.Status{ObservedGeneration: 3, Conditions: available}, false},
		{"absent condition", waitCondition{typ: "ReplicaFailure", value: "True"}, &store.Status{ObservedGeneration: 3, Conditions: available}, false},
		{"no status", waitCondition{typ: "Available", value: "True"}, nil, false},
	}
	for _, tt := range tests {
		if got := conditionMet(tt.c, rec, tt.status); got != tt.want {
			t.Errorf("%s: conditionMet = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWaitNames(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{args: []string{"deployment/web"}, want: "web"},
		{args: []string{"deploy/web", "deployments.apps/api"}, want: "web,api"},
		{args: []string{"deployment", "web", "api"}, want: "web,api"},
		{args: []string{"deployment"}, wantErr: true},
		{args: []string{"svc/web"}, wantErr: true},
		{args: []string{"web"}, wantErr: true},
		{args: []string{"deploy/"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := waitNames(tt.args)
		if (err != nil) != tt.wantErr {
			t.Errorf("waitNames(%q) err = %v, wantErr %v", tt.args, err, tt.wantErr)
			continue
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("waitNames(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// wait reports each deployment as its condition is met for the current
// generation, times out with kubectl's message otherwise, and treats a
// deleted deployment with no container left as deleted.
func TestWaitCommand(t *testing.T) {
	dir, st, rec := appliedWeb(t)

	// Not yet observed: the wait times out.
	out, err := runCLI(t, dir, "", "wait", "--for=condition=Available", "deployment/web", "--timeout", "50ms")
	if err == nil || !strings.Contains(err.Error(), "timed out waiting for the condition on deployments/web") {
		t.Fatalf("err = %v, want kubectl's timeout\n%s", err, out)
	}

	// The controller reports Available while the wait runs: it wakes.
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation,
			Conditions: []manifests.DeploymentCondition{{Type: "Available", Status: "True"}}})
	}()
	out, err = runCLI(t, dir, "", "wait", "--for=condition=Available", "deploy/web", "--timeout", "2m")
	if err != nil || out != "deployment.apps/web condition met\n" {
		t.Fatalf("out = %q, err = %v", out, err)
	}

	out, err = runCLI(t, dir, "", "wait", "--for=condition=Available", "deployment/nope")
	if err == nil || !strings.Contains(err.Error(), `"nope" not found`) {
		t.Fatalf("err = %v, want not found\n%s", err, out)
	}
	if out, err := runCLI(t, dir, "", "wait", "deployment/web"); err == nil {
		t.Fatalf("wait without --for succeeded\n%s", out)
	}

	if out, err := runCLI(t, dir, "", "delete", "deployment", "web"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = runCLI(t, dir, "", "wait", "--for=delete", "deployment/web", "--timeout", "2m")
	if err != nil || out != "deployment.apps/web deleted\n" {
		t.Fatalf("out = %q, err = %v", out, err)
	}
}
