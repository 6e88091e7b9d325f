package store

import (
	"strings"

	"github.com/dockctl/dockctl/manifests"
)

// Keys name objects across namespaces, the way the controller's work
// queues and Watch do (see the package doc, "Keys").

// Kinds of the store's objects, as ObjectRef.Kind, ApplyResult.Kind and
// ParseWatchKey name them: the Kubernetes kinds.
const (
	KindDeployment = "Deployment"
	KindService    = manifests.KindService
	KindNamespace  = manifests.KindNamespace
)

// Prefixes of the watch keys of kinds other than Deployment.
const (
	servicePrefix   = "service:"
	namespacePrefix = "namespace:"
)

// Key is the key of a namespaced object: "namespace/name", with "" read
// as "default" (client-go's MetaNamespaceKeyFunc shape). Neither part may
// contain "/" or ":", so the key is unambiguous.
func Key(namespace, name string) string {
	return orDefault(namespace) + "/" + name
}

// SplitKey is the inverse of Key. ok is false for a string Key cannot have
// made (no "/", an empty part, a prefixed watch key).
func SplitKey(key string) (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(key, "/")
	if !ok || namespace == "" || name == "" || strings.ContainsAny(name, "/:") || strings.Contains(namespace, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// ServiceKey is the watch key of a Service: "service:namespace/name".
func ServiceKey(namespace, name string) string { return servicePrefix + Key(namespace, name) }

// NamespaceKey is the watch key of a Namespace: "namespace:name".
func NamespaceKey(name string) string { return namespacePrefix + name }

// ParseWatchKey tells what a key Watch sent names: its kind (KindDeployment,
// KindService, KindNamespace, KindConfigMap, KindSecret,
// KindPersistentVolumeClaim, or KindPodDeletion for the pod-deletion
// requests of the deployment name), namespace and name (for a Namespace,
// the namespace is "" and name is the Namespace's). kind is "" for the resync
// key "" and for anything Watch does not send.
func ParseWatchKey(key string) (kind, namespace, name string) {
	switch {
	case strings.HasPrefix(key, podDeletionPrefix):
		if ns, n, ok := SplitKey(strings.TrimPrefix(key, podDeletionPrefix)); ok {
			return KindPodDeletion, ns, n
		}
		return "", "", ""
	case strings.HasPrefix(key, namespacePrefix):
		if n := strings.TrimPrefix(key, namespacePrefix); n != "" && !strings.ContainsAny(n, "/:") {
			return KindNamespace, "", n
		}
		return "", "", ""
	}
	// The stored kinds': a Deployment's has no prefix, so it is tried
	// last.
	var bare storedKind
	for _, k := range storedKinds {
		p := k.watchPrefix()
		if p == "" {
			bare = k
			continue
		}
		if strings.HasPrefix(key, p) {
			if ns, n, ok := SplitKey(strings.TrimPrefix(key, p)); ok {
				return k.Kind(), ns, n
			}
			return "", "", ""
		}
	}
	if ns, n, ok := SplitKey(key); ok && bare != nil {
		return bare.Kind(), ns, n
	}
	return "", "", ""
}

// ObjectRef names one object of the store.
type ObjectRef struct {
	Kind      string // KindDeployment, KindService, KindNamespace, KindConfigMap, KindSecret or KindPersistentVolumeClaim
	Namespace string // "" means default; ignored for a Namespace
	Name      string
}

// String is kubectl's "kind/name" in lower case (deployment/web), the form
// apply and delete print.
func (r ObjectRef) String() string { return lower(r.Kind) + "/" + r.Name }

func lower(kind string) string { return strings.ToLower(kind) }

func orDefault(namespace string) string {
	if namespace == "" {
		return manifests.DefaultNamespace
	}
	return namespace
}

// canonicalNamespace is how a namespace is stored in an object's
// metadata: "" for default, as every record of earlier releases has it (so
// a re-applied file that says "default" is unchanged, and default records
// stay byte-for-byte what an earlier release reads).
func canonicalNamespace(namespace string) string {
	if namespace == manifests.DefaultNamespace {
		return ""
	}
	return namespace
}
