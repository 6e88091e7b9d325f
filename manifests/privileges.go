package manifests

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Flags of `dockctl controller` that allow settings giving a container
// power over the host.
const (
	FlagAllowPrivileged     = "--allow-privileged"
	FlagAllowHostNamespaces = "--allow-host-namespaces"
	FlagAllowHostPath       = "--allow-host-path"
	FlagAllowHostRoot       = "--allow-host-root"
)

// Privilege is one setting of a deployment that gives its containers power
// over the host. The controller refuses a deployment with a privilege it was
// not started to allow; apply warns about it.
type Privilege struct {
	Path string // field path, e.g. spec.template.spec.hostNetwork
	Flag string // the controller flag that allows it
	What string // why it matters, for the message
}

func (p Privilege) String() string {
	return fmt.Sprintf("%s: %s; the controller refuses it unless started with %s", p.Path, p.What, p.Flag)
}

// socketPaths are where the Docker socket usually lives. Mounting it (or a
// directory that contains it, up to /) hands the container the Docker API:
// control of the host. Such mounts need FlagAllowHostRoot on top of
// FlagAllowHostPath.
var socketPaths = []string{"/var/run/docker.sock", "/run/docker.sock"}

// Privileges lists the deployment's settings that need an allow flag.
// resolve maps a host path to what it really names (following symbolic
// links); nil cleans the path only. A path is judged after cleaning and
// resolving, so that "/var/run/../run/./docker.sock" or a link to / cannot
// slip through.
func Privileges(d *Deployment, resolve func(string) string) []Privilege {
	var out []Privilege
	spec := &d.Spec.Template.Spec
	if spec.HostNetwork {
		out = append(out, Privilege{"spec.template.spec.hostNetwork", FlagAllowHostNamespaces, "the host's network namespace"})
	}
	if spec.HostPID {
		out = append(out, Privilege{"spec.template.spec.hostPID", FlagAllowHostNamespaces, "the host's process namespace"})
	}
	for i, c := range spec.Containers {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			out = append(out, Privilege{fmt.Sprintf("spec.template.spec.containers[%d].securityContext.privileged", i),
				FlagAllowPrivileged, "a privileged container"})
		}
	}
	for i, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		path := fmt.Sprintf("spec.template.spec.volumes[%d].hostPath.path", i)
		p := filepath.Clean(v.HostPath.Path)
		if resolve != nil {
			p = filepath.Clean(resolve(p))
		}
		out = append(out, Privilege{path, FlagAllowHostPath, fmt.Sprintf("a host path mount (%s)", p)})
		if reachesSocket(p) {
			out = append(out, Privilege{path, FlagAllowHostRoot, fmt.Sprintf("%s is / or holds the Docker socket: control of the host", p)})
		}
	}
	return out
}

// reachesSocket reports whether mounting p exposes the Docker socket: p is
// the socket itself or one of its parent directories (/ included).
func reachesSocket(p string) bool {
	for _, s := range socketPaths {
		if p == s || p == "/" || strings.HasPrefix(s, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// EvalSymlinks resolves p's symbolic links when p exists on this machine,
// and returns p unchanged otherwise (for example when the controller runs in
// a container that does not see the host's paths).
func EvalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
