package dockerx

import (
	"errors"
	"fmt"
	"path"
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

// BuildConfig converts one replica of a (defaulted) Deployment into the three
// structures of Docker's create call. It is pure and deterministic.
//
// Mapping, as the kubelet does it where Kubernetes has an equivalent:
//   - command → Entrypoint, args → Cmd (command overrides the image's
//     ENTRYPOINT, args its CMD);
//   - a containerPort is exposed; only a hostPort publishes, on hostIP or all
//     addresses;
//   - limits.cpu → CPUQuota over a 100ms CPUPeriod, requests.cpu → CPUShares,
//     limits.memory → Memory, requests.memory → MemoryReservation; a missing
//     request defaults to the limit, as the API server defaults it;
//   - hostPath → bind mount, emptyDir → anonymous volume (removed with the
//     container), emptyDir medium Memory → tmpfs of sizeLimit, or else of
//     the memory limit (as Kubernetes sizes it), or else
//     DefaultMemoryEmptyDirSize;
//   - req.Logs → json-file/local rotation options (max-size, max-file),
//     when that is the daemon's default driver;
//   - readinessProbe.exec → Docker health check, so that Docker reports
//     readiness in `docker ps` and as health_status events. Other probe kinds
//     are run by the controller.
//
// The restart policy is always "no": dockctl restarts containers itself.
func BuildConfig(req CreateRequest) (*container.Config, *container.HostConfig, *network.NetworkingConfig, error) {
	d := req.Deployment
	if d == nil {
		return nil, nil, nil, errors.New("build config: no deployment")
	}
	pod := &d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return nil, nil, nil, fmt.Errorf("build config %s: want exactly one container, have %d", d.Metadata.Name, len(pod.Containers))
	}
	c := &pod.Containers[0]

	cfg := &container.Config{
		Image:      c.Image,
		Entrypoint: c.Command,
		Cmd:        c.Args,
		WorkingDir: c.WorkingDir,
		Labels:     containerLabels(req),
	}
	hc := &container.HostConfig{
		// dockctl is the restart loop; Docker's would race it.
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
	}
	nc := &network.NetworkingConfig{}

	for _, e := range c.Env {
		cfg.Env = append(cfg.Env, e.Name+"="+e.Value)
	}

	grace := int64(manifests.DefaultTerminationGracePeriodSeconds)
	if pod.TerminationGracePeriodSeconds != nil {
		grace = *pod.TerminationGracePeriodSeconds
	}
	stop := int(grace)
	cfg.StopTimeout = &stop

	if err := setPorts(c.Ports, cfg, hc); err != nil {
		return nil, nil, nil, fmt.Errorf("build config %s: %w", d.Metadata.Name, err)
	}
	setResources(c.Resources, hc)
	setLogs(req.Logs, hc)
	if err := setMounts(pod.Volumes, c.VolumeMounts, hc); err != nil {
		return nil, nil, nil, fmt.Errorf("build config %s: %w", d.Metadata.Name, err)
	}
	if sc := c.SecurityContext; sc != nil {
		hc.Privileged = deref(sc.Privileged)
		hc.ReadonlyRootfs = deref(sc.ReadOnlyRootFilesystem)
		if sc.RunAsUser != nil {
			cfg.User = strconv.FormatInt(*sc.RunAsUser, 10)
		}
		if sc.Capabilities != nil {
			hc.CapAdd = sc.Capabilities.Add
			hc.CapDrop = sc.Capabilities.Drop
		}
	}
	if p := c.ReadinessProbe; p != nil && p.Exec != nil {
		cfg.Healthcheck = healthcheck(p)
	}
	if pod.HostPID {
		hc.PidMode = "host"
	}

	switch netName := d.Spec.Template.Metadata.Annotations[manifests.AnnotationNetwork]; {
	case pod.HostNetwork:
		// Docker rejects a hostname in the host's network namespace.
		hc.NetworkMode = "host"
	case netName != "":
		hc.NetworkMode = container.NetworkMode(netName)
		cfg.Hostname = hostname(req)
		if hc.NetworkMode.IsUserDefined() {
			// The deployment name as an alias lets peers on the same
			// network reach any replica by name, as a Service would.
			nc.EndpointsConfig = map[string]*network.EndpointSettings{
				netName: {Aliases: []string{d.Metadata.Name}},
			}
		}
	default:
		hc.NetworkMode = network.NetworkBridge
		cfg.Hostname = hostname(req)
	}
	return cfg, hc, nc, nil
}

// containerLabels returns the template's labels plus the ownership labels,
// which win: a template cannot disown its containers.
func containerLabels(req CreateRequest) map[string]string {
	tl := req.Deployment.Spec.Template.Metadata.Labels
	l := make(map[string]string, len(tl)+3)
	for k, v := range tl {
		l[k] = v
	}
	l[LabelInstance] = req.Instance
	l[LabelDeployment] = req.Deployment.Metadata.Name
	l[LabelTemplateHash] = req.TemplateHash
	return l
}

// hostname is the replica's Hostname. The ordinal is read back from the
// container name (ContainerName ends in -HASH-N); a name of another form
// (tests, fakes) falls back to ordinal 0. Hostnames are fixed at create
// time and are not part of the template hash.
func hostname(req CreateRequest) string {
	ordinal := 0
	if i := strings.LastIndexByte(req.Name, '-'); i >= 0 {
		if n, err := strconv.Atoi(req.Name[i+1:]); err == nil && n >= 0 {
			ordinal = n
		}
	}
	return Hostname(req.Deployment.Metadata.Name, req.TemplateHash, ordinal)
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
		port, err := nat.NewPort(proto, strconv.Itoa(int(p.ContainerPort)))
		if err != nil {
			return fmt.Errorf("port %d: %w", p.ContainerPort, err)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = nat.PortSet{}
		}
		cfg.ExposedPorts[port] = struct{}{}
		if p.HostPort == 0 {
			continue // exposed, not published, as in Kubernetes
		}
		if hc.PortBindings == nil {
			hc.PortBindings = nat.PortMap{}
		}
		hc.PortBindings[port] = append(hc.PortBindings[port], nat.PortBinding{
			HostIP:   p.HostIP, // "" = all addresses
			HostPort: strconv.Itoa(int(p.HostPort)),
		})
	}
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

func setMounts(vols []manifests.Volume, vms []manifests.VolumeMount, hc *container.HostConfig) error {
	byName := make(map[string]*manifests.Volume, len(vols))
	for i := range vols {
		byName[vols[i].Name] = &vols[i]
	}
	for _, vm := range vms {
		v, ok := byName[vm.Name]
		if !ok {
			return fmt.Errorf("volumeMount %q: no volume of that name", vm.Name)
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
		case v.EmptyDir != nil && v.EmptyDir.Medium == "Memory":
			// Never unbounded: Docker's default is half the host's memory.
			size := int64(DefaultMemoryEmptyDirSize)
			switch {
			case v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Value() > 0:
				size = v.EmptyDir.SizeLimit.Value()
			case hc.Memory > 0:
				size = hc.Memory
			}
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeTmpfs, Target: vm.MountPath, ReadOnly: vm.ReadOnly,
				TmpfsOptions: &mount.TmpfsOptions{SizeBytes: size}})
		case v.EmptyDir != nil:
			// No source: Docker creates an anonymous volume, which
			// RemoveContainer deletes with the container (RemoveVolumes).
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
		default:
			return fmt.Errorf("volume %q: no supported source (hostPath or emptyDir)", v.Name)
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
