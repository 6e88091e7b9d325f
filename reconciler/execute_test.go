package reconciler

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/store"
)

// panickyImageUser is an engine whose image inspect panics while armed:
// a bug in what a create needs from outside the template (its image's
// user, seccomp.go), met after the pod's address was assigned.
type panickyImageUser struct {
	*dockerfake.Engine
	armed atomic.Bool
}

func (d *panickyImageUser) ImageUser(ctx context.Context, ref string) (string, error) {
	if d.armed.Load() {
		panic("injected")
	}
	return d.Engine.ImageUser(ctx, ref)
}

// TestExecuteCreatePanicFreesPodAddressLock: a create that panics once
// its pod's address is assigned (the assignment holds the lock every
// create of a pod address takes until its create ended) is that op's
// failure, and the lock is let go as on any other failure: the next
// create of a pod that reads status.podIP is made, not stuck forever.
func TestExecuteCreatePanicFreesPodAddressLock(t *testing.T) {
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	eng := dockerfake.New(testImage)
	d := &panickyImageUser{Engine: eng}
	c := New(d, st, Options{Instance: "i", NetworkDocker: eng, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	dep := deployment(1)
	group := int64(1000)
	ctr := &dep.Spec.Template.Spec.Containers[0]
	// A group without a user: the create asks for the image's user.
	ctr.SecurityContext = &manifests.SecurityContext{RunAsGroup: &group}
	ctr.Env = append(ctr.Env, manifests.EnvVar{Name: "POD_IP",
		ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	hash := manifests.TemplateHash(&dep.Spec.Template)
	in := PlanInput{Instance: "i", Name: "web", Desired: dep, Hash: hash, Now: t0,
		Revisions: []store.Revision{{Number: 1, Hash: hash, Template: dep.Spec.Template}}}
	plan := ComputePlan(in)
	if len(plan.Creates()) != 1 {
		t.Fatalf("want one create:\n%s", plan)
	}

	d.armed.Store(true)
	if _, err := c.execute(context.Background(), in, plan); err == nil || !strings.Contains(err.Error(), "panicked: injected") {
		t.Fatalf("execute with a panicking create: %v, want the panic as the op's error", err)
	}
	d.armed.Store(false)

	done := make(chan error, 1)
	go func() {
		_, err := c.execute(context.Background(), in, plan)
		done <- err
	}()
	var got error
	podtest.WaitFor(t, func() bool {
		select {
		case got = <-done:
			return true
		default:
			return false
		}
	})
	if got != nil {
		t.Fatalf("execute after the panic: %v", got)
	}
	if n := eng.Calls()["create"]; n != 1 {
		t.Fatalf("%d creates, want 1", n)
	}
}
