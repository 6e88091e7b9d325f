package cronjob

import (
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/internal/cronschedule"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/job"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Sync decides what to do about CronJob cj (defaulted:
// manifests.SetCronJobDefaults) at now, given its last status prev and the
// Jobs it owns, as Kubernetes' syncCronJob: bring status.active up to date
// with the Jobs (SawCompletedJob, MissingJob, UnexpectedJob), note the
// last success, trim the history, then — unless suspended — start the
// Job of the most recent start time due under startingDeadlineSeconds
// and concurrencyPolicy, and requeue at the next start time.
//
// A schedule without a time zone (no timeZone, no CRON_TZ=) is read in
// UTC, the zone of the controller manager of nearly every cluster.
// cj.Metadata.CreationTimestamp must be set (the store stamps the objects
// it serves): the first start time considered is the first after it, and
// a CronJob without one is taken as created now, so before its first run
// it would never find a start time due.
func Sync(cj *manifests.CronJob, prev batchv1.CronJobStatus, jobs []ObservedJob, now time.Time) Decision {
	s := &syncer{cj: cj, now: now, d: Decision{Owner: podruntime.OwnerRef{Kind: manifests.KindCronJob, Name: cj.Metadata.Name}}}
	st := prev.DeepCopy()
	s.st = *st
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, func(a, b ObservedJob) int { return byStartTimeOrName(&a, &b) })
	s.reconcileActive(jobs)
	s.d.Delete = historyToDelete(jobs, cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit)
	for _, name := range s.d.Delete {
		s.event(corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job "+name)
	}
	if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		s.schedule(jobs)
	}
	s.d.Status = s.st
	return s.d
}

type syncer struct {
	cj  *manifests.CronJob
	now time.Time
	st  batchv1.CronJobStatus
	d   Decision
}

// reconcileActive rebuilds status.active from the Jobs: one that finished
// leaves it (SawCompletedJob), one gone leaves it (MissingJob), an
// unfinished Job made for one of its schedule times joins it (a status
// lost after the create), any other unfinished Job it owns is reported
// (UnexpectedJob) and left out, as Kubernetes leaves it out.
// lastSuccessfulTime is the latest completion of a Job that succeeded.
func (s *syncer) reconcileActive(jobs []ObservedJob) {
	wasActive := map[string]bool{}
	for _, r := range s.st.Active {
		wasActive[r.Name] = true
	}
	seen := map[string]bool{}
	var active []corev1.ObjectReference
	for i := range jobs {
		j := &jobs[i]
		seen[j.Name] = true
		_, finished := job.Finished(j.Status)
		if job.Succeeded(j.Status) && j.Status.CompletionTime != nil {
			if l := s.st.LastSuccessfulTime; l == nil || j.Status.CompletionTime.After(l.Time) {
				t := *j.Status.CompletionTime
				s.st.LastSuccessfulTime = &t
			}
		}
		switch {
		case finished && wasActive[j.Name]:
			s.event(corev1.EventTypeNormal, "SawCompletedJob", fmt.Sprintf("Saw completed job: %s, condition: %s", j.Name, finishedType(j.Status)))
		case finished:
		case wasActive[j.Name]:
			active = append(active, s.ref(j.Name))
		default:
			if _, ours := scheduledTime(s.cj.Metadata.Name, j); ours {
				active = append(active, s.ref(j.Name))
			} else {
				s.event(corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: "+j.Name)
			}
		}
	}
	for _, r := range s.st.Active {
		if !seen[r.Name] {
			s.event(corev1.EventTypeNormal, "MissingJob", "Active job went missing: "+r.Name)
		}
	}
	s.st.Active = active
}

// schedule starts the Job that is due, if any, and sets the requeue.
func (s *syncer) schedule(jobs []ObservedJob) {
	cj := s.cj
	sched, err := cronschedule.Parse(cj.Spec.Schedule, cj.Spec.TimeZone, time.UTC)
	if err != nil {
		if cj.Spec.TimeZone != nil {
			if _, tzErr := cronschedule.LoadTimeZone(*cj.Spec.TimeZone); tzErr != nil {
				s.event(corev1.EventTypeWarning, "UnknownTimeZone", fmt.Sprintf("invalid timeZone: %q: %s", *cj.Spec.TimeZone, tzErr))
				return
			}
		}
		s.event(corev1.EventTypeWarning, "UnparseableSchedule", fmt.Sprintf("unparseable schedule: %q : %s", cj.Spec.Schedule, err))
		return
	}
	state := cronschedule.State{Created: s.now, StartingDeadlineSeconds: cj.Spec.StartingDeadlineSeconds}
	if c := cj.Metadata.CreationTimestamp; c != nil {
		state.Created = *c
	}
	if l := s.st.LastScheduleTime; l != nil {
		t := l.Time
		state.LastScheduleTime = &t
	}
	dec, err := sched.Decide(state, s.now)
	if errors.Is(err, cronschedule.ErrInterval) {
		s.event(corev1.EventTypeWarning, "InvalidSchedule", fmt.Sprintf("invalid schedule: %s : %s", cj.Spec.Schedule, err))
		return
	}
	if !dec.Next.IsZero() {
		s.d.RequeueAt = dec.Next.Add(NextScheduleDelta)
	}
	if dec.TooManyMissed {
		s.event(corev1.EventTypeWarning, "TooManyMissedTimes", fmt.Sprintf("too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", dec.Missed))
	}
	if dec.Scheduled == nil {
		s.missed(sched, state)
		return
	}
	at := *dec.Scheduled
	if dec.TooLate {
		s.missSchedule(at)
		return
	}
	name := cronschedule.JobName(cj.Metadata.Name, at)
	for i := range jobs {
		if jobs[i].Name == name {
			// Already started (the status saying so was lost): never twice.
			s.st.LastScheduleTime = &metav1.Time{Time: at}
			return
		}
	}
	if l := s.st.LastScheduleTime; l != nil && l.Time.Equal(at) {
		return
	}
	switch cj.Spec.ConcurrencyPolicy {
	case manifests.ConcurrencyForbid:
		if len(s.st.Active) > 0 {
			s.event(corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return
		}
	case manifests.ConcurrencyReplace:
		for _, r := range s.st.Active {
			s.d.Delete = append(s.d.Delete, r.Name)
			s.event(corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job "+r.Name)
		}
		s.st.Active = nil
	}
	loc := time.UTC
	if tz := cj.Spec.TimeZone; tz != nil {
		loc, _ = cronschedule.LoadTimeZone(*tz) // parsed above
	}
	s.d.Create = newJob(cj, at, loc)
	s.event(corev1.EventTypeNormal, "SuccessfulCreate", "Created job "+name)
	s.st.Active = append(s.st.Active, s.ref(name))
	s.st.LastScheduleTime = &metav1.Time{Time: at}
}

func (s *syncer) ref(name string) corev1.ObjectReference {
	ns := s.cj.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	return corev1.ObjectReference{Kind: manifests.KindJob, APIVersion: manifests.BatchAPIVersion, Namespace: ns, Name: name}
}

func (s *syncer) event(typ, reason, msg string) {
	s.d.Events = append(s.d.Events, workload.Event{Type: typ, Reason: reason, Message: msg})
}

func finishedType(st batchv1.JobStatus) batchv1.JobConditionType {
	if job.Succeeded(st) {
		return batchv1.JobComplete
	}
	return batchv1.JobFailed
}

// missed reports a start time that went by unmet and is now past the
// starting deadline (MissSchedule), as Kubernetes' first controller did:
// the deadline moves the start of the search, so the decision alone
// never sees such a time. Nothing records that it was reported, so the
// event repeats at each sync until the next start time (the event store
// counts the repeats), as Kubernetes' own TODO there says.
func (s *syncer) missed(sched *cronschedule.Schedule, st cronschedule.State) {
	if st.StartingDeadlineSeconds == nil {
		return
	}
	sds := time.Duration(*st.StartingDeadlineSeconds) * time.Second
	st.StartingDeadlineSeconds = nil
	late, err := sched.Decide(st, s.now)
	if err == nil && late.Scheduled != nil && late.Scheduled.Add(sds).Before(s.now) {
		s.missSchedule(*late.Scheduled)
	}
}

func (s *syncer) missSchedule(at time.Time) {
	s.event(corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: "+at.UTC().Format(time.RFC1123Z))
}
