package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
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

// --timeout as each kubectl command means it: wait's 0 looks once and
// does not wait, its negative waits a week; rollout status's 0 (and
// negative) never times out; delete --wait's 0 waits a week. None of
// them times out at once.
func TestWaitTimeoutZeroAndNegative(t *testing.T) {
	available := &store.Status{Conditions: []manifests.DeploymentCondition{{Type: "Available", Status: "True"}}}
	deadline := &store.Status{Conditions: []manifests.DeploymentCondition{{Type: manifests.ConditionProgressing, Status: "False", Reason: reconciler.ReasonProgressDeadlineExceeded}}}
	tests := []struct {
		name    string
		status  *store.Status // written before the command (nil: none)
		later   *store.Status // written while it runs
		deleted bool          // the deployment deleted before
		args    []string
		wantOut string
		wantErr string // "" for success
	}{
		{name: "wait 0, condition met", status: available,
			args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=0"}, wantOut: "deployment.apps/web condition met\n"},
		{name: "wait 0, condition not met",
			args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=0"}, wantErr: "condition not met for deployments/web"},
		{name: "wait 0 for delete, still there",
			args: []string{"wait", "--for=delete", "deployment/web", "--timeout=0"}, wantErr: "condition not met for deployments/web"},
		{name: "wait 0 for delete, gone", deleted: true,
			args: []string{"wait", "--for=delete", "deployment/web", "--timeout=0"}, wantOut: "deployment.apps/web deleted\n"},
		{name: "wait negative waits", later: available,
			args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=-1s"}, wantOut: "deployment.apps/web condition met\n"},
		{name: "rollout status 0 waits", later: deadline,
			args: []string{"rollout", "status", "deployment/web", "--timeout=0"}, wantErr: "exit status 1"},
		{name: "rollout status negative waits", later: deadline,
			args: []string{"rollout", "status", "deployment/web", "--timeout=-1s"}, wantErr: "exit status 1"},
		{name: "delete --wait 0 waits",
			args: []string{"delete", "deployment", "web", "--wait", "--timeout=0"}, wantOut: "all containers removed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, st, rec := appliedWeb(t)
			write := func(s *store.Status) {
				c := *s
				c.ObservedGeneration = rec.Generation
				if err := st.WriteStatus("", "web", &c); err != nil {
					t.Error(err)
				}
			}
			if tt.status != nil {
				write(tt.status)
			}
			if tt.deleted {
				if err := st.Delete("", "web"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.later != nil {
				// After the command's first look, which a timeout of 0
				// taken as already expired would not outlive.
				go func() {
					time.Sleep(300 * time.Millisecond)
					write(tt.later)
				}()
			}
			// A deadline, generous, so that a wait that never returns
			// fails the test rather than hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			root := newRootCommand()
			var buf bytes.Buffer
			root.SetOut(&buf)
			root.SetErr(&buf)
			root.SetArgs(append([]string{"--state-dir", dir, "--instance", "rev"}, tt.args...))
			err := root.ExecuteContext(ctx)
			out := buf.String()
			if tt.wantErr == "" {
				if err != nil || !strings.HasSuffix(out, tt.wantOut) {
					t.Fatalf("%v: %q %v, want %q", tt.args, out, err, tt.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(out+err.Error(), "timed out") {
				t.Fatalf("%v: %q %v, want the error %q", tt.args, out, err, tt.wantErr)
			}
		})
	}
}
