package explain

import (
	"reflect"

	"github.com/dockctl/dockctl/manifests"
)

// noteKey is a field (name) of one of dockctl's types; "" is the type
// itself.
type noteKey struct {
	in   reflect.Type
	name string
}

func key[T any](name string) noteKey { return noteKey{reflect.TypeFor[T](), name} }

// notes say, after Kubernetes' description, where dockctl gives a field
// another meaning or a restriction (README: Manifests). Short: the README
// has the details. A field of a type shared by several kinds (ObjectMeta)
// has one note for all of them.
var notes = map[noteKey]string{
	key[manifests.Deployment](""): "each replica is a pod of Docker containers on this host, which `dockctl controller` keeps.",
	key[manifests.Deployment]("status"): "output only: the counts come from Docker, observedGeneration and conditions from the " +
		"controller; ignored on input.",
	key[manifests.DeploymentSpec]("replicas"): "at most 100000 (and the controller refuses more than its --max-replicas, " +
		"1000 by default); one only when a container has a hostPort.",
	key[manifests.DeploymentSpec]("selector"):               "matchLabels only, and required.",
	key[manifests.ObjectMeta]("annotations"):                "no dockctl.io/ key: dockctl's annotations go on a pod template.",
	key[manifests.ObjectMeta]("generation"):                 "set by dockctl; ignored on input.",
	key[manifests.ObjectMeta]("creationTimestamp"):          "set by dockctl; ignored on input.",
	key[manifests.ObjectMeta]("managedFields"):              "who manages the object (apply, a manifests directory, a command), kept by dockctl; ignored on input.",
	key[manifests.TemplateMeta]("annotations"):              "dockctl.io/network: NAME also joins the Docker network NAME (the controller refuses any but its instance's own unless started with --allow-networks=NAME); no other dockctl.io/ key is accepted.",
	key[manifests.PodSpec]("restartPolicy"):                 "Always only.",
	key[manifests.PodSpec]("terminationGracePeriodSeconds"): "the container's Docker stop timeout; dockctl's own graceful stop is bounded by the controller's --max-grace-period.",
	key[manifests.PodSpec]("hostNetwork"):                   "the controller refuses it unless started with --allow-host-namespaces.",
	key[manifests.PodSpec]("hostPID"):                       "the controller refuses it unless started with --allow-host-namespaces.",
	key[manifests.PodSpec]("dnsPolicy"): "ClusterFirst (the default) resolves Services through dockctl's DNS server; with Default, " +
		"dnsConfig's nameservers and searches replace the host's instead of joining them.",
	key[manifests.PodSpec]("imagePullSecrets"): "Secrets of type kubernetes.io/dockerconfigjson (or kubernetes.io/dockercfg) of the pod's " +
		"namespace; one that is missing or of another type is skipped with a warning.",
	key[manifests.PodSecurityContext]("sysctls"): "namespaced sysctls only; one outside Kubernetes' safe set needs the controller's --allow-privileged.",
	key[manifests.Volume]("hostPath"): "a bind mount; the controller refuses it unless started with --allow-host-path covering the path " +
		"(and --allow-host-root for a system path).",
	key[manifests.Volume]("emptyDir"): "a Docker volume removed with the pod; medium Memory is a tmpfs of sizeLimit, else of the " +
		"container's memory limit, else of 64 MiB.",
	key[manifests.Container]("readinessProbe"): "an exec probe becomes the container's Docker HEALTHCHECK; the controller runs the others.",
	key[manifests.Container]("livenessProbe"): "run by the controller, which restarts the container on failure (Docker never restarts " +
		"an unhealthy container).",
	key[manifests.ContainerPort]("containerPort"): "alone it publishes nothing: a Service or a hostPort does.",
	key[manifests.ContainerPort]("hostPort"): "published by Docker on hostIP; a pod that publishes one runs as one replica only " +
		"(more is an error, a rollout goes without surge, scale refuses); the controller refuses it unless started with --allow-host-ports covering it.",
	key[manifests.ContainerPort]("protocol"): "TCP or UDP (no SCTP).",
	key[manifests.ResourceRequirements]("limits"): "cpu (a CPU quota), memory (a memory limit) and nvidia.com/gpu (a Docker " +
		"request for that many GPUs) only.",
	key[manifests.ResourceRequirements]("requests"): "cpu (CPU shares) and memory (a memory reservation) only; nvidia.com/gpu equal to its limit.",
	key[manifests.SecurityContext]("privileged"):    "the controller refuses it unless started with --allow-privileged.",
	key[manifests.Capabilities]("add"):              "one beyond Docker's default set needs the controller's --allow-capabilities.",
	key[manifests.SeccompProfile]("type"): "Unconfined needs the controller's --allow-privileged; a Localhost profile is read from " +
		"/var/lib/kubelet/seccomp/ where the controller runs, and needs its --allow-host-path.",
	key[manifests.ServiceSpec]("type"): "ClusterIP, NodePort or LoadBalancer (no ExternalName); a LoadBalancer publishes its port (and its nodePort when one is " +
		"given), a NodePort its nodePort, on the controller's --service-address.",
	key[manifests.ServiceSpec]("clusterIP"):                      "None (headless) or an IPv4 address of the instance's service range; allocated when unset.",
	key[manifests.ServiceSpec]("clusterIPs"):                     "at most one address, clusterIP's.",
	key[manifests.ServiceSpec]("ipFamilies"):                     "IPv4 only.",
	key[manifests.ServiceSpec]("ipFamilyPolicy"):                 "SingleStack or PreferDualStack, served single-stack.",
	key[manifests.ServiceSpec]("sessionAffinity"):                "None only: the proxy spreads connections round robin.",
	key[manifests.ServiceSpec]("externalTrafficPolicy"):          "Cluster only.",
	key[manifests.ServiceSpec]("internalTrafficPolicy"):          "accepted and ignored: on one host every endpoint is local.",
	key[manifests.ServicePort]("protocol"):                       "TCP or UDP (no SCTP).",
	key[manifests.ServicePort]("appProtocol"):                    "kept, unused.",
	key[manifests.ServicePort]("nodePort"):                       "allocated from 30000-32767 when unset, and kept.",
	key[manifests.NamespaceSpec]("finalizers"):                   "ignored: a Namespace's deletion waits for nothing here.",
	key[manifests.PersistentVolumeClaim](""):                     "a named Docker volume of the instance.",
	key[manifests.PersistentVolumeClaimSpec]("accessModes"):      "on one host they all mean the same.",
	key[manifests.PersistentVolumeClaimSpec]("storageClassName"): "accepted and ignored (apply names it in its warning): every claim is a local Docker volume.",
	key[manifests.PersistentVolumeClaimSpec]("volumeMode"):       "Filesystem only.",
	key[manifests.PersistentVolumeClaimSpec]("volumeName"):       "accepted and ignored.",
	key[manifests.PersistentVolumeClaimSpec]("selector"):         "refused: dockctl provisions one Docker volume per claim, there are no PersistentVolumes to select.",
	key[manifests.VolumeResourceRequirements]("requests"):        "storage only, and required; not enforced (a local volume has no size).",
	key[manifests.VolumeResourceRequirements]("limits"):          "storage only, at least the request; not enforced.",
}

// note is the "dockctl:" line of a field, or of the object itself (in
// nil): the table's, else what the decoder's handling says.
func note(n node) string {
	k := noteKey{n.in, n.Name}
	if n.in == nil {
		k = noteKey{deref(n.Type), ""}
	}
	s, ok := notes[k]
	switch {
	case ok:
	case n.How == manifests.AcceptSkipped && n.Name == "status":
		s = "output only; ignored on input."
	case n.How == manifests.AcceptSkipped:
		s = "ignored on input."
	case n.How == manifests.AcceptIgnored:
		s = "no meaning on one host: accepted and checked as a cluster checks it, then ignored (apply names it in a warning)."
	default:
		return ""
	}
	return "dockctl: " + s
}
