// Package store is the durable desired state of one dockctl instance: the
// state directory of DESIGN §4. `dockctl apply` and the other editing
// commands write it; the controller watches it and records what only it
// knows (observed generation, conditions, opaque per-feature data) next to it.
//
// # Layout
//
//	<dir>/                       0700, created on first Open
//	  instance                   owning instance name, one line
//	  .lock                      flock held around every write transaction
//	  controller.lock            flock held by the running controller (leader)
//	  deployments/<name>.json    one Record per deployment ever known
//	  status/<name>.json         controller-owned Status of that deployment
//
// Every file is created 0600 and every directory 0700: manifests may carry
// secrets in environment variables. Each JSON file carries a "version" field;
// a file written by a newer format is refused instead of being misread.
//
// # Invariants
//
// Atomicity. A file is never written in place: the content goes to a
// temporary file in the same directory (named ".<name>.json.tmp-*", which
// List and Watch ignore), is fsynced, renamed over the target and the
// directory is fsynced. A crash therefore leaves either the old or the new
// file, never a torn one. A transaction that touches several files (Apply)
// validates everything and writes every temporary file before the first
// rename, so a failure before the renames changes nothing; a crash between
// two renames can leave a subset of the records updated, each still whole.
// Leftover temporary files of a crashed writer are removed by the next Open.
//
// Serialised writers. Every write transaction (Apply, Update, Delete,
// WriteStatus, the first Open) runs under an exclusive flock on .lock, so
// concurrent dockctl processes never lose each other's updates and
// generations strictly increase. Readers take no lock: thanks to atomic
// renames each file they read is whole, although a reader listing during an
// Apply may see some records before and some after it.
//
// Trust. Whoever can write the state directory decides what the controller
// runs, so Open (the writers' door) refuses a directory, deployments/ or
// status/ owned by another user and makes one of ours that others may write
// to private (0700) again; a shared directory with the sticky bit is
// refused. A writing store reads only regular files of its own user, never
// through a symbolic link. A record read is checked for its format only:
// the controller validates its content, with the rules of apply, when it
// reads it (reconciler/trust.go).
//
// Instance ownership. The first Open records its instance name; every later
// Open or OpenReadOnly with another name fails, so two instances can never
// mix their desired states (or delete each other's containers).
//
// Tombstones. Deleting a deployment does not remove its record: it is marked
// Deleted. The controller removes the containers of a tombstoned deployment,
// whereas containers of a deployment this directory has never known are
// orphans and are left running. Lookup tells the three cases apart: a live
// record, a tombstone (Record.Deleted), or ErrNotFound. Applying a tombstoned
// name revives it as a new object: a fresh revision history and a fresh
// (removed) status file, so that none of the deleted revisions comes back;
// its generation keeps increasing so that an observed generation recorded
// before the deletion never looks current.
//
// History. Revisions are trimmed to revisionHistoryLimit, oldest first, but
// a revision the controller's status still lists in its rollout sizes (it
// has containers) is never trimmed: the controller may need its template.
//
// Generations follow Kubernetes: 1 on creation, +1 on every spec change and
// on deletion; a change of labels or annotations alone keeps the generation.
//
// Leader election. AcquireControllerLock takes an exclusive flock on
// controller.lock. The kernel releases a flock when its holder dies, so a
// standby controller polling for it takes over within one retry interval.
package store
