package dockerx

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/dockctl/dockctl/manifests"
)

// Kubernetes defaults that BuildConfig applies itself when the manifest
// leaves the field zero, so that the result does not depend on whether the
// caller ran the defaulting first.
const (
	defaultProbePeriod   = 10
	defaultProbeTimeout  = 1
	defaultProbeFailures = 3
)

// DefaultMemoryEmptyDirSize bounds a memory emptyDir (tmpfs) that has no
// sizeLimit in a container without a memory limit: Docker's tmpfs default
// is half the host's memory. It is /dev/shm's default size in Docker.
const DefaultMemoryEmptyDirSize = 64 << 20

// The kubelet's CPU mapping (pkg/kubelet/cm/helpers_linux.go).
const (
	cpuPeriod = 100000 // µs, the CFS default period
	minQuota  = 1000   // µs, the kernel's minimum quota
	minShares = 2
	maxShares = 262144
)

// BuildConfig converts one container of a pod of a (defaulted) Deployment
// into the three structures of Docker's create call. It is pure and
// deterministic. It builds three kinds of container (docs/design.md §9):
//
//   - req.Pod == nil: the replica of a pod without holder, the template's
//     only container, exactly as replicas were built before pods (plus the
//     role label). A template of several containers is refused: its pods
//     need a holder.
//   - req.Role == RoleHolder: the pod's holder, running req.Image. It owns
//     the pod's namespaces, so it carries what Docker refuses on a container
//     that joins another's network: the hostname (the pod name), the
//     network and its alias, and the ports of every container of the pod.
//     Its IPC namespace is shareable, and it mounts every emptyDir volume of
//     the pod, so that a tmpfs volume stays mounted, with its files, for the
//     pod's life.
//   - otherwise a member: the template container req.Container (init or
//     app), joined to the holder's network and IPC namespaces (and PID
//     namespace with shareProcessNamespace), its emptyDir mounts the pod's
//     named volumes VolumeName(holder, volume, uid).
//
// Mapping of a template container (replica and member), as the kubelet does
// it where Kubernetes has an equivalent:
//   - command → Entrypoint, args → Cmd (command overrides the image's
//     ENTRYPOINT, args its CMD);
//   - a containerPort is exposed; only a hostPort publishes, on hostIP or all
//     addresses (on the holder, for a pod with one);
//   - limits.cpu → CPUQuota over a 100ms CPUPeriod, requests.cpu → CPUShares,
//     limits.memory → Memory, requests.memory → MemoryReservation; a missing
//     request defaults to the limit, as the API server defaults it;
//   - hostPath → bind mount; in a pod without holder emptyDir → anonymous
//     volume (removed with the container), emptyDir medium Memory → tmpfs
//     of EmptyDirSize; in a pod with a holder both are the pod's named
//     volume (a Memory one is a tmpfs volume, sized when it is created);
//   - req.Logs → json-file/local rotation options (max-size, max-file),
//     when that is the daemon's default driver;
//   - the security context, stdin/tty, nvidia.com/gpu, and on the pod's
//     network owner hostAliases, sysctls and dnsConfig: convert_security.go;
//   - readinessProbe.exec → Docker health check, so that Docker reports
//     readiness in `docker ps` and as health_status events. Other probe kinds
//     are run by the controller.
//
// The restart policy is always "no": dockctl restarts containers itself.
func BuildConfig(req CreateRequest) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	d := req.From
	if d == nil {
		return nil, nil, nil, errors.New("build config: no deployment")
	}
	if ns := d.NamespaceOrDefault(); req.Namespace != "" && req.Namespace != ns {
		return nil, nil, nil, fmt.Errorf("build config %s: namespace %q is not the deployment's %q", req.Name, req.Namespace, ns)
	}
	if err := checkSeccomp(req); err != nil { // convert_security.go
		return nil, nil, nil, fmt.Errorf("build config %s: %w", req.Name, err)
	}
	if n := req.Network; n != nil && n.Name == "" {
		return nil, nil, nil, fmt.Errorf("build config %s: the pod network has no name", req.Name)
	}
	if err := checkEnv(req); err != nil {
		return nil, nil, nil, fmt.Errorf("build config %s: %w", req.Name, err)
	}
	var (
		cfg *container.Config
		hc  *container.HostConfig
		nc  *network.NetworkingConfig
		err error
	)
	switch {
	case req.Role == RoleHolder:
		cfg, hc, nc, err = buildHolder(req)
	case req.Role != "" && req.Role != RoleReplica:
		err = fmt.Errorf("unknown role %q", req.Role)
	case req.Pod == nil:
		cfg, hc, nc, err = buildReplica(req)
	default:
		cfg, hc, nc, err = buildMember(req)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("build config %s: %w", req.Name, err)
	}
	return cfg, hc, nc, nil
}

// buildReplica builds the only container of a pod without holder: today's
// replica.
func buildReplica(req CreateRequest) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	d := req.From
	ps := &d.Template.Spec
	if len(ps.Containers) != 1 || len(ps.InitContainers) != 0 {
		return nil, nil, nil, fmt.Errorf("a pod without holder has exactly one container, the template has %d (and %d init containers)",
			len(ps.Containers), len(ps.InitContainers))
	}
	c := &ps.Containers[0]
	if req.Container != "" && req.Container != c.Name {
		return nil, nil, nil, fmt.Errorf("container %q: the template's only container is %q", req.Container, c.Name)
	}
	cfg, hc := containerConfig(req, c, containerLabels(req, RoleReplica, ""))
	if err := setPorts(c.Ports, cfg, hc); err != nil {
		return nil, nil, nil, err
	}
	err := setMounts(req, ps.Volumes, c.VolumeMounts, hc, func(v *manifests.Volume, vm manifests.VolumeMount) mount.Mount {
		if v.EmptyDir.Medium == "Memory" {
			// Never unbounded: Docker's default is half the host's memory.
			return mount.Mount{Type: mount.TypeTmpfs, Target: vm.MountPath, ReadOnly: vm.ReadOnly,
				TmpfsOptions: &mount.TmpfsOptions{SizeBytes: EmptyDirSize(ps, v)}}
		}
		// No source: Docker creates an anonymous volume, which
		// RemoveContainer deletes with the container (RemoveVolumes).
		return mount.Mount{Type: mount.TypeVolume, Target: vm.MountPath, ReadOnly: vm.ReadOnly}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if ps.HostPID {
		hc.PidMode = "host"
	}
	nc := setNetwork(req, hostname(req), cfg, hc)
	return cfg, hc, nc, nil
}

// buildHolder builds the holder of a pod: the owner of its namespaces and
// the carrier of everything Docker ties to a network namespace.
func buildHolder(req CreateRequest) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	if err := checkPod(req); err != nil {
		return nil, nil, nil, err
	}
	if req.Name != req.Pod.Holder {
		return nil, nil, nil, fmt.Errorf("a holder is named as its pod's holder %q", req.Pod.Holder)
	}
	if req.Image == "" {
		return nil, nil, nil, errors.New("a holder needs its image")
	}
	if req.Container != "" {
		return nil, nil, nil, fmt.Errorf("a holder runs no template container (asked for %q)", req.Container)
	}
	ps := &req.From.Template.Spec
	if err := checkPIDSharing(ps); err != nil {
		return nil, nil, nil, err
	}
	// The holder exits at once on SIGTERM: a longer grace period would
	// only delay the end of a pod whose members are already gone.
	stop := 1
	cfg := &container.Config{
		Image:       req.Image, // its entrypoint: no Cmd
		Labels:      containerLabels(req, RoleHolder, ""),
		StopTimeout: &stop,
	}
	hc := &container.HostConfig{
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		// The members join it (IpcMode container:<holder>), which
		// Docker allows only from a shareable donor.
		IpcMode: container.IPCModeShareable,
	}
	// Docker refuses ports on a container that joins another's network:
	// the holder publishes those of every container, init ones included.
	for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
		if err := setPorts(c.Ports, cfg, hc); err != nil {
			return nil, nil, nil, fmt.Errorf("container %q: %w", c.Name, err)
		}
	}
	if ps.HostPID {
		hc.PidMode = "host"
	}
	// Every emptyDir stays mounted while the pod lives: a tmpfs volume
	// is mounted afresh (empty) whenever no container has it mounted.
	for i := range ps.Volumes {
		v := &ps.Volumes[i]
		if v.EmptyDir == nil {
			continue
		}
		hc.Mounts = append(hc.Mounts, podVolumeMount(req, v, "/volumes/"+v.Name, false))
	}
	holderFiles(req, ps, cfg, hc) // convert_files.go
	nc := setNetwork(req, namedHost(req, req.Pod.Name), cfg, hc)
	return cfg, hc, nc, nil
}

// buildMember builds one container of a pod with a holder: the template
// container's settings, in the holder's namespaces.
func buildMember(req CreateRequest) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	if err := checkPod(req); err != nil {
		return nil, nil, nil, err
	}
	ps := &req.From.Template.Spec
	if err := checkPIDSharing(ps); err != nil {
		return nil, nil, nil, err
	}
	if req.Container == "" {
		return nil, nil, nil, errors.New("a member of a pod with a holder names its template container")
	}
	c := findContainer(ps, req.Container)
	if c == nil {
		return nil, nil, nil, fmt.Errorf("container %q: no init or app container of that name in the template", req.Container)
	}
	cfg, hc := containerConfig(req, c, containerLabels(req, RoleReplica, c.Name))
	err := setMounts(req, ps.Volumes, c.VolumeMounts, hc, func(v *manifests.Volume, vm manifests.VolumeMount) mount.Mount {
		// Both media: a Memory emptyDir is a tmpfs volume. A file
		// volume is always read-only, as the kubelet mounts it.
		return podVolumeMount(req, v, vm.MountPath, vm.ReadOnly || v.IsFileVolume())
	})
	if err != nil {
		return nil, nil, nil, err
	}
	// No hostname, ports, DNS or extra hosts: Docker refuses them on a
	// container that joins another's network; the holder has them.
	joined := container.NetworkMode("container:" + req.Pod.Holder)
	hc.NetworkMode = joined
	hc.IpcMode = container.IpcMode(joined)
	switch {
	case ps.HostPID:
		hc.PidMode = "host"
	case deref(ps.ShareProcessNamespace):
		hc.PidMode = container.PidMode(joined)
	}
	return cfg, hc, &network.NetworkingConfig{}, nil
}

// checkPod checks the pod a holder or member belongs to.
func checkPod(req CreateRequest) error {
	p := req.Pod
	if p == nil {
		return errors.New("a holder needs its pod")
	}
	if p.Name == "" || p.UID == "" || p.Holder == "" {
		return fmt.Errorf("pod %+v: name, uid and holder are required", *p)
	}
	return nil
}

// checkPIDSharing refuses what Kubernetes refuses: a pod cannot both share
// the host's PID namespace and have one of its own shared by its
// containers.
func checkPIDSharing(ps *manifests.PodSpec) error {
	if ps.HostPID && deref(ps.ShareProcessNamespace) {
		return errors.New("hostPID and shareProcessNamespace cannot both be set")
	}
	return nil
}

// findContainer returns the init or app container of that name, or nil.
func findContainer(ps *manifests.PodSpec, name string) *manifests.Container {
	for _, cs := range [][]manifests.Container{ps.InitContainers, ps.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// podVolumeMount mounts an emptyDir volume of a pod with a holder. NoCopy:
// Docker would otherwise copy the image's files at the mount path into an
// empty volume when a container starts, so the pod's shared volume would
// begin with whatever the first member's image holds there; an emptyDir
// starts empty.
func podVolumeMount(req CreateRequest, v *manifests.Volume, target string, readOnly bool) mount.Mount {
	p := req.Pod
	vr := PodVolumeRequest(req.Instance, req.TemplateHash, req.From, *p, v)
	vr.Namespace = req.namespace()
	opts := &mount.VolumeOptions{NoCopy: true, Labels: VolumeLabels(vr)}
	// Should the volume be gone (a `docker volume prune` between its
	// create and this one), Docker makes it again from these options: it
	// is then still the pod's, labelled and of the right medium, and
	// collected with the pod.
	if vr.Memory {
		opts.DriverConfig = &mount.Driver{Name: "local", Options: tmpfsOptions(vr.SizeBytes)}
	}
	return mount.Mount{
		Type: mount.TypeVolume, Source: VolumeName(p.Holder, v.Name, p.UID), Target: target, ReadOnly: readOnly,
		VolumeOptions: opts,
	}
}

// PodVolumeRequest is the volume request of emptyDir v of a pod: what the
// reconciler creates, and what a mount re-creates should the volume be
// gone. Its Namespace is the deployment's, as the containers' label.
func PodVolumeRequest(instance, hash string, d *PodTemplate, p PodRef, v *manifests.Volume) VolumeRequest {
	req := VolumeRequest{Instance: instance, Deployment: d.Owner, Namespace: d.NamespaceOrDefault(), TemplateHash: hash, Pod: p, Volume: v.Name,
		Memory: v.EmptyDir != nil && v.EmptyDir.Medium == "Memory"}
	if req.Memory {
		req.SizeBytes = EmptyDirSize(&d.Template.Spec, v)
	}
	if v.IsFileVolume() {
		// Always a tmpfs: a Secret's files never touch a disk.
		req.Role, req.Memory, req.SizeBytes = RoleFiles, true, manifests.FileVolumeSize(v)
	}
	return req
}

// containerConfig maps what a replica and a member take from their template
// container: image, command, environment, resources, security, readiness
// health check, grace period and log rotation. Network, ports and mounts
// are the caller's.
func containerConfig(req CreateRequest, c *manifests.Container, labels map[string]string) (*container.Config, *container.HostConfig) {
	ps := &req.From.Template.Spec
	cfg := &container.Config{
		Image:      c.Image,
		Entrypoint: c.Command,
		Cmd:        c.Args,
		WorkingDir: c.WorkingDir,
		Labels:     labels,
	}
	hc := &container.HostConfig{
		// dockctl is the restart loop; Docker's would race it.
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
	}
	setEnv(req, c, cfg) // convert_env.go
	grace := int64(manifests.DefaultTerminationGracePeriodSeconds)
	if ps.TerminationGracePeriodSeconds != nil {
		grace = *ps.TerminationGracePeriodSeconds
	}
	stop := int(grace)
	cfg.StopTimeout = &stop

	setResources(c.Resources, hc)
	setLogs(req.Logs, hc)
	setSecurity(ps, c, req.ImageUser, req.SeccompProfile, cfg, hc) // convert_security.go
	if p := c.ReadinessProbe; p != nil && p.Exec != nil {
		cfg.Healthcheck = healthcheck(p)
	}
	return cfg, hc
}

// setNetwork puts the container that owns the pod's network namespace (a
// replica or a holder) on its network: the host's for hostNetwork; else
// req.Network, the instance network, with its address, aliases and
// resolver settings (the dockctl.io/network annotation's network is then
// an additional one, ExtraNetworks); else, as before the instance network,
// the annotation's network with the deployment's name as an alias, else
// the default bridge. An annotation that is a network mode rather than a
// network (host, none, container:…; refused by validation since, but
// possibly stored by an earlier release) keeps its meaning, which no
// second network can have.
func setNetwork(req CreateRequest, host string, cfg *container.Config, hc *container.HostConfig) *network.NetworkingConfig {
	d := req.From
	nc := &network.NetworkingConfig{}
	switch netName := d.Template.Metadata.Annotations[manifests.AnnotationNetwork]; {
	case d.Template.Spec.HostNetwork:
		// Docker rejects a hostname in the host's network namespace.
		hc.NetworkMode = "host"
	case req.Network != nil && !isNetworkMode(netName):
		pn := req.Network
		hc.NetworkMode = container.NetworkMode(pn.Name)
		cfg.Hostname, cfg.Domainname = host, domainname(req)
		aliases := slices.Clone(pn.Aliases)
		if netName == pn.Name && !slices.Contains(aliases, d.Owner) {
			// The annotation named the instance network itself: its
			// alias stays, there being no other network to carry it.
			aliases = append(aliases, d.Owner)
		}
		ep := &network.EndpointSettings{Aliases: aliases}
		if pn.IPv4 != "" {
			ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: pn.IPv4}
		}
		nc.EndpointsConfig = map[string]*network.EndpointSettings{pn.Name: ep}
		setResolver(*pn, hc)
	case netName != "":
		hc.NetworkMode = container.NetworkMode(netName)
		cfg.Hostname, cfg.Domainname = host, domainname(req)
		if hc.NetworkMode.IsUserDefined() {
			// The deployment name as an alias lets peers on the same
			// network reach any replica by name, as a Service would.
			nc.EndpointsConfig = map[string]*network.EndpointSettings{
				netName: {Aliases: []string{d.Owner}},
			}
		}
	default:
		hc.NetworkMode = network.NetworkBridge
		cfg.Hostname, cfg.Domainname = host, domainname(req)
	}
	setPodOwner(&d.Template.Spec, hc) // convert_security.go
	return nc
}

// setResolver gives a container the resolver settings of pn.
func setResolver(pn PodNetwork, hc *container.HostConfig) {
	hc.DNS = slices.Clone(pn.DNS)
	hc.DNSSearch = slices.Clone(pn.DNSSearch)
	hc.DNSOptions = slices.Clone(pn.DNSOptions)
}

// isNetworkMode reports whether a dockctl.io/network value is a network
// mode of its own (host, none, container:…) rather than a network to join.
func isNetworkMode(name string) bool {
	m := container.NetworkMode(name)
	return m.IsHost() || m.IsNone() || m.IsContainer()
}

// NetworkAttachment is a network a container joins after its create, and
// how.
type NetworkAttachment struct {
	Network  string
	Endpoint EndpointSettings
}

// ExtraNetworks returns the networks the container req creates must join
// after its create, before its start: Docker's create (API 1.41) attaches
// one network only. With req.Network set, that is the network of the
// dockctl.io/network annotation, which the pod's network owner joins
// beside the instance network with the deployment's name as an alias
// there (as when it was the primary network; none on the default bridge,
// where Docker allows no alias). Members, hostNetwork pods, and requests
// without req.Network join nothing more. It is pure, as BuildConfig.
func ExtraNetworks(req CreateRequest) []NetworkAttachment {
	d := req.From
	if req.Network == nil || d == nil || d.Template.Spec.HostNetwork || (req.Pod != nil && req.Role != RoleHolder) {
		return nil
	}
	netName := d.Template.Metadata.Annotations[manifests.AnnotationNetwork]
	if netName == "" || netName == req.Network.Name || isNetworkMode(netName) {
		return nil
	}
	var ep EndpointSettings
	if container.NetworkMode(netName).IsUserDefined() {
		ep.Aliases = []string{d.Owner}
	}
	return []NetworkAttachment{{Network: netName, Endpoint: ep}}
}

// containerLabels returns the template's labels plus the ownership labels,
// which win: a template cannot disown its containers. A holder and its
// members also carry the pod's name and uid, a member its container's
// name, and all of them their namespace; a template's own pod,
// namespace and helper labels are dropped, so that no container claims a
// pod, a namespace or a helper's place it does not have.
func containerLabels(req CreateRequest, role, containerName string) map[string]string {
	tl := req.From.Template.Metadata.Labels
	l := make(map[string]string, len(tl)+7)
	for k, v := range tl {
		switch k {
		case LabelPod, LabelPodUID, LabelContainer, LabelNamespace, LabelService, LabelConfigHash, LabelHostname, LabelSubdomain:
			continue
		}
		l[k] = v
	}
	l[LabelInstance] = req.Instance
	if k := req.From.OwnerKind; k != "" {
		// Not a Deployment's: a template's deployment label must not
		// hand it one either.
		delete(l, LabelDeployment)
		l[LabelOwnerKind], l[LabelOwner] = k, req.From.Owner
	} else {
		l[LabelDeployment] = req.From.Owner
	}
	if u := req.From.OwnerUID; u != "" {
		// A Deployment's too: its pods outlive it when it is deleted
		// with --cascade=orphan, and the one applied again over them
		// must tell them from its own (store.PodOwner).
		l[LabelOwnerUID] = u
	}
	l[LabelNamespace] = req.namespace()
	l[LabelTemplateHash] = req.TemplateHash
	l[LabelRole] = role
	if p := req.Pod; p != nil {
		l[LabelPod] = p.Name
		l[LabelPodUID] = p.UID
	}
	if containerName != "" {
		l[LabelContainer] = containerName
	}
	if h := req.From.Template.Spec.Hostname; h != "" {
		l[LabelHostname] = h
	}
	if s := req.From.Template.Spec.Subdomain; s != "" {
		l[LabelSubdomain] = s
	}
	return l
}

// namedHost is the hostname the pod's owner or template names (the
// owner's name for the pod, else spec.hostname), else def.
func namedHost(req CreateRequest, def string) string {
	if h := req.From.Hostname; h != "" {
		return h
	}
	if h := req.From.Template.Spec.Hostname; h != "" {
		return h
	}
	return def
}

// clusterDomain is the domain of the instance's DNS server
// (docs/design.md §10; services.ClusterDomain).
const clusterDomain = "cluster.local"

// domainname is the container's domain: with a spec.subdomain,
// SUBDOMAIN.NS.svc.cluster.local, which Docker writes into the pod's
// /etc/hosts after its hostname, so that the pod's fully qualified name
// is HOSTNAME.SUBDOMAIN.NS.svc.cluster.local as the kubelet's hosts file
// makes it; "" without one.
func domainname(req CreateRequest) string {
	s := req.From.Template.Spec.Subdomain
	if s == "" {
		return ""
	}
	return s + "." + req.namespace() + ".svc." + clusterDomain
}

// hostname is the pod's hostname: its owner's name for it, else the
// template's spec.hostname, else the replica's name (replicaName).
// Hostnames are fixed at create time and are not part of the template
// hash.
func hostname(req CreateRequest) string {
	if h := namedHost(req, ""); h != "" {
		return h
	}
	return replicaName(req)
}

// replicaName is the name of a pod without a holder: its owner's name for
// it, else Hostname of the owner, hash and ordinal, never the template's
// spec.hostname, which names the pod's host and not the pod (Kubernetes'
// metadata.name). The ordinal is read back from the container name
// (ContainerName ends in -HASH-N); a name of another form (tests, fakes)
// falls back to ordinal 0.
func replicaName(req CreateRequest) string {
	if h := req.From.Hostname; h != "" {
		return h
	}
	ordinal := 0
	if i := strings.LastIndexByte(req.Name, '-'); i >= 0 {
		if n, err := strconv.Atoi(req.Name[i+1:]); err == nil && n >= 0 {
			ordinal = n
		}
	}
	return Hostname(req.From.Owner, req.TemplateHash, ordinal)
}

// EmptyDirSize returns the size of a memory emptyDir (a tmpfs) of a pod:
// its sizeLimit; else the sum of the memory limits of the containers that
// run for the pod's whole life — the app containers and the native
// sidecars — when every one of them has one (Kubernetes sizes such a
// volume by the pod's memory limit; regular init containers, which have
// exited before the app containers start, are left out, which can only
// make the bound smaller); else DefaultMemoryEmptyDirSize. Never
// unbounded: Docker's tmpfs default is half the host's memory. For a pod
// of one container this is that container's memory limit, as replicas
// have always been sized.
func EmptyDirSize(ps *manifests.PodSpec, v *manifests.Volume) int64 {
	if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Value() > 0 {
		return v.EmptyDir.SizeLimit.Value()
	}
	var sum int64
	add := func(c *manifests.Container) bool {
		lim, ok := c.Resources.Limits["memory"]
		if !ok || lim.Value() <= 0 {
			return false
		}
		sum += lim.Value()
		return true
	}
	for i := range ps.InitContainers {
		if c := &ps.InitContainers[i]; c.IsSidecar() && !add(c) {
			return DefaultMemoryEmptyDirSize
		}
	}
	for i := range ps.Containers {
		if !add(&ps.Containers[i]) {
			return DefaultMemoryEmptyDirSize
		}
	}
	if sum <= 0 {
		return DefaultMemoryEmptyDirSize
	}
	return sum
}

func setPorts(ports []manifests.ContainerPort, cfg *container.Config, hc *container.HostConfig) error {
	for _, p := range ports {
		proto := strings.ToLower(p.Protocol)
		switch proto {
		case "":
			proto = "tcp"
		case "tcp", "udp", "sctp":
		default:
			return fmt.Errorf("port %d: unsupported protocol %q", p.ContainerPort, p.Protocol)
		}
		// A port without hostPort is exposed, not published, as in
		// Kubernetes.
		if err := exposePort(cfg, hc, proto, int(p.ContainerPort), p.HostIP, int(p.HostPort)); err != nil {
			return err
		}
	}
	return nil
}

// exposePort exposes containerPort/proto and, when hostPort is not 0,
// publishes it on hostIP ("" all addresses).
func exposePort(cfg *container.Config, hc *container.HostConfig, proto string, containerPort int, hostIP string, hostPort int) error {
	port, err := nat.NewPort(proto, strconv.Itoa(containerPort))
	if err != nil {
		return fmt.Errorf("port %d: %w", containerPort, err)
	}
	if cfg.ExposedPorts == nil {
		cfg.ExposedPorts = nat.PortSet{}
	}
	cfg.ExposedPorts[port] = struct{}{}
	if hostPort == 0 {
		return nil
	}
	if hc.PortBindings == nil {
		hc.PortBindings = nat.PortMap{}
	}
	hc.PortBindings[port] = append(hc.PortBindings[port], nat.PortBinding{HostIP: hostIP, HostPort: strconv.Itoa(hostPort)})
	return nil
}

func setResources(r manifests.ResourceRequirements, hc *container.HostConfig) {
	limCPU, hasLimCPU := r.Limits["cpu"]
	reqCPU, hasReqCPU := r.Requests["cpu"]
	if !hasReqCPU && hasLimCPU {
		reqCPU, hasReqCPU = limCPU, true
	}
	if hasLimCPU {
		quota := limCPU.MilliValue() * cpuPeriod / 1000
		hc.CPUQuota = max(quota, minQuota)
		hc.CPUPeriod = cpuPeriod
	}
	// Without a request Docker's default weight (1024) applies; the kubelet's
	// BestEffort weight of 2 would starve dockctl's containers against every
	// other container on the host.
	if hasReqCPU {
		hc.CPUShares = min(max(reqCPU.MilliValue()*1024/1000, minShares), maxShares)
	}
	limMem, hasLimMem := r.Limits["memory"]
	reqMem, hasReqMem := r.Requests["memory"]
	if !hasReqMem && hasLimMem {
		reqMem, hasReqMem = limMem, true
	}
	if hasLimMem {
		hc.Memory = limMem.Value()
	}
	if hasReqMem {
		hc.MemoryReservation = reqMem.Value()
	}
}

// setLogs gives the replica log rotation when the daemon's default driver
// takes these options; the driver is named so that a later change of the
// daemon's default cannot make the options invalid.
func setLogs(l ContainerLogs, hc *container.HostConfig) {
	if l.MaxSize <= 0 || (l.Driver != "json-file" && l.Driver != "local") {
		return
	}
	files := l.MaxFiles
	if files < 1 {
		files = 1
	}
	hc.LogConfig = container.LogConfig{Type: l.Driver, Config: map[string]string{
		"max-size": strconv.FormatInt(l.MaxSize, 10),
		"max-file": strconv.Itoa(files),
	}}
}

// setMounts mounts a container's volumeMounts: hostPath as a bind mount,
// emptyDir as emptyDir says (the caller's choice: a replica's own volume or
// its pod's), a persistentVolumeClaim as its claim's volume.
func setMounts(req CreateRequest, vols []manifests.Volume, vms []manifests.VolumeMount, hc *container.HostConfig,
	emptyDir func(v *manifests.Volume, vm manifests.VolumeMount) mount.Mount) error {
	byName := make(map[string]*manifests.Volume, len(vols))
	for i := range vols {
		byName[vols[i].Name] = &vols[i]
	}
	for _, vm := range vms {
		v, ok := byName[vm.Name]
		if !ok {
			return fmt.Errorf("volumeMount %q: no volume of that name", vm.Name)
		}
		if vm.SubPath != "" {
			if err := setSubPathMount(req, v, vm, hc, emptyDir); err != nil { // convert_files.go
				return err
			}
			continue
		}
		switch {
		case v.HostPath != nil && v.HostPath.Type == "DirectoryOrCreate":
			// Only the legacy Binds form creates a missing source
			// directory on API 1.41 (Mount.BindOptions.CreateMountpoint
			// needs 1.44), which is what DirectoryOrCreate asks for.
			// Docker splits that string at every colon: a colon in either
			// path, or a target that is not absolute, would mount another
			// host path than the one the privilege gate judged
			// ("/etc:/../srv/d" with target "rw" mounts /etc).
			if strings.Contains(v.HostPath.Path, ":") || strings.Contains(vm.MountPath, ":") || !path.IsAbs(vm.MountPath) {
				return fmt.Errorf("volumeMount %q: hostPath %q (DirectoryOrCreate) at %q: a colon in either path, or a relative mount path, cannot be passed to Docker unambiguously",
					vm.Name, v.HostPath.Path, vm.MountPath)
			}
			b := v.HostPath.Path + ":" + vm.MountPath
			if vm.ReadOnly {
				b += ":ro"
			}
			hc.Binds = append(hc.Binds, b)
		case v.HostPath != nil:
			hc.Mounts = append(hc.Mounts, mount.Mount{
				Type: mount.TypeBind, Source: v.HostPath.Path, Target: vm.MountPath, ReadOnly: vm.ReadOnly,
			})
		case isPodVolume(v):
			hc.Mounts = append(hc.Mounts, emptyDir(v, vm))
		case v.PersistentVolumeClaim != nil: // claims.go
			m, err := claimMount(req, v, vm)
			if err != nil {
				return err
			}
			hc.Mounts = append(hc.Mounts, m)
		default:
			return fmt.Errorf("volume %q: no supported source (hostPath, emptyDir or persistentVolumeClaim)", v.Name)
		}
	}
	return nil
}

// healthcheck maps an exec probe. Zero timings get Kubernetes' defaults
// rather than Docker's (30s interval), so the probe behaves as on a cluster.
// Docker runs the check during StartPeriod but does not count failures,
// which is the closest it has to initialDelaySeconds.
func healthcheck(p *manifests.Probe) *container.HealthConfig {
	secs := func(v, def int32) time.Duration {
		if v <= 0 {
			v = def
		}
		return time.Duration(v) * time.Second
	}
	retries := p.FailureThreshold
	if retries <= 0 {
		retries = defaultProbeFailures
	}
	return &container.HealthConfig{
		Test:        append([]string{"CMD"}, p.Exec.Command...),
		Interval:    secs(p.PeriodSeconds, defaultProbePeriod),
		Timeout:     secs(p.TimeoutSeconds, defaultProbeTimeout),
		Retries:     int(retries),
		StartPeriod: time.Duration(p.InitialDelaySeconds) * time.Second,
	}
}

func deref(b *bool) bool { return b != nil && *b }
