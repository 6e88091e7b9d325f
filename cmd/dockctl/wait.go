package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// progress is one deployment's rollout as `rollout status` and `--wait`
// show it: counts from Docker, deadline and observation from the controller.
type progress struct {
	// name is how the messages name it: its name in the default
	// namespace (as kubectl's rollout status), namespace/name in another.
	name string
	// ref is how a command names it: deployment/NAME, with -n NS outside
	// the default namespace.
	ref                                  string
	desired, updated, available, total   int32
	observed, complete, deadlineExceeded bool
	gone                                 bool // deleted and no container left
	deleted                              bool // no live record (deleted or never known)
	// Why it may be stuck, for the timeout's message: the ReplicaFailure
	// condition's reason and message, and replicas in a crash loop.
	failure      string
	crashLooping int
	// waiting is the first pod the controller could not create, with its
	// reason and message (podruntime.WaitingPod); "" when none.
	waiting string
	paused  bool // spec.paused: nothing rolls out until a resume
}

// stuck says what holds a rollout back, or "".
func (p progress) stuck() string {
	var why []string
	if p.paused {
		why = append(why, fmt.Sprintf("rollout paused (resume it with `dockctl rollout resume %s`)", p.ref))
	}
	if p.failure != "" {
		why = append(why, p.failure)
	}
	if p.crashLooping > 0 {
		why = append(why, fmt.Sprintf("%d replica(s) in CrashLoopBackOff (see `dockctl get containers` and `dockctl logs`)", p.crashLooping))
	}
	return strings.Join(why, "; ")
}

// message words the state as `kubectl rollout status` does; a waiting
// line ends with why, when the controller recorded it: a pod's waiting
// reason, else the ReplicaFailure condition.
func (p progress) message() string {
	msg := p.line()
	why := p.waiting
	if why == "" {
		why = p.failure
	}
	if why != "" && strings.HasPrefix(msg, "Waiting for deployment") {
		msg += " (" + why + ")"
	}
	return msg
}

// line is kubectl's line for the state.
func (p progress) line() string {
	switch {
	case p.gone:
		return fmt.Sprintf("deployment %q deleted: all containers removed", p.name)
	case p.deleted:
		return fmt.Sprintf("Waiting for deployment %q to be deleted: %d replicas are pending termination...", p.name, p.total)
	case p.deadlineExceeded:
		return fmt.Sprintf("deployment %q exceeded its progress deadline", p.name)
	case !p.observed:
		return fmt.Sprintf("Waiting for deployment %q spec update to be observed...", p.name)
	case p.complete:
		return fmt.Sprintf("deployment %q successfully rolled out", p.name)
	case p.updated < p.desired:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", p.name, p.updated, p.desired)
	case p.total > p.updated:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", p.name, p.total-p.updated)
	case p.available < p.updated:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", p.name, p.available, p.updated)
	}
	return fmt.Sprintf("deployment %q successfully rolled out", p.name)
}

// observeProgress reads the rollout of every deployment keys name
// ("namespace/name") with one list call. A deleted (or unknown) deployment
// is followed until its containers are gone.
func observeProgress(ctx context.Context, cli *dockerx.Client, st *store.Store, instance string, keys []string) ([]progress, error) {
	cs, err := cli.ListContainers(ctx, instance)
	if err != nil {
		return nil, err
	}
	out := make([]progress, 0, len(keys))
	for _, key := range keys {
		var mine []dockerx.Container
		for _, c := range cs {
			if containerKey(c) == key {
				mine = append(mine, c)
			}
		}
		ns, name, _ := store.SplitKey(key)
		rec, err := st.Get(ns, name)
		if errors.Is(err, store.ErrNotFound) {
			if tomb, err := st.Lookup(ns, name); err == nil {
				// The pods a deletion with --cascade=orphan left are
				// not awaited: nothing removes them.
				mine = reconciler.OwnedContainers(tomb, mine)
			}
			out = append(out, progress{name: diffName(ns, name), total: int32(countPods(mine)), gone: len(mine) == 0, deleted: true, observed: true})
			continue
		}
		if err != nil {
			return nil, err
		}
		status, _ := st.ReadStatus(ns, name)
		dels, _ := st.PodDeletions(ns, name) // unreadable: ignored, as the controller ignores it
		out = append(out, progressOf(rec, status, dels, reconciler.OwnedContainers(rec, mine), time.Now()))
	}
	return out, nil
}

// progressOf judges one live deployment's rollout. A rollout the controller
// has recorded as complete for this generation (Progressing with reason
// NewReplicaSetAvailable, as Kubernetes stops judging progress then) stays
// complete while no old replica is back, even if a replica crash-loops
// afterwards: an unchanged, complete deployment has nothing to wait for.
func progressOf(rec *store.Record, status *store.Status, dels []store.PodDeletion, mine []dockerx.Container, now time.Time) progress {
	d := &rec.Deployment
	s, views := reconciler.View(rec, status, dels, mine, now)
	p := progress{name: diffName(rec.Namespace, rec.Name), ref: cmdRef(rec.Namespace, rec.Name), desired: d.Replicas(), updated: s.UpdatedReplicas, available: s.AvailableReplicas, total: s.Replicas, paused: d.Spec.Paused}
	for _, v := range views {
		if v.CrashLoopBackOff {
			p.crashLooping++
		}
	}
	// Only a pod of the revision rolled out holds the rollout back: an
	// old one's reason is not why it waits.
	current := shortHash(d)
	for _, pv := range reconciler.Pods(rec, status, dels, mine, now) {
		if w := pv.Waiting; w != nil && w.Hash == current && w.Reason != podruntime.WaitContainerCreating {
			p.waiting = w.Reason + ": " + w.Message
			break
		}
	}
	recordedComplete := false
	if status != nil && status.ObservedGeneration >= rec.Generation {
		p.observed = true
		for _, c := range status.Conditions {
			if c.Type != manifests.ConditionProgressing {
				continue
			}
			p.deadlineExceeded = c.Reason == reconciler.ReasonProgressDeadlineExceeded
			recordedComplete = c.Status == "True" && c.Reason == reconciler.ReasonNewReplicaSetAvailable
		}
		for _, c := range status.Conditions {
			if c.Type == manifests.ConditionReplicaFailure && c.Status == "True" {
				p.failure = c.Reason + ": " + c.Message
			}
		}
	}
	p.complete = p.observed && (reconciler.RolloutComplete(d, s) ||
		recordedComplete && s.UpdatedReplicas == d.Replicas() && s.Replicas == s.UpdatedReplicas)
	return p
}

// aWeek is kubectl's "wait forever" where it names a length: delete
// --wait --timeout 0 and wait --timeout with a negative value.
const aWeek = 168 * time.Hour

// deleteWaitTimeout is --timeout of apply --wait and delete --wait, which
// are kubectl's delete flags: 0 waits a week.
func deleteWaitTimeout(timeout time.Duration) time.Duration {
	if timeout == 0 {
		return aWeek
	}
	return timeout
}

// errDeadlineExceeded makes `rollout status` exit 1 without more words:
// the last progress line already said why.
var errDeadlineExceeded = errors.New("progress deadline exceeded")

// waitRollouts follows the deployments keys name until each is rolled out (or
// gone, for deleted ones), showing live progress: a bar per deployment on a
// terminal, a plain line per change otherwise. It fails when a deployment
// exceeds its progress deadline or the timeout passes; a zero timeout never
// passes, a negative one already has.
func waitRollouts(ctx context.Context, g *globalOptions, st *store.Store, names []string, timeout time.Duration, out io.Writer) error {
	return waitFor(ctx, g, st, names, timeout, out, false)
}

// waitDeleted follows deleted deployments until their containers are gone
// (`delete --wait`).
func waitDeleted(ctx context.Context, g *globalOptions, st *store.Store, names []string, timeout time.Duration, out io.Writer) error {
	return waitFor(ctx, g, st, names, timeout, out, true)
}

// waitFor is waitRollouts, or with deleting waitDeleted: a deployment
// deleted while its rollout is awaited never completes it, which is an
// error unless the deletion is what is awaited.
func waitFor(ctx context.Context, g *globalOptions, st *store.Store, names []string, timeout time.Duration, out io.Writer, deleting bool) error {
	if timeout != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// One message however the timeout strikes (between two looks, or
	// during one on a slow engine).
	// The hint about the controller only while it has not observed every
	// deployment: once it has, it runs, and the rollout itself is stuck.
	var last []progress // nil until the first observation
	timedOut := func() error {
		if last == nil {
			return fmt.Errorf("timed out after %s waiting for the rollout: is `dockctl controller` running for instance %q?", timeout, g.instance)
		}
		running, err := st.ControllerRunning()
		return timeoutError(timeout, g.instance, err == nil && running, last)
	}
	cli, err := g.docker(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return timedOut()
		}
		return err
	}
	defer cli.Close()
	r := newProgressRenderer(out)
	for {
		ps, err := observeProgress(ctx, cli, st, g.instance, names)
		if err != nil {
			if ctx.Err() != nil {
				r.finish()
				return timedOut()
			}
			return err
		}
		r.render(ps)
		last = ps
		done := true
		for _, p := range ps {
			if p.deleted && !deleting {
				r.finish()
				return fmt.Errorf("deployment %q was deleted before its rollout finished", p.name)
			}
			if p.deadlineExceeded {
				r.finish()
				return errDeadlineExceeded
			}
			done = done && (p.complete || p.gone)
		}
		if done {
			r.finish()
			return nil
		}
		select {
		case <-ctx.Done():
			r.finish()
			return timedOut()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// timeoutError says why a wait timed out: what holds each rollout back
// when the controller has reported it, and a question about the controller
// only when it has not (no controller holds the lock, or a change is not
// yet observed).
func timeoutError(timeout time.Duration, instance string, running bool, ps []progress) error {
	var why []string
	unobserved := false
	for _, p := range ps {
		if p.complete || p.gone {
			continue
		}
		if !p.observed {
			unobserved = true
			continue
		}
		if s := p.stuck(); s != "" {
			why = append(why, fmt.Sprintf("deployment %q: %s", p.name, s))
		}
	}
	if unobserved || !running || len(why) == 0 {
		hint := fmt.Sprintf("is `dockctl controller` running for instance %q?", instance)
		if running && !unobserved {
			hint = "the controller is running; see `dockctl describe deployment NAME`"
		}
		why = append(why, hint)
	}
	return fmt.Errorf("timed out after %s waiting for the rollout: %s", timeout, strings.Join(why, "; "))
}

// progressRenderer draws progress: redrawn bars on a terminal, plain
// lines (one per change) for logs and pipes.
type progressRenderer struct {
	w     io.Writer
	tty   bool
	lines int
	last  map[string]string
}

func newProgressRenderer(w io.Writer) *progressRenderer {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progressRenderer{w: w, tty: tty, last: map[string]string{}}
}

func (r *progressRenderer) render(ps []progress) {
	if !r.tty {
		for _, p := range ps {
			if m := p.message(); r.last[p.name] != m {
				fmt.Fprintln(r.w, m)
				r.last[p.name] = m
			}
		}
		return
	}
	if r.lines > 0 {
		fmt.Fprintf(r.w, "\x1b[%dA", r.lines) // back to the first bar
	}
	for _, p := range ps {
		fmt.Fprintf(r.w, "\x1b[2K%s\n", bar(p))
	}
	r.lines = len(ps)
}

func (r *progressRenderer) finish() {
	if r.tty {
		r.lines = 0
	}
}

// bar is one terminal line: name, a bar of available new replicas, counts.
func bar(p progress) string {
	const width = 20
	filled := 0
	if p.desired > 0 {
		filled = int(p.available) * width / int(p.desired)
	} else if p.total == 0 {
		filled = width
	}
	filled = min(max(filled, 0), width)
	state := "rolling out"
	switch {
	case p.gone:
		state, filled = "deleted", width
	case p.deadlineExceeded:
		state = "progress deadline exceeded"
	case p.complete:
		state = "rolled out"
	case !p.observed:
		state = "waiting for the controller"
	}
	return fmt.Sprintf("deployment/%-20s [%s%s] %d/%d updated, %d available, %d total  %s",
		p.name, strings.Repeat("#", filled), strings.Repeat("-", width-filled), p.updated, p.desired, p.available, p.total, state)
}

// countPods counts the replicas among a deployment's containers: a pod of
// several containers (holder and members, one pod uid) is one.
func countPods(cs []dockerx.Container) int {
	n := 0
	seen := map[string]bool{}
	for _, c := range cs {
		switch {
		case c.PodUID == "":
			n++
		case !seen[c.PodUID]:
			seen[c.PodUID] = true
			n++
		}
	}
	return n
}
