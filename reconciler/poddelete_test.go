package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// opSummary renders an op for the tables below: kind, container (without
// the instance prefix), reason, and grace when there is one.
func opSummary(op Op) string {
	s := fmt.Sprintf("%s %s %s", op.Kind, strings.TrimPrefix(op.Name, "i_"), op.Reason)
	if op.Grace > 0 {
		s += " " + op.Grace.String()
	}
	if op.Phases != nil {
		s += fmt.Sprintf(" %d phases", len(op.Phases))
	}
	return s
}

// TestPlanPodDeletion: a pod a user deleted is removed through the
// graceful stop with the cause PodDeleted and, the deployment wanting it
// still, replaced at once within replicas + maxSurge (a user's delete is
// no eviction: maxUnavailable does not hold it back); a request that
// names no observed container is done, and never hits a newer pod of the
// same name.
func TestPlanPodDeletion(t *testing.T) {
	const H = "aaaa"
	// Containers are given by ordinal, all running, of the deployment's
	// revision; "#N" in a request or a map stands for the ID of ordinal N.
	del := func(pod string, grace *int64, ids ...string) store.PodDeletion {
		return store.PodDeletion{Pod: pod, Containers: ids, GracePeriodSeconds: grace, RequestedAt: t0}
	}
	secs := func(s int64) *int64 { return &s }
	three := []int{0, 1, 2}
	surge := func(n, surge, unavailable int) *manifests.Deployment {
		return withStrategy(deployment(int32(n)), manifests.StrategyRollingUpdate, surge, unavailable)
	}
	withHostPort := func(d *manifests.Deployment) *manifests.Deployment {
		d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"}}
		return d
	}
	tests := []struct {
		name        string
		desired     *manifests.Deployment // nil: the deployment was deleted
		containers  []int
		deletions   []store.PodDeletion
		terminating map[string]time.Duration // kill deadline from now, by container ID
		stopping    []string
		maxReplicas int32    // the controller's cap (0: the default)
		want        []string // opSummary of every op, in plan order
		wantDone    []string // pods of the requests done
	}{
		{name: "a deleted pod is stopped gracefully and replaced at once",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 30s", "create web-aaaa-3 Missing"}},
		{name: "maxUnavailable 0 does not hold a user's delete back",
			desired: surge(1, 1, 0), containers: three[:1], deletions: []store.PodDeletion{del("web-aaaa-0", nil, "#0")},
			want: []string{"remove web-aaaa-0 PodDeleted 30s", "create web-aaaa-1 Missing"}},
		{name: "maxSurge 0: removed, the replacement waits for its place",
			desired: surge(3, 0, 1), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 30s"}},
		{name: "maxSurge 0, the deleted pod gone: replaced, the request done",
			desired: surge(3, 0, 1), containers: []int{0, 2}, deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")},
			want: []string{"create web-aaaa-1 Missing"}, wantDone: []string{"web-aaaa-1"}},
		{name: "two deleted with maxSurge 1: both stopped, one replaced now",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-0", nil, "#0"), del("web-aaaa-2", nil, "#2")},
			want: []string{"remove web-aaaa-0 PodDeleted 30s", "remove web-aaaa-2 PodDeleted 30s", "create web-aaaa-3 Missing"}},
		{name: "a host port allows no surge: the replacement waits",
			desired: withHostPort(deployment(1)), containers: three[:1], deletions: []store.PodDeletion{del("web-aaaa-0", nil, "#0")},
			want: []string{"remove web-aaaa-0 PodDeleted 30s"}},
		{name: "Recreate: the replacement waits",
			desired: withStrategy(deployment(3), manifests.StrategyRecreate, 0, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 30s"}},
		{name: "the request's grace period replaces the pod's",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", secs(5), "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 5s", "create web-aaaa-3 Missing"}},
		{name: "and is bounded as every grace period is",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", secs(86400), "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 5m0s", "create web-aaaa-3 Missing"}},
		{name: "grace 0 (--force): stopped with the kubelet's least grace of 2s",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", secs(0), "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 2s", "create web-aaaa-3 Missing"}},
		{name: "a pod no longer observed: no op, the request done",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-7", nil, "id-gone")},
			wantDone: []string{"web-aaaa-7"}},
		{name: "a newer pod of the same name is never hit",
			desired: surge(3, 1, 0), containers: three, deletions: []store.PodDeletion{del("web-aaaa-1", nil, "id-of-its-predecessor")},
			wantDone: []string{"web-aaaa-1"}},
		{name: "deleted again while its stop is in flight: nothing more",
			desired: surge(3, 1, 0), containers: []int{0, 1, 2, 3},
			deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")}, terminating: map[string]time.Duration{"#1": 20 * time.Second}, stopping: []string{"#1"}},
		{name: "--force while its stop is in flight: the stop shortened to 2s",
			desired: surge(3, 1, 0), containers: []int{0, 1, 2, 3},
			deletions: []store.PodDeletion{del("web-aaaa-1", secs(0), "#1")}, terminating: map[string]time.Duration{"#1": 20 * time.Second}, stopping: []string{"#1"},
			want: []string{"remove web-aaaa-1 PodDeleted 2s"}},
		{name: "a shorter grace while its stop is in flight: the stop shortened",
			desired: surge(3, 1, 0), containers: []int{0, 1, 2, 3},
			deletions: []store.PodDeletion{del("web-aaaa-1", secs(5), "#1")}, terminating: map[string]time.Duration{"#1": 20 * time.Second}, stopping: []string{"#1"},
			want: []string{"remove web-aaaa-1 PodDeleted 5s"}},
		{name: "a longer grace while its stop is in flight: never lengthened",
			desired: surge(3, 1, 0), containers: []int{0, 1, 2, 3},
			deletions: []store.PodDeletion{del("web-aaaa-1", secs(60), "#1")}, terminating: map[string]time.Duration{"#1": 20 * time.Second}, stopping: []string{"#1"}},
		{name: "over the replica cap (refused): the deleted pod removed all the same, not replaced",
			desired: surge(3, 1, 0), containers: three, maxReplicas: 2, deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")},
			want: []string{"remove web-aaaa-1 PodDeleted 30s"}},
		{name: "a stop resumed by a restarted controller: the shorter of what is left and the request's grace",
			desired: surge(3, 1, 0), containers: []int{0, 1, 2, 3},
			deletions: []store.PodDeletion{del("web-aaaa-1", secs(5), "#1")}, terminating: map[string]time.Duration{"#1": 20 * time.Second},
			want: []string{"remove web-aaaa-1 PodDeleted 5s"}},
		{name: "a deleted deployment: its deleted pod with the request's grace, the others with their own",
			containers: three[:2], deletions: []store.PodDeletion{del("web-aaaa-1", secs(0), "#1")},
			want: []string{"remove web-aaaa-0 Deleted 30s", "remove web-aaaa-1 PodDeleted 2s"}},
		{name: "a deleted deployment, the deleted pod gone: the request done",
			containers: three[:1], deletions: []store.PodDeletion{del("web-aaaa-1", nil, "#1")},
			want: []string{"remove web-aaaa-0 Deleted 30s"}, wantDone: []string{"web-aaaa-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hash := H
			if tt.desired != nil {
				hash = manifests.TemplateHash(&tt.desired.Spec.Template)
			}
			id := func(ref string) string {
				var ord int
				if _, err := fmt.Sscanf(ref, "#%d", &ord); err != nil {
					return ref
				}
				return ctr(hash, ord, dockerx.StateRunning, time.Hour).ID
			}
			in := PlanInput{Instance: "i", Name: "web", Desired: tt.desired, Now: t0, MaxReplicas: tt.maxReplicas}
			for _, ord := range tt.containers {
				in.Containers = append(in.Containers, ctr(hash, ord, dockerx.StateRunning, time.Hour))
			}
			in.Available = availableIfRunning(in.Containers)
			for _, d := range tt.deletions {
				d.Containers = slices.Clone(d.Containers)
				for i := range d.Containers {
					d.Containers[i] = id(d.Containers[i])
				}
				in.Deletions = append(in.Deletions, d)
			}
			if tt.desired != nil {
				// The containers are of the current revision, at its size.
				in.Hash = hash
				n := tt.desired.Replicas()
				in.State = RolloutState{Sizes: map[string]int32{hash: n}, DesiredReplicas: &n}
			}
			for ref, left := range tt.terminating {
				if in.Terminating == nil {
					in.Terminating = map[string]time.Time{}
				}
				in.Terminating[id(ref)] = t0.Add(left)
			}
			for _, ref := range tt.stopping {
				if in.Stopping == nil {
					in.Stopping = map[string]bool{}
				}
				in.Stopping[id(ref)] = true
			}
			plan := ComputePlan(in)
			checkOrder(t, plan)
			var got []string
			for _, op := range plan.Ops {
				got = append(got, strings.ReplaceAll(opSummary(op), hash, H))
				if op.Reason == ReasonPodDeleted && op.Cause == "" {
					t.Errorf("%s: no cause", op.Line())
				}
				// A stop in flight is only shortened, to its grace from now.
				if want := (time.Time{}); in.Stopping[op.ContainerID] {
					if want = t0.Add(op.Grace); !op.Deadline.Equal(want) {
						t.Errorf("%s: deadline %v, want %v", op.Line(), op.Deadline, want)
					}
				} else if !op.Deadline.IsZero() {
					t.Errorf("%s: a deadline %v for a stop not in flight", op.Line(), op.Deadline)
				}
			}
			var done []string
			for _, d := range plan.DeletionsDone {
				done = append(done, d.Pod)
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(done, tt.wantDone) {
				t.Fatalf("plan:\n%s\ngot ops %q done %q\nwant ops %q done %q", plan, got, done, tt.want, tt.wantDone)
			}
			// Nothing else changed: the revision keeps its size, so the
			// replica comes back.
			if tt.desired != nil && plan.State.Sizes[in.Hash] != tt.desired.Replicas() {
				t.Errorf("sizes %v, want %d", plan.State.Sizes, tt.desired.Replicas())
			}
		})
	}
}

// A holder pod's request names it by uid: the pod is stopped in phases
// as any removal of a pod is, a newer pod of its name (another uid) is
// never hit, and a request that names only its containers still finds it.
func TestPlanPodDeletionHolderPod(t *testing.T) {
	const H = "aaaa"
	run := dockerx.StateRunning
	running := map[string]string{"migrate": "exited:0", "seed": "exited:0", "app": run, "log": run}
	d := podDeployment(2)
	hash := manifests.TemplateHash(&d.Spec.Template)
	pod0, pod1 := podOf(hash, 0, run, running), podOf(hash, 1, run, running)
	var pod1IDs []string
	for _, c := range pod1 {
		pod1IDs = append(pod1IDs, c.ID)
	}
	tests := []struct {
		name     string
		req      store.PodDeletion
		want     []string
		wantDone bool
	}{
		{"by uid", store.PodDeletion{Pod: "web-aaaa-1", UID: pod1[0].PodUID, Containers: []string{"id-other"}},
			[]string{"remove web-aaaa-1 PodDeleted 30s 2 phases"}, false},
		{"by its containers", store.PodDeletion{Pod: "web-aaaa-1", Containers: pod1IDs},
			[]string{"remove web-aaaa-1 PodDeleted 30s 2 phases"}, false},
		{"--force: stopped in phases with the kubelet's least grace of 2s", store.PodDeletion{Pod: "web-aaaa-1", UID: pod1[0].PodUID, GracePeriodSeconds: new(int64)},
			[]string{"remove web-aaaa-1 PodDeleted 2s 2 phases"}, false},
		{"a newer pod of that name (another uid)", store.PodDeletion{Pod: "web-aaaa-1", UID: "u-before", Containers: []string{"id-before"}},
			nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := podInput(d, concat(pod0, pod1))
			in.Instance, in.Name, in.Hash, in.Now = "i", "web", hash, t0
			in.State = RolloutState{Sizes: map[string]int32{hash: 2}}
			in.Deletions = []store.PodDeletion{tt.req}
			plan := ComputePlan(in)
			checkOrder(t, plan)
			var got []string
			for _, op := range plan.Ops {
				if op.Kind == OpRemove {
					got = append(got, strings.ReplaceAll(opSummary(op), hash, H))
				}
			}
			if !slices.Equal(got, tt.want) || (len(plan.DeletionsDone) == 1) != tt.wantDone {
				t.Fatalf("plan:\n%s\ngot removals %q, done %v; want %q, done %v", plan, got, plan.DeletionsDone, tt.want, tt.wantDone)
			}
			if !tt.wantDone && len(plan.Creates()) == 0 {
				t.Errorf("the deleted pod is not replaced:\n%s", plan)
			}
		})
	}
}
