// Package manifests reads, checks, defaults and hashes the manifests
// dockctl accepts: subsets of Kubernetes' apps/v1 Deployment and core/v1
// Service, Namespace, ConfigMap, Secret and PersistentVolumeClaim, so that
// the same files run unchanged on a cluster.
//
// Invariants:
//
//   - Pure: no Docker, no network, no global state. The only file system
//     access is Load reading the paths it is given, and Privileges
//     resolving host paths through the Host.Resolve its caller passes.
//   - Strict: every mapping key in the input either lands in a Go field or is
//     reported. A key Kubernetes knows but dockctl does not is reported as
//     "unsupported by dockctl", never dropped, so a manifest is never applied
//     with part of its meaning silently lost. The only keys skipped on
//     purpose are top-level status and server-set metadata, so that dockctl's
//     own output can be applied again.
//   - Same meaning as on a cluster: a plain scalar that kubectl's YAML 1.1
//     reads as a boolean (y, yes, on, n, no, off, in their three cases) is
//     refused where a string is expected, values and mapping keys, with
//     the hint to quote it (walker.go yaml11Bools).
//   - Every error carries file, line and field path, and all errors of a file
//     are reported at once (ErrorList). Decode and Load return either
//     documents or an error, never both, so a caller cannot apply a partly
//     valid set by accident.
//   - Hostile input cannot panic or exhaust memory: inputs over MaxInputSize,
//     nesting deeper than MaxDepth and YAML aliases are refused before the
//     document is interpreted.
//   - Documents returned by Decode and Load are validated and then defaulted
//     (SetDefaults, SetServiceDefaults) exactly as Kubernetes defaults them;
//     ReplicasSet and PausedSet tell whether the document set what apply
//     otherwise keeps. Exactly one of Document.Deployment, Service,
//     Namespace, ConfigMap, Secret and PVC is set. A Secret's stringData is
//     merged into its data and dropped, as the API server does.
//   - A Secret's values never appear in an error message: errors about
//     them name the key and the problem only.
//   - Documents come ordered (Order): Namespaces, then ConfigMaps,
//     Secrets and PersistentVolumeClaims, then Services, then Deployments,
//     each kind in the order read, so that whatever a document refers to
//     comes before it. Names are unique per kind and namespace
//     within one input. A namespace is read through
//     ObjectMeta.NamespaceOrDefault ("" is "default"); a Namespace object
//     has none.
//   - Validate (ValidateService, ValidateNamespace, ValidateConfigMap,
//     ValidateSecret, ValidatePVC) is the one set of rules
//     of each kind: apply runs it, and the controller runs it again on every
//     record it reads (a record is not trusted).
//   - A pod template has one or more app containers and any number of
//     init containers (native sidecars among them: restartPolicy Always),
//     with names unique across both lists; PodSpec.AllContainers lists
//     them in the order a pod starts them. Every rule about a container
//     (validation, defaults, Privileges) applies to each of them, and the
//     ports of all of them are checked together, as they share one
//     network namespace.
//   - Privileges lists every setting that needs a controller --allow-*
//     flag; Policy.Refused is what a controller refuses of them.
//   - TemplateHash depends only on the non-zero fields of the defaulted pod
//     template, serialised canonically; adding an optional field to the types
//     therefore does not change the hash of existing manifests. The hash is
//     the revision identity stored on containers, so it is golden-tested.
package manifests
