package manifests

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Seccomp profile types (seccompProfile.type), as Kubernetes names them.
const (
	SeccompRuntimeDefault = "RuntimeDefault"
	SeccompUnconfined     = "Unconfined"
	SeccompLocalhost      = "Localhost"
)

// ResourceGPU is the one extended resource dockctl gives a meaning: a
// limit of N becomes a Docker device request for N GPUs (`docker run
// --gpus N`), which the engine serves through the NVIDIA container
// runtime hook.
const ResourceGPU = "nvidia.com/gpu"

// EffectiveSecurity is what a container runs with once its own
// securityContext is laid over its pod's, as kubelet's
// DetermineEffectiveSecurityContext does: a field the container sets wins,
// one it leaves unset is the pod's. The pod-only fields (supplementalGroups,
// fsGroup, sysctls) are the pod's.
type EffectiveSecurity struct {
	RunAsUser                *int64
	RunAsGroup               *int64
	RunAsNonRoot             *bool
	Privileged               bool
	ReadOnlyRootFilesystem   bool
	AllowPrivilegeEscalation *bool
	Seccomp                  *SeccompProfile
	CapAdd, CapDrop          []string
	// SupplementalGroups are the pod's supplementalGroups, then its
	// fsGroup when it is not among them: on one host fsGroup is a
	// supplementary group of every container (kubelet adds it so), and
	// the group owner the file volumes' writer gives their files.
	SupplementalGroups []int64
}

// EffectiveSecurityContext lays c's securityContext over the pod's.
func EffectiveSecurityContext(ps *PodSpec, c *Container) EffectiveSecurity {
	var e EffectiveSecurity
	if p := ps.SecurityContext; p != nil {
		e.RunAsUser = p.RunAsUser
		e.RunAsGroup = p.RunAsGroup
		e.RunAsNonRoot = p.RunAsNonRoot
		e.Seccomp = p.SeccompProfile
		e.SupplementalGroups = append(e.SupplementalGroups, p.SupplementalGroups...)
		if g := p.FSGroup; g != nil && !containsInt64(e.SupplementalGroups, *g) {
			e.SupplementalGroups = append(e.SupplementalGroups, *g)
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			e.RunAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			e.RunAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			e.RunAsNonRoot = sc.RunAsNonRoot
		}
		if sc.SeccompProfile != nil {
			e.Seccomp = sc.SeccompProfile
		}
		e.Privileged = sc.Privileged != nil && *sc.Privileged
		e.ReadOnlyRootFilesystem = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		e.AllowPrivilegeEscalation = sc.AllowPrivilegeEscalation
		if caps := sc.Capabilities; caps != nil {
			e.CapAdd, e.CapDrop = caps.Add, caps.Drop
		}
	}
	return e
}

func containsInt64(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// NamespacedSysctl reports whether a sysctl belongs to a namespace a
// container has of its own, the only ones a container may set (Docker and
// runc refuse the others), and which: "net" (the network namespace) or
// "ipc". The names are kubelet's and Docker's lists.
func NamespacedSysctl(name string) (ns string, ok bool) {
	name = NormalizeSysctl(name)
	switch {
	case strings.HasPrefix(name, "net."):
		return "net", true
	case strings.HasPrefix(name, "fs.mqueue."):
		return "ipc", true
	}
	switch name {
	case "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
		"kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced":
		return "ipc", true
	}
	return "", false
}

// safeSysctls is Kubernetes' safe set (pkg/kubelet/sysctl/safe_sysctls.go):
// namespaced, and isolated from other pods. Any other sysctl is unsafe and
// needs FlagAllowPrivileged, as a kubelet needs --allowed-unsafe-sysctls.
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
	"net.ipv4.tcp_rmem":                   true,
	"net.ipv4.tcp_wmem":                   true,
}

// SafeSysctl reports whether a sysctl is in Kubernetes' safe set.
func SafeSysctl(name string) bool {
	return safeSysctls[NormalizeSysctl(name)]
}

// NormalizeSysctl returns a sysctl name in the dotted form, as kubelet's
// NormalizeName does (k8s.io/component-helpers/node/util/sysctl): a name
// whose first separator is '/' (net/ipv4/conf/eno2.100/rp_filter) uses '/'
// between its segments and '.' inside one (the interface eno2.100), so the
// two are swapped (net.ipv4.conf.eno2/100.rp_filter); a name whose first
// separator is '.' is already dotted, and a '/' in it is part of a segment.
func NormalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// SeccompRoot is where a Localhost seccomp profile is read from: kubelet's
// default (--root-dir /var/lib/kubelet, seccomp/ below it), so that a
// profile installed for a cluster node serves dockctl too. The controller
// reads it where it runs (mount it there when it runs in a container) and
// hands Docker its content.
const SeccompRoot = "/var/lib/kubelet/seccomp"

// LocalhostProfilePath is the host file of a Localhost profile.
func LocalhostProfilePath(localhostProfile string) string {
	return filepath.Join(SeccompRoot, filepath.Clean("/"+localhostProfile))
}

// securityPrivileges lists the pod's security settings that need an allow
// flag: seccomp Unconfined (pod or container) and every unsafe sysctl
// need FlagAllowPrivileged; a Localhost profile is a host file the
// controller reads, judged as a hostPath (FlagAllowHostPath, and
// FlagAllowHostRoot for a system path).
func securityPrivileges(base string, spec *PodSpec, h Host) []Privilege {
	var out []Privilege
	seccomp := func(p string, sp *SeccompProfile, whose string) {
		switch {
		case sp == nil:
		case sp.Type == SeccompUnconfined:
			out = append(out, Privilege{Path: p + ".type", Flag: FlagAllowPrivileged,
				What: "no seccomp filter (Unconfined) for " + whose})
		case sp.Type == SeccompLocalhost && sp.LocalhostProfile != nil:
			out = append(out, hostFilePrivileges(h, p+".localhostProfile", LocalhostProfilePath(*sp.LocalhostProfile), "a seccomp profile read from the host")...)
		}
	}
	if psc := spec.SecurityContext; psc != nil {
		seccomp(base+".securityContext.seccompProfile", psc.SeccompProfile, "every container of the pod")
		for i, s := range psc.Sysctls {
			if !SafeSysctl(s.Name) {
				out = append(out, Privilege{Path: index(base+".securityContext.sysctls", i),
					Flag: FlagAllowPrivileged, What: "unsafe sysctl " + s.Name + " (not in Kubernetes' safe set)"})
			}
		}
	}
	for _, pc := range containersWithPaths(base, spec) {
		if sc := pc.c.SecurityContext; sc != nil {
			seccomp(pc.path+".securityContext.seccompProfile", sc.SeccompProfile, "a container")
		}
	}
	return out
}

// hostFilePrivileges judges a host file the controller reads as a hostPath
// mount is judged: resolved where the check runs, allowed by a
// FlagAllowHostPath prefix, and, when it is, is inside or holds a system
// path (as written or as resolved), FlagAllowHostRoot on top: the
// controller reads it as root, so a link to /etc/shadow or a file under
// /proc is as much control of the host as mounting it.
func hostFilePrivileges(h Host, path, file, what string) []Privilege {
	clean := filepath.Clean(file)
	resolved, existing, err := h.resolve(clean, false)
	if err != nil {
		return []Privilege{{Path: path, Flag: FlagAllowHostPath,
			What: fmt.Sprintf("%s (%s) that cannot be resolved: %v", what, clean, err), unresolved: err}}
	}
	desc := fmt.Sprintf("%s (%s)", what, resolved)
	if resolved != clean {
		desc = fmt.Sprintf("%s (%s, which is %s)", what, clean, resolved)
	}
	out := []Privilege{{Path: path, Flag: FlagAllowHostPath, What: desc, Value: resolved, existing: existing}}
	if sys, ok := systemMatch(h.protected(), clean, resolved); ok {
		out = append(out, Privilege{Path: path, Flag: FlagAllowHostRoot,
			What: fmt.Sprintf("%s is, holds or is inside the system path %s: control of the host", resolved, sys)})
	}
	return out
}
