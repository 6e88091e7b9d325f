package reconciler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// The planner's side of items 3, 9 and 16: blocked names are skipped,
// refused revisions are neither started nor created (and say why), and a
// created container in its start backoff waits.
func TestComputePlanTrust(t *testing.T) {
	const H, Old = "aaaa", "oooo"
	running := dockerx.StateRunning
	tests := []struct {
		name        string
		replicas    int32
		containers  []dockerx.Container
		sizes       map[string]int32
		blocked     []string
		refused     map[string]string
		notBefore   map[string]time.Time
		want        []string
		wantBlocked bool
	}{
		{name: "a blocked name's ordinal is skipped", replicas: 2,
			sizes:   map[string]int32{H: 2},
			blocked: []string{"i_web-aaaa-0"},
			want:    []string{"create i_web-aaaa-1", "create i_web-aaaa-2"}},
		{name: "a refused old revision is not recreated", replicas: 2,
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			sizes:      map[string]int32{H: 1, Old: 1},
			refused:    map[string]string{Old: "refused"},
			want:       nil, wantBlocked: true},
		{name: "an allowed old revision is recreated", replicas: 2,
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			sizes:      map[string]int32{H: 1, Old: 1},
			want:       []string{"create i_web-oooo-0"}},
		{name: "a stopped container of a refused revision is not started", replicas: 2,
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(Old, 0, dockerx.StateExited, time.Hour)},
			sizes:      map[string]int32{H: 1, Old: 1},
			refused:    map[string]string{Old: "refused"},
			want:       nil, wantBlocked: true},
		{name: "a running container of a refused revision is no failure", replicas: 2,
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(Old, 0, running, time.Hour)},
			sizes:      map[string]int32{H: 1, Old: 1},
			refused:    map[string]string{Old: "refused"}},
		{name: "a created container in its start backoff waits", replicas: 1,
			containers: []dockerx.Container{ctr(H, 0, dockerx.StateCreated, time.Minute)},
			notBefore:  map[string]time.Time{"id-i_web-aaaa-0": t0.Add(time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocked := map[string]bool{}
			for _, n := range tt.blocked {
				blocked[n] = true
			}
			desired := deployment(tt.replicas)
			desired.Spec.Paused = true // sizes as given: no rollout step
			plan := ComputePlan(PlanInput{
				Instance: "i", Name: "web", Desired: desired, Hash: H,
				Revisions:  []store.Revision{{Number: 1, Hash: Old}, {Number: 2, Hash: H}},
				Containers: tt.containers, Now: t0, Available: availableIfRunning(tt.containers),
				State:        RolloutState{Sizes: tt.sizes, DesiredReplicas: &tt.replicas},
				BlockedNames: blocked, Refused: tt.refused, StartNotBefore: tt.notBefore,
			})
			var got []string
			for _, op := range plan.Ops {
				got = append(got, fmt.Sprintf("%s %s", op.Kind, op.Name))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if (len(plan.Blocked) > 0) != tt.wantBlocked {
				t.Errorf("blocked %q, want blocked = %v", plan.Blocked, tt.wantBlocked)
			}
		})
	}
}
