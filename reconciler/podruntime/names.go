package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// A create can fail with a name conflict for three reasons (docs/design.md
// §2, "Nothing is adopted that dockctl did not make"):
//
//   - The name is held by a pod's container of this owner that the list
//     did not show yet (a create that raced with ours): that one is
//     adopted, the next sync sees it.
//   - It is held by a container Docker shows that this owner does not own
//     — one made by hand, another instance's, the controller's own — which
//     no retry will ever free: that name is blocked at once, and the
//     owner's planner picks the next free name instead.
//   - Docker reserves the name but shows no container under it. Right
//     after a controller restart, or under load, that is most often a
//     create still in flight: one a killed or timed-out client sent, which
//     dockerd completes anyway, and whose container shows up moments later.
//     Like the kube-controller-manager's expectations (a create it sent
//     counts until its informer observes the pod), the name counts as a
//     pod in flight of the revision that met it — taken, and counted
//     toward that revision's pods, so no replacement is made under another
//     name that would overshoot the count once it appears — for the
//     window (NameConflicts.Window) from when it was first met. Every sync
//     looks again (InFlight): once the container is listed it is simply
//     observed. When the window ends with Docker still showing nothing, or
//     Docker shows a container under the name that this owner does not
//     own, the name is in flight no more: the planner creates under it
//     once more, and the conflict that create meets blocks the name like
//     any other held name.

// DefaultReservedNameWindow is NameConflicts.Window's default: one default
// resync period (30 s). A create dockerd is still completing for a dead
// client lands within seconds even under load; a name still reserved
// after a whole resync period is no create in flight but one Docker keeps
// (a removal it never finished), which no wait frees.
const DefaultReservedNameWindow = 30 * time.Second

// InFlightName is a name Docker reserves for a create still in flight, as
// an owner's planner sees it.
type InFlightName struct {
	// Hash is the revision whose pod it will be.
	Hash string
	// Replica: it counts toward the revision's pods (false for a pod
	// member's name, which is only taken).
	Replica bool
	// Until is when the window ends and the name is blocked instead.
	Until time.Time
}

// NameTakenError is a create whose name is held by a container its owner
// does not own. It is a failure to report, not a conflict to retry.
type NameTakenError struct {
	Name, Holder string
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("create %s: the name is held by %s; using the next free name", e.Name, e.Holder)
}

// ConflictDocker is what a name conflict is judged with.
type ConflictDocker interface {
	InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error)
}

// NameConflicts remembers, per owner key, the names creates met taken: the
// names blocked (held by a container the owner does not own) and those
// reserved by a create in flight. Window, Self, Now and Log are set
// before first use.
type NameConflicts struct {
	// Window is how long a reserved name counts as a create in flight.
	Window time.Duration
	// Self reports whether a container is the controller's own (its ID
	// or a prefix of it), which is never adopted.
	Self func(containerID string) bool
	Now  func() time.Time
	Log  *slog.Logger

	mu       sync.Mutex
	blocked  map[string]map[string]bool
	reserved map[string]map[string]reservation
}

// reservation is a name Docker reserves without showing a container, met
// by a create of the owner.
type reservation struct {
	hash string
	// replica: the create was a pod's network owner (a replica, or a
	// pod's holder), not a pod member's, so the name counts toward the
	// revision's pods.
	replica bool
	since   time.Time // when a create first met it
	// over: no longer a create in flight (its window ended, or Docker
	// shows a container this owner does not own under the name). The
	// planner creates under the name again, and the conflict that create
	// meets blocks it, reported as any held name is.
	over bool
}

// ConflictOwner is the owner a name conflict is judged for: its share of
// the judgement, never a switch on its kind.
type ConflictOwner struct {
	// Key names the owner in the memory (its queue key).
	Key string
	// Noun is what the log calls the owner, and its attribute
	// ("deployment").
	Noun string
	// Owns reports whether det, holding name, is a pod's container of the
	// owner's revision hash, which a conflict under its name adopts.
	Owns func(det dockerx.ContainerDetails, name, hash string) bool
	// HeldBy names, for the failure, a holder the owner does not own.
	HeldBy func(det dockerx.ContainerDetails) string
}

// Conflict inspects the holder of the name op's create met taken
// (createErr) and either adopts it (nil), counts it as a create in flight
// (an error to retry, no failure to report) or blocks the name
// (NameTakenError).
func (n *NameConflicts) Conflict(ctx context.Context, d ConflictDocker, o ConflictOwner, op Op, createErr error) error {
	det, err := d.InspectContainer(ctx, op.Name)
	var holder string
	switch {
	case errors.Is(err, dockerx.ErrNotFound):
		if n.reserve(o.Key, op) {
			n.Log.Info("container name reserved by a create in flight; counting it as a replica until it shows",
				o.Noun, o.Key, "container", op.Name, "window", n.Window)
			// A conflict to retry, no failure to report: the sync is
			// requeued, and the next one sees the name in flight
			// (InFlight).
			return fmt.Errorf("create %s: %w (reserved by a create in flight: counted as a replica for up to %s)",
				op.Name, createErr, n.Window)
		}
		holder = "a container Docker does not show (a name it still reserves)"
	case err != nil:
		// Unknown holder: retry later rather than skip on a guess.
		return fmt.Errorf("create %s: %w (inspecting the holder: %v)", op.Name, createErr, err)
	case n.self(det):
		// The controller's own container, which it never manages,
		// whatever its labels say: adopting it would create nothing, at
		// every sync.
		holder = "the controller's own container"
	case o.Owns(det, op.Name, op.Hash):
		n.Log.Info("name conflict with a replica of this "+o.Noun+"; adopting it", o.Noun, o.Key, "container", op.Name)
		return nil
	default:
		holder = o.HeldBy(det)
	}
	n.block(o.Key, op.Name)
	n.Log.Warn("container name held by another container; skipping it", o.Noun, o.Key, "container", op.Name, "holder", holder)
	return &NameTakenError{Name: op.Name, Holder: holder}
}

func (n *NameConflicts) self(det dockerx.ContainerDetails) bool {
	return n.Self != nil && n.Self(det.ID)
}

// reserve records op's name as reserved by a create in flight, from the
// first time a create met it, and reports whether its window still lasts.
func (n *NameConflicts) reserve(key string, op Op) bool {
	now := n.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.reserved == nil {
		n.reserved = map[string]map[string]reservation{}
	}
	if n.reserved[key] == nil {
		n.reserved[key] = map[string]reservation{}
	}
	r, ok := n.reserved[key][op.Name]
	if !ok {
		r = reservation{hash: op.Hash, replica: op.Pod == nil || op.Role == dockerx.RoleHolder, since: now}
		n.reserved[key][op.Name] = r
	}
	if !r.over && now.Before(r.since.Add(n.Window)) {
		return true
	}
	delete(n.reserved[key], op.Name)
	return false
}

// block remembers a name of owner key as held by another.
func (n *NameConflicts) block(key, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.blocked == nil {
		n.blocked = map[string]map[string]bool{}
	}
	if n.blocked[key] == nil {
		n.blocked[key] = map[string]bool{}
	}
	n.blocked[key][name] = true
}

// InFlight looks again at the names of owner key reserved by creates in
// flight: a name now listed among observed is simply observed and
// forgotten; one Docker shows (inspect; skipped when ctx is nil) that the
// owner does not own, or one still showing nothing when its window ends,
// is in flight no more: the planner creates under it again, and Conflict
// blocks it if Docker still holds it. It returns the names still in
// flight.
func (n *NameConflicts) InFlight(ctx context.Context, d ConflictDocker, o ConflictOwner, observed []dockerx.Container) map[string]InFlightName {
	key := o.Key
	n.mu.Lock()
	pending := maps.Clone(n.reserved[key])
	n.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	listed := map[string]bool{}
	for _, ct := range observed {
		listed[ct.Name] = true
	}
	now := n.Now()
	out := map[string]InFlightName{}
	for name, r := range pending {
		until := r.since.Add(n.Window)
		switch {
		case listed[name]:
			n.forgetReserved(key, name)
			continue
		case r.over:
			continue
		case !now.Before(until):
			n.endReservation(key, name)
			continue
		}
		if ctx != nil {
			det, err := d.InspectContainer(ctx, name)
			if err == nil && (n.self(det) || !o.Owns(det, name, r.hash)) {
				n.endReservation(key, name)
				continue
			}
		}
		out[name] = InFlightName{Hash: r.hash, Replica: r.replica, Until: until}
	}
	return out
}

// endReservation marks a reserved name as no create in flight any more.
func (n *NameConflicts) endReservation(key, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.reserved[key][name]; ok {
		r.over = true
		n.reserved[key][name] = r
	}
}

func (n *NameConflicts) forgetReserved(key, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.reserved[key], name)
}

// Blocked returns a copy of the blocked names of owner key.
func (n *NameConflicts) Blocked(key string) map[string]bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.blocked[key])
}

// Forget drops a deleted owner's blocked and reserved names: a new one of
// the same name starts clean.
func (n *NameConflicts) Forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.blocked, key)
	delete(n.reserved, key)
}
