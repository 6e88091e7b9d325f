package reconciler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func i32(n int32) *int32 { return &n }

// TestComputeSizes checks one sync step of the rollout against the
// Kubernetes Deployment controller's arithmetic. Sets are written as
// "number:size/available".
func TestComputeSizes(t *testing.T) {
	type set struct{ number, size, active, available int32 }
	tests := []struct {
		name      string
		p         rolloutParams
		prev      RolloutState
		old       []set // oldest first
		new       set
		wantOld   []int32
		wantNew   int32
		removing  int32
		totalPods int32 // 0: sum of actives
	}{
		{
			name: "maxSurge 1, maxUnavailable 0: surge one new replica",
			p:    rolloutParams{replicas: 6, maxSurge: 1}, prev: RolloutState{DesiredReplicas: i32(6)},
			old: []set{{1, 6, 6, 6}}, new: set{2, 0, 0, 0}, wantOld: []int32{6}, wantNew: 1,
		},
		{
			name: "new replica not yet available: old ones stay",
			p:    rolloutParams{replicas: 6, maxSurge: 1}, prev: RolloutState{DesiredReplicas: i32(6)},
			old: []set{{1, 6, 6, 6}}, new: set{2, 1, 1, 0}, wantOld: []int32{6}, wantNew: 1,
		},
		{
			name: "new replica available: one old goes",
			p:    rolloutParams{replicas: 6, maxSurge: 1}, prev: RolloutState{DesiredReplicas: i32(6)},
			old: []set{{1, 6, 6, 6}}, new: set{2, 1, 1, 1}, wantOld: []int32{5}, wantNew: 1,
		},
		{
			name: "old one gone: the next new one surges",
			p:    rolloutParams{replicas: 6, maxSurge: 1}, prev: RolloutState{DesiredReplicas: i32(6)},
			old: []set{{1, 5, 5, 5}}, new: set{2, 1, 1, 1}, wantOld: []int32{5}, wantNew: 2,
		},
		{
			name: "old container still being removed counts against the surge",
			p:    rolloutParams{replicas: 6, maxSurge: 1}, prev: RolloutState{DesiredReplicas: i32(6)},
			old: []set{{1, 5, 5, 5}}, new: set{2, 1, 1, 1}, removing: 1, totalPods: 7, wantOld: []int32{5}, wantNew: 1,
		},
		{
			name: "25%/25% of 10: surge 3, unavailable 2",
			p:    rolloutParams{replicas: 10, maxSurge: 3, maxUnavailable: 2}, prev: RolloutState{DesiredReplicas: i32(10)},
			old: []set{{1, 10, 10, 10}}, new: set{2, 0, 0, 0}, wantOld: []int32{8}, wantNew: 3,
		},
		{
			name: "broken new revision stalls at the maxUnavailable budget",
			p:    rolloutParams{replicas: 4, maxSurge: 1, maxUnavailable: 1}, prev: RolloutState{DesiredReplicas: i32(4)},
			old: []set{{1, 3, 3, 3}}, new: set{2, 2, 2, 0}, wantOld: []int32{3}, wantNew: 2,
		},
		{
			name: "unhealthy old replicas go first",
			p:    rolloutParams{replicas: 4, maxSurge: 1, maxUnavailable: 1}, prev: RolloutState{DesiredReplicas: i32(4)},
			old: []set{{1, 4, 4, 2}}, new: set{2, 0, 0, 0}, wantOld: []int32{3}, wantNew: 1,
		},
		{
			name: "oldest revision scaled down first",
			p:    rolloutParams{replicas: 4, maxSurge: 0, maxUnavailable: 2}, prev: RolloutState{DesiredReplicas: i32(4)},
			old: []set{{1, 2, 2, 2}, {2, 2, 2, 2}}, new: set{3, 0, 0, 0}, wantOld: []int32{0, 2}, wantNew: 0,
		},
		{
			name: "proportional scale-up mid-rollout: 8 old + 5 new to 30 is 20 + 13",
			p:    rolloutParams{replicas: 30, maxSurge: 3, maxUnavailable: 2}, prev: RolloutState{DesiredReplicas: i32(10), MaxReplicas: 13},
			old: []set{{1, 8, 8, 8}}, new: set{2, 5, 5, 0}, wantOld: []int32{20}, wantNew: 13,
		},
		{
			name: "proportional scale-down mid-rollout: 20 + 13 to 10 is 8 + 5",
			p:    rolloutParams{replicas: 10, maxSurge: 3, maxUnavailable: 2}, prev: RolloutState{DesiredReplicas: i32(30), MaxReplicas: 33},
			old: []set{{1, 20, 20, 20}}, new: set{2, 13, 13, 0}, wantOld: []int32{8}, wantNew: 5,
		},
		{
			name: "scaling with one active revision scales it",
			p:    rolloutParams{replicas: 7, maxSurge: 2, maxUnavailable: 1}, prev: RolloutState{DesiredReplicas: i32(3), MaxReplicas: 4},
			old: nil, new: set{1, 3, 3, 3}, wantNew: 7,
		},
		{
			name: "saturated new revision: a scaling event drops the old ones",
			p:    rolloutParams{replicas: 3, maxSurge: 1}, prev: RolloutState{DesiredReplicas: i32(2), MaxReplicas: 3},
			old: []set{{1, 1, 1, 1}}, new: set{2, 3, 3, 3}, wantOld: []int32{0}, wantNew: 3,
		},
		{
			name: "recreate: old ones removed first, new none yet",
			p:    rolloutParams{replicas: 3, recreate: true}, prev: RolloutState{DesiredReplicas: i32(3)},
			old: []set{{1, 3, 3, 3}}, new: set{2, 0, 0, 0}, wantOld: []int32{0}, wantNew: 0,
		},
		{
			name: "recreate: old containers still being removed, new none yet",
			p:    rolloutParams{replicas: 3, recreate: true}, prev: RolloutState{DesiredReplicas: i32(3)},
			old: []set{{1, 0, 0, 0}}, new: set{2, 0, 0, 0}, removing: 2, totalPods: 2, wantOld: []int32{0}, wantNew: 0,
		},
		{
			name: "recreate: old gone, all new at once",
			p:    rolloutParams{replicas: 3, recreate: true}, prev: RolloutState{DesiredReplicas: i32(3)},
			old: []set{{1, 0, 0, 0}}, new: set{2, 0, 0, 0}, wantOld: []int32{0}, wantNew: 3,
		},
		{
			name: "paused: no new revision is rolled out",
			p:    rolloutParams{replicas: 3, maxSurge: 1, paused: true}, prev: RolloutState{DesiredReplicas: i32(3)},
			old: []set{{1, 3, 3, 3}}, new: set{2, 0, 0, 0}, wantOld: []int32{3}, wantNew: 0,
		},
		{
			name: "paused: scaling still works",
			p:    rolloutParams{replicas: 5, maxSurge: 1, paused: true}, prev: RolloutState{DesiredReplicas: i32(3), MaxReplicas: 4},
			old: []set{{1, 3, 3, 3}}, new: set{2, 0, 0, 0}, wantOld: []int32{5}, wantNew: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sets []*revisionSet
			var olds []*revisionSet
			total := tt.totalPods
			for i, o := range tt.old {
				s := &revisionSet{hash: fmt.Sprint("old", i), number: int64(o.number), size: o.size, active: o.active, available: o.available}
				sets = append(sets, s)
				olds = append(olds, s)
				if tt.totalPods == 0 {
					total += o.active
				}
			}
			n := &revisionSet{hash: "new", number: int64(tt.new.number), size: tt.new.size, active: tt.new.active, available: tt.new.available}
			sets = append(sets, n)
			if tt.totalPods == 0 {
				total += tt.new.active
			}
			computeSizes(sets, n, tt.p, tt.prev, tt.removing, total)
			var gotOld []int32
			for _, s := range olds {
				gotOld = append(gotOld, s.size)
			}
			if fmt.Sprint(gotOld) != fmt.Sprint(tt.wantOld) || n.size != tt.wantNew {
				t.Fatalf("old %v new %d, want old %v new %d", gotOld, n.size, tt.wantOld, tt.wantNew)
			}
		})
	}
}

func TestResolveParams(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	tests := []struct {
		name              string
		replicas          int32
		surge, unav       *intstr.IntOrString
		hostPort          bool
		wantSurge, wantUn int32
	}{
		{"defaults of 10 round surge up and unavailable down", 10, nil, nil, false, 3, 2},
		{"both zero make unavailable 1", 4, num(0), num(0), false, 0, 1},
		{"percent of 1", 1, pct("25%"), pct("25%"), false, 1, 0},
		{"hostPort rolls with no surge", 1, num(1), num(0), true, 0, 1},
		{"hostNetwork rolls with no surge", 4, num(1), num(0), false, 0, 1},
		{"hostNetwork keeps a larger maxUnavailable", 4, num(2), num(2), false, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment(tt.replicas)
			if tt.surge != nil {
				d.Spec.Strategy.RollingUpdate = &manifests.RollingUpdateDeployment{MaxSurge: tt.surge, MaxUnavailable: tt.unav}
			}
			if tt.hostPort {
				d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			}
			if strings.HasPrefix(tt.name, "hostNetwork") {
				d.Spec.Template.Spec.HostNetwork = true
			}
			p := resolveParams(d)
			if p.maxSurge != tt.wantSurge || p.maxUnavailable != tt.wantUn {
				t.Fatalf("surge %d unavailable %d, want %d %d", p.maxSurge, p.maxUnavailable, tt.wantSurge, tt.wantUn)
			}
		})
	}
}

// Issue 8 item 15: as in Kubernetes, a deployment created paused gets no
// replicas until it is resumed; then it rolls out as usual.
func TestCreatedPausedGetsNoReplicasUntilResumed(t *testing.T) {
	h := newHarness(t, Options{})
	d := testDeployment("web", 3, "one")
	d.Spec.Paused = true
	h.apply(d)
	h.start()
	rec, err := h.store.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the paused deployment to be observed", func() bool {
		st, err := h.store.ReadStatus("", "web")
		if err != nil || st == nil || st.ObservedGeneration != rec.Generation {
			return false
		}
		c := find(st.Conditions, manifests.ConditionProgressing)
		return c != nil && c.Reason == ReasonDeploymentPaused
	})
	if cs := h.ours("web"); len(cs) != 0 {
		t.Fatalf("a deployment created paused has containers: %s", summary(cs))
	}
	resumed := testDeployment("web", 3, "one")
	h.apply(resumed)
	h.waitReplicas("web", 3)
}

// Issue 8 item 8: the Available condition judges availability by the
// user's maxUnavailable, not by the one forced on a rollout that cannot
// surge (host port, host network).
func TestAvailableConditionUsesUsersMaxUnavailable(t *testing.T) {
	hostPort := func(d *manifests.Deployment) {
		d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	}
	hostNet := func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true }
	tests := []struct {
		name      string
		replicas  int32
		strategy  func(*manifests.Deployment)
		host      func(*manifests.Deployment)
		available int32
		want      string
	}{
		{"hostPort, 1 replica, 0 available", 1, nil, hostPort, 0, "False"},
		{"hostPort, 1 replica, 1 available", 1, nil, hostPort, 1, "True"},
		{"hostNetwork, maxUnavailable 0, 3 of 4 available", 4, func(d *manifests.Deployment) {
			withStrategy(d, manifests.StrategyRollingUpdate, 1, 0)
		}, hostNet, 3, "False"},
		{"hostNetwork, maxUnavailable 2, 2 available", 4, func(d *manifests.Deployment) {
			withStrategy(d, manifests.StrategyRollingUpdate, 1, 2)
		}, hostNet, 2, "True"},
		{"surge 0 and unavailable 0 resolve to 1 as in Kubernetes", 4, func(d *manifests.Deployment) {
			withStrategy(d, manifests.StrategyRollingUpdate, 0, 0)
		}, nil, 3, "True"},
		{"recreate tolerates none", 2, func(d *manifests.Deployment) {
			withStrategy(d, manifests.StrategyRecreate, 0, 0)
		}, nil, 1, "False"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment(tt.replicas)
			if tt.strategy != nil {
				tt.strategy(d)
			}
			if tt.host != nil {
				tt.host(d)
			}
			st := manifests.DeploymentStatus{Replicas: tt.replicas, UpdatedReplicas: tt.replicas, ReadyReplicas: tt.available, AvailableReplicas: tt.available}
			conds, _ := Conditions(d, st, st, false, failure{}, nil, t0)
			if c := find(conds, manifests.ConditionAvailable); c == nil || c.Status != tt.want {
				t.Fatalf("Available %+v, want %s", c, tt.want)
			}
		})
	}
}

// Issue 8 item 7: once a rollout is complete, Kubernetes stops judging its
// progress: a replica that crash-loops afterwards makes the deployment
// unavailable, never ProgressDeadlineExceeded.
func TestCompleteRolloutIsNotJudgedForProgress(t *testing.T) {
	d := deployment(3)
	deadline := int32(10)
	d.Spec.ProgressDeadlineSeconds = &deadline
	complete := manifests.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}
	conds, _ := Conditions(d, complete, complete, true, failure{}, nil, t0)
	if c := find(conds, manifests.ConditionProgressing); c.Reason != ReasonNewReplicaSetAvailable {
		t.Fatalf("complete rollout: Progressing %+v", c)
	}
	// One replica crash-loops from now on, flapping between ready and not.
	crashing := manifests.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}
	prevCounts := complete
	now := t0
	for i := 0; i < 6; i++ {
		now = now.Add(time.Duration(deadline) * time.Second)
		st := crashing
		if i%2 == 1 {
			st.ReadyReplicas = 3 // restarted, ready again but not yet available
		}
		conds, _ = Conditions(d, st, prevCounts, false, failure{}, conds, now)
		prevCounts = st
		c := find(conds, manifests.ConditionProgressing)
		if c.Status != "True" || c.Reason != ReasonNewReplicaSetAvailable {
			t.Fatalf("step %d: Progressing %s/%s, want True/%s", i, c.Status, c.Reason, ReasonNewReplicaSetAvailable)
		}
		if a := find(conds, manifests.ConditionAvailable); a.Status != "False" {
			t.Fatalf("step %d: Available %s with 2 of 3 available and maxUnavailable 0 (25%% of 3)", i, a.Status)
		}
	}
	// A new template is judged again.
	rolling := manifests.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3}
	conds, _ = Conditions(d, rolling, prevCounts, true, failure{}, conds, now)
	if c := find(conds, manifests.ConditionProgressing); c.Reason != ReasonReplicaSetUpdated {
		t.Fatalf("new template: Progressing %+v", c)
	}
	conds, _ = Conditions(d, rolling, rolling, false, failure{}, conds, now.Add(time.Hour))
	if c := find(conds, manifests.ConditionProgressing); c.Reason != ReasonProgressDeadlineExceeded {
		t.Fatalf("stalled new template: Progressing %+v", c)
	}
}

// Recreate waits for the old containers to stop, not for Docker to manage
// to remove a dead one: a dead container runs nothing (Kubernetes'
// oldPodsRunning skips Failed pods). Waiting for it would leave a Recreate
// deployment with no replica at all for as long as Docker fails to remove
// it ("device or resource busy"), though replicas holds with it counted.
func TestRecreateIsNotBlockedByDeadOldContainer(t *testing.T) {
	oldD := deployment(3)
	oldD.Spec.Strategy.Type = manifests.StrategyRecreate
	oldHash := manifests.TemplateHash(&oldD.Spec.Template)
	newD := deployment(3)
	newD.Spec.Strategy.Type = manifests.StrategyRecreate
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	newHash := manifests.TemplateHash(&newD.Spec.Template)
	revs := []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template}}
	cs := []dockerx.Container{ctr(oldHash, 0, dockerx.StateDead, time.Hour)}
	plan := ComputePlan(PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: cs,
		State: RolloutState{Sizes: map[string]int32{oldHash: 0, newHash: 0}, DesiredReplicas: i32(3), MaxReplicas: 3}, Now: t0})
	// replicas holds with the dead one still counted: 2 of the 3 may come.
	if n := len(plan.Creates()); n != 2 {
		t.Fatalf("plan %v: %d creates, want 2 (no old container runs)", plan.Ops, n)
	}
	for _, op := range plan.Creates() {
		if op.Hash != newHash {
			t.Fatalf("create of revision %s, want only %s", op.Hash, newHash)
		}
	}
}

// A scale-down in the middle of a rollout must not take availability below
// replicas - maxUnavailable (Kubernetes scales the ReplicaSets
// proportionally, then rolls within maxUnavailable). The rolling step of
// the pass that scaled the old revision down must not count the container
// that scale-down is about to remove as available and scale further: 5 → 3
// replicas with maxUnavailable 0 would leave 2 replicas running.
func TestScaleDownDuringRolloutKeepsAvailability(t *testing.T) {
	oldD := withStrategy(deployment(5), manifests.StrategyRollingUpdate, 2, 0)
	oldHash := manifests.TemplateHash(&oldD.Spec.Template)
	newD := withStrategy(deployment(3), manifests.StrategyRollingUpdate, 2, 0)
	newD.Spec.Template.Spec.Containers[0].Image = "img:2"
	newHash := manifests.TemplateHash(&newD.Spec.Template)
	revs := []store.Revision{{Number: 1, Hash: oldHash, Template: oldD.Spec.Template}, {Number: 2, Hash: newHash, Template: newD.Spec.Template}}
	var cs []dockerx.Container
	avail := map[string]bool{}
	for i := 0; i < 5; i++ {
		c := ctr(oldHash, i, dockerx.StateRunning, time.Hour)
		cs = append(cs, c)
		avail[c.ID] = true
	}
	fresh := ctr(newHash, 0, dockerx.StateRunning, time.Minute)
	settling := ctr(newHash, 1, dockerx.StateRunning, time.Second)
	cs = append(cs, fresh, settling)
	avail[fresh.ID] = true // the other one has not settled yet
	plan := ComputePlan(PlanInput{Instance: "i", Name: "web", Desired: newD, Hash: newHash, Revisions: revs, Containers: cs,
		Available: avail, Now: t0,
		State: RolloutState{Sizes: map[string]int32{oldHash: 5, newHash: 2}, DesiredReplicas: i32(5), MaxReplicas: 7}})
	removed := map[string]bool{}
	for _, op := range plan.Ops {
		if op.Kind == OpRemove {
			removed[op.ContainerID] = true
		}
	}
	left := 0
	for _, c := range cs {
		if avail[c.ID] && !removed[c.ID] {
			left++
		}
	}
	if left < 3 {
		t.Fatalf("plan %v leaves %d available replicas; want at least 3 (replicas 3, maxUnavailable 0)", plan.Ops, left)
	}
}
