package store

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Managers. An object's manager is who declared it, the one that may
// delete it when it drops out of its declaration: `dockctl apply -f`
// (ManagerApply) or a manifests directory ("manifests:" + its path, see
// DirectoryManager). The commands that change one field of a live object
// (scale, set image, label, patch, edit, rollout) are updaters: they are
// recorded, as Kubernetes records an Update operation in managedFields,
// but take nothing over.
const (
	ManagerApply = "apply"
	// OperationApply and OperationUpdate are the operations of
	// Kubernetes' managedFields entries.
	OperationApply  = "Apply"
	OperationUpdate = "Update"
)

// DirectoryManager names the manager of the objects of manifests
// directory (or file) path.
func DirectoryManager(path string) string { return "manifests:" + path }

// IsDirectoryManager reports whether manager is a manifests directory's.
func IsDirectoryManager(manager string) bool { return strings.HasPrefix(manager, "manifests:") }

// ManagedFieldsEntry is one writer of an object, as a Kubernetes
// managedFields entry names it (manager, operation, time), without the
// field set: dockctl owns whole objects, not fields.
type ManagedFieldsEntry struct {
	Manager   string    `json:"manager"`
	Operation string    `json:"operation"`
	Time      time.Time `json:"time"`
}

// Ownership is who manages a stored object: at most one Apply entry (the
// manager) and one Update entry per updater since the manager's last
// change. It lives in the record, next to the object and never in it, so
// that no template hash changes; a record of an earlier release has none
// and is managed by ManagerApply.
type Ownership struct {
	ManagedFields []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// Manager returns the object's manager: its Apply entry's, ManagerApply
// when it has none.
func (o Ownership) Manager() string {
	for _, e := range o.ManagedFields {
		if e.Operation == OperationApply {
			return e.Manager
		}
	}
	return ManagerApply
}

// applied records manager's apply at now. A change made by the manager
// (changed) supersedes the updaters' entries, as an apply takes back the
// fields they had set; one that changed nothing keeps them.
func (o Ownership) applied(manager string, now time.Time, changed bool) Ownership {
	out := []ManagedFieldsEntry{{Manager: manager, Operation: OperationApply, Time: now}}
	if !changed {
		if o.Manager() == manager {
			for _, e := range o.ManagedFields {
				if e.Operation == OperationApply {
					out[0].Time = e.Time
				}
			}
		}
		for _, e := range o.ManagedFields {
			if e.Operation != OperationApply {
				out = append(out, e)
			}
		}
	}
	return Ownership{ManagedFields: out}
}

// updated records updater's change at now; the manager stays.
func (o Ownership) updated(updater string, now time.Time) Ownership {
	out := []ManagedFieldsEntry{{Manager: o.Manager(), Operation: OperationApply}}
	for _, e := range o.ManagedFields {
		switch {
		case e.Operation == OperationApply:
			out[0].Time = e.Time
		case e.Manager != updater:
			out = append(out, e)
		}
	}
	out = append(out, ManagedFieldsEntry{Manager: updater, Operation: OperationUpdate, Time: now})
	return Ownership{ManagedFields: out}
}

// Conflict is an object a writer declared that another manager manages.
type Conflict struct {
	ObjectRef
	Manager string
}

// ConflictError refuses an apply over objects of another manager, as a
// server-side apply refuses to take over fields another manager owns;
// nothing was written. ApplyOptions.ForceConflicts takes them over.
type ConflictError struct {
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Apply failed with %d conflict", len(e.Conflicts))
	if len(e.Conflicts) != 1 {
		b.WriteString("s")
	}
	b.WriteString(":")
	for i, c := range e.Conflicts {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s is managed by %q", c.ObjectRef, c.Manager)
	}
	b.WriteString(" (use --force-conflicts to take it over)")
	return b.String()
}

// ownership decides, for ref about to be stored by one apply, whether it
// may be, and records who did it in own (the record's, written only when
// write says so). A conflict is collected in the transaction.
type ownerCheck struct {
	opts      ApplyOptions
	now       time.Time
	conflicts []Conflict
}

// managerOf is who applies ref.
func (c *ownerCheck) managerOf(ref ObjectRef) string {
	if c.opts.ManagerOf != nil {
		if m := c.opts.ManagerOf(ref); m != "" {
			return m
		}
	}
	if c.opts.Manager != "" {
		return c.opts.Manager
	}
	return ManagerApply
}

// owns reports whether the object of ref, managed by manager, is the
// applier's: it may change (and prune) it without forcing.
func (c *ownerCheck) owns(ref ObjectRef, manager string) bool {
	if c.opts.Owns != nil {
		return c.opts.Owns(manager)
	}
	return manager == c.managerOf(ref)
}

// check records a conflict when live (the object exists and is not a
// tombstone) belongs to another manager and the apply does not force.
func (c *ownerCheck) check(ref ObjectRef, live bool, old Ownership) {
	if !live || c.opts.Updater != "" || c.opts.ForceConflicts || c.owns(ref, old.Manager()) {
		return
	}
	c.conflicts = append(c.conflicts, Conflict{ObjectRef: ref, Manager: old.Manager()})
}

// next returns the ownership to store after storing ref (act), and
// whether it differs from old so that the record must be written even
// when its object is unchanged.
func (c *ownerCheck) next(ref ObjectRef, old Ownership, act Action) (Ownership, bool) {
	if c.opts.Updater != "" {
		if act == Unchanged {
			return old, false
		}
		return old.updated(c.opts.Updater, c.now), true
	}
	m := c.managerOf(ref)
	if act == Unchanged && old.Manager() == m {
		return old, false
	}
	return old.applied(m, c.now, act != Unchanged), true
}

// err is the transaction's ConflictError, nil without conflicts.
func (c *ownerCheck) err() error {
	if len(c.conflicts) == 0 {
		return nil
	}
	sort.Slice(c.conflicts, func(i, j int) bool { return c.conflicts[i].String() < c.conflicts[j].String() })
	return &ConflictError{Conflicts: c.conflicts}
}

// updaterName is the name an update is recorded under.
func updaterName(updater string) string {
	if updater == "" {
		return "update"
	}
	return updater
}

// Entries is the ownership as metadata.managedFields shows it: the
// manager's entry (with no time for a record of an earlier release, which
// has none), then the updaters'.
func (o Ownership) Entries() []manifests.ManagedFieldsEntry {
	if len(o.ManagedFields) == 0 {
		return []manifests.ManagedFieldsEntry{{Manager: ManagerApply, Operation: OperationApply}}
	}
	out := make([]manifests.ManagedFieldsEntry, len(o.ManagedFields))
	for i, e := range o.ManagedFields {
		t := e.Time
		out[i] = manifests.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, Time: &t}
	}
	return out
}
