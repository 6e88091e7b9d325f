// Package reconcile is the reconcile contract every dockctl kind's loop
// follows, as controller-runtime's pkg/reconcile and its generic controller
// define it, and the Loop that runs one Reconciler.
//
// Sources (Docker events through an OwnerMapper, periodic resyncs,
// state-directory changes) only put a key on a Loop's rate-limited work
// queue; they never carry state. A worker then syncs that key from scratch
// (a Reconciler), and the Loop alone decides from its answer whether and
// when the key comes back.
//
// Invariants:
//   - A key is never synced twice at once, whatever the number of workers:
//     equal Requests queued meanwhile are merged into one sync after the
//     current one, so a sync sees its own previous writes when it lists.
//   - A failed sync is retried with the Loop's per-key exponential backoff;
//     a success (or a RequeueAfter) resets that key's backoff.
//   - A TerminalError (or an error wrapping one) is logged and reported,
//     never retried: the next event of that key queues it again.
//   - A panic in a sync is recovered and becomes that key's error, retried
//     with backoff for that key alone, while every other key keeps being
//     synced.
//   - ShutDown returns once what was queued and in flight has been synced;
//     requeues asked for meanwhile are dropped. It never cancels a sync:
//     the context given to Start does.
package reconcile
