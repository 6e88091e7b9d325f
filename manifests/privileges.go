package manifests

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Flags of `dockctl controller` that allow settings giving a container
// power over the host.
const (
	FlagAllowPrivileged     = "--allow-privileged"
	FlagAllowHostNamespaces = "--allow-host-namespaces"
	FlagAllowHostPath       = "--allow-host-path"
	FlagAllowHostRoot       = "--allow-host-root"
	FlagAllowCapabilities   = "--allow-capabilities"
	FlagAllowNetworks       = "--allow-networks"
	FlagAllowHostPorts      = "--allow-host-ports"
)

// Privilege is one setting of a deployment that gives its containers power
// over the host. The controller refuses a deployment with a privilege its
// Policy does not grant; apply warns about every one.
type Privilege struct {
	Path string // field path, e.g. spec.template.spec.hostNetwork
	Flag string // the controller flag that allows it
	What string // why it matters, for the message
	// Value is what the flag must name to allow it: the capability
	// (upper case, without CAP_) for FlagAllowCapabilities, the host path
	// as resolved for FlagAllowHostPath, the network for
	// FlagAllowNetworks, the port for FlagAllowHostPorts. Empty for the
	// boolean flags.
	Value string
	// existing is, for a host path, the resolved part of it that exists
	// (the whole path, or for DirectoryOrCreate/FileOrCreate the nearest
	// existing ancestor); unresolved says why the path could not be
	// resolved, which no flag allows.
	existing   string
	unresolved error
}

func (p Privilege) String() string {
	if p.unresolved != nil {
		return fmt.Sprintf("%s: %s; the controller refuses a host path it cannot resolve (when it runs in a container, mount each %s prefix into it at the same path)",
			p.Path, p.What, FlagAllowHostPath)
	}
	flag := p.Flag
	if p.Value != "" {
		flag += "=" + p.Value
	}
	return fmt.Sprintf("%s: %s; the controller refuses it unless started with %s", p.Path, p.What, flag)
}

// Host says how host paths are judged on the machine where the check runs.
type Host struct {
	// Resolve follows symbolic links: filepath.EvalSymlinks. An error (the
	// path does not exist here, or cannot be read) means the path cannot
	// be judged, and the controller refuses it. Nil only cleans paths
	// lexically, which is for tests: the controller and apply resolve.
	Resolve func(string) (string, error)
	// Protected are more system paths, on top of systemPaths: the socket
	// of a custom DOCKER_HOST, the state directory. Mounting one of them,
	// something inside one, or a directory holding one needs
	// FlagAllowHostRoot.
	Protected []string
	// Network is the instance's own network, the one Docker network
	// dockctl.io/network may name without FlagAllowNetworks.
	Network string
}

// systemPaths need FlagAllowHostRoot (and a FlagAllowHostPath prefix that
// covers them): the path itself, anything below it and every directory
// holding it (/, /var, /var/lib…). Writing to any of them, or reading some
// (/root, /etc/shadow, /proc of the host), is control of the host; the
// Docker socket is control of the host outright.
var systemPaths = []string{
	"/etc", "/proc", "/sys", "/dev", "/root", "/boot",
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr",
	"/var/lib/docker", "/var/lib/containerd",
	// The runtime state of the host's root daemons: the sockets of Docker
	// (docker.sock, and docker/containerd/containerd.sock of the containerd
	// dockerd starts itself), containerd, systemd and D-Bus (start a unit
	// as root), snapd, libvirt, podman… Any one of them is control of the
	// host, and a list of them always misses one.
	"/run", "/var/run",
}

// dockerDefaultCapabilities is Docker's default capability set: adding one
// of them grants nothing a container does not have by default (they matter
// after a drop of ALL).
var dockerDefaultCapabilities = map[string]bool{
	"CHOWN": true, "DAC_OVERRIDE": true, "FSETID": true, "FOWNER": true, "MKNOD": true,
	"NET_RAW": true, "SETGID": true, "SETUID": true, "SETFCAP": true, "SETPCAP": true,
	"NET_BIND_SERVICE": true, "SYS_CHROOT": true, "KILL": true, "AUDIT_WRITE": true,
}

// NormalizeCapability returns a capability name as dockctl compares them:
// upper case, without the CAP_ prefix (Docker and Kubernetes accept both).
func NormalizeCapability(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	return strings.TrimPrefix(c, "CAP_")
}

// Privileges lists the deployment's settings that need an allow flag, of
// the pod and of every one of its containers (init containers and sidecars
// included, in AllContainers order), each under its own field path. Host
// paths are judged as h resolves them: cleaned, symbolic links followed, so
// that "/var/run/../run/./docker.sock" or a link to / cannot slip through,
// and compared by whole path components (/etcfoo is not under /etc).
//
// seccompProfile Unconfined and unsafe sysctls need FlagAllowPrivileged, a
// Localhost seccomp profile FlagAllowHostPath, and FlagAllowHostRoot in a
// system path, as a hostPath (security.go); a field that weakens isolation
// needs a Privilege here when it is added.
func Privileges(d *Deployment, h Host) []Privilege {
	return TemplatePrivileges(&d.Spec.Template, "spec.template", h)
}

// TemplatePrivileges is Privileges for the pod template t of any workload
// kind, at path base in its object (spec.template, or
// spec.jobTemplate.spec.template for a CronJob; "" for a Pod, whose
// metadata and spec are the template's): every kind's pods pass the same
// gates (docs/design.md, workload kinds).
func TemplatePrivileges(t *PodTemplateSpec, base string, h Host) []Privilege {
	var out []Privilege
	spec := &t.Spec
	specPath := child(base, "spec")
	if spec.HostNetwork {
		out = append(out, Privilege{Path: child(specPath, "hostNetwork"), Flag: FlagAllowHostNamespaces, What: "the host's network namespace"})
	}
	if spec.HostPID {
		out = append(out, Privilege{Path: child(specPath, "hostPID"), Flag: FlagAllowHostNamespaces, What: "the host's process namespace"})
	}
	// Validation refuses these values now, but a record stored by an
	// earlier release may still carry them: they must not bypass the gate.
	if n, ok := t.Metadata.Annotations[AnnotationNetwork]; ok {
		path := key(child(base, "metadata.annotations"), AnnotationNetwork)
		switch ln := strings.ToLower(strings.TrimSpace(n)); {
		case ln == "host":
			out = append(out, Privilege{Path: path, Flag: FlagAllowHostNamespaces, What: "the host's network namespace"})
		case strings.HasPrefix(ln, "container:"):
			out = append(out, Privilege{Path: path, Flag: FlagAllowHostNamespaces, What: fmt.Sprintf("the network namespace of another container (%s)", n)})
		}
		// Docker's network modes are exact words (container.NetworkMode:
		// "none", "host", "container:…"); any other value, "None" or
		// "HOST" included, names a network Docker joins. "none" is no
		// network (a record of an earlier release), and the instance's
		// own every pod is on anyway; any other is another instance's or
		// another application's: its containers become reachable, and
		// reach the pod, past every Service.
		if n != "none" && n != "host" && !strings.HasPrefix(n, "container:") && n != h.Network {
			out = append(out, Privilege{Path: path, Flag: FlagAllowNetworks,
				What: fmt.Sprintf("joining the Docker network %s, which is not the instance's", n), Value: n})
		}
	}
	// A host port is a port of the host, as Pod Security's baseline
	// level says in forbidding them: one on the loopback can squat a port
	// a local service trusts. Every container's, hostNetwork or not.
	for _, pc := range containersWithPaths(specPath, spec) {
		for j, p := range pc.c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = "TCP"
			}
			out = append(out, Privilege{Path: fmt.Sprintf("%s.ports[%d].hostPort", pc.path, j), Flag: FlagAllowHostPorts,
				What: fmt.Sprintf("host port %d/%s", p.HostPort, proto), Value: strconv.Itoa(int(p.HostPort))})
		}
	}
	// The host field of a probe or a lifecycle hook: the prober dials it
	// from the host's network (the controller's, or a helper's), so any
	// address would do, the host's loopback and a cloud's metadata
	// service included. Pod Security's baseline level forbids it (v1.34,
	// KEP-4940); the pod's own address is the default.
	for _, pc := range containersWithPaths(specPath, spec) {
		c := pc.c
		for _, h := range []struct {
			field string
			get   *HTTPGetAction
			tcp   *TCPSocketAction
		}{
			{"readinessProbe", probeGet(c.ReadinessProbe), probeTCP(c.ReadinessProbe)},
			{"livenessProbe", probeGet(c.LivenessProbe), probeTCP(c.LivenessProbe)},
			{"startupProbe", probeGet(c.StartupProbe), probeTCP(c.StartupProbe)},
			{"lifecycle.postStart", hookGet(c.Lifecycle, true), hookTCP(c.Lifecycle, true)},
			{"lifecycle.preStop", hookGet(c.Lifecycle, false), hookTCP(c.Lifecycle, false)},
		} {
			var path, host string
			switch {
			case h.get != nil && h.get.Host != "":
				path, host = h.field+".httpGet.host", h.get.Host
			case h.tcp != nil && h.tcp.Host != "":
				path, host = h.field+".tcpSocket.host", h.tcp.Host
			default:
				continue
			}
			out = append(out, Privilege{Path: pc.path + "." + path, Flag: FlagAllowHostNamespaces,
				What: fmt.Sprintf("connections to %s from the host's network", host)})
		}
	}
	// Every container of the pod is judged: an init container or a
	// sidecar runs on the host as much as an app container does.
	for _, pc := range containersWithPaths(specPath, spec) {
		sc := pc.c.SecurityContext
		if sc == nil {
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			out = append(out, Privilege{Path: pc.path + ".securityContext.privileged",
				Flag: FlagAllowPrivileged, What: "a privileged container"})
		}
		if sc.Capabilities == nil {
			continue
		}
		for j, capName := range sc.Capabilities.Add {
			name := NormalizeCapability(capName)
			if dockerDefaultCapabilities[name] {
				continue
			}
			what := fmt.Sprintf("capability %s, beyond Docker's default set", name)
			if name == "ALL" {
				what = "every capability"
			}
			out = append(out, Privilege{Path: fmt.Sprintf("%s.securityContext.capabilities.add[%d]", pc.path, j),
				Flag: FlagAllowCapabilities, What: what, Value: name})
		}
	}
	out = append(out, securityPrivileges(specPath, spec, h)...)
	// Host paths are judged per volume, whichever containers mount them
	// (init containers included), and even when none does: a volume is
	// part of the pod.
	protected := h.protected()
	for i, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		path := child(index(child(specPath, "volumes"), i), "hostPath.path")
		clean := filepath.Clean(v.HostPath.Path)
		creates := v.HostPath.Type == "DirectoryOrCreate" || v.HostPath.Type == "FileOrCreate"
		resolved, existing, err := h.resolve(clean, creates)
		if err != nil {
			out = append(out, Privilege{Path: path, Flag: FlagAllowHostPath,
				What: fmt.Sprintf("a host path mount (%s) that cannot be resolved: %v", clean, err), unresolved: err})
			continue
		}
		what := fmt.Sprintf("a host path mount (%s)", resolved)
		if resolved != clean {
			what = fmt.Sprintf("a host path mount (%s, which is %s)", clean, resolved)
		}
		out = append(out, Privilege{Path: path, Flag: FlagAllowHostPath, What: what, Value: resolved, existing: existing})
		// Judge the path as written too: should resolving go wrong, a
		// lexical match still counts.
		if sys, ok := systemMatch(protected, clean, resolved); ok {
			out = append(out, Privilege{Path: path, Flag: FlagAllowHostRoot,
				What: fmt.Sprintf("%s is, holds or is inside the system path %s: control of the host", resolved, sys)})
		}
	}
	return out
}

// podContainer is one container of a pod and its field path.
type podContainer struct {
	path string // e.g. spec.template.spec.initContainers[0]
	c    *Container
}

// containersWithPaths returns every container of ps in AllContainers order
// (init containers, then app containers), each with its path under base.
func containersWithPaths(base string, ps *PodSpec) []podContainer {
	out := make([]podContainer, 0, len(ps.InitContainers)+len(ps.Containers))
	for i := range ps.InitContainers {
		out = append(out, podContainer{index(child(base, "initContainers"), i), &ps.InitContainers[i]})
	}
	for i := range ps.Containers {
		out = append(out, podContainer{index(child(base, "containers"), i), &ps.Containers[i]})
	}
	return out
}

// protected returns the system paths, each both as written and as resolved.
func (h Host) protected() []string {
	var out []string
	for _, p := range append(slices.Clone(systemPaths), h.Protected...) {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		out = append(out, p)
		if h.Resolve != nil {
			if r, err := h.Resolve(p); err == nil && r != p {
				out = append(out, filepath.Clean(r))
			}
		}
	}
	return out
}

// resolve returns p with its symbolic links followed, and the part of it
// that exists. When p does not exist and creates is set (Docker creates it),
// its nearest existing ancestor is resolved and the rest appended.
func (h Host) resolve(p string, creates bool) (resolved, existing string, err error) {
	if !filepath.IsAbs(p) {
		// Validation refuses these; a record from elsewhere might not be
		// validated, and a relative path would resolve against the
		// controller's working directory.
		return "", "", fmt.Errorf("%q is not an absolute path", p)
	}
	if h.Resolve == nil {
		return p, p, nil
	}
	r, err := h.Resolve(p)
	if err == nil {
		r = filepath.Clean(r)
		return r, r, nil
	}
	if !creates || !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	tail := ""
	for dir := p; ; {
		parent := filepath.Dir(dir)
		tail = filepath.Join(filepath.Base(dir), tail)
		if parent == dir {
			return "", "", err
		}
		dir = parent
		ra, perr := h.Resolve(dir)
		if perr == nil {
			ra = filepath.Clean(ra)
			return filepath.Join(ra, tail), ra, nil
		}
		if !errors.Is(perr, fs.ErrNotExist) {
			return "", "", perr
		}
	}
}

// systemMatch reports the system path that one of paths is, is inside, or
// holds.
func systemMatch(system []string, paths ...string) (string, bool) {
	for _, p := range paths {
		for _, s := range system {
			if Within(p, s) || Within(s, p) {
				return s, true
			}
		}
	}
	return "", false
}

// Within reports whether the clean absolute path p is root or below it,
// comparing whole components: /etcfoo is not within /etc.
func Within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// Policy is what a controller was started to allow.
type Policy struct {
	Privileged     bool // FlagAllowPrivileged
	HostNamespaces bool // FlagAllowHostNamespaces
	HostRoot       bool // FlagAllowHostRoot
	// HostPaths are the allowed host path prefixes (FlagAllowHostPath); "/"
	// allows any path that is not a system path. A prefix counts only if
	// it resolves where the controller runs.
	HostPaths []string
	// Capabilities are the capabilities beyond Docker's default set that
	// may be added (FlagAllowCapabilities); "ALL" allows any.
	Capabilities []string
	// Networks are the Docker networks dockctl.io/network may name
	// besides the instance's own (FlagAllowNetworks).
	Networks []string
	// HostPorts are the host ports containers may publish
	// (FlagAllowHostPorts).
	HostPorts []PortRange
	// Host judges host paths where the controller runs.
	Host Host
}

// AllowsHostPort reports whether the controller may publish host port
// port (FlagAllowHostPorts): the gate a hostPort passes, which the
// gateway's ports below 1024 pass too.
func (p Policy) AllowsHostPort(port int) bool {
	return p.allows(Privilege{Flag: FlagAllowHostPorts, Value: strconv.Itoa(port)})
}

// Refused returns the privileges d needs that p does not grant: the
// controller creates and starts no container of a template with any.
func (p Policy) Refused(d *Deployment) []Privilege {
	return p.RefusedTemplate(&d.Spec.Template, "spec.template")
}

// RefusedTemplate is Refused for the pod template t of any workload kind,
// at path base in its object (TemplatePrivileges).
func (p Policy) RefusedTemplate(t *PodTemplateSpec, base string) []Privilege {
	var out []Privilege
	for _, pr := range TemplatePrivileges(t, base, p.Host) {
		if !p.allows(pr) {
			out = append(out, pr)
		}
	}
	return out
}

func (p Policy) allows(pr Privilege) bool {
	switch pr.Flag {
	case FlagAllowPrivileged:
		return p.Privileged
	case FlagAllowHostNamespaces:
		return p.HostNamespaces
	case FlagAllowHostRoot:
		return p.HostRoot
	case FlagAllowCapabilities:
		for _, c := range p.Capabilities {
			if c := NormalizeCapability(c); c == "ALL" || c == pr.Value {
				return true
			}
		}
		return false
	case FlagAllowNetworks:
		return slices.Contains(p.Networks, pr.Value)
	case FlagAllowHostPorts:
		n, err := strconv.Atoi(pr.Value)
		if err != nil {
			return false
		}
		for _, r := range p.HostPorts {
			if r.From <= n && n <= r.To {
				return true
			}
		}
		return false
	case FlagAllowHostPath:
		if pr.unresolved != nil {
			return false
		}
		for _, prefix := range p.HostPaths {
			if prefix == "" || !filepath.IsAbs(prefix) {
				continue
			}
			rp, _, err := p.Host.resolve(filepath.Clean(prefix), false)
			if err != nil {
				continue // not mounted here: nothing below it can be judged
			}
			if Within(pr.Value, rp) && Within(pr.existing, rp) {
				return true
			}
		}
		return false
	}
	return false
}

func probeGet(p *Probe) *HTTPGetAction {
	if p == nil {
		return nil
	}
	return p.HTTPGet
}

func probeTCP(p *Probe) *TCPSocketAction {
	if p == nil {
		return nil
	}
	return p.TCPSocket
}

// hook is l's postStart or preStop handler, nil if none.
func hook(l *Lifecycle, postStart bool) *LifecycleHandler {
	switch {
	case l == nil:
		return nil
	case postStart:
		return l.PostStart
	}
	return l.PreStop
}

func hookGet(l *Lifecycle, postStart bool) *HTTPGetAction {
	if h := hook(l, postStart); h != nil {
		return h.HTTPGet
	}
	return nil
}

func hookTCP(l *Lifecycle, postStart bool) *TCPSocketAction {
	if h := hook(l, postStart); h != nil {
		return h.TCPSocket
	}
	return nil
}

// PortRange is a range of ports, both ends included.
type PortRange struct{ From, To int }

// ParsePortRanges reads the values of FlagAllowHostPorts: each PORT or
// FROM-TO, ports 1 to 65535.
func ParsePortRanges(values []string) ([]PortRange, error) {
	var out []PortRange
	for _, v := range values {
		from, to, isRange := strings.Cut(strings.TrimSpace(v), "-")
		if !isRange {
			to = from
		}
		a, errA := strconv.Atoi(from)
		b, errB := strconv.Atoi(to)
		switch {
		case errA != nil || errB != nil:
			return nil, fmt.Errorf("%s=%s: want PORT or FROM-TO", FlagAllowHostPorts, v)
		case a < 1 || b > 65535 || a > b:
			return nil, fmt.Errorf("%s=%s: ports are 1 to 65535, FROM not above TO", FlagAllowHostPorts, v)
		}
		out = append(out, PortRange{a, b})
	}
	return out, nil
}

// DockerSocket returns the path of the unix socket named by a DOCKER_HOST
// value, or "" for any other kind of address.
func DockerSocket(dockerHost string) string {
	if s, ok := strings.CutPrefix(dockerHost, "unix://"); ok && filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	return ""
}
