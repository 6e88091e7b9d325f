package dockerx

import (
	"errors"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Label keys (docs/design.md §4): they say whose an object is and what it
// is for, the ownership contract of docs/design.md §2.
const (
	LabelInstance     = "io.dockctl.instance"
	LabelDeployment   = "io.dockctl.deployment"
	LabelTemplateHash = "io.dockctl.template-hash"
	// LabelRole says what a Docker object dockctl made is for
	// (docs/design.md §4), so that orphan handling never takes a helper for
	// a stray. Absent on a container made by an earlier release: a replica.
	LabelRole = "io.dockctl.role"
	// LabelPod, LabelPodUID and LabelContainer tie the holder, members and
	// volumes of a pod with a holder together: its name, the uid chosen
	// when it was created (a pod re-created under the same name is another
	// pod), and a member's container name in the template.
	LabelPod       = "io.dockctl.pod"
	LabelPodUID    = "io.dockctl.pod-uid"
	LabelContainer = "io.dockctl.container"
	// LabelNamespace is the namespace of the object a container, volume
	// or helper serves. Absent (objects made by earlier releases) means
	// manifests.DefaultNamespace.
	LabelNamespace = "io.dockctl.namespace"
	// LabelService names the Service a proxy serves, LabelConfigHash the
	// hash of a helper's create-time configuration, so that the controller
	// can tell a helper that must be re-created from one that only needs
	// a push.
	LabelService    = "io.dockctl.service"
	LabelConfigHash = "io.dockctl.config-hash"
	// LabelOwnerKind and LabelOwner name the owner of a pod's containers
	// when it is not a Deployment (PodTemplate.OwnerKind): its kind, as
	// data, and its name. A Deployment's containers carry LabelDeployment
	// instead, as in every earlier release, and these never.
	LabelOwnerKind = "io.dockctl.owner-kind"
	LabelOwner     = "io.dockctl.owner"
	// LabelOwnerUID tells one incarnation of an owner from another of the
	// same name (PodTemplate.OwnerUID), as an ownerReference's uid does
	// in Kubernetes: an object deleted and applied again adopts none of
	// the pods of the one before but those an orphaning deletion left
	// (store.PodOwner). A Deployment's containers carry it too, since
	// deployments can orphan; those made before do not.
	LabelOwnerUID = "io.dockctl.owner-uid"
	// LabelHostname and LabelSubdomain are a pod's spec.hostname and
	// spec.subdomain, on its containers when it sets them (an owner's
	// identity, or the template's): what the Service controller names it
	// by in the cluster DNS (docs/design.md §10). Absent on every pod
	// that sets neither, so no earlier container's labels change.
	LabelHostname  = "io.dockctl.hostname"
	LabelSubdomain = "io.dockctl.subdomain"
)

// Roles (LabelRole values).
const (
	RoleReplica     = "replica"      // a container of the template: app, init or sidecar
	RoleHolder      = "holder"       // a pod's holder: owns its namespaces
	RoleEmptyDir    = "emptydir"     // a pod's emptyDir volume
	RoleFiles       = "files"        // a pod's file volume (configMap, secret, projected, downwardAPI)
	RoleHelperImage = "helper-image" // the image helpers run
	RoleProxy       = "proxy"        // a Service's proxy (a helper container)
	RoleDNS         = "dns"          // the instance's DNS server (a helper container)
	RoleGateway     = "gateway"      // the instance's HTTP(S) gateway (a helper container)
	RolePublisher   = "publisher"    // the instance's published Service ports, on the host's network (a helper container)
	RolePortForward = "port-forward" // a `dockctl port-forward` session's relay (a helper container of the CLI's)
	RoleFilesWriter = "files-writer" // one write of a pod's file volumes (fileswriter.go)
	RoleNetwork     = "network"      // the instance's network
)

// Sentinel errors. Every Docker error that means "no such object" or "name
// already in use" is wrapped so that errors.Is(err, ErrNotFound/ErrConflict)
// holds; callers (and the in-memory fakes) never need the SDK's errdefs.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrUnreachable = errors.New("docker daemon unreachable")
)

// Container states, as Docker reports them.
const (
	StateCreated    = "created"
	StateRunning    = "running"
	StatePaused     = "paused"
	StateRestarting = "restarting"
	StateRemoving   = "removing"
	StateExited     = "exited"
	StateDead       = "dead"
)

// Health values ("" when the container has no health check).
const (
	HealthNone      = ""
	HealthStarting  = "starting"
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// Container is what one list call reports about a container, in plain types.
type Container struct {
	ID      string
	Name    string // without the leading "/"
	Image   string
	ImageID string
	Labels  map[string]string
	// Parsed from Labels.
	Instance     string
	Deployment   string
	TemplateHash string
	// Namespace is the namespace the container belongs to, "default" for
	// one made by an earlier release (ParseNamespace).
	Namespace string
	// Role is LabelRole's value, RoleReplica when absent. Pod, PodUID and
	// ContainerName are set on the holder and members of a pod with a
	// holder only.
	Role          string
	Pod           string
	PodUID        string
	ContainerName string
	// Service and ConfigHash are set on helpers.
	Service    string
	ConfigHash string
	// Networks maps each network the container is connected to onto its
	// IPv4 address there: "" while it has none (not running), and for
	// the host's network. A container that joined another's network
	// namespace (a pod's member) has none.
	Networks map[string]string
	// NetworkMode is the container's network mode as created ("default",
	// "bridge", a network's name, "host", "none", "container:ID"); a
	// container in another's network namespace, the host's or none can
	// join no network.
	NetworkMode string
	// StaticIPv4 maps each network the container was given a static
	// address on (IPAMConfig) onto that address, kept while it is
	// stopped (a pod that reads status.podIP; hostinfo.go).
	StaticIPv4 map[string]string

	State  string // one of the State* constants
	Health string // one of the Health* constants, parsed from Status
	Status string // Docker's human status, e.g. "Up 3 minutes (healthy)"
	// ExitCode is the last exit code of an exited container, parsed from
	// Status ("Exited (1) 3 seconds ago"); 0 otherwise.
	ExitCode int
	Created  time.Time // creation time
	Ports    []Port
	// Volumes are the named volumes the container mounts, sorted.
	Volumes []string
}

type Port struct {
	HostIP        string
	HostPort      uint16
	ContainerPort uint16
	Protocol      string
}

// EventAction is the subset of container event actions dockctl reacts to.
type Event struct {
	// Gap is true when events may have been missed (the stream broke and was
	// re-established, or this is the first connection): consumers must do a
	// full resync of every deployment.
	Gap bool
	// Down is true when the subscription has just failed (the stream broke,
	// or an attempt to re-establish it failed): Docker may be unreachable
	// and events are being missed until the next Gap. Err says why. It
	// carries no deployment, so a consumer that re-lists on such an event
	// learns at once that Docker is gone instead of at its next periodic
	// resync. One is sent per failed attempt, at most every 5s while down.
	Down        bool
	Action      string // "create", "start", "die", "destroy", "stop", "kill", "pause", "unpause", "health_status: healthy", "oom"
	ContainerID string
	Name        string
	Deployment  string // from the container's labels; "" if unlabelled
	Namespace   string // ParseNamespace of the container's labels and name
	Role        string // LabelRole of the container ("" if unlabelled)
	// OwnerKind and Owner name the owner of a pod's container when it is
	// not a Deployment (LabelOwnerKind, LabelOwner; "" otherwise).
	OwnerKind string
	Owner     string
	Time      time.Time
	// ExitCode is a "die" event's exit code (its exitCode attribute).
	ExitCode int
	// Unsettled: a "die" sent at once, before Docker finished with the
	// container (EventsWithExits): a list may still show it running.
	// The same die follows, settled.
	Unsettled bool
	Err       error // with Gap: why the stream broke, nil for the first connection; with Down: why it failed
}

// PodTemplate is what a pod's containers are created from, kind-free
// (docs/design.md §17): the defaulted pod template, and the namespace and
// name of the owner that labels (LabelDeployment), names (the hostname)
// and aliases (on the template's network) them. Containers of a
// Deployment's pod are created from TemplateOf(deployment); the config
// built is the same whoever the owner is.
type PodTemplate struct {
	Namespace string // the owner's namespace ("": default)
	Owner     string // the owner's name
	// OwnerKind is the owner's kind when it is not a Deployment (""): its
	// containers are then labelled LabelOwnerKind and LabelOwner, never
	// LabelDeployment, so that no Deployment takes them for its own.
	OwnerKind string
	// OwnerUID is the owner's incarnation (LabelOwnerUID; "": unlabelled).
	OwnerUID string
	// Hostname is the pod's hostname when its owner names its pods
	// itself (PodContainerName); "": a Deployment's replica's, the
	// template's spec.hostname, else Hostname of the owner, hash and
	// ordinal. The template's spec.hostname and spec.subdomain (an owner
	// that gives its pods an identity sets them in the template it hands
	// over, as Kubernetes sets them in the pod) are labelled
	// LabelHostname and LabelSubdomain; with a subdomain the container's
	// domain is SUBDOMAIN.NS.svc.cluster.local.
	Hostname string
	Template *manifests.PodTemplateSpec
}

// TemplateOf returns the pod template of Deployment d (nil for nil): the
// one its pods are created from.
func TemplateOf(d *manifests.Deployment) *PodTemplate {
	if d == nil {
		return nil
	}
	return &PodTemplate{Namespace: d.Metadata.NamespaceOrDefault(), Owner: d.Metadata.Name, Template: &d.Spec.Template}
}

// NamespaceOrDefault is t's namespace, reading "" as the default one.
func (t *PodTemplate) NamespaceOrDefault() string { return orDefault(t.Namespace) }

// CreateRequest is everything needed to create one replica.
type CreateRequest struct {
	Instance string
	Name     string // container name, unique across instances
	// Namespace is the deployment's namespace, labelled LabelNamespace on
	// everything created ("": the deployment's metadata.namespace).
	Namespace    string
	TemplateHash string
	// From is the pod template the container is created from, with its
	// owner (a Deployment's: TemplateOf).
	From *PodTemplate
	// Role is RoleReplica ("" means the same) or RoleHolder.
	Role string
	// Pod is nil for a pod without holder (one container, built as every
	// replica was before pods); otherwise the pod the holder or member
	// belongs to.
	Pod *PodRef
	// Container names, for a member, the template container (init or
	// app) to create; "" is the template's only container.
	Container string
	// Image is, for the holder, the helper image to run.
	Image string
	// Logs is the log rotation to give the replica. Client.CreateContainer
	// fills it from its options and the daemon's default log driver; the
	// zero value sets no log options.
	Logs ContainerLogs
	// Network, when set, is the instance network the pod's network owner
	// (a replica of a pod without holder, or a holder) is created on,
	// with its address, aliases and resolver settings; the template's
	// dockctl.io/network then becomes an additional network
	// (ExtraNetworks). Members ignore it (they join the holder's network
	// namespace), as does a hostNetwork pod. nil: the network of today's
	// replicas (the annotation's, else the default bridge). It is a
	// create-time setting, not part of the template hash.
	Network *PodNetwork
	// Env is the environment of the template container created (a
	// replica or a member), "NAME=value" in order, resolved by the
	// controller from ConfigMaps, Secrets and the pod (as the kubelet's
	// makeEnvironmentVariables); nil: the template's literal values, refused
	// for a template whose environment needs resolving. It may hold a
	// Secret's values: never log it. A create-time setting, not part of the
	// template hash.
	Env []string
	// ImageUser is the User of the container's image, which the
	// reconciler inspects only when the template sets runAsGroup without
	// runAsUser (NeedsImageUser): the group then applies to the image's
	// user. A create-time setting, not part of the template hash.
	ImageUser string
	// SeccompProfile is the content (JSON) of the container's Localhost
	// seccomp profile, which the reconciler reads from the host
	// (manifests.LocalhostProfilePath); required when it has one.
	SeccompProfile string
	// VolumeMountpoints maps a pod volume's name to its mountpoint on the
	// daemon's host, for subPath mounts (convert_files.go);
	// Client.CreateContainer fills it.
	VolumeMountpoints map[string]string
}

// PodNetwork is where a pod's network owner, or a helper, is attached.
type PodNetwork struct {
	Name    string   // the network, e.g. NetworkName(instance)
	IPv4    string   // a static address in its subnet; "" for one from its IPRange
	Aliases []string // DNS names on that network (Docker's embedded DNS)
	// Resolver settings (HostConfig.DNS, DNSSearch, DNSOptions), as a
	// Kubernetes pod gets them: the instance's DNS server, the search
	// list of its namespace, ndots:5.
	DNS, DNSSearch, DNSOptions []string
}

// PodRef names the pod a holder or member belongs to.
type PodRef struct {
	Name   string // pod name, also its hostname: Hostname(deployment, hash, ordinal)
	UID    string // chosen when the pod is created: 8 hex characters
	Holder string // the holder's container name: ContainerName(…)
}

// Kubelet's defaults for container log rotation (containerLogMaxSize,
// containerLogMaxFiles).
const (
	DefaultContainerLogMaxSize  = 10 << 20
	DefaultContainerLogMaxFiles = 5
)

// ContainerLogs is the log rotation replicas get, as kubelet rotates
// container logs. It applies only when Driver, the daemon's default log
// driver, is json-file or local: options of those drivers mean nothing to
// (and would be refused by) journald, syslog and the others, whose users
// keep the daemon's choice.
type ContainerLogs struct {
	Driver   string // the daemon's default log driver; "" unknown
	MaxSize  int64  // bytes per file; 0 disables rotation (the daemon's own log-opts apply)
	MaxFiles int
}
