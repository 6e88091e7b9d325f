package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// EventRecorder records Kubernetes-style events (store.Event) about what
// the controller, or any other part of dockctl, did or failed to do. It
// must not block and must be safe for concurrent use: it is called on
// sync workers and probe goroutines, where the op's outcome is known ("the
// write records the event", never the planner). Messages must never carry
// a Secret's value.
type EventRecorder interface {
	Event(obj store.InvolvedObject, eventType, reason, message string)
}

// Eventf is Event with a formatted message.
func Eventf(r EventRecorder, obj store.InvolvedObject, eventType, reason, format string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// NopRecorder records nothing: the default of Options.Recorder.
type NopRecorder struct{}

func (NopRecorder) Event(store.InvolvedObject, string, string, string) {}

// EventSink is where a StoreRecorder flushes: *store.Store.
type EventSink interface {
	RecordEvents([]store.Event) error
}

// Bounds of a StoreRecorder.
const (
	// DefaultEventFlushInterval is how often buffered events are written:
	// one write per namespace per interval at most, however many events.
	DefaultEventFlushInterval = 500 * time.Millisecond
	// DefaultEventBuffer is how many distinct events wait for a flush;
	// past it new ones are dropped (and counted), never waited for.
	DefaultEventBuffer = 4096
)

// StoreRecorder buffers events in memory and writes them to an EventSink
// from its own goroutine (Run), so that recording never waits on the disk.
// Repeats within one interval are counted in the buffer, so a hot loop
// costs one row and one write. Source names the component, Kubernetes'
// event.source.component ("dockctl-controller", "dockctl-manifests").
type StoreRecorder struct {
	sink     EventSink
	source   string
	interval time.Duration
	max      int
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	buf     []store.Event
	index   map[eventKey]int
	kick    chan struct{}
	dropped atomic.Int64
	warned  int64 // dropped when last logged; Run's only
}

type eventKey struct {
	obj                  store.InvolvedObject
	typ, reason, message string
}

// StoreRecorderOptions tune NewStoreRecorder; zero values take the defaults.
type StoreRecorderOptions struct {
	Source        string // default "dockctl-controller"
	FlushInterval time.Duration
	Buffer        int
	Now           func() time.Time
	Logger        *slog.Logger
}

// NewStoreRecorder makes a recorder writing to sink. Nothing is written
// until Run runs; Flush writes at once (a CLI command's last step).
func NewStoreRecorder(sink EventSink, o StoreRecorderOptions) *StoreRecorder {
	r := &StoreRecorder{sink: sink, source: o.Source, interval: o.FlushInterval, max: o.Buffer, now: o.Now, log: o.Logger,
		index: map[eventKey]int{}, kick: make(chan struct{}, 1)}
	if r.source == "" {
		r.source = "dockctl-controller"
	}
	if r.interval <= 0 {
		r.interval = DefaultEventFlushInterval
	}
	if r.max <= 0 {
		r.max = DefaultEventBuffer
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	return r
}

// Event implements EventRecorder.
func (r *StoreRecorder) Event(obj store.InvolvedObject, eventType, reason, message string) {
	if obj.Namespace == "" {
		obj.Namespace = "default"
	}
	now := r.now()
	k := eventKey{obj, eventType, reason, message}
	r.mu.Lock()
	if i, ok := r.index[k]; ok {
		r.buf[i].Count++
		r.buf[i].LastTimestamp = now
		r.mu.Unlock()
		return
	}
	if len(r.buf) >= r.max {
		r.mu.Unlock()
		r.dropped.Add(1)
		return
	}
	r.index[k] = len(r.buf)
	r.buf = append(r.buf, store.Event{Type: eventType, Reason: reason, Message: message, InvolvedObject: obj,
		Source: r.source, Count: 1, FirstTimestamp: now, LastTimestamp: now})
	first := len(r.buf) == 1
	r.mu.Unlock()
	if first {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// Dropped is how many events a full buffer refused.
func (r *StoreRecorder) Dropped() int64 { return r.dropped.Load() }

// Flush writes what is buffered now. An error may leave part of the batch
// recorded (the store writes each namespace on its own, and records into
// a new log in place of a corrupt one): it says what failed.
func (r *StoreRecorder) Flush() error {
	r.mu.Lock()
	buf := r.buf
	r.buf, r.index = nil, map[eventKey]int{}
	r.mu.Unlock()
	if len(buf) == 0 {
		return nil
	}
	if err := r.sink.RecordEvents(buf); err != nil {
		return fmt.Errorf("recording %d events: %w", len(buf), err)
	}
	return nil
}

// Run flushes at most once per interval, and only when something was
// recorded: an idle controller writes nothing. It flushes a last time when
// ctx ends.
func (r *StoreRecorder) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			if err := r.Flush(); err != nil {
				r.log.Warn("recording events", "err", err)
			}
			return
		case <-r.kick:
		}
		// Batch: wait out the interval so that one write carries it all.
		select {
		case <-ctx.Done():
		case <-time.After(r.interval):
		}
		if err := r.Flush(); err != nil {
			r.log.Warn("recording events", "err", err)
		}
		if d := r.dropped.Load(); d != r.warned {
			r.log.Warn("event buffer full: events dropped", "dropped", d-r.warned, "total", d)
			r.warned = d
		}
	}
}

// The object references events name.
func deploymentRef(ns, name string) store.InvolvedObject {
	return store.InvolvedObject{Kind: "Deployment", Namespace: ns, Name: name}
}

// opPodRef is the pod an op acts on, named as `get pods` names it.
func opPodRef(in PlanInput, op Op) store.InvolvedObject {
	name := op.Name
	switch {
	case op.Pod != nil && op.Pod.Name != "":
		name = op.Pod.Name
	case op.Hash != "":
		name = podName(in.Name, &dockerx.Container{Name: op.Name, TemplateHash: op.Hash})
	default:
		if c := opTarget(in, op); c != nil {
			return containerPodRef(in.namespace(), in.Name, c)
		}
	}
	return store.InvolvedObject{Kind: "Pod", Namespace: in.namespace(), Name: name}
}

// opTarget is the observed container an op on an existing one acts on.
func opTarget(in PlanInput, op Op) *dockerx.Container {
	if op.ContainerID == "" {
		return nil
	}
	for i := range in.Containers {
		if in.Containers[i].ID == op.ContainerID {
			return &in.Containers[i]
		}
	}
	return nil
}

// opHash is the revision an op creates or acts on.
func opHash(in PlanInput, op Op) string {
	if op.Hash != "" {
		return op.Hash
	}
	if c := opTarget(in, op); c != nil {
		return c.TemplateHash
	}
	return ""
}

// ownerPodRef is containerPodRef for a deployment's key
// ("namespace/name"), as the prober names its owners.
func ownerPodRef(key string, c *dockerx.Container) store.InvolvedObject {
	ns, name, _ := store.SplitKey(key)
	return containerPodRef(ns, name, c)
}

func containerPodRef(ns, deployment string, c *dockerx.Container) store.InvolvedObject {
	name := c.Pod
	if name == "" {
		name = podName(deployment, c)
	}
	return store.InvolvedObject{Kind: "Pod", Namespace: ns, Name: name}
}

// opContainer is the template container an op makes or stops, for
// messages: kubelet names the container, not Docker's name for it.
func opContainer(in PlanInput, op Op) string {
	if op.Container != "" {
		return op.Container
	}
	from := op.From
	if c := opTarget(in, op); c != nil {
		if c.ContainerName != "" {
			return c.ContainerName
		}
		if from == nil {
			from = dockerx.TemplateOf(in.Desired) // one container: its name rarely changes across revisions
		}
	}
	if from != nil && len(from.Template.Spec.Containers) == 1 {
		return from.Template.Spec.Containers[0].Name
	}
	return op.Name
}

// recordOp records the outcome of one op as kubelet would: called by the
// executor once the op ended, err nil on success.
func (c *Controller) recordOp(in PlanInput, op Op, err error) {
	var we *waitError
	if errors.As(err, &we) {
		// Not attempted, for a reason the pod shows (waiting.go): the
		// kubelet's "Error: ErrImagePull" on the pod; a pod not yet tried
		// has no event.
		ref := opPodRef(in, op)
		switch we.Reason {
		case podruntime.WaitContainerCreating:
		case podruntime.WaitPending:
			Eventf(c.opts.Recorder, ref, store.EventWarning, "FailedScheduling", "%s", we.Message)
		case podruntime.WaitErrImagePull:
			Eventf(c.opts.Recorder, ref, store.EventWarning, "Failed", "Failed to pull %s", we.Message)
			Eventf(c.opts.Recorder, ref, store.EventWarning, "Failed", "Error: %s", we.Reason)
		default:
			Eventf(c.opts.Recorder, ref, store.EventWarning, "Failed", "Error: %s", we.Reason)
		}
		return
	}
	if err == errNotRun || op.Role == dockerx.RoleHolder {
		return // not carried out; a holder is the pod's sandbox, not a container of it
	}
	r, ref, name := c.opts.Recorder, opPodRef(in, op), opContainer(in, op)
	switch op.Kind {
	case OpCreate:
		var se *startError
		switch {
		case err == nil:
			Eventf(r, ref, store.EventNormal, "Created", "Created container %s", name)
			Eventf(r, ref, store.EventNormal, "Started", "Started container %s", name)
		case errors.As(err, &se):
			Eventf(r, ref, store.EventNormal, "Created", "Created container %s", name)
			Eventf(r, ref, store.EventWarning, "Failed", "Error: %v", se.Err)
		default:
			Eventf(r, ref, store.EventWarning, "Failed", "Error: %v", err)
		}
	case OpStart:
		if err == nil {
			Eventf(r, ref, store.EventNormal, "Started", "Started container %s", name)
		} else {
			Eventf(r, ref, store.EventWarning, "Failed", "Error: %v", err)
		}
	case OpRestart:
		if op.Reason == ReasonLiveness {
			Eventf(r, ref, store.EventNormal, "Killing", "Container %s failed liveness probe, will be restarted", name)
		} else {
			Eventf(r, ref, store.EventNormal, "Killing", "Stopping container %s", name)
		}
	case OpRemove:
		switch {
		case err != nil:
			Eventf(r, ref, store.EventWarning, "FailedKillPod", "error killing pod: %v", err)
		case op.Phases != nil || op.Grace > 0:
			Eventf(r, ref, store.EventNormal, "Killing", "Stopping container %s", name)
		default:
			Eventf(r, ref, store.EventNormal, "Killing", "Removing container %s", name)
		}
	case OpCreateVolume, OpRemoveVolume, OpWriteFiles:
		if err != nil {
			Eventf(r, deploymentRef(in.namespace(), in.Name), store.EventWarning, "FailedMount", "%v", err)
		}
	}
}

// recordPlan records, once the plan ran, what the deployment controller
// would: the revisions whose target size the plan moved
// (ScalingReplicaSet, Kubernetes' "to N from M"), the containers left waiting out a crash-loop
// backoff (BackOff, kubelet's), and the failure that ended the sync.
func (c *Controller) recordPlan(in PlanInput, plan Plan, execErr error, fail failure) {
	r, dep := c.opts.Recorder, deploymentRef(in.namespace(), in.Name)
	if execErr == nil && in.Desired != nil {
		// A revision's target size moved, as a ReplicaSet's replicas do:
		// the rollout state moves on only with a plan carried out.
		for _, h := range slices.Sorted(maps.Keys(unionSizes(in.State.Sizes, plan.State.Sizes))) {
			from, to := in.State.Sizes[h], plan.State.Sizes[h]
			op := "up"
			if to < from {
				op = "down"
			}
			if to != from {
				Eventf(r, dep, store.EventNormal, "ScalingReplicaSet", "Scaled %s replica set %s-%s to %d from %d", op, in.Name, h, to, from)
			}
		}
	}
	for i := range in.Containers {
		ctr := &in.Containers[i]
		if t, ok := in.StartNotBefore[ctr.ID]; ok && t.After(in.Now) && ctr.State != dockerx.StateRunning {
			Eventf(r, containerPodRef(in.namespace(), in.Name, ctr), store.EventWarning, "BackOff", "Back-off restarting failed container %s", ctrName(in, ctr))
		}
	}
	// A volume of a pod that has its files which cannot be updated now
	// keeps its last files; the kubelet reports each failed remount.
	for _, key := range slices.Sorted(maps.Keys(in.Files)) {
		if pf := in.Files[key]; pf.Have != "" && pf.Pod != "" {
			for _, msg := range pf.FailedMount {
				r.Event(store.InvolvedObject{Kind: "Pod", Namespace: in.namespace(), Name: pf.Pod}, store.EventWarning, "FailedMount", msg)
			}
		}
	}
	if fail.reason != "" {
		r.Event(dep, store.EventWarning, fail.reason, fail.message)
	}
}

func ctrName(in PlanInput, c *dockerx.Container) string {
	if c.ContainerName != "" {
		return c.ContainerName
	}
	if in.Desired != nil && len(in.Desired.Spec.Template.Spec.Containers) == 1 {
		return in.Desired.Spec.Template.Spec.Containers[0].Name
	}
	return c.Name
}

// orphanRef is the object an orphan claims to belong to, which this state
// directory never knew: owner "deployment" or "service".
func orphanRef(ct dockerx.Container, owner string) store.InvolvedObject {
	name, kind := ct.Deployment, "Deployment"
	if owner == "service" {
		name, kind = ct.Service, "Service"
	}
	if name == "" {
		name = ct.Name
	}
	return store.InvolvedObject{Kind: kind, Namespace: ct.Namespace, Name: name}
}

// recordConditions records the rollout's progress as its conditions
// change (once the status is written): Progressing's reasons
// (NewReplicaSetCreated, ReplicaSetUpdated, NewReplicaSetAvailable, and
// ProgressDeadlineExceeded as a Warning) and a ReplicaFailure that
// begins (a missing ConfigMap, Secret or claim, a refused privilege).
func (c *Controller) recordConditions(ns, name string, prev, next []manifests.DeploymentCondition) {
	find := func(cs []manifests.DeploymentCondition, typ string) *manifests.DeploymentCondition {
		for i := range cs {
			if cs[i].Type == typ {
				return &cs[i]
			}
		}
		return nil
	}
	dep := deploymentRef(ns, name)
	for _, typ := range []string{manifests.ConditionProgressing, manifests.ConditionReplicaFailure} {
		n := find(next, typ)
		if n == nil || n.Reason == "" {
			continue
		}
		if p := find(prev, typ); p != nil && p.Reason == n.Reason && p.Status == n.Status && p.Message == n.Message {
			continue
		}
		switch {
		case typ == manifests.ConditionReplicaFailure && n.Status != "True":
		case typ == manifests.ConditionReplicaFailure || n.Status == "False":
			c.opts.Recorder.Event(dep, store.EventWarning, n.Reason, n.Message)
		default:
			c.opts.Recorder.Event(dep, store.EventNormal, n.Reason, n.Message)
		}
	}
}

func unionSizes(a, b map[string]int32) map[string]int32 {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]int32{}
	}
	maps.Copy(out, b)
	return out
}

// ReasonPullFallback is the Warning event of a pod created from the local
// copy of an image whose imagePullPolicy Always pull failed (a host
// without registry access): the kubelet would have failed the pod with
// ErrImagePull; dockctl runs it, and says so on the pod.
const ReasonPullFallback = "PullFallback"

// recordPullFallback records ReasonPullFallback on op's pod for each image
// of the containers op created that fellBack holds.
func (c *Controller) recordPullFallback(in PlanInput, op Op, fellBack *sync.Map) {
	if op.From == nil || op.Role == dockerx.RoleHolder {
		return
	}
	for _, ctr := range op.From.Template.Spec.AllContainers() {
		if op.Container != "" && ctr.Name != op.Container {
			continue
		}
		if err, ok := fellBack.Load(ctr.Image); ok {
			Eventf(c.opts.Recorder, opPodRef(in, op), store.EventWarning, ReasonPullFallback,
				"Failed to pull image %q: %v; using the image present on the host (imagePullPolicy: Always)", ctr.Image, err)
		}
	}
}
