package reconciler

import (
	"fmt"
	"sort"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// OpKind is what one planned operation does to Docker.
type OpKind string

const (
	// OpCreate creates and starts a new replica.
	OpCreate OpKind = "create"
	// OpStart starts an existing container that is not running.
	OpStart OpKind = "start"
	// OpUnpause resumes a paused container.
	OpUnpause OpKind = "unpause"
	// OpRemove force-removes a container (and its anonymous volumes).
	OpRemove OpKind = "remove"
)

// Op is one operation of a plan. Cause says why it is needed, in words a
// user reading the controller's log or `describe` output understands.
type Op struct {
	Kind        OpKind
	Name        string // container name
	ContainerID string // empty for OpCreate
	Cause       string
}

func (o Op) String() string {
	return fmt.Sprintf("%s %s: %s", o.Kind, o.Name, o.Cause)
}

// Plan is the outcome of comparing desired with observed state.
type Plan struct {
	Ops []Op
	// RequeueAfter, when non-zero, asks for another sync after that delay even
	// if no event arrives: some containers are waiting out a restart backoff.
	RequeueAfter time.Duration
}

// Creates returns the create operations of the plan.
func (p Plan) Creates() []Op { return p.filter(OpCreate) }

func (p Plan) filter(kind OpKind) []Op {
	var out []Op
	for _, op := range p.Ops {
		if op.Kind == kind {
			out = append(out, op)
		}
	}
	return out
}

// PlanInput is everything the planner looks at. It is plain data so that a
// plan can be tested as a table of inputs and outputs.
type PlanInput struct {
	Instance string
	Name     string
	// Desired is the defaulted deployment, or nil when it was deleted: every
	// container is then removed.
	Desired *manifests.Deployment
	// Hash is the template hash of Desired.
	Hash string
	// Containers are the observed containers carrying this instance's and
	// this deployment's labels.
	Containers []dockerx.Container
	// StartNotBefore holds, per container ID, the earliest time dockctl may
	// start it again (crash-loop backoff).
	StartNotBefore map[string]time.Time
	Now            time.Time
}

// ComputePlan decides which operations bring the observed containers to the
// desired state. It is pure: the same input always yields the same plan, and
// a converged input yields an empty one, which is what makes two syncs in a
// row with no change in between write nothing to Docker.
func ComputePlan(in PlanInput) Plan {
	var plan Plan
	if in.Desired == nil {
		for _, c := range sortedByName(in.Containers) {
			if c.State == dockerx.StateRemoving {
				continue
			}
			plan.Ops = append(plan.Ops, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Cause: "deployment deleted"})
		}
		return plan
	}

	var current []dockerx.Container
	for _, c := range in.Containers {
		switch {
		case c.State == dockerx.StateRemoving:
			// Already on its way out; its name stays taken until Docker is done.
		case c.TemplateHash != in.Hash:
			cause := fmt.Sprintf("template %s replaced by %s", orNone(c.TemplateHash), in.Hash)
			plan.Ops = append(plan.Ops, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Cause: cause})
		case c.State == dockerx.StateDead:
			// Docker cannot start a dead container; a fresh one replaces it.
			plan.Ops = append(plan.Ops, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Cause: "container is dead"})
		default:
			current = append(current, c)
		}
	}

	want := int(in.Desired.Replicas())
	if len(current) > want {
		ranked := rankForRemoval(current)
		for _, c := range ranked[:len(current)-want] {
			cause := fmt.Sprintf("surplus: %d replicas, %d desired", len(current), want)
			plan.Ops = append(plan.Ops, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Cause: cause})
		}
		current = ranked[len(current)-want:]
	}

	for _, c := range sortedByName(current) {
		switch c.State {
		case dockerx.StateExited, dockerx.StateCreated:
			if nb, ok := in.StartNotBefore[c.ID]; ok && in.Now.Before(nb) {
				plan.RequeueAfter = minPositive(plan.RequeueAfter, nb.Sub(in.Now))
				continue
			}
			cause := causeStopped
			if c.State == dockerx.StateCreated {
				cause = "created but never started"
			}
			plan.Ops = append(plan.Ops, Op{Kind: OpStart, Name: c.Name, ContainerID: c.ID, Cause: cause})
		case dockerx.StatePaused:
			plan.Ops = append(plan.Ops, Op{Kind: OpUnpause, Name: c.Name, ContainerID: c.ID, Cause: "paused"})
		}
	}

	missing := want - len(current)
	if missing > 0 {
		for _, ord := range freeOrdinals(in.Containers, in.Instance, in.Name, in.Hash, missing) {
			name := dockerx.ContainerName(in.Instance, in.Name, in.Hash, ord)
			cause := fmt.Sprintf("missing: %d of %d replicas exist", len(current), want)
			plan.Ops = append(plan.Ops, Op{Kind: OpCreate, Name: name, Cause: cause})
		}
	}
	return plan
}

// causeStopped marks the start of a replica that ran and stopped: it counts
// as a restart in status.
const causeStopped = "stopped"

// rankForRemoval orders containers least valuable first, as Kubernetes ranks
// pods for scale-down: not running before running, not ready before ready,
// newer before older (an older replica has proven itself for longer). Ties
// break on name so that plans are deterministic.
func rankForRemoval(cs []dockerx.Container) []dockerx.Container {
	out := append([]dockerx.Container(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := a.State == dockerx.StateRunning, b.State == dockerx.StateRunning; ra != rb {
			return !ra
		}
		if ra, rb := IsReady(a), IsReady(b); ra != rb {
			return !ra
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		return a.Name > b.Name
	})
	return out
}

// freeOrdinals returns the n lowest ordinals whose container name is not
// taken by any observed container. Names are deterministic so that a create
// that raced with another (a second controller, a retry after a timeout)
// fails with a name conflict instead of making a duplicate replica.
func freeOrdinals(cs []dockerx.Container, instance, name, hash string, n int) []int {
	taken := map[string]bool{}
	for _, c := range cs {
		taken[c.Name] = true
	}
	var out []int
	for ord := 0; len(out) < n; ord++ {
		if !taken[dockerx.ContainerName(instance, name, hash, ord)] {
			out = append(out, ord)
		}
	}
	return out
}

// IsReady reports whether a container counts as ready: running, and healthy
// if it has a health check at all.
func IsReady(c dockerx.Container) bool {
	return c.State == dockerx.StateRunning && (c.Health == dockerx.HealthNone || c.Health == dockerx.HealthHealthy)
}

func sortedByName(cs []dockerx.Container) []dockerx.Container {
	out := append([]dockerx.Container(nil), cs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || b < a {
		return b
	}
	return a
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
