package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// Item 4: which failed removals still let a plan's creates go ahead.
func TestCreatesSafeDespite(t *testing.T) {
	d := deployment(2) // maxSurge 25% → 1: at most 3 containers
	in := PlanInput{Desired: d, Now: time.Now(), Containers: []dockerx.Container{
		ctr("h", 0, dockerx.StateDead, time.Minute),
		ctr("h", 1, dockerx.StateRunning, time.Minute),
		ctr("h", 2, dockerx.StateExited, time.Minute),
		ctr("old", 3, dockerx.StateRunning, time.Minute),
	}}
	id := func(i int) string { return in.Containers[i].ID }
	create := Op{Kind: OpCreate, Name: "new"}
	remove := func(i int) Op { return Op{Kind: OpRemove, ContainerID: id(i)} }
	tests := []struct {
		name   string
		ops    []Op
		failed []int
		max    int32
		want   bool
	}{
		{"dead, within the bound", []Op{remove(0), remove(3), create}, []int{0}, 4, true},
		{"exited, within the bound", []Op{remove(2), remove(3), create}, []int{2}, 4, true},
		{"dead, beyond the bound", []Op{remove(0), create}, []int{0}, 4, false},
		{"running: may still serve or hold a port", []Op{remove(3), remove(0), create}, []int{3}, 4, false},
		{"unknown container", []Op{create}, nil, 5, true},
		// A graceful stop keeps its container until it is gone: it frees
		// no place for the create, whatever the dead one's removal did.
		{"dead, beside a graceful stop", []Op{remove(0), {Kind: OpRemove, ContainerID: id(3), Grace: time.Second}, create}, []int{0}, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := map[string]bool{}
			for _, i := range tt.failed {
				failed[id(i)] = true
			}
			plan := Plan{Ops: tt.ops, State: RolloutState{MaxReplicas: tt.max}}
			if got := createsSafeDespite(in, plan, failed); got != tt.want {
				t.Fatalf("createsSafeDespite = %v, want %v", got, tt.want)
			}
		})
	}
}
