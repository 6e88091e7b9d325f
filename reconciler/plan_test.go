package reconciler

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

var t0 = podtest.T0

func deployment(replicas int32) *manifests.Deployment {
	d := &manifests.Deployment{
		APIVersion: manifests.APIVersion, Kind: manifests.Kind,
		Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.DeploymentSpec{
			Replicas: &replicas,
			Template: manifests.PodTemplateSpec{Spec: manifests.PodSpec{
				Containers: []manifests.Container{{Name: "web", Image: "img:1"}},
			}},
		},
	}
	manifests.SetDefaults(d)
	return d
}

// availableIfRunning marks every ready container available, as a
// deployment with minReadySeconds 0 sees them.
func availableIfRunning(cs []dockerx.Container) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		if podruntime.IsReady(c) {
			out[c.ID] = true
		}
	}
	return out
}

// ctr builds an observed container of deployment web in instance "i".
// spec is "ordinal:state[:health]" with optional hash override "h=xyz".
func ctr(hash string, ord int, state string, age time.Duration) dockerx.Container {
	name := dockerx.ContainerName("i", "", "web", hash, ord)
	return dockerx.Container{
		ID: "id-" + name, Name: name, State: state, Instance: "i", Deployment: "web", TemplateHash: hash,
		Created: t0.Add(-age),
	}
}

func healthy(c dockerx.Container, h string) dockerx.Container { c.Health = h; return c }

func TestComputePlan(t *testing.T) {
	const H = "aaaa"
	running := dockerx.StateRunning
	tests := []struct {
		name       string
		desired    *manifests.Deployment
		containers []dockerx.Container
		notBefore  map[string]time.Time
		want       []string // "kind name-suffix"
		requeue    time.Duration
	}{
		{
			name:    "empty to three creates ordinals 0..2",
			desired: deployment(3),
			want:    []string{"create i_web-aaaa-0", "create i_web-aaaa-1", "create i_web-aaaa-2"},
		},
		{
			name:       "converged plans nothing",
			desired:    deployment(2),
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 1, running, time.Hour)},
		},
		{
			name:       "removed replica recreated in the free ordinal",
			desired:    deployment(3),
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 2, running, time.Hour)},
			want:       []string{"create i_web-aaaa-1"},
		},
		{
			name:       "stopped replica started, not recreated",
			desired:    deployment(2),
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 1, dockerx.StateExited, time.Hour)},
			want:       []string{"start i_web-aaaa-1"},
		},
		{
			name:       "created but never started is started",
			desired:    deployment(1),
			containers: []dockerx.Container{ctr(H, 0, dockerx.StateCreated, time.Second)},
			want:       []string{"start i_web-aaaa-0"},
		},
		{
			name:       "paused replica unpaused",
			desired:    deployment(1),
			containers: []dockerx.Container{ctr(H, 0, dockerx.StatePaused, time.Hour)},
			want:       []string{"unpause i_web-aaaa-0"},
		},
		{
			name:    "scale down removes newest first",
			desired: deployment(1),
			containers: []dockerx.Container{
				ctr(H, 0, running, 3*time.Hour), ctr(H, 1, running, 2*time.Hour), ctr(H, 2, running, time.Hour),
			},
			want: []string{"remove i_web-aaaa-2", "remove i_web-aaaa-1"},
		},
		{
			name:    "scale down removes not running before not ready before newest",
			desired: deployment(1),
			containers: []dockerx.Container{
				ctr(H, 0, running, time.Minute),                                   // newest, ready
				healthy(ctr(H, 1, running, 3*time.Hour), dockerx.HealthUnhealthy), // oldest, not ready
				ctr(H, 2, dockerx.StateExited, 2*time.Hour),                       // not running
			},
			want: []string{"remove i_web-aaaa-2", "remove i_web-aaaa-1"},
		},
		{
			name:       "other template: rolling update surges one new replica first",
			desired:    deployment(2),
			containers: []dockerx.Container{ctr("old", 0, running, time.Hour), ctr("old", 1, running, time.Hour)},
			want:       []string{"create i_web-aaaa-0"},
		},
		{
			name:    "labelled stray without hash removed",
			desired: deployment(1),
			containers: []dockerx.Container{
				ctr(H, 0, running, time.Hour),
				{ID: "stray", Name: "stray", State: running, Instance: "i", Deployment: "web", Created: t0},
			},
			want: []string{"remove stray"},
		},
		{
			name:    "stray copying every label is surplus and newest",
			desired: deployment(1),
			containers: []dockerx.Container{
				ctr(H, 0, running, time.Hour),
				{ID: "stray", Name: "stray", State: running, Instance: "i", Deployment: "web", TemplateHash: H, Created: t0},
			},
			want: []string{"remove stray"},
		},
		{
			name:       "dead container removed and replaced",
			desired:    deployment(1),
			containers: []dockerx.Container{ctr(H, 0, dockerx.StateDead, time.Hour)},
			want:       []string{"remove i_web-aaaa-0", "create i_web-aaaa-1"},
		},
		{
			name:       "removing container is ignored but keeps its name",
			desired:    deployment(1),
			containers: []dockerx.Container{ctr(H, 0, dockerx.StateRemoving, time.Hour)},
			want:       []string{"create i_web-aaaa-1"},
		},
		{
			name:       "deleted deployment removes everything",
			desired:    nil,
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr("old", 0, dockerx.StateExited, time.Hour)},
			want:       []string{"remove i_web-aaaa-0", "remove i_web-old-0"},
		},
		{
			name:       "crash backoff delays the start and requeues",
			desired:    deployment(1),
			containers: []dockerx.Container{ctr(H, 0, dockerx.StateExited, time.Hour)},
			notBefore:  map[string]time.Time{"id-i_web-aaaa-0": t0.Add(4 * time.Second)},
			requeue:    4 * time.Second,
		},
		{
			name:       "crash backoff elapsed starts",
			desired:    deployment(1),
			containers: []dockerx.Container{ctr(H, 0, dockerx.StateExited, time.Hour)},
			notBefore:  map[string]time.Time{"id-i_web-aaaa-0": t0.Add(-time.Second)},
			want:       []string{"start i_web-aaaa-0"},
		},
		{
			name:    "scale to zero",
			desired: deployment(0),
			containers: []dockerx.Container{
				ctr(H, 0, running, time.Hour),
			},
			want: []string{"remove i_web-aaaa-0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := ComputePlan(PlanInput{
				Instance: "i", Name: "web", Desired: tt.desired, Hash: H,
				Containers: tt.containers, StartNotBefore: tt.notBefore, Now: t0,
				Available: availableIfRunning(tt.containers),
			})
			var got []string
			for _, op := range plan.Ops {
				if op.Cause == "" {
					t.Errorf("op %v has no cause", op)
				}
				if op.Reason == "" {
					t.Errorf("op %v has no reason", op)
				}
				got = append(got, fmt.Sprintf("%s %s", op.Kind, op.Name))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue %v, want %v", plan.RequeueAfter, tt.requeue)
			}
		})
	}
}

// Plans applied one after another must converge, whatever the starting
// point: the last plan is empty. This is the idempotence contract of
// docs/design.md §1, and it exercises a full rolling update.
func TestComputePlanConverges(t *testing.T) {
	const H = "aaaa"
	for replicas := int32(0); replicas <= 5; replicas++ {
		cs := []dockerx.Container{
			ctr("old", 0, dockerx.StateRunning, time.Hour), ctr(H, 1, dockerx.StateExited, time.Hour),
			ctr(H, 3, dockerx.StatePaused, time.Hour), ctr(H, 7, dockerx.StateRunning, time.Hour),
		}
		in := PlanInput{Instance: "i", Name: "web", Desired: deployment(replicas), Hash: H, Containers: cs, Now: t0,
			Revisions: []store.Revision{{Number: 1, Hash: "old"}, {Number: 2, Hash: H}}}
		converged := false
		for round := 0; round < 20 && !converged; round++ {
			in.Available = availableIfRunning(in.Containers)
			plan := ComputePlan(in)
			converged = len(plan.Ops) == 0
			in.Containers = apply(in.Containers, plan)
			in.State = plan.State
		}
		if !converged {
			t.Fatalf("replicas %d: no convergence in 20 rounds: %s", replicas, summary(in.Containers))
		}
		if n := len(in.Containers); n != int(replicas) {
			t.Fatalf("replicas %d: converged with %d containers", replicas, n)
		}
		for _, c := range in.Containers {
			if c.TemplateHash != H || c.State != dockerx.StateRunning {
				t.Fatalf("replicas %d: converged with %s", replicas, summary(in.Containers))
			}
		}
	}
}

func apply(cs []dockerx.Container, p Plan) []dockerx.Container {
	byName := map[string]dockerx.Container{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	for _, op := range p.Ops {
		switch op.Kind {
		case OpRemove:
			delete(byName, op.Name)
		case OpStart, OpUnpause:
			c := byName[op.Name]
			c.State = dockerx.StateRunning
			byName[op.Name] = c
		case OpCreate:
			byName[op.Name] = dockerx.Container{ID: "id-" + op.Name, Name: op.Name, State: dockerx.StateRunning,
				Instance: "i", Deployment: "web", TemplateHash: op.Hash, Created: t0}
		}
	}
	var out []dockerx.Container
	for _, c := range byName {
		out = append(out, c)
	}
	return sortedByName(out)
}

// TestComputePlanJudgesAsStatusDoes covers the plans that depend on the
// controller's own readiness and availability verdicts, which Docker's
// state alone does not show.
func TestComputePlanJudgesAsStatusDoes(t *testing.T) {
	const H = "aaaa"
	running := dockerx.StateRunning
	rolling := func(replicas int32, surge, unavailable int) *manifests.Deployment {
		return withStrategy(deployment(replicas), manifests.StrategyRollingUpdate, surge, unavailable)
	}
	paused := deployment(3)
	paused.Spec.Paused = true
	old := []dockerx.Container{
		ctr("old", 0, running, 4*time.Hour), ctr("old", 1, running, 3*time.Hour),
		ctr("old", 2, running, 2*time.Hour), ctr("old", 3, running, time.Hour),
	}
	tests := []struct {
		name       string
		desired    *manifests.Deployment
		containers []dockerx.Container
		revisions  []store.Revision
		state      RolloutState
		ready      map[string]bool // nil: Docker's view
		notAvail   []string        // container IDs that are ready but not available
		want       []string
	}{
		{
			// Issue 8 item 5: the budget allows removing one old replica
			// because one is unavailable; removing an available one instead
			// would leave 2 available of 4 with maxUnavailable 1.
			name:    "rolling update removes the unavailable old replica, not an available one",
			desired: rolling(4, 1, 1), containers: old,
			revisions: []store.Revision{{Number: 1, Hash: "old"}, {Number: 2, Hash: H}},
			state:     RolloutState{Sizes: map[string]int32{"old": 4}, DesiredReplicas: i32(4), MaxReplicas: 5},
			notAvail:  []string{"id-i_web-old-0"},
			want:      []string{"remove i_web-old-0", "create i_web-aaaa-0"},
		},
		{
			// Issue 8 item 29: the older replica fails its controller-run
			// readiness probe, the newer one passes it.
			name:    "scale down removes the replica failing its controller-run probe",
			desired: deployment(1),
			containers: []dockerx.Container{
				ctr(H, 0, running, 3*time.Hour), // older, probe failing
				ctr(H, 1, running, time.Hour),   // newer, probe passing
			},
			ready: map[string]bool{"id-i_web-aaaa-1": true},
			want:  []string{"remove i_web-aaaa-0"},
		},
		{
			name:    "scale down removes a ready but not yet available replica first",
			desired: deployment(1),
			containers: []dockerx.Container{
				ctr(H, 0, running, time.Minute), // newest, available
				ctr(H, 1, running, time.Hour),   // older, settling again
			},
			notAvail: []string{"id-i_web-aaaa-1"},
			want:     []string{"remove i_web-aaaa-1"},
		},
		{
			// Issue 8 item 15: Kubernetes creates no ReplicaSet for a
			// deployment created paused.
			name:    "a deployment created paused gets no replicas",
			desired: paused,
		},
		{
			name:       "a paused deployment keeps the replicas it has",
			desired:    paused,
			containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 1, running, time.Hour), ctr(H, 2, running, time.Hour)},
			state:      RolloutState{Sizes: map[string]int32{H: 3}, DesiredReplicas: i32(3), MaxReplicas: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			avail := availableIfRunning(tt.containers)
			if tt.ready != nil {
				avail = map[string]bool{}
				for id := range tt.ready {
					avail[id] = true
				}
			}
			for _, id := range tt.notAvail {
				delete(avail, id)
			}
			plan := ComputePlan(PlanInput{
				Instance: "i", Name: "web", Desired: tt.desired, Hash: H, Revisions: tt.revisions,
				Containers: tt.containers, Now: t0, State: tt.state, Ready: tt.ready, Available: avail,
			})
			var got []string
			for _, op := range plan.Ops {
				if op.Cause == "" {
					t.Errorf("op %v has no cause", op)
				}
				if op.Reason == "" {
					t.Errorf("op %v has no reason", op)
				}
				got = append(got, fmt.Sprintf("%s %s", op.Kind, op.Name))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestPlanReasons checks the typed reason of every kind of op: restart
// counting (countsAsRestart) acts on it, never on the human Cause.
func TestPlanReasons(t *testing.T) {
	const H = "aaaa"
	running := dockerx.StateRunning
	name := func(hash string, ord int) string { return dockerx.ContainerName("i", "", "web", hash, ord) }
	oldRev := []store.Revision{{Number: 1, Hash: "old"}, {Number: 2, Hash: H}}
	tests := []struct {
		name        string
		desired     *manifests.Deployment
		containers  []dockerx.Container
		revisions   []store.Revision
		liveness    map[string]bool
		terminating map[string]time.Time
		want        map[string]OpReason // by container name; other ops may follow
		restart     map[string]bool     // names whose op counts as a restart
	}{
		{name: "missing", desired: deployment(1),
			want: map[string]OpReason{name(H, 0): ReasonMissing}},
		{name: "stopped", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, dockerx.StateExited, time.Hour)},
			want: map[string]OpReason{name(H, 0): ReasonStopped}, restart: map[string]bool{name(H, 0): true}},
		{name: "never started", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, dockerx.StateCreated, time.Second)},
			want: map[string]OpReason{name(H, 0): ReasonNeverStarted}},
		{name: "paused", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, dockerx.StatePaused, time.Hour)},
			want: map[string]OpReason{name(H, 0): ReasonPaused}},
		{name: "liveness", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			liveness: map[string]bool{"id-" + name(H, 0): true},
			// The liveness op only stops it; the start that follows counts.
			want: map[string]OpReason{name(H, 0): ReasonLiveness}},
		{name: "surplus", desired: deployment(0), containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			want: map[string]OpReason{name(H, 0): ReasonSurplus}},
		{name: "rollout", desired: withStrategy(deployment(1), manifests.StrategyRecreate, 0, 0), revisions: oldRev,
			containers: []dockerx.Container{ctr("old", 0, running, time.Hour)},
			want:       map[string]OpReason{name("old", 0): ReasonRollout}},
		{name: "no hash", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr("", 0, running, time.Hour)},
			want: map[string]OpReason{name("", 0): ReasonNoHash}},
		{name: "dead", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, dockerx.StateDead, time.Hour)},
			want: map[string]OpReason{name(H, 0): ReasonDead}},
		{name: "terminating", desired: deployment(1), containers: []dockerx.Container{ctr(H, 0, running, time.Hour), ctr(H, 1, running, time.Hour)},
			terminating: map[string]time.Time{"id-" + name(H, 1): t0.Add(time.Minute)},
			want:        map[string]OpReason{name(H, 1): ReasonTerminating}},
		{name: "deleted", containers: []dockerx.Container{ctr(H, 0, running, time.Hour)},
			want: map[string]OpReason{name(H, 0): ReasonDeleted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := ComputePlan(PlanInput{
				Instance: "i", Name: "web", Desired: tt.desired, Hash: H, Revisions: tt.revisions,
				Containers: tt.containers, Now: t0, Available: availableIfRunning(tt.containers),
				LivenessFailed: tt.liveness, Terminating: tt.terminating,
			})
			got := map[string]OpReason{}
			for _, op := range plan.Ops {
				if op.Reason == "" {
					t.Errorf("op %v has no reason", op)
				}
				got[op.Name] = op.Reason
				if op.countsAsRestart() != tt.restart[op.Name] {
					t.Errorf("op %v (reason %s): countsAsRestart = %v, want %v", op, op.Reason, op.countsAsRestart(), tt.restart[op.Name])
				}
			}
			for n, want := range tt.want {
				if got[n] != want {
					t.Errorf("op on %s: reason %q, want %q (plan %v)", n, got[n], want, plan.Ops)
				}
			}
		})
	}
}

// TestPlanCreatesFrom checks that a create names the deployment it is
// created from, so that the executor looks no template up: the desired
// one, or for a replica of an old revision the desired one with that
// revision's template.
func TestPlanCreatesFrom(t *testing.T) {
	const H = "aaaa"
	d := deployment(2)
	old := d.Spec.Template
	old.Spec.Containers = []manifests.Container{{Name: "web", Image: "img:0"}}
	plan := ComputePlan(PlanInput{
		Instance: "i", Name: "web", Desired: d, Hash: H, Now: t0,
		Revisions: []store.Revision{{Number: 1, Hash: "old", Template: old}, {Number: 2, Hash: H, Template: d.Spec.Template}},
		State:     RolloutState{Sizes: map[string]int32{"old": 1, H: 1}},
	})
	seen := map[string]bool{}
	for _, op := range plan.Creates() {
		seen[op.Hash] = true
		switch op.Hash {
		case H:
			if op.From != d {
				t.Errorf("%v: created from %p, want the desired deployment %p", op, op.From, d)
			}
		case "old":
			if op.From == nil || op.From == d || op.From.Container().Image != "img:0" || op.From.Metadata.Name != "web" {
				t.Errorf("%v: created from %+v, want the desired deployment with the old template", op, op.From)
			}
		}
	}
	if !seen[H] || !seen["old"] {
		t.Fatalf("plan %v: want a create of each revision", plan.Ops)
	}
	if d.Container().Image != "img:1" {
		t.Fatalf("the desired deployment was changed: image %s", d.Container().Image)
	}
}

// Creates returns the create operations of the plan (for tests: the
// executor follows Op.DependsOn).
func (p Plan) Creates() []Op {
	var out []Op
	for _, op := range p.Ops {
		if op.Kind == OpCreate {
			out = append(out, op)
		}
	}
	return out
}

// TestPlanKeepsBoundsUnderRandomRollouts drives the planner through
// random rollouts (template changes on top of template changes), scales
// and graceful stops that end at random, with new replicas becoming
// available at random, and checks after every plan: never more containers
// (terminating ones included) than the larger replica count + maxSurge
// (replicas for Recreate), never fewer available than replicas -
// maxUnavailable unless a scale-up is still filling, and Recreate never
// running two revisions. Seeds make it deterministic.
func TestPlanKeepsBoundsUnderRandomRollouts(t *testing.T) {
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		R := int32(rng.Intn(6) + 1)
		surge, unav := rng.Intn(3), rng.Intn(3)
		recreate := rng.Intn(4) == 0
		mk := func(img string) *manifests.Deployment {
			d := deployment(R)
			d.Spec.Template.Spec.Containers[0].Image = img
			if recreate {
				d.Spec.Strategy.Type = manifests.StrategyRecreate
			} else {
				d = withStrategy(d, manifests.StrategyRollingUpdate, surge, unav)
			}
			return d
		}
		d := mk("img:0")
		p := resolveParams(d)
		hash := manifests.TemplateHash(&d.Spec.Template)
		revs := []store.Revision{{Number: 1, Hash: hash, Template: d.Spec.Template}}
		var cs []dockerx.Container
		avail := map[string]bool{}
		term := map[string]time.Time{}
		var state RolloutState
		n := 0
		var log []string
		for i := int32(0); i < R; i++ {
			c := ctr(hash, int(i), dockerx.StateRunning, time.Hour)
			cs = append(cs, c)
			avail[c.ID] = true
		}
		state = RolloutState{Sizes: map[string]int32{hash: R}, DesiredReplicas: &R, MaxReplicas: R + p.maxSurge}
		rev := 1
		maxR := R
		scaledUp := false
		for step := 0; step < 60; step++ {
			if rng.Intn(10) == 0 {
				nr := int32(rng.Intn(6) + 1)
				if nr > R {
					scaledUp = true
				}
				R = nr
				maxR = max(maxR, R)
				img := d.Spec.Template.Spec.Containers[0].Image
				d = mk(img)
				p = resolveParams(d)
				log = append(log, fmt.Sprintf("scale %d", R))
			}
			if rng.Intn(8) == 0 && rev < 4 {
				rev++
				d = mk(fmt.Sprintf("img:%d", rev))
				hash = manifests.TemplateHash(&d.Spec.Template)
				revs = append(revs, store.Revision{Number: int64(rev), Hash: hash, Template: d.Spec.Template})
				log = append(log, "template "+hash)
			}
			in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: hash, Revisions: revs, Containers: cs, Now: t0,
				Available: avail, State: state, Terminating: term}
			plan := ComputePlan(in)
			state = plan.State
			for _, op := range plan.Ops {
				log = append(log, op.String())
				switch op.Kind {
				case OpRemove:
					if op.Grace > 0 {
						term[op.ContainerID] = t0
						delete(avail, op.ContainerID)
					} else {
						for j := range cs {
							if cs[j].ID == op.ContainerID {
								cs = append(cs[:j], cs[j+1:]...)
								break
							}
						}
					}
				case OpCreate:
					n++
					c := dockerx.Container{ID: fmt.Sprintf("n%d", n), Name: op.Name, State: dockerx.StateRunning, Instance: "i", Deployment: "web", TemplateHash: op.Hash, Created: t0}
					cs = append(cs, c)
				}
			}
			// invariants
			limit := int(maxR + p.maxSurge)
			if p.recreate {
				limit = int(maxR)
			}
			if len(cs) > limit {
				t.Fatalf("seed %d: %d containers > %d\n%v", seed, len(cs), limit, log)
			}
			a := 0
			hashes := map[string]bool{}
			for _, c := range cs {
				if avail[c.ID] {
					a++
				}
				if _, ok := term[c.ID]; !ok {
					hashes[c.TemplateHash] = true
				}
			}
			if len(plan.Ops) == 0 && len(term) == 0 && a == len(cs) {
				maxR, scaledUp = R, false
			}
			if !scaledUp && !p.recreate && a < int(R-p.maxUnavailable) {
				t.Fatalf("seed %d: %d available < %d (R %d params %+v prev state %+v)\n%v\n%s", seed, a, R-p.maxUnavailable, R, p, in.State, log, summary(cs))
			}
			if p.recreate && len(hashes) > 1 {
				t.Fatalf("seed %d: recreate mixes %v\n%v", seed, hashes, log)
			}
			// events
			for _, c := range cs {
				if _, ok := term[c.ID]; !ok && !avail[c.ID] && rng.Intn(2) == 0 {
					avail[c.ID] = true
				}
			}
			var keep []dockerx.Container
			for _, c := range cs {
				if _, ok := term[c.ID]; ok && rng.Intn(3) == 0 {
					delete(term, c.ID)
					continue
				}
				keep = append(keep, c)
			}
			cs = keep
		}
	}
}
