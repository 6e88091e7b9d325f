package job

import (
	"cmp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/reconciler/workload"
)

// How many pods run, as Kubernetes' manageJob decides: none while
// suspended; else parallelism, bounded by the completions still missing
// (a Job without completions keeps what runs once one pod succeeded).
// Excess pods are deleted first; missing ones are created after the pod
// failure backoff, for an Indexed Job one per missing index.

func (s *syncer) manage() {
	j := s.j
	if suspended(j) {
		s.deletePods(s.forRemoval(len(s.active)))
		return
	}
	active := int32(len(s.active))
	var want int32
	if j.Spec.Completions == nil {
		want = parallelism(j)
		if s.succeeded > 0 {
			want = active
		}
	} else {
		want = max(0, min(*j.Spec.Completions-s.succeeded, parallelism(j)))
	}
	if rm := s.forRemoval(int(active - want)); len(rm) > 0 {
		// Deleting and creating in one sync would race an Indexed Job's
		// repeated indexes: deletions first, creations next time.
		s.deletePods(rm[:min(len(rm), MaxPodCreateDeletePerSync)])
		return
	}
	diff := want - int32(len(s.active))
	if onlyReplaceFailed(j) {
		diff -= s.terminating
	}
	if diff <= 0 {
		return
	}
	if j.Spec.BackoffLimitPerIndex == nil {
		if rem := runOf(s.failedPods, s.succeededPods).remaining(s.now); rem > 0 {
			s.requeue(s.now.Add(rem))
			return
		}
	}
	diff = min(diff, MaxPodCreateDeletePerSync)
	names := newPodNamer(j.Metadata.Name, s.pods)
	if !s.indexed {
		for range diff {
			s.create(names, -1)
		}
		return
	}
	for _, ix := range s.pendingIndexes(int(diff)) {
		s.create(names, ix)
	}
}

// pendingIndexes are the first count indexes neither completed, failed,
// nor held by an active pod (or, when only failed pods are replaced, by
// a terminating one), those still in their per-index backoff left out.
func (s *syncer) pendingIndexes(count int) []int {
	var held []int
	for i := range s.pods {
		p := &s.pods[i]
		if ix := podIndex(p); ix >= 0 && (p.Active() || (terminating(p) && onlyReplaceFailed(s.j))) {
			held = append(held, ix)
		}
	}
	taken := s.completed.with(held...).merge(s.failedIx)
	n := int(completions(s.j))
	if s.j.Spec.BackoffLimitPerIndex == nil {
		return firstPending(count, n, taken)
	}
	// Each index waits out its own backoff: those ready now are
	// created, and the decision comes back when the next one is.
	var ready []int
	var soonest time.Duration
	for _, ix := range firstPending(count, n, taken) {
		run := failureRun{n: s.ixCounted[ix] + s.ixIgnored[ix], last: s.ixLast[ix]}
		if rem := run.remaining(s.now); rem > 0 {
			if soonest == 0 || rem < soonest {
				soonest = rem
			}
			continue
		}
		ready = append(ready, ix)
	}
	if soonest > 0 {
		s.requeue(s.now.Add(soonest))
	}
	return ready
}

func (s *syncer) create(names *podNamer, ix int) {
	name := names.name(ix)
	s.d.Create = append(s.d.Create, podSpec(s.j, name, ix, s.ixCounted[ix], s.ixIgnored[ix]))
	s.event(corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: "+name)
	// A pod created is active from now on (Kubernetes counts it so).
	s.active = append(s.active, &workload.ObservedPod{Name: name})
}

// deletePods stops pods: they are terminating from now on.
func (s *syncer) deletePods(ps []*workload.ObservedPod) {
	for _, p := range ps {
		s.d.Delete = append(s.d.Delete, p.Name)
		s.event(corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
		if p.Ready() {
			s.ready--
		}
		s.terminating++
		s.active = slices.DeleteFunc(s.active, func(a *workload.ObservedPod) bool { return a == p })
	}
}

// forRemoval picks at least n active pods to delete (Kubernetes'
// activePodsForRemoval): for an Indexed Job first those without a valid
// index and all but one of each repeated index; then those least along,
// in the order of Kubernetes' ActivePods (pending before running, not
// ready before ready, ready the shortest, restarted the most, newest).
func (s *syncer) forRemoval(n int) []*workload.ObservedPod {
	var rm, left []*workload.ObservedPod
	if s.indexed {
		byIx := map[int][]*workload.ObservedPod{}
		for _, p := range s.active {
			ix := podIndex(p)
			if ix < 0 || ix >= int(completions(s.j)) {
				rm = append(rm, p)
				continue
			}
			byIx[ix] = append(byIx[ix], p)
		}
		for _, p := range s.active {
			ix := podIndex(p)
			group := byIx[ix]
			if len(group) == 0 {
				continue
			}
			delete(byIx, ix)
			slices.SortFunc(group, removeFirst)
			rm = append(rm, group[:len(group)-1]...)
			left = append(left, group[len(group)-1])
		}
	} else {
		left = slices.Clone(s.active)
	}
	if len(rm) < n {
		slices.SortFunc(left, removeFirst)
		rm = append(rm, left[:min(len(left), n-len(rm))]...)
	}
	return rm
}

// removeFirst orders pods the first to delete first.
func removeFirst(a, b *workload.ObservedPod) int {
	rank := func(p *workload.ObservedPod) int {
		if p.Status.Phase == corev1.PodRunning {
			return 1
		}
		return 0
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	if ra, rb := a.Ready(), b.Ready(); ra != rb {
		if !ra {
			return -1
		}
		return 1
	}
	if c := b.Status.ReadySince.Compare(a.Status.ReadySince); c != 0 {
		return c
	}
	if c := cmp.Compare(restarts(b), restarts(a)); c != 0 {
		return c
	}
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
