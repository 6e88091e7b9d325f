package dockerx

import (
	"strconv"
	"strings"

	"github.com/dockctl/dockctl/manifests"
)

// ContainerName returns the Docker name of one replica:
// "{instance}_{deployment}-{hash}-{ordinal}" in the default namespace (""
// or "default": the names every earlier release gave, so that upgrading
// renames nothing), "{instance}_{deployment}.{namespace}-{hash}-{ordinal}"
// in any other.
//
// The instance prefix keeps names unique across controller instances on one
// host. Deployment names and namespaces are DNS-1123 labels and hashes are
// alphanumeric, so none contains "_" or ".": the last "_" ends the
// instance (which may itself contain "_"), a "." before the hash ends the
// deployment and starts the namespace, and the last two "-" delimit hash
// and ordinal, so a name identifies one replica of one deployment of one
// namespace of one instance (names_test.go proves it by parsing names
// back). Namespaces are not joined with "_", which instance names may
// contain (docs/design.md §3).
func ContainerName(instance, namespace, deployment, hash string, ordinal int) string {
	return holderPrefix(instance, namespace, deployment) + hash + "-" + strconv.Itoa(ordinal)
}

// PodContainerName returns the Docker name of the container of a pod that
// its owner names itself (a pod of any owner but a Deployment, run by
// the pod runtime's Sync): "{instance}_{pod}.{namespace}_pod", the
// namespace always spelled. Pod names are unique per namespace
// (docs/design.md §17), and the "_pod" suffix keeps the name apart from
// every Deployment's (no "_" after the instance) and every helper's
// ("_svc", "_pf-…", "_files-…"); a member of such a pod adds
// ".CONTAINER" (MemberName) as a Deployment's does.
func PodContainerName(instance, namespace, pod string) string {
	return instance + "_" + pod + "." + orDefault(namespace) + "_pod"
}

// holderPrefix is what every name of a deployment's containers and
// volumes starts with: ContainerName up to the hash.
func holderPrefix(instance, namespace, deployment string) string {
	if namespace == "" || namespace == manifests.DefaultNamespace {
		return instance + "_" + deployment + "-"
	}
	return instance + "_" + deployment + "." + namespace + "-"
}

// ParseNamespace returns the namespace of a Docker object dockctl made, from
// its labels and name: LabelNamespace's value, "default" when absent (an
// object of an earlier release). A replica, holder, member or pod volume
// (an object with LabelDeployment) is in another namespace than default
// only if its name says so too (ContainerName, MemberName and VolumeName
// all start with the namespaced form): releases before the label was
// reserved copied every template label onto the containers, so a label
// from a template must not move a running replica of main into another
// namespace, where it would be an orphan and be replaced.
func ParseNamespace(labels map[string]string, name string) string {
	ns := labels[LabelNamespace]
	if ns == "" || ns == manifests.DefaultNamespace {
		return manifests.DefaultNamespace
	}
	dep := labels[LabelDeployment]
	if dep == "" || strings.HasPrefix(strings.TrimPrefix(name, "/"), holderPrefix(labels[LabelInstance], ns, dep)) {
		return ns
	}
	return manifests.DefaultNamespace
}

// maxHostname is the length limit of a DNS label.
const maxHostname = 63

// Hostname returns the hostname of one replica: "{deployment}-{hash}-{ordinal}",
// a DNS label (no instance prefix, whose "_" is not allowed in one). When
// it would exceed 63 characters the deployment name is cut, never the
// hash and ordinal, so that replicas keep distinct hostnames.
func Hostname(deployment, hash string, ordinal int) string {
	suffix := "-" + hash + "-" + strconv.Itoa(ordinal)
	if room := maxHostname - len(suffix); len(deployment) > room {
		deployment = deployment[:max(room, 0)]
	}
	// A cut may leave the name part ending in "-"; drop it, so that the
	// label never has "--" before the hash.
	deployment = strings.TrimRight(deployment, "-")
	if deployment == "" {
		return strings.Trim(suffix, "-")
	}
	return deployment + suffix
}

// MemberName returns the Docker name of a container of a pod with a
// holder: the holder's name (ContainerName), a dot, and the container's
// name in the template. Template container names are DNS-1123 labels, so
// the last dot ends the holder's name.
func MemberName(holder, container string) string {
	return holder + "." + container
}

// VolumeName returns the Docker name of an emptyDir volume of a pod with a
// holder. The pod's uid makes a pod re-created under the same name get
// fresh volumes, never the previous pod's data.
func VolumeName(holder, volume, uid string) string {
	return holder + "." + volume + "." + uid
}

// PortForwardHelperName returns the Docker name of a `port-forward`
// session's helper: "{instance}_{pod}.{namespace}_pf-{session}", session
// being random per session. Pod names and namespaces are DNS-1123 labels,
// so the name says which pod the session forwarded to
// (PortForwardHelperPod), and never collides with a replica's, whose
// last "_" ends the instance too but which has no other.
func PortForwardHelperName(instance, namespace, pod, session string) string {
	return instance + "_" + pod + "." + orDefault(namespace) + "_pf-" + session
}

// PortForwardHelperPod returns the pod a port-forward helper named name
// (PortForwardHelperName) of that instance and namespace forwards to, ""
// when name is not such a helper's.
func PortForwardHelperPod(instance, namespace, name string) string {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(name, "/"), instance+"_")
	if i := strings.LastIndex(rest, "_pf-"); ok && i >= 0 {
		rest = rest[:i]
	} else {
		return ""
	}
	pod, ok := strings.CutSuffix(rest, "."+orDefault(namespace))
	if !ok || pod == "" || strings.ContainsAny(pod, "._") {
		return ""
	}
	return pod
}

// namespace is the namespace req's containers get: req.Namespace, else
// the deployment's own.
func (req CreateRequest) namespace() string {
	if req.Namespace == "" && req.From != nil {
		return req.From.NamespaceOrDefault()
	}
	return orDefault(req.Namespace)
}

// orDefault reads "" as the default namespace.
func orDefault(namespace string) string {
	if namespace == "" {
		return manifests.DefaultNamespace
	}
	return namespace
}

// PodOfContainerName is the pod whose container PodContainerName named
// name, in namespace of instance (ok false for a name of another form).
func PodOfContainerName(instance, namespace, name string) (string, bool) {
	prefix, suffix := instance+"_", "."+orDefault(namespace)+"_pod"
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) || len(name) <= len(prefix)+len(suffix) {
		return "", false
	}
	return name[len(prefix) : len(name)-len(suffix)], true
}

// OwnerOf is the kind and name of the owner of a container dockctl made
// for a pod, from its labels: LabelOwnerKind and LabelOwner, or, for a
// Deployment's replica (which carries LabelDeployment instead,
// docs/design.md §4), manifests.Kind and that label; "" for a container
// of no owner.
func OwnerOf(labels map[string]string) (kind, name string) {
	if k := labels[LabelOwnerKind]; k != "" {
		return k, labels[LabelOwner]
	}
	if d := labels[LabelDeployment]; d != "" {
		return manifests.Kind, d
	}
	return "", ""
}

// PodOf is the pod of namespace of instance whose holder (or one
// container) is named base, of the owner labels name (OwnerOf): a
// Deployment's replica "{instance}_{deployment}[.{namespace}]-{hash}-{n}"
// (ContainerName) is pod Hostname(deployment, hash, n), or the
// LabelPod its holder pod's containers carry; any other owner's names
// its pod itself (PodOfContainerName). ok false for a name of another
// form.
func PodOf(instance, namespace, base string, labels map[string]string) (string, bool) {
	kind, dep := OwnerOf(labels)
	if kind != manifests.Kind {
		return PodOfContainerName(instance, namespace, base)
	}
	rest, ok := strings.CutPrefix(base, holderPrefix(instance, namespace, dep))
	hash, n, cut := strings.Cut(rest, "-")
	if !ok || !cut || hash == "" || hash != labels[LabelTemplateHash] {
		return "", false
	}
	ordinal, err := strconv.Atoi(n)
	if err != nil || ordinal < 0 || strconv.Itoa(ordinal) != n {
		return "", false
	}
	if p := labels[LabelPod]; p != "" {
		return p, true
	}
	return Hostname(dep, hash, ordinal), true
}

// PodOwner is the kind and name of the owner of the pod the event's
// container is of, as OwnerOf reads them from its labels.
func (ev Event) PodOwner() (kind, name string) {
	if ev.OwnerKind != "" {
		return ev.OwnerKind, ev.Owner
	}
	if ev.Deployment != "" {
		return manifests.Kind, ev.Deployment
	}
	return "", ""
}
