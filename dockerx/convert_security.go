package dockerx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/dockctl/dockctl/manifests"
)

// Docker's security options (HostConfig.SecurityOpt).
const (
	securityOptNoNewPrivileges = "no-new-privileges"
	securityOptSeccompOff      = "seccomp=unconfined"
)

// maxNameservers is the resolver's limit (glibc reads three), which
// kubelet applies to a pod's merged nameservers too.
const maxNameservers = 3

// setSecurity maps a template container's effective security context (its
// own over its pod's, manifests.EffectiveSecurityContext), and what else
// it asks of its own process, as kubelet and a CRI runtime map them:
//   - runAsUser[:runAsGroup] → User; runAsGroup alone → the image's
//     user (imageUser, "0" when it names none) with that group, as
//     kubelet takes the image's uid; neither, the image's USER applies;
//   - supplementalGroups, then fsGroup → GroupAdd;
//   - allowPrivilegeEscalation: false → no-new-privileges;
//   - seccompProfile Unconfined → seccomp=unconfined; Localhost →
//     seccomp=<the profile's JSON> (imageUser's sibling seccompProfile, read
//     by the reconciler from the host); RuntimeDefault is Docker's default
//     profile, which every container gets anyway;
//   - privileged, readOnlyRootFilesystem, capabilities.add/drop as such;
//   - stdin, stdinOnce, tty → OpenStdin, StdinOnce, Tty;
//   - limits["nvidia.com/gpu"] N → a device request for N GPUs, as
//     `docker run --gpus N`.
func setSecurity(ps *manifests.PodSpec, c *manifests.Container, imageUser, seccompProfile string, cfg *container.Config, hc *container.HostConfig) {
	e := manifests.EffectiveSecurityContext(ps, c)
	switch {
	case e.RunAsUser != nil:
		cfg.User = strconv.FormatInt(*e.RunAsUser, 10)
		if e.RunAsGroup != nil {
			cfg.User += ":" + strconv.FormatInt(*e.RunAsGroup, 10)
		}
	case e.RunAsGroup != nil:
		cfg.User = imageUserPart(imageUser) + ":" + strconv.FormatInt(*e.RunAsGroup, 10)
	}
	for _, g := range e.SupplementalGroups {
		hc.GroupAdd = append(hc.GroupAdd, strconv.FormatInt(g, 10))
	}
	hc.Privileged = e.Privileged
	hc.ReadonlyRootfs = e.ReadOnlyRootFilesystem
	hc.CapAdd = e.CapAdd
	hc.CapDrop = e.CapDrop
	if ape := e.AllowPrivilegeEscalation; ape != nil && !*ape {
		hc.SecurityOpt = append(hc.SecurityOpt, securityOptNoNewPrivileges)
	}
	switch sp := e.Seccomp; {
	case sp == nil:
	case sp.Type == manifests.SeccompUnconfined:
		hc.SecurityOpt = append(hc.SecurityOpt, securityOptSeccompOff)
	case sp.Type == manifests.SeccompLocalhost:
		// checkSeccomp made sure the profile was loaded.
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+seccompProfile)
	}
	cfg.OpenStdin = c.Stdin
	cfg.StdinOnce = c.StdinOnce
	cfg.Tty = c.TTY
	if q, ok := c.Resources.Limits[manifests.ResourceGPU]; ok && q.Value() > 0 {
		hc.DeviceRequests = append(hc.DeviceRequests, container.DeviceRequest{
			Count:        int(q.Value()),
			Capabilities: [][]string{{"gpu"}},
		})
	}
}

// setPodOwner gives the container that owns the pod's network and IPC
// namespaces (a pod's only container, or its holder) what Docker ties to
// them and refuses on a container that joins another's: the hostAliases
// as extra /etc/hosts entries, the pod's sysctls, and dnsConfig merged
// into the resolver settings its dnsPolicy gives it, as kubelet merges it
// (nameservers and searches appended without duplicates, options
// overriding by name; at most three nameservers): the cluster's for
// ClusterFirst, the host's for Default, none for None.
func setPodOwner(ps *manifests.PodSpec, hc *container.HostConfig) {
	for _, ha := range ps.HostAliases {
		for _, h := range ha.Hostnames {
			hc.ExtraHosts = append(hc.ExtraHosts, h+":"+ha.IP)
		}
	}
	if sc := ps.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		hc.Sysctls = make(map[string]string, len(sc.Sysctls))
		for _, s := range sc.Sysctls {
			// Docker takes the dotted form only: '.' and '/' swapped
			// as kubelet swaps them for its runtime.
			hc.Sysctls[manifests.NormalizeSysctl(s.Name)] = s.Value
		}
	}
	if hc.NetworkMode.IsHost() {
		return
	}
	switch ps.DNSPolicy {
	case manifests.DNSDefault, manifests.DNSNone:
		// Default: the host's resolver, which Docker gives a container
		// without --dns (on a user-defined network through its embedded
		// server); None: dnsConfig alone. Neither resolves the cluster's
		// names.
		hc.DNS, hc.DNSSearch, hc.DNSOptions = nil, nil, nil
	}
	dc := ps.DNSConfig
	if dc == nil {
		return
	}
	hc.DNS = appendNew(hc.DNS, dc.Nameservers...)
	if len(hc.DNS) > maxNameservers {
		hc.DNS = hc.DNS[:maxNameservers]
	}
	hc.DNSSearch = appendNew(hc.DNSSearch, dc.Searches...)
	hc.DNSOptions = mergeDNSOptions(hc.DNSOptions, dc.Options)
}

// appendNew appends the values of add not already in s.
func appendNew(s []string, add ...string) []string {
	for _, v := range add {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// mergeDNSOptions is kubelet's mergeDNSOptions: an option of the pod's
// dnsConfig replaces the one of the same name, in place; a new one is
// appended.
func mergeDNSOptions(existing []string, opts []manifests.PodDNSConfigOption) []string {
	out := slices.Clone(existing)
	at := map[string]int{}
	for i, o := range out {
		name, _, _ := strings.Cut(o, ":")
		at[name] = i
	}
	for _, o := range opts {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		if i, ok := at[o.Name]; ok {
			out[i] = s
			continue
		}
		at[o.Name] = len(out)
		out = append(out, s)
	}
	return out
}

// LocalhostProfile returns the Localhost seccomp profile the template
// container c runs with (its own, else its pod's), "" for none: the
// relative path the reconciler reads below manifests.SeccompRoot.
func LocalhostProfile(ps *manifests.PodSpec, c *manifests.Container) string {
	if sp := manifests.EffectiveSecurityContext(ps, c).Seccomp; sp != nil && sp.Type == manifests.SeccompLocalhost && sp.LocalhostProfile != nil {
		return *sp.LocalhostProfile
	}
	return ""
}

// checkSeccomp refuses to build a container whose Localhost seccomp
// profile was not loaded (req.SeccompProfile): it would silently run with
// Docker's default one.
func checkSeccomp(req CreateRequest) error {
	if req.Role == RoleHolder {
		return nil
	}
	ps := &req.From.Template.Spec
	c := findContainer(ps, req.Container)
	if req.Container == "" && len(ps.Containers) > 0 {
		c = &ps.Containers[0]
	}
	if c == nil {
		return nil // the builders report it
	}
	if p := LocalhostProfile(ps, c); p != "" && req.SeccompProfile == "" {
		return fmt.Errorf("container %q: the Localhost seccomp profile %s was not loaded", c.Name, p)
	}
	return nil
}
