// Package cronjob is the CronJob controller's decision (the workload
// kinds of ../shared/DESIGN.md §13): a pure function from a batch/v1
// CronJob, its last status and the Jobs it owns to what should happen
// next — the Job to create for the schedule time that is due, the Jobs
// to delete (Replace, history limits), the CronJob's new status, the
// events to record and when to decide again. It follows Kubernetes'
// CronJob controller (pkg/controller/cronjob, cronjob_controllerv2.go
// syncCronJob and cleanupFinishedJobs); the scheduling arithmetic is
// internal/cronschedule's. An executor carries the decision out; nothing
// here reads a clock or keeps memory between calls.
//
// Files: sync.go is the decision (Sync); jobs.go reads the owned Jobs
// (which are active, which finished, the history to trim); newjob.go is
// the Job made from the jobTemplate.
//
// Invariants:
//   - The Job of a schedule time is named from that time
//     (cronschedule.JobName) and carries it in its
//     batch.kubernetes.io/cronjob-scheduled-timestamp annotation: a Job of
//     that name already there is never created again, so a controller
//     restart, a resync, or a status lost after the create never starts
//     one run twice. Such a Job found unfinished is taken back into
//     status.active (Kubernetes would only warn: it forgot it).
//   - At most one Job is created per decision, for the most recent start
//     time due; earlier missed times are dropped (with TooManyMissedTimes
//     when more than cronschedule.TooManyMissed), and one past
//     startingDeadlineSeconds is not started (MissSchedule).
//   - concurrencyPolicy is judged on the active Jobs: Forbid starts
//     nothing while one runs, Replace deletes them before the new one.
//   - A suspended CronJob, or one whose schedule or time zone is invalid,
//     starts nothing and asks for no requeue; its finished Jobs are still
//     trimmed to the history limits, oldest first, and an active Job is
//     never deleted for history.
package cronjob
