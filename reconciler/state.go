package reconciler

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// stateKey holds the controller's per-deployment memory in the status file
// (store.Status.Extra). Keeping it in the state directory, not in the
// process, is what lets a restarted controller resume a rollout where it
// was, keep a crash loop's backoff, and let `dockctl get` show restarts and
// availability without a controller.
const stateKey = "controller"

// deploymentState is what only the controller knows about one deployment.
type deploymentState struct {
	Rollout RolloutState `json:"rollout"`
	// Containers is keyed by container ID: a container recreated under the
	// same name is a new container with a fresh history.
	Containers map[string]*podruntime.ContainerState `json:"containers,omitempty"`
	// Counts are the marks the next sync's progress is judged against
	// (progressMarks).
	Counts manifests.DeploymentStatus `json:"counts"`
	// Settle is the controller's settle time (Options.SettleTime) when it
	// last synced, so that `dockctl get` judges availability as it does.
	// Nil: the default.
	Settle *time.Duration `json:"settle,omitempty"`
	// Waiting are the pods the deployment wants but could not create, with
	// the kubelet's reason (waiting.go), for the read commands.
	Waiting []podruntime.WaitingPod `json:"waiting,omitempty"`
}

// container returns the memory of container id, made empty if there is
// none yet.
func (s *deploymentState) container(id string) *podruntime.ContainerState {
	cst := s.Containers[id]
	if cst == nil {
		cst = &podruntime.ContainerState{}
		s.Containers[id] = cst
	}
	return cst
}

// addTerminating adds to terminating the containers whose stop the state
// recorded (a stop begun by this or an earlier controller; a deadline
// already there, from a stop in flight, is kept) and takes every
// terminating container out of ready: a terminating container is never
// ready, and counts toward the surge bound, not as a replica.
func (s deploymentState) addTerminating(terminating map[string]time.Time, ready map[string]bool) {
	for id, cst := range s.Containers {
		if cst != nil && !cst.StopDeadline.IsZero() {
			if _, ok := terminating[id]; !ok {
				terminating[id] = cst.StopDeadline
			}
		}
	}
	for id := range terminating {
		delete(ready, id)
	}
}

func readState(st *store.Status) deploymentState {
	var s deploymentState
	if raw, ok := st.Extra[stateKey]; ok {
		// A garbled state is reset rather than blocking the sync: it only
		// costs a rollout restart from what Docker shows.
		_ = json.Unmarshal(raw, &s)
	}
	if s.Containers == nil {
		s.Containers = map[string]*podruntime.ContainerState{}
	}
	return s
}

func writeState(st *store.Status, s deploymentState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode controller state: %w", err)
	}
	extra := maps.Clone(st.Extra)
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	extra[stateKey] = b
	st.Extra = extra
	return nil
}

// View computes a deployment's status counts and per-container facts the
// way the controller does, from what Docker reports, what the controller
// recorded (st may be nil: then from Docker alone) and the pending
// requests to delete its pods (dels, store.PodDeletions: such a pod is
// terminating from the request on, its stop begun or not). Each container
// is judged by its own revision's template (rec.Revisions), not the
// desired one.
func View(rec *store.Record, st *store.Status, dels []store.PodDeletion, cs []dockerx.Container, now time.Time) (manifests.DeploymentStatus, map[string]podruntime.ContainerView) {
	v := view(rec, st, dels, cs, now)
	return v.status, v.containers
}

// viewed is one deployment as the read commands see it.
type viewed struct {
	status     manifests.DeploymentStatus
	containers map[string]podruntime.ContainerView // by container ID
	units      map[string]podruntime.ContainerView // by unit ID (a pod)
	observed   podruntime.Observed
	state      deploymentState
	templates  func(string) *manifests.PodTemplateSpec
}

func view(rec *store.Record, st *store.Status, dels []store.PodDeletion, cs []dockerx.Container, now time.Time) viewed {
	s := deploymentState{Containers: map[string]*podruntime.ContainerState{}}
	if st != nil {
		s = readState(st)
	}
	d := &rec.Deployment
	hash := manifests.TemplateHash(&d.Spec.Template)
	templates := templateLookup(d, hash, rec.Revisions)
	o := podruntime.Judge(cs, s.Containers, templates, nil)
	ready := o.Ready
	settle := DefaultSettleTime
	if s.Settle != nil {
		settle = *s.Settle
	}
	in := PlanInput{Desired: d, Hash: hash, Revisions: rec.Revisions, Containers: o.Units, Pods: o.Pods, Terminating: map[string]time.Time{}, Deletions: dels}
	s.addTerminating(in.Terminating, ready)
	deleted := in.unready(ready)
	avail, _ := availability(d, o.Units, ready, s.Containers, settle, now)
	facts := func(c *dockerx.Container) podruntime.ContainerView {
		v := podruntime.ContainerView{Ready: ready[c.ID], Available: avail[c.ID], Terminating: deleted[c.ID]}
		if v.Ready {
			v.ReadySince = c.Created // as availability counts it
		}
		if cst := s.Containers[c.ID]; cst != nil {
			if v.Ready && !cst.ReadySince.IsZero() {
				v.ReadySince = cst.ReadySince
			}
			v.Restarts = cst.Restarts
			// A container that cannot start stays `created`: it is in the
			// same backoff as one that exits.
			v.CrashLoopBackOff = (c.State == dockerx.StateExited || c.State == dockerx.StateCreated) && now.Before(cst.NotBefore)
			v.Terminating, v.StopDeadline = v.Terminating || !cst.StopDeadline.IsZero(), cst.StopDeadline
		}
		if v.Terminating && v.StopDeadline.IsZero() {
			// Deleted, its stop not begun: killed at the request's time
			// and grace, as the API server sets deletionTimestamp.
			v.StopDeadline = in.requestedDeadline(c)
		}
		return v
	}
	out := viewed{containers: map[string]podruntime.ContainerView{}, units: map[string]podruntime.ContainerView{}, observed: o, state: s, templates: templates}
	for i := range o.All {
		c := &o.All[i]
		v := facts(c)
		if o.Pods[c.ID] != nil {
			out.units[c.ID] = v
			continue
		}
		if c.PodUID == "" {
			out.units[c.ID] = v
		}
		out.containers[c.ID] = v
	}
	// A member is available, and terminating, with its pod.
	for key, p := range o.Pods {
		u := out.units[key]
		for _, c := range p.Containers() {
			v := out.containers[c.ID]
			v.Available = u.Available
			v.Terminating = v.Terminating || u.Terminating
			out.containers[c.ID] = v
		}
	}
	out.status = ComputeStatus(d, hash, liveContainers(in), ready, avail)
	return out
}

// Pods presents a deployment's replicas as pods, sorted by name; dels
// are as View's.
func Pods(rec *store.Record, st *store.Status, dels []store.PodDeletion, cs []dockerx.Container, now time.Time) []podruntime.PodView {
	v := view(rec, st, dels, cs, now)
	owner := podruntime.OwnerRef{Kind: manifests.Kind, Name: rec.Name}
	views := podruntime.Views(v.observed, v.templates, v.units, v.containers, rec.NamespaceOrDefault(), owner,
		func(c *dockerx.Container) string { return podName(rec.Name, c) })
	if rec.Deleted {
		return views // nothing more is made of a deleted deployment
	}
	return podruntime.WithWaiting(views, v.state.Waiting, v.templates, rec.NamespaceOrDefault(), owner)
}

// podName is the pod name of a single-container replica: its hostname,
// Hostname(deployment, hash, ordinal), with the ordinal read back from its
// container name ("inst_web-HASH-3" → 3); a name of another form keeps its
// part after the instance prefix.
func podName(deployment string, c *dockerx.Container) string {
	if i := strings.LastIndexByte(c.Name, '-'); i >= 0 && c.TemplateHash != "" {
		if n, err := strconv.Atoi(c.Name[i+1:]); err == nil && n >= 0 && strings.HasSuffix(c.Name[:i], "-"+c.TemplateHash) {
			return dockerx.Hostname(deployment, c.TemplateHash, n)
		}
	}
	if _, after, ok := strings.Cut(c.Name, "_"); ok {
		return after
	}
	return c.Name
}

// templateLookup maps a template hash to its pod template: the desired one
// (whose hash is hash) or a recorded revision's; nil when unknown (made by
// hand, or trimmed from the history). It is the one rule for "which
// template judges this container" (probes, grace periods).
func templateLookup(d *manifests.Deployment, hash string, revs []store.Revision) func(string) *manifests.PodTemplateSpec {
	return func(h string) *manifests.PodTemplateSpec {
		if h == "" {
			return nil
		}
		if d != nil && h == hash {
			return &d.Spec.Template
		}
		if r := store.FindRevision(revs, h); r != nil {
			return &r.Template
		}
		return nil
	}
}

// DefaultSettleTime is the settle time when none is configured: Docker
// Swarm's default --update-monitor.
const DefaultSettleTime = 5 * time.Second

// availability decides which containers are available. Kubernetes counts a
// pod available once it has been ready for minReadySeconds. dockctl adds the
// settle rule (documented in the README): every container, of whatever
// revision, must also have been ready for the settle time before it counts,
// so that a release whose containers run for a second and then exit never
// looks available and a rolling update never removes an old replica for it.
// A container that has exited since it was created (dockctl restarted it)
// must moreover have run for podruntime.CrashWindow, so that a crash-looping replica
// never looks available between two crashes. It also returns when the next
// container becomes available, so the sync can requeue for it. A container
// with no recorded ready time counts from its creation (a view without
// controller).
func availability(d *manifests.Deployment, cs []dockerx.Container, ready map[string]bool, states map[string]*podruntime.ContainerState, settle time.Duration, now time.Time) (map[string]bool, time.Duration) {
	out := map[string]bool{}
	var next time.Duration
	minReady := max(time.Duration(d.Spec.MinReadySeconds)*time.Second, settle)
	for _, c := range cs {
		if !ready[c.ID] {
			continue
		}
		need := minReady
		since := c.Created
		if cst := states[c.ID]; cst != nil {
			if !cst.ReadySince.IsZero() {
				since = cst.ReadySince
			}
			if cst.Restarts > 0 && need < podruntime.CrashWindow {
				need = podruntime.CrashWindow
			}
		}
		if need <= 0 {
			out[c.ID] = true
			continue
		}
		if wait := since.Add(need).Sub(now); wait > 0 {
			next = minPositive(next, wait)
			continue
		}
		out[c.ID] = true
	}
	return out, next
}

// observeContainers updates the deployment's per-container memory from
// what Docker reports (podruntime.ObserveExits) with the configured
// backoff, and returns the crash backoff deadlines for the planner.
func (c *Controller) observeContainers(s *deploymentState, cs []dockerx.Container, ready, completed map[string]bool, now time.Time) map[string]time.Time {
	return podruntime.ObserveExits(s.Containers, cs, ready, completed, now, c.backoff())
}

// recordStarts notes the containers a plan started again.
func recordStarts(s *deploymentState, plan Plan, now time.Time) {
	for _, op := range plan.Ops {
		if !op.CountsAsRestart() {
			continue
		}
		cst := s.container(op.ContainerID)
		cst.Restarts++
		cst.StartedAt = now
		cst.ExitCounted = false
		cst.ReadySince = time.Time{}
		cst.ProbeReady = nil
		cst.StartError = ""
	}
}

// crashDelay is the backoff after the n-th crash in a row (n >= 1):
// base, 2×base, 4×base… up to the maximum.
func (c *Controller) crashDelay(n int) time.Duration { return c.backoff().Delay(n) }

// backoff is the crash-loop backoff the options configure.
func (c *Controller) backoff() podruntime.Backoff {
	return podruntime.Backoff{Base: c.opts.CrashBackoffBase, Max: c.opts.CrashBackoffMax}
}

// startError is a start that Docker refused: the container exists but
// stays `created` (podruntime.StartError).
type startError = podruntime.StartError

// neverStarts reports whether Docker's refusal to start a container (its
// recorded StartError) means that no later start of that same container
// can succeed: the runtime still holds something under the container's own
// identity that Docker no longer tracks — containerd's task ("task <id>:
// already exists") or container, runc's state ("container with id
// exists") or the shim's bundle directory of the task ("failed to start
// shim: mkdir …/io.containerd.runtime.v2.task/<ns>/<id>: file exists") —
// as a daemon restart without live-restore leaves when a start raced the
// daemon's restore. Only a new container, with a new ID, can
// run; the kubelet never meets this, since every restart of a container is
// a new CRI container (kuberuntime's computePodActions). A network
// endpoint of its name that "already exists" is not one: seen after such a
// restart too, dockerd clears it and a retry starts.
//
// Only the runtime's own objects count ("task X: already exists",
// "container X: already exists"): another "already exists" — an
// iptables chain a firewall reload raced dockerd for — is no leftover of
// the container's, and a retry starts.
func neverStarts(startErr string) bool {
	msg := strings.ToLower(startErr)
	return runtimeLeftover.MatchString(msg) || shimBundleLeftover.MatchString(msg) ||
		strings.Contains(msg, "container with id exists")
}

// shimBundleLeftover is containerd's refusal to start a shim whose bundle
// directory, named after the task's ID, is still there.
var shimBundleLeftover = regexp.MustCompile(`failed to start shim: mkdir [^ :]*/io\.containerd\.runtime\.v2\.task/[^ :]+: file exists`)

// runtimeLeftover is containerd's refusal of a task or container it still
// holds under that ID.
var runtimeLeftover = regexp.MustCompile(`\b(task|container) [^ :]+: already exists`)

// markNeverStarting returns cs with each container that can never be
// started again (neverStarts) shown as dead: the planner then replaces it
// at once, as it replaces a dead container (a pod's member in place, a
// holder with its pod), instead of retrying it with the crash backoff —
// which may have grown to minutes while the daemon restored — since no
// wait can make it start. The replacement is a new container, with a new
// ID the runtime's leftover does not hold; were it refused too, the
// sync's own backoff paces the next try. A start that failed for any
// other reason is retried with the crash backoff, as before. cs itself is
// not changed. The second result holds, by ID, the start errors of the
// containers so shown.
func markNeverStarting(cs []dockerx.Container, states map[string]*podruntime.ContainerState) ([]dockerx.Container, map[string]string) {
	var out []dockerx.Container
	var why map[string]string
	for i, ct := range cs {
		cst := states[ct.ID]
		if cst == nil || cst.StartError == "" || !neverStarts(cst.StartError) ||
			(ct.State != dockerx.StateCreated && ct.State != dockerx.StateExited) {
			continue
		}
		if out == nil {
			out = slices.Clone(cs)
			why = map[string]string{}
		}
		out[i].State = dockerx.StateDead
		why[ct.ID] = cst.StartError
	}
	if out == nil {
		return cs, nil
	}
	return out, why
}

// startErrors collects the startErrors in an error tree (errors.Join).
func startErrors(err error) []*startError {
	if err == nil {
		return nil
	}
	if se, ok := err.(*startError); ok {
		return []*startError{se}
	}
	var out []*startError
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, startErrors(e)...)
		}
	case interface{ Unwrap() error }:
		out = startErrors(u.Unwrap())
	}
	return out
}

// recordStartFailures treats a start that Docker refused as a crash: it
// counts as a restart attempt (unless recordStarts already counted it)
// and the next attempt waits for the crash-loop backoff, so that a wrong
// command is retried like a container that exits at once, not in a tight
// loop and not silently.
func (c *Controller) recordStartFailures(s *deploymentState, plan Plan, execErr error, now time.Time) {
	counted := map[string]bool{}
	for _, op := range plan.Ops {
		if op.CountsAsRestart() {
			counted[op.ContainerID] = true
		}
	}
	for _, se := range startErrors(execErr) {
		cst := s.container(se.ID)
		if !counted[se.ID] {
			cst.Restarts++
		}
		cst.CrashCount++
		cst.ExitCounted = true // no exit will follow: this was the crash
		cst.NotBefore = now.Add(c.crashDelay(cst.CrashCount))
		cst.StartError = se.Err.Error()
	}
}

// startFailure reports the observed containers that Docker refuses to
// start, for ReplicaFailure, or no failure.
func startFailure(s deploymentState, observed []dockerx.Container) failure {
	var msgs []string
	for _, ct := range observed {
		if cst := s.Containers[ct.ID]; cst != nil && cst.StartError != "" {
			msgs = append(msgs, fmt.Sprintf("container %s cannot start (retried with backoff): %s", ct.Name, cst.StartError))
		}
	}
	if len(msgs) == 0 {
		return failure{}
	}
	sort.Strings(msgs)
	return failure{ReasonRunContainerError, strings.Join(msgs, "; ")}
}

// deadCause is the cause of the removal of a container (what) seen dead.
func (in PlanInput) deadCause(id, what string) string {
	return podruntime.DeadCause(in.NeverStarts, id, what)
}
