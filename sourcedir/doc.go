// Package sourcedir applies manifests directories: `dockctl controller
// --manifests DIR` keeps the state directory matching what DIR holds, and
// `dockctl diff --manifests DIR` previews it. It stands between
// manifests (decoding, pure) and store (the state), and shares with
// `dockctl apply -f` its way from files to a store.Bundle (Place) and the
// store's Apply, so that a directory stores exactly what `apply -f DIR`
// would.
//
// Invariants:
//   - Ownership. Every object applied from a path records the manager
//     store.DirectoryManager(path) (the path as given). A sync changes and
//     deletes only objects that one of the controller's paths manages, so
//     an object moved from one of its directories to another changes
//     manager without being deleted; an object another manager (apply, or
//     another controller's directory) manages is a conflict: reported, left
//     as it is, never deleted, unless the controller forces conflicts.
//   - Last good state. A file that cannot be read (a dangling symbolic
//     link among them) or decoded, or that declares an object another
//     file declares too, contributes nothing, and while any file (or a
//     directory below a path that cannot be read) is so refused the sync
//     deletes nothing: the objects of that file keep their last applied
//     state. So is a file the
//     store refuses on its own (an immutable field changed, a namespace
//     declared nowhere); a sync the store refuses only as a whole changes
//     nothing at all.
//   - Empty is suspicious. A path that is missing, unreadable as a whole
//     or holds no object (an unmounted volume, a checkout half done)
//     deletes nothing, unless AllowEmpty and it has stayed so for
//     AllowEmptyAfter. A partial read is never empty.
//   - Whole re-reads. Every sync reads every path whole; watching (fsnotify,
//     debounced) and the periodic resync only decide when. A symbolic link
//     swapped over a path (git-sync's --link) is followed anew each sync.
//   - Quiet before deleting. While changes are still arriving, no sync
//     deletes: a checkout half done may hold a moved object in neither
//     place. Run's resync waits for the debounced sync then, and the
//     sync MaxDebounce forces only creates and changes.
//   - Read-only. Nothing is ever written under a path: a read-only mount is
//     fine.
//   - Kustomizations are units. A path that holds a kustomization file is
//     its kustomize build (as `dockctl kustomize PATH`, as Flux renders
//     one), one "file" that is good or refused whole; its other files are
//     kustomize's inputs and are not read as objects.
package sourcedir
