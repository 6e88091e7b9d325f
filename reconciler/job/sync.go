package job

import (
	"math"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// syncer holds one decision being made.
type syncer struct {
	j   *manifests.Job
	now time.Time
	st  batchv1.JobStatus
	d   Decision

	pods        []workload.ObservedPod
	indexed     bool
	active      []*workload.ObservedPod
	terminating int32
	ready       int32
	// succeededPods and failedPods are the finished pods that count
	// (valid index for an Indexed Job); counted are the failures a
	// podFailurePolicy does not ignore.
	succeededPods, failedPods, counted []*workload.ObservedPod
	succeeded, failed                  int32
	failJob                            string
	completed, failedIx                indexSet
	// Per index: failures counted and ignored, and the last one's time
	// (under backoffLimitPerIndex).
	ixCounted, ixIgnored map[int]int
	ixLast               map[int]time.Time
}

// Sync decides what to do about Job j (defaulted as the API server
// defaults it: manifests.SetJobDefaults) at now, given its last status
// prev and its pods. It follows Kubernetes' syncJob: count what finished,
// judge whether the Job ends (podFailurePolicy FailJob, backoffLimit,
// activeDeadlineSeconds, failed indexes) and if so stop its active pods,
// else keep the wanted number running (manageJob) and see whether it
// completed.
func Sync(j *manifests.Job, prev batchv1.JobStatus, pods []workload.ObservedPod, now time.Time) Decision {
	s := &syncer{j: j, now: now, st: *prev.DeepCopy(), indexed: isIndexed(j)}
	if c := finishedCondition(s.st); c != nil {
		s.d.Status = s.st
		s.ttl(c.LastTransitionTime.Time)
		return s.d
	}
	s.pods = slices.Clone(pods)
	slices.SortFunc(s.pods, func(a, b workload.ObservedPod) int { return strings.Compare(a.Name, b.Name) })
	s.observe()
	if s.st.StartTime == nil && !suspended(j) {
		s.st.StartTime = s.metaNow()
	}

	var end *batchv1.JobCondition
	if c := findCondition(s.st, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		end = c
	} else if c := findCondition(s.st, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		end = c
	} else if s.failJob != "" {
		end = s.condition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, s.failJob)
	}
	if end == nil {
		switch ads := j.Spec.ActiveDeadlineSeconds; {
		case s.failed > backoffLimit(j) || pastBackoffLimitOnFailure(j, s.pods):
			end = s.condition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
		case ads != nil && !suspended(j):
			deadline := s.st.StartTime.Add(time.Duration(*ads) * time.Second)
			if !now.Before(deadline) {
				end = s.condition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
			} else {
				s.requeue(deadline)
			}
		}
	}
	if s.indexed {
		s.succeeded = int32(s.completed.total())
		if end == nil && j.Spec.BackoffLimitPerIndex != nil {
			if m := j.Spec.MaxFailedIndexes; m != nil && s.failedIx.total() > int(*m) {
				end = s.condition(batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes")
			} else if s.failedIx.total() > 0 && s.failedIx.total()+s.completed.total() >= int(completions(j)) {
				end = s.condition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "Job has failed indexes")
			}
		}
	}

	if end != nil {
		s.endActive(end)
		s.end(end)
	} else {
		s.manage()
		if s.complete() {
			s.end(s.condition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"))
		} else {
			s.suspendCondition()
		}
	}

	s.st.Active = int32(len(s.active))
	s.st.Ready = &s.ready
	s.st.Terminating = &s.terminating
	s.st.Succeeded = s.succeeded
	s.st.Failed = s.failed
	if s.indexed {
		s.st.CompletedIndexes = s.completed.String()
		if j.Spec.BackoffLimitPerIndex != nil {
			fi := s.failedIx.String()
			s.st.FailedIndexes = &fi
		}
	}
	s.d.Status = s.st
	return s.d
}

// observe sorts the pods out and counts what finished.
func (s *syncer) observe() {
	j := s.j
	n := int(completions(j))
	if s.indexed {
		s.completed = parseIndexes(s.st.CompletedIndexes, n)
		if j.Spec.BackoffLimitPerIndex != nil && s.st.FailedIndexes != nil {
			s.failedIx = parseIndexes(*s.st.FailedIndexes, n)
		}
		s.ixCounted, s.ixIgnored, s.ixLast = map[int]int{}, map[int]int{}, map[int]time.Time{}
	}
	var newlyFailedIx []int
	var succeededIx []int
	for i := range s.pods {
		p := &s.pods[i]
		switch {
		case p.Active():
			s.active = append(s.active, p)
			if p.Ready() {
				s.ready++
			}
			continue
		case terminating(p):
			s.terminating++
			continue
		}
		ix := podIndex(p)
		if s.indexed && (ix < 0 || ix >= n) {
			continue // not one of this Job's completions (any more)
		}
		if p.Status.Phase == corev1.PodSucceeded {
			s.succeededPods = append(s.succeededPods, p)
			if s.indexed {
				succeededIx = append(succeededIx, ix)
			}
			continue
		}
		if !failed(p) {
			continue
		}
		s.failedPods = append(s.failedPods, p)
		v := judge(j, p)
		if v.count {
			s.counted = append(s.counted, p)
		}
		if s.failJob == "" && v.failJob != "" {
			s.failJob = v.failJob
		}
		if s.indexed {
			if v.count {
				s.ixCounted[ix]++
			} else {
				s.ixIgnored[ix]++
			}
			if t := p.FinishTime(); t.After(s.ixLast[ix]) {
				s.ixLast[ix] = t
			}
			if lim := j.Spec.BackoffLimitPerIndex; lim != nil && (v.action == manifests.PodFailureFailIndex || (v.count && s.ixCounted[ix] > int(*lim))) {
				newlyFailedIx = append(newlyFailedIx, ix)
			}
		}
	}
	// Counts never go down: a finished pod removed by hand, or the pods
	// the Job stopped when it failed, keep their share.
	s.succeeded = max(s.st.Succeeded, int32(len(s.succeededPods)))
	s.failed = max(s.st.Failed, int32(len(s.counted)))
	if Failing(s.st) {
		// The pods finishing now are those the Job stopped when it
		// began to fail, counted failed then (endActive): whatever
		// their exit, no success counts, as Kubernetes counts every pod
		// not finished at the failure as failed, once.
		s.succeeded, succeededIx = s.st.Succeeded, nil
	}
	if s.indexed {
		s.completed = s.completed.with(succeededIx...)
		if j.Spec.BackoffLimitPerIndex != nil {
			s.failedIx = s.failedIx.with(newlyFailedIx...)
		}
	}
}

// complete: the Job has its completions, or for a Job without
// completions (a work queue) some pod succeeded, and nothing runs any more.
func (s *syncer) complete() bool {
	if len(s.active) > 0 {
		return false
	}
	if s.j.Spec.Completions == nil {
		return s.succeeded > 0
	}
	return s.succeeded >= *s.j.Spec.Completions
}

// endActive stops every active pod of a Job that ends. When it fails,
// each one stopped counts as failed, as Kubernetes counts every pod not
// finished when a Job fails — once: a pod whose stop did not happen yet
// and is asked again next time is not counted twice.
func (s *syncer) endActive(end *batchv1.JobCondition) {
	if end.Type != batchv1.JobSuccessCriteriaMet {
		s.failed = max(s.failed, int32(len(s.counted)+len(s.active)))
	}
	s.deletePods(s.active)
	s.active = nil
}

// end sets the interim condition (FailureTarget or SuccessCriteriaMet)
// and, once no pod is terminating, the final one with its event.
func (s *syncer) end(interim *batchv1.JobCondition) {
	if findCondition(s.st, interim.Type) == nil {
		s.st.Conditions = append(s.st.Conditions, *interim)
	}
	if s.terminating > 0 {
		return // the final condition waits for the pods to be gone
	}
	final := batchv1.JobFailed
	if interim.Type == batchv1.JobSuccessCriteriaMet {
		final = batchv1.JobComplete
	}
	c := s.condition(final, interim.Reason, interim.Message)
	s.st.Conditions = append(s.st.Conditions, *c)
	if final == batchv1.JobComplete {
		s.st.CompletionTime = s.metaNow()
		s.event(corev1.EventTypeNormal, "Completed", "Job completed")
	} else {
		s.event(corev1.EventTypeWarning, interim.Reason, interim.Message)
	}
	s.ttl(s.now)
}

// ttl decides the time to live of a Job finished at finished
// (ttlSecondsAfterFinished, Kubernetes' TTL-after-finished controller):
// delete it once run out, else look again then.
func (s *syncer) ttl(finished time.Time) {
	t := s.j.Spec.TTLSecondsAfterFinished
	if t == nil {
		return
	}
	expire := finished.Add(time.Duration(*t) * time.Second)
	if !s.now.Before(expire) {
		s.d.DeleteJob = true
		return
	}
	s.requeue(expire)
}

// suspendCondition keeps the Suspended condition, as Kubernetes does
// once it managed the pods: True while suspended (startTime cleared),
// False on resume, which restarts the clock of activeDeadlineSeconds
// (startTime is now).
func (s *syncer) suspendCondition() {
	c := findCondition(s.st, batchv1.JobSuspended)
	if suspended(s.j) {
		if c == nil || c.Status != corev1.ConditionTrue {
			s.setCondition(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended")
			s.event(corev1.EventTypeNormal, "Suspended", "Job suspended")
			// activeDeadlineSeconds counts the time a Job is active:
			// suspending it stops the clock (Kubernetes clears startTime).
			s.st.StartTime = nil
		}
		return
	}
	if c != nil && c.Status == corev1.ConditionTrue {
		s.setCondition(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed")
		s.event(corev1.EventTypeNormal, "Resumed", "Job resumed")
		s.st.StartTime = s.metaNow()
		if ads := s.j.Spec.ActiveDeadlineSeconds; ads != nil {
			s.requeue(s.now.Add(time.Duration(*ads) * time.Second))
		}
	}
}

func (s *syncer) setCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string) {
	c := s.condition(t, reason, msg)
	c.Status = status
	if old := findCondition(s.st, t); old != nil {
		*old = *c
		return
	}
	s.st.Conditions = append(s.st.Conditions, *c)
}

func (s *syncer) condition(t batchv1.JobConditionType, reason, msg string) *batchv1.JobCondition {
	now := metav1.NewTime(s.now)
	return &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
}

func (s *syncer) event(typ, reason, msg string) {
	s.d.Events = append(s.d.Events, workload.Event{Type: typ, Reason: reason, Message: msg})
}

// requeue asks to decide again at t, the earliest asked for winning
// (workload.Requeue, as every workload controller keeps it).
func (s *syncer) requeue(t time.Time) {
	r := workload.Requeue{At: s.d.RequeueAt}
	r.Before(t)
	s.d.RequeueAt = r.At
}

func (s *syncer) metaNow() *metav1.Time { t := metav1.NewTime(s.now); return &t }

// finishedCondition returns the Complete or Failed condition that is
// true, nil while the Job runs.
func finishedCondition(st batchv1.JobStatus) *batchv1.JobCondition {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func findCondition(st batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// Failing reports whether a Job with this status is failing or failed
// (its FailureTarget condition is true): the pods it had active then are
// stopped and counted failed, and nothing finishing later counts.
func Failing(st batchv1.JobStatus) bool {
	c := findCondition(st, batchv1.JobFailureTarget)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Finished reports whether a Job with this status is finished (Complete
// or Failed), and when.
func Finished(st batchv1.JobStatus) (time.Time, bool) {
	if c := finishedCondition(st); c != nil {
		return c.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}

// Succeeded reports whether a Job with this status completed.
func Succeeded(st batchv1.JobStatus) bool {
	c := finishedCondition(st)
	return c != nil && c.Type == batchv1.JobComplete
}

func isIndexed(j *manifests.Job) bool {
	return j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == manifests.CompletionIndexed
}

func suspended(j *manifests.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

func completions(j *manifests.Job) int32 {
	if j.Spec.Completions == nil {
		return 0
	}
	return *j.Spec.Completions
}

func parallelism(j *manifests.Job) int32 {
	if j.Spec.Parallelism == nil {
		return 1
	}
	return *j.Spec.Parallelism
}

func backoffLimit(j *manifests.Job) int32 {
	switch {
	case j.Spec.BackoffLimit != nil:
		return *j.Spec.BackoffLimit
	case j.Spec.BackoffLimitPerIndex != nil:
		return math.MaxInt32
	}
	return manifests.DefaultBackoffLimit
}
