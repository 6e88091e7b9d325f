// Package store is the durable desired state of one dockctl instance: the
// state directory of docs/design.md §5. `dockctl apply` and the other
// editing commands write it; the controller watches it and records what only
// it knows (observed generation, conditions, opaque per-feature data) next
// to it.
//
// # Layout
//
//	<dir>/                            0700, created on first Open
//	  instance                        owning instance name, one line
//	  .lock                           flock held around every write transaction
//	  controller.lock                 flock held by the running controller (leader)
//	  network.json                    the controller's instance network (NetworkStatus)
//	  gateway.json                    the gateway's ports a process of the host holds, its claim (GatewayStatus)
//	  deployments/<name>.json         one Record per deployment of namespace default ever known
//	  status/<name>.json              controller-owned Status of that deployment
//	  services/<name>.json            one ServiceRecord per Service of default ever known
//	  service-status/<name>.json      controller-owned ServiceStatus of that Service
//	  workload-status/<kind>.<name>.json  controller-owned WorkloadStatus of a StatefulSet, Job…: its status
//	                                  and its pods' recorded containers, by writer (workloads.go)
//	  configmaps/<name>.json          one ConfigMapRecord per ConfigMap of default ever known
//	  secrets/<name>.json             one SecretRecord per Secret of default ever known
//	  claims/<name>.json              one ClaimRecord per PersistentVolumeClaim of default ever known
//	  pod-deletions/<name>.json       pending `delete pod` requests for deployment <name>'s pods (poddeletions.go)
//	  namespaces/<ns>.json            one NamespaceRecord per namespace ever applied
//	  namespaces/<ns>/deployments/…   the same eight directories for namespace <ns>
//	  namespaces/<ns>/status/…
//	  namespaces/<ns>/services/…
//	  namespaces/<ns>/service-status/…
//	  namespaces/<ns>/configmaps/…
//	  namespaces/<ns>/secrets/…
//	  namespaces/<ns>/claims/…
//	  namespaces/<ns>/pod-deletions/…
//	  events/<ns>.json                the event log of namespace <ns> (default included)
//
// Events. Each namespace's log keeps at most MaxEventsPerNamespace (1000)
// events, none last seen more than EventTTL (1h, Kubernetes' default
// --event-ttl) ago; messages are cut at MaxEventMessage (1024) bytes and
// reasons at 128. One event takes at most 2170 bytes of JSON with a
// printable message and 253-character names (7290 if every byte of the
// message must be escaped), so a namespace's file stays under 2.1 MiB
// (7 MiB in that worst case); typical events take about 450 bytes. A
// repeat (same object, type, reason, message, source) adds to the count
// and moves lastTimestamp; the tenth distinct message of one object, type
// and reason within ten minutes becomes one "(combined from similar
// events)" row, as client-go's EventCorrelator does. RecordEvents writes
// a batch as one atomic rewrite per namespace under the write lock, and
// writes nothing for no event; expired events are hidden on read, so an
// idle controller never rewrites a log to expire them. Namespaces are
// written independently: a log that does not decode is moved aside
// (<ns>.json.corrupt-<time>, one kept) and restarted, one of a newer format
// is refused, and neither stops the other namespaces' events.
//
// The default namespace lives at the top, where every release before
// namespaces kept its deployments: a state directory of an earlier release
// is read in place, nothing moves, and Open only adds the directories it
// lacks. "default" always exists and needs no record (it has one only
// once a Namespace named default was applied, to hold its labels); any
// other namespace exists while its record is live. In a record, a
// default object's metadata.namespace is "" (as earlier releases stored
// it), whatever the file said; readers use NamespaceOrDefault.
//
// Every file is created 0600 and every directory 0700: manifests may carry
// secrets in environment variables. Each JSON file carries a "version" field;
// a file written by a newer format is refused instead of being misread.
//
// # Keys
//
// Objects are named across namespaces by keys, the controller's work-queue
// keys: Key(ns, name) = "namespace/name" for a deployment (client-go's
// MetaNamespaceKeyFunc shape; "default/web" for default), ServiceKey =
// "service:namespace/name", NamespaceKey = "namespace:name", ConfigMapKey
// = "configmap:namespace/name", SecretKey = "secret:namespace/name",
// ClaimKey = "pvc:namespace/name", PodDeletionKey =
// "pod-deletion:namespace/name" (a deployment's pod-deletion requests).
// Namespaces and names are DNS-1123
// labels (subdomains for ConfigMaps, Secrets and claims, as Kubernetes
// allows: no '/' or ':' either), so no key is ambiguous and none is the
// deployments' sweep key "*". Watch sends these keys; ParseWatchKey tells
// their kinds apart.
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
// Bundles. Apply stores Namespaces, ConfigMaps, Secrets, claims, Services
// and Deployments as one transaction, all validated first; an object of a
// namespace that neither exists nor is created by the same bundle is
// refused (`namespaces "x" not found`, as kubectl says it) and nothing is
// written. The renames go namespaces first, then ConfigMaps, Secrets and
// claims, then services, then deployments, so that a crash between two
// never leaves an object in a namespace that does not exist, nor a
// deployment whose configuration is not stored yet.
// Pruning and deleting a namespace cover ConfigMaps, Secrets and claims as
// they cover Services.
//
// Kinds. Every namespaced stored kind is one registration of storedKinds
// (kinds.go), and no transaction names a kind: apply, prune, delete, a
// namespace's deletion, UpdateMetadata, commit, Watch's keys and the
// layout's directories walk the registry in its order (the renames'
// order above). A registration never changes a file's format: the layout
// golden test (testdata/layout) holds every path, mode and byte.
//
// Trust. Whoever can write the state directory decides what the controller
// runs, so Open (the writers' door) refuses a directory, or any directory
// of the state in it, owned by another user and makes one of ours that
// others may write to private (0700) again; a shared directory with the
// sticky bit is refused, and so is a namespace's directory that is a
// symbolic link. A writing store reads only regular files of its own user, never
// through a symbolic link. A record read is checked for its format only:
// the controller validates its content, with the rules of apply, when it
// reads it (reconciler/trust.go).
//
// Instance ownership. The first Open records its instance name; every later
// Open or OpenReadOnly with another name fails, so two instances can never
// mix their desired states (or delete each other's containers).
//
// Tombstones. Deleting a deployment (or a Service, or a Namespace) does not
// remove its record: it is marked Deleted. Deleting a Namespace tombstones
// every live deployment and Service in it in the same transaction (their
// tombstones are written before the namespace's), as Kubernetes deletes a
// namespace's content with it; "default" cannot be deleted. Applying a
// namespace again makes a new one; its former content stays deleted. The controller removes the containers of a tombstoned deployment,
// whereas containers of a deployment this directory has never known are
// orphans and are left running. Lookup tells the three cases apart: a live
// record, a tombstone (Record.Deleted), or ErrNotFound. Applying a tombstoned
// name revives it as a new object: a fresh revision history and a fresh
// (removed) status file, so that none of the deleted revisions comes back;
// its generation keeps increasing so that an observed generation recorded
// before the deletion never looks current. The tombstone of a ConfigMap or
// a Secret keeps no value (data, binaryData, stringData and kubectl's
// last-applied-configuration annotation are dropped): a deleted Secret's
// values leave the state directory with it.
// The tombstone of a workload deleted with --cascade=orphan
// (DeleteObjectsWith) lists the incarnation whose pods it left running
// (ObjectRecord.Orphaned; a Deployment's Record.Orphaned), carried by the
// object applied again over it (orphans.go).
//
// History. Revisions are trimmed to revisionHistoryLimit, oldest first, but
// a revision the controller's status still lists in its rollout sizes (it
// has containers) is never trimmed: the controller may need its template.
// A StatefulSet's and a DaemonSet's record keeps its revisions the same
// way (their one copy: the controller reads them from the record), and a
// StatefulSet's revision its status names as currentRevision or
// updateRevision is never trimmed.
//
// Generations follow Kubernetes: 1 on creation, +1 on every spec change and
// on deletion; a change of labels or annotations alone keeps the generation.
// Services follow the same rules, and so do ConfigMaps, Secrets and
// claims (config.go), which in addition refuse what Kubernetes refuses on
// an update: an immutable object's data, a Secret's type, a claim's spec
// but its storage request growing. Their records are read back validated
// by the lookups the controller uses (the reconciler's ConfigStore:
// LookupConfigMap, LookupSecret, LookupClaim); a Secret's values are
// never in an error. A Service's status (its allocated
// ClusterIP and nodePorts) is the controller's: re-applying, deleting or
// reviving the Service keeps it, unlike a deployment's, which a revival
// resets.
//
// Ownership (ownership.go). Every record carries, beside its object and
// never in it (no template hash depends on it), Kubernetes-style
// managedFields: one Apply entry naming its manager (ManagerApply for
// `dockctl apply -f`, DirectoryManager(path) for a manifests directory; a
// record of an earlier release has none and is apply's) and one Update
// entry per command that changed it since (scale, set image, rollout,
// label, patch, edit), which the manager's next change supersedes. Apply
// refuses, with a *ConflictError and writing nothing, to change a live
// object of another manager unless ForceConflicts; Prune and PruneOwned
// tombstone only the applier's own objects, so `apply --prune` never
// deletes a directory's object and a directory never deletes apply's.
// Updaters never conflict and never take over.
//
// Manifests directories' report. manifests.json holds the controller's
// last report on each --manifests path (SourceStatus): controller-owned,
// like the status files, which Watch leaves out and WatchStatus reports.
//
// Leader election. AcquireControllerLock takes an exclusive flock on
// controller.lock. The kernel releases a flock when its holder dies, so a
// standby controller polling for it takes over within one retry interval.
package store
