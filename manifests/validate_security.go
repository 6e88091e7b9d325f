package manifests

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The rules below follow Kubernetes' ValidatePodSpec
// (pkg/apis/core/validation/validation.go) for the pod fields with a
// meaning on one host: validatePodSpecSecurityContext, ValidateSecurityContext,
// validateSeccompProfileField, validateSysctls, validateHostAliases,
// validatePodDNSConfig and the extended-resource rules of
// ValidateResourceRequirements. Where dockctl cannot honour a value a
// cluster accepts (a sysctl no container may set, dnsConfig with
// hostNetwork), it refuses it here rather than fail at create time.

// Kubernetes' limits on dnsConfig (MaxDNSNameservers, MaxDNSSearchPaths,
// MaxDNSSearchListChars).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// The pod's dnsPolicy (Kubernetes' DNSPolicy values).
const (
	DNSClusterFirst            = "ClusterFirst"
	DNSClusterFirstWithHostNet = "ClusterFirstWithHostNet"
	DNSDefault                 = "Default"
	DNSNone                    = "None"
)

// Kubernetes' sysctl name rule (SysctlContainSlashFmt: segments joined by
// dots or slashes) and its maximal length.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const sysctlMaxLength = 253

// podSecurity checks the pod's securityContext, hostAliases, hostname,
// subdomain and dnsConfig.
func (v *validator) podSecurity(p string, ps *PodSpec) {
	if sc := ps.SecurityContext; sc != nil {
		sp := child(p, "securityContext")
		v.userID(child(sp, "runAsUser"), sc.RunAsUser)
		v.groupID(child(sp, "runAsGroup"), sc.RunAsGroup)
		v.groupID(child(sp, "fsGroup"), sc.FSGroup)
		for i, g := range sc.SupplementalGroups {
			v.groupID(index(child(sp, "supplementalGroups"), i), &g)
		}
		v.seccomp(child(sp, "seccompProfile"), sc.SeccompProfile)
		v.sysctls(child(sp, "sysctls"), sc.Sysctls, ps.HostNetwork)
	}
	for i, ha := range ps.HostAliases {
		hp := index(child(p, "hostAliases"), i)
		if ha.IP == "" {
			v.add(child(hp, "ip"), "required")
		} else if net.ParseIP(ha.IP) == nil {
			v.add(child(hp, "ip"), "invalid value %q: must be a valid IP address", ha.IP)
		}
		for j, h := range ha.Hostnames {
			if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
				v.add(index(child(hp, "hostnames"), j), "invalid value %q: %s", h, strings.Join(msgs, "; "))
			}
		}
	}
	// Kubernetes' ValidatePodSpec: each a DNS-1123 label.
	if ps.Hostname != "" {
		v.dnsLabel(child(p, "hostname"), ps.Hostname)
	}
	if ps.Subdomain != "" {
		v.dnsLabel(child(p, "subdomain"), ps.Subdomain)
	}
	v.dnsPolicy(p, ps)
	if dc := ps.DNSConfig; dc != nil {
		dp := child(p, "dnsConfig")
		if ps.HostNetwork {
			// A cluster merges it into the node's resolver settings;
			// Docker refuses any resolver setting in the host's network.
			v.add(dp, "may not be set when 'hostNetwork' is true: a container in the host's network uses the host's resolver")
		}
		if len(dc.Nameservers) > maxDNSNameservers {
			v.add(child(dp, "nameservers"), "must not have more than %d nameservers: %v", maxDNSNameservers, dc.Nameservers)
		}
		for i, ns := range dc.Nameservers {
			if net.ParseIP(ns) == nil {
				v.add(index(child(dp, "nameservers"), i), "invalid value %q: must be a valid IP address", ns)
			}
		}
		if len(dc.Searches) > maxDNSSearchPaths {
			v.add(child(dp, "searches"), "must not have more than %d search paths", maxDNSSearchPaths)
		}
		if n := len(strings.Join(dc.Searches, " ")); n > maxDNSSearchListChars {
			v.add(child(dp, "searches"), "must not have more than %d characters (including spaces) in the search list", maxDNSSearchListChars)
		}
		for i, s := range dc.Searches {
			// A trailing dot is allowed (a fully qualified name).
			if msgs := validation.IsDNS1123Subdomain(strings.TrimSuffix(s, ".")); len(msgs) > 0 {
				v.add(index(child(dp, "searches"), i), "invalid value %q: %s", s, strings.Join(msgs, "; "))
			}
		}
		for i, o := range dc.Options {
			if o.Name == "" {
				v.add(child(index(child(dp, "options"), i), "name"), "required")
			}
		}
	}
}

// dnsPolicy checks the pod's dnsPolicy as Kubernetes' validateDNSPolicy
// does, and refuses the one value dockctl cannot honour.
func (v *validator) dnsPolicy(p string, ps *PodSpec) {
	dp := child(p, "dnsPolicy")
	switch ps.DNSPolicy {
	case "", DNSClusterFirst, DNSDefault:
	case DNSClusterFirstWithHostNet:
		if ps.HostNetwork {
			// Docker gives a container in the host's network the host's
			// resolver and refuses any other: the cluster's names would
			// not resolve, which is what this policy asks for.
			v.add(dp, `unsupported by dockctl: %q with hostNetwork (a container in the host's network uses the host's resolver: use "Default")`, ps.DNSPolicy)
		}
	case DNSNone:
		switch {
		case ps.DNSConfig == nil:
			v.add(dp, "must provide `dnsConfig` when `dnsPolicy` is None")
		case len(ps.DNSConfig.Nameservers) == 0:
			v.add(child(p, "dnsConfig.nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")
		}
	default:
		v.add(dp, `unsupported value %q: supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"`, ps.DNSPolicy)
	}
}

// containerSecurity checks a container's securityContext.
func (v *validator) containerSecurity(p string, c *Container) {
	sc := c.SecurityContext
	if sc == nil {
		return
	}
	sp := child(p, "securityContext")
	v.userID(child(sp, "runAsUser"), sc.RunAsUser)
	v.groupID(child(sp, "runAsGroup"), sc.RunAsGroup)
	if caps := sc.Capabilities; caps != nil {
		for _, list := range []struct {
			name string
			caps []string
		}{{"add", caps.Add}, {"drop", caps.Drop}} {
			for i, c := range list.caps {
				if strings.TrimSpace(c) == "" {
					v.add(index(child(sp, "capabilities."+list.name), i), "required")
				}
			}
		}
	}
	v.seccomp(child(sp, "seccompProfile"), sc.SeccompProfile)
	// ValidateSecurityContext: no_new_privs and what needs privileges to
	// be gained contradict each other.
	if ape := sc.AllowPrivilegeEscalation; ape != nil && !*ape {
		if sc.Privileged != nil && *sc.Privileged {
			v.add(sp, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true")
		}
		// Kubernetes compares the name as written: only the literal
		// CAP_SYS_ADMIN is refused (SYS_ADMIN or cap_sys_admin pass its
		// validation), and dockctl refuses no more than a cluster does.
		if caps := sc.Capabilities; caps != nil {
			for _, c := range caps.Add {
				if c == "CAP_SYS_ADMIN" {
					v.add(sp, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN")
				}
			}
		}
	}
}

// userID and groupID are IsValidUserID and IsValidGroupID.
func (v *validator) userID(p string, id *int64) {
	if id != nil && len(validation.IsValidUserID(*id)) > 0 {
		v.add(p, "must be between 0 and 2147483647, inclusive")
	}
}

func (v *validator) groupID(p string, id *int64) {
	if id != nil && len(validation.IsValidGroupID(*id)) > 0 {
		v.add(p, "must be between 0 and 2147483647, inclusive")
	}
}

// seccomp is validateSeccompProfileField: a Localhost profile names a
// relative path without "..", below SeccompRoot.
func (v *validator) seccomp(p string, sp *SeccompProfile) {
	if sp == nil {
		return
	}
	switch sp.Type {
	case SeccompRuntimeDefault, SeccompUnconfined:
		if sp.LocalhostProfile != nil {
			v.add(child(p, "localhostProfile"), "can only be set when seccomp type is Localhost")
		}
	case SeccompLocalhost:
		lp := child(p, "localhostProfile")
		switch {
		case sp.LocalhostProfile == nil || *sp.LocalhostProfile == "":
			v.add(lp, "must be set when seccomp type is Localhost")
		case path.IsAbs(*sp.LocalhostProfile):
			v.add(lp, "must be a relative path")
		case slices.Contains(strings.Split(*sp.LocalhostProfile, "/"), ".."):
			v.add(lp, "must not contain '..'")
		}
	case "":
		v.add(child(p, "type"), "required")
	default:
		v.add(child(p, "type"), `unsupported value %q: must be "RuntimeDefault", "Unconfined" or "Localhost"`, sp.Type)
	}
}

// sysctls is validateSysctls, plus what one host refuses: a sysctl that
// is not namespaced (no container may set it), a network one in the
// host's network namespace (Kubernetes refuses it too).
func (v *validator) sysctls(p string, sysctls []Sysctl, hostNetwork bool) {
	seen := map[string]bool{}
	for i, s := range sysctls {
		np := child(index(p, i), "name")
		switch {
		case s.Name == "":
			v.add(np, "required")
			continue
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			v.add(np, "invalid value %q: must have at most %d characters and match regex %s", s.Name, sysctlMaxLength, sysctlName.String())
			continue
		}
		canon := NormalizeSysctl(s.Name)
		if seen[canon] {
			v.add(np, "duplicate value %q", s.Name)
		}
		seen[canon] = true
		ns, ok := NamespacedSysctl(canon)
		switch {
		case !ok:
			v.add(np, "unsupported value %q: not a namespaced sysctl, which no container may set (namespaced: net.*, fs.mqueue.*, kernel.msg*, kernel.sem, kernel.shm*)", s.Name)
		case ns == "net" && hostNetwork:
			v.add(np, "may not be specified when 'hostNetwork' is true")
		}
	}
}

// isSupportedResource tells the resource names dockctl maps.
func isSupportedResource(name string) bool {
	return name == "cpu" || name == "memory" || name == ResourceGPU
}

// extendedResources applies Kubernetes' rules for an extended resource
// (nvidia.com/gpu): a whole number, no overcommit (a request equals the
// limit), and a limit whenever there is a request.
func (v *validator) extendedResources(p string, r *ResourceRequirements) {
	lim, okl := r.Limits[ResourceGPU]
	req, okr := r.Requests[ResourceGPU]
	if okl && lim.MilliValue()%1000 != 0 {
		v.add(key(child(p, "limits"), ResourceGPU), "must be an integer")
	}
	if okr && req.MilliValue()%1000 != 0 {
		v.add(key(child(p, "requests"), ResourceGPU), "must be an integer")
	}
	switch {
	case okr && !okl:
		v.add(key(child(p, "limits"), ResourceGPU), "Limit must be set for non overcommitable resources")
	case okr && okl && req.Cmp(lim) != 0:
		v.add(key(child(p, "requests"), ResourceGPU), "must be equal to %s limit of %s", ResourceGPU, lim.String())
	}
}

// unsupportedResourceMsg is the message for a resource dockctl does not map.
func unsupportedResourceMsg(k string) string {
	return fmt.Sprintf(`unsupported resource %q: only "cpu", "memory" and %q are supported`, k, ResourceGPU)
}
