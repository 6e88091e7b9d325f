package compose

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/compose-spec/compose-go/v2/types"
	units "github.com/docker/go-units"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/manifests"
)

// service converts one Compose service into its objects.
func (c *converter) service(s types.ServiceConfig) error {
	if s.Provider != nil {
		// Compose asks the provider (Docker Model Runner, a cloud
		// plugin) to run it: there is no image, no container to make.
		c.warn(s.Name, "provider", "type %s not converted: a provider runs this service, not a container; no workload is made", s.Provider.Type)
		return nil
	}
	if err := c.unconverted(s); err != nil {
		return err
	}
	name := c.names[s.Name]
	ctr := manifests.Container{Name: name, Image: s.Image}
	if s.Build != nil {
		if s.Image == "" {
			// Compose's name for the image it builds.
			ctr.Image = strings.ToLower(c.p.Name + "-" + s.Name)
			c.warn(s.Name, "build", "not converted: dockctl runs images, it does not build them; build it (docker compose build) and the manifest runs the image %q", ctr.Image)
		} else {
			c.warn(s.Name, "build", "not converted: dockctl runs images, it does not build them; the manifest runs image %q, build and tag it first", s.Image)
		}
	}
	if s.ContainerName != "" {
		c.warn(s.Name, "container_name", "not converted: pod and container names are dockctl's; the service is reached by its name %q", name)
	}
	ps := manifests.PodSpec{}
	// Entrypoint is the image's ENTRYPOINT, command its CMD: Kubernetes'
	// command and args, with $( kept literal. An empty entrypoint clears
	// the image's, and Docker runs the command as the process: that is
	// Kubernetes' command alone, which replaces the ENTRYPOINT and drops
	// the CMD. Only without a command is an empty entrypoint unsayable.
	switch {
	case s.Entrypoint != nil && len(s.Entrypoint) == 0 && len(s.Command) > 0:
		ctr.Command = escapeK8s(s.Command)
	default:
		if s.Entrypoint != nil {
			if len(s.Entrypoint) == 0 {
				c.warn(s.Name, "entrypoint", "an empty entrypoint (clear the image's) without a command cannot be said in a manifest: the image's entrypoint runs")
			}
			ctr.Command = escapeK8s(s.Entrypoint)
		}
		if s.Command != nil {
			if len(s.Command) == 0 && s.Entrypoint == nil {
				c.warn(s.Name, "command", "an empty command (clear the image's) cannot be said in a manifest: the image's command runs")
			}
			ctr.Args = escapeK8s(s.Command)
		}
	}
	ctr.WorkingDir = s.WorkingDir
	ctr.TTY, ctr.Stdin = s.Tty, s.StdinOpen
	c.pullPolicy(s, &ctr)
	c.environment(s, &ctr)
	c.security(s, &ctr)
	c.resources(s, &ctr)
	c.healthcheck(s, &ctr)
	c.volumes(s, &ps, &ctr)
	if err := c.serviceSecrets(s, &ps, &ctr); err != nil {
		return err
	}
	if err := c.serviceConfigs(s, &ps, &ctr); err != nil {
		return err
	}
	c.network(s, &ps)
	if s.Hostname != "" {
		// Kubernetes' ValidatePodSpec takes a DNS-1123 label only;
		// Docker takes any name, dots included.
		if msgs := validation.IsDNS1123Label(s.Hostname); len(msgs) > 0 {
			c.warn(s.Name, "hostname", "%q not converted: a pod's hostname is a lower-case DNS-1123 label without dots; the pod's name is its hostname", s.Hostname)
		} else {
			ps.Hostname = s.Hostname
		}
	}
	if s.StopGracePeriod != nil {
		ps.TerminationGracePeriodSeconds = ptr(int64(seconds(s.StopGracePeriod)))
	}
	for _, h := range slices.Sorted(maps.Keys(s.ExtraHosts)) {
		// Kubernetes' hostAliases take an IP address for a DNS-1123
		// subdomain; Docker also takes host-gateway, resolved by the
		// daemon to its own address, which a manifest cannot say.
		if net.ParseIP(s.ExtraHosts[h][0]) == nil {
			c.warn(s.Name, "extra_hosts", "%s=%s not converted: a hostAlias needs an IP address", h, s.ExtraHosts[h][0])
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
			c.warn(s.Name, "extra_hosts", "%s not converted: a hostAlias's host name is a lower-case DNS-1123 subdomain", h)
			continue
		}
		ps.HostAliases = append(ps.HostAliases, manifests.HostAlias{IP: s.ExtraHosts[h][0], Hostnames: []string{h}})
		if len(s.ExtraHosts[h]) > 1 {
			c.warn(s.Name, "extra_hosts", "%s: only the first address %s is kept", h, s.ExtraHosts[h][0])
		}
	}
	c.services(s, &ctr)
	c.dependsOn(s, &ps)
	ps.Containers = []manifests.Container{ctr}

	tmpl := manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: c.selector(s.Name)}, Spec: ps}
	restart := restartOf(s)
	replicas := s.GetScale()
	if r, retries, ok := strings.Cut(restart, ":"); ok && r == types.RestartPolicyOnFailure {
		c.warn(s.Name, "restart", "%s: the retry limit %s is not kept: the pod is restarted until it succeeds", restart, retries)
		restart = r
	}
	switch restart {
	case types.RestartPolicyNo, types.RestartPolicyOnFailure:
		// A Deployment always restarts its pods: a service Compose runs
		// once is a Pod, which the workload controller runs once
		// (docs/design.md §17.1), as kompose makes one.
		policy := "Never"
		if restart == types.RestartPolicyOnFailure {
			policy = "OnFailure"
		}
		if replicas != 1 {
			c.warn(s.Name, "deploy.replicas", "restart: %s makes one Pod, not %d", restart, replicas)
		}
		tmpl.Spec.RestartPolicy = policy
		c.privileges(s.Name, &tmpl, "")
		meta := c.meta(name, s.Name)
		meta.Annotations = c.annotations(s)
		c.add(manifests.KindPod, name, &manifests.Pod{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindPod, Metadata: meta, Spec: tmpl.Spec})
	default:
		d := &manifests.Deployment{APIVersion: manifests.APIVersion, Kind: manifests.Kind, Metadata: c.meta(name, s.Name),
			Spec: manifests.DeploymentSpec{Replicas: ptr(int32(replicas)), Selector: &manifests.LabelSelector{MatchLabels: c.selector(s.Name)}, Template: tmpl}}
		d.Metadata.Annotations = c.annotations(s)
		if usesClaim(&tmpl.Spec) {
			// A rolling update would run the new pod beside the old one
			// on the same volume (two databases on one data directory);
			// Compose stops the old container before it starts the new
			// one, and so does Recreate (kompose does the same).
			d.Spec.Strategy.Type = manifests.StrategyRecreate
		}
		c.privileges(s.Name, &d.Spec.Template, "spec.template")
		c.add(manifests.Kind, name, d)
	}
	return nil
}

// restartOf is the service's restart policy: restart, else
// deploy.restart_policy's condition in restart's words.
func restartOf(s types.ServiceConfig) string {
	if s.Restart == "" && s.Deploy != nil && s.Deploy.RestartPolicy != nil {
		return map[string]string{"none": types.RestartPolicyNo, "on-failure": types.RestartPolicyOnFailure, "any": types.RestartPolicyAlways}[s.Deploy.RestartPolicy.Condition]
	}
	return s.Restart
}

// runsOnce says whether the service becomes a Pod that runs until it
// succeeds or once (restart no or on-failure), not a Deployment.
func runsOnce(s types.ServiceConfig) bool {
	r, _, _ := strings.Cut(restartOf(s), ":")
	return r == types.RestartPolicyNo || r == types.RestartPolicyOnFailure
}

// annotations are the service's labels, as kompose keeps them: on the
// workload's own metadata, not its pod template, so that a change of them
// is no rollout. A key that is no annotation key, or one dockctl reserves
// (dockctl.io/), is warned instead.
func (c *converter) annotations(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		lk := strings.ToLower(k)
		if msgs := validation.IsQualifiedName(lk); len(msgs) > 0 || strings.HasPrefix(lk, manifests.DockerAnnotationPrefix) {
			c.warn(s.Name, "labels."+k, "not converted: not an annotation key dockctl accepts")
			continue
		}
		out[k] = s.Labels[k]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func usesClaim(ps *manifests.PodSpec) bool {
	for _, v := range ps.Volumes {
		if v.PersistentVolumeClaim != nil {
			return true
		}
	}
	return false
}

// privileges warns each setting the controller refuses without a flag.
// base is the template's path in its object ("" for a Pod).
func (c *converter) privileges(service string, t *manifests.PodTemplateSpec, base string) {
	for _, p := range manifests.TemplatePrivileges(t, base, manifests.Host{}) {
		c.warn(service, keyOfPrivilege(p.Path), "%s", p.String())
	}
}

// keyOfPrivilege names the Compose key behind a privilege's field path.
func keyOfPrivilege(p string) string {
	switch {
	case strings.Contains(p, "hostPath"):
		return "volumes"
	case strings.Contains(p, "capabilities"):
		return "cap_add"
	case strings.Contains(p, "privileged"):
		return "privileged"
	case strings.Contains(p, "hostNetwork"):
		return "network_mode"
	case strings.Contains(p, "hostPID"):
		return "pid"
	}
	return p
}

func (c *converter) pullPolicy(s types.ServiceConfig, ctr *manifests.Container) {
	switch s.PullPolicy {
	case "":
	case types.PullPolicyAlways, types.PullPolicyRefresh:
		ctr.ImagePullPolicy = manifests.PullAlways
	case types.PullPolicyNever:
		ctr.ImagePullPolicy = manifests.PullNever
	case types.PullPolicyMissing, types.PullPolicyIfNotPresent:
		ctr.ImagePullPolicy = manifests.PullIfNotPresent
	default:
		c.warn(s.Name, "pull_policy", "%q not converted: the image is pulled if not present", s.PullPolicy)
	}
}

// environment puts the service's environment (env_file merged in by the
// loader) in a ConfigMap NAME-env the container takes whole (envFrom), as
// its environment, keys in order. A variable without a value is unset, as
// Compose leaves it. Since Kubernetes 1.34 a variable's name is any
// printable ASCII but '=' (RelaxedEnvironmentVariableValidation, the API
// server's IsRelaxedEnvVarName): a name that is no ConfigMap key ("A B",
// "a:b") is set in the container's env instead, its value's '$' doubled
// so the kubelet's $(VAR) expansion leaves it as written. Only a name
// Kubernetes refuses (an '=', a character not printable ASCII) is warned
// and left out: Docker passes any name.
func (c *converter) environment(s types.ServiceConfig, ctr *manifests.Container) {
	// The loader merged env_file contents into environment already, with
	// Compose's precedence: the ConfigMap holds what the container would
	// see. A file the project did not bring deserves a word, as a
	// secret's does (fileObject).
	for _, f := range s.EnvFiles {
		if _, err := os.Stat(f.Path); err == nil && !c.inProject(f.Path) {
			c.warn(s.Name, "env_file", "%s is outside the project directory %s: its variables are copied into ConfigMap %s-env", f.Path, c.p.WorkingDir, c.names[s.Name])
		}
	}
	data := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
		v := s.Environment[k]
		if v == nil {
			continue
		}
		if msgs := validation.IsRelaxedEnvVarName(k); len(msgs) > 0 {
			c.warn(s.Name, "environment", "%q not converted: Kubernetes refuses the name (%s)", k, msgs[0])
			continue
		}
		if !utf8.ValidString(*v) {
			// A manifest is text (JSON strings): the bytes that are not
			// UTF-8 would become U+FFFD.
			c.warn(s.Name, "environment", "%q: the value is not UTF-8; a manifest holds text, so its invalid bytes become U+FFFD", k)
		}
		if len(validation.IsConfigMapKey(k)) > 0 {
			ctr.Env = append(ctr.Env, manifests.EnvVar{Name: k, Value: strings.ReplaceAll(*v, "$", "$$")})
			continue
		}
		data[k] = *v
	}
	if len(data) == 0 {
		return
	}
	name := c.names[s.Name] + "-env"
	cm := &manifests.ConfigMap{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindConfigMap, Metadata: c.meta(name, s.Name), Data: data}
	c.add(manifests.KindConfigMap, name, cm)
	ctr.EnvFrom = append(ctr.EnvFrom, manifests.EnvFromSource{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: name}})
}

func (c *converter) security(s types.ServiceConfig, ctr *manifests.Container) {
	sc := &manifests.SecurityContext{}
	set := false
	if s.User != "" {
		u, g, _ := strings.Cut(s.User, ":")
		uid, ok := numericID(u, validation.IsValidUserID)
		if !ok {
			c.warn(s.Name, "user", "%q not converted: a manifest names a numeric user from 0 to 2147483647 (runAsUser); use the uid", s.User)
		} else {
			sc.RunAsUser, set = ptr(uid), true
			if g != "" {
				gid, ok := numericID(g, validation.IsValidGroupID)
				if !ok {
					c.warn(s.Name, "user", "group %q not converted: a manifest names a numeric group from 0 to 2147483647 (runAsGroup)", g)
				} else {
					sc.RunAsGroup = ptr(gid)
				}
			}
		}
	}
	if len(s.CapAdd) > 0 || len(s.CapDrop) > 0 {
		sc.Capabilities, set = &manifests.Capabilities{Add: normalizeCaps(s.CapAdd), Drop: normalizeCaps(s.CapDrop)}, true
	}
	if s.ReadOnly {
		sc.ReadOnlyRootFilesystem, set = ptr(true), true
	}
	if s.Privileged {
		sc.Privileged, set = ptr(true), true
	}
	if set {
		ctr.SecurityContext = sc
	}
}

// numericID is a uid or gid as Kubernetes takes it (valid:
// validation.IsValidUserID or IsValidGroupID, 0 to 2147483647).
func numericID(s string, valid func(int64) []string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && len(valid(n)) == 0
}

func normalizeCaps(cs []string) []string {
	var out []string
	for _, c := range cs {
		out = append(out, manifests.NormalizeCapability(c))
	}
	return out
}

// resources maps deploy.resources (and the older mem_limit, cpus):
// limits to limits, reservations to requests.
func (c *converter) resources(s types.ServiceConfig, ctr *manifests.Container) {
	limits, requests := manifests.ResourceList{}, manifests.ResourceList{}
	if s.MemLimit != 0 {
		limits["memory"] = *resource.NewQuantity(int64(s.MemLimit), resource.BinarySI)
	}
	if s.MemReservation != 0 {
		requests["memory"] = *resource.NewQuantity(int64(s.MemReservation), resource.BinarySI)
	}
	if s.CPUS != 0 {
		limits["cpu"] = *resource.NewMilliQuantity(int64(s.CPUS*1000), resource.DecimalSI)
	}
	if s.Deploy != nil {
		r := s.Deploy.Resources
		put := func(into manifests.ResourceList, res *types.Resource, key string) {
			if res == nil {
				return
			}
			if res.MemoryBytes != 0 {
				into["memory"] = *resource.NewQuantity(int64(res.MemoryBytes), resource.BinarySI)
			}
			if res.NanoCPUs != 0 {
				into["cpu"] = *resource.NewMilliQuantity(int64(float64(res.NanoCPUs)*1000), resource.DecimalSI)
			}
			if res.Pids != 0 || len(res.Devices) > 0 || len(res.GenericResources) > 0 {
				c.warn(s.Name, "deploy.resources."+key, "pids, devices and generic_resources not converted")
			}
		}
		put(limits, r.Limits, "limits")
		put(requests, r.Reservations, "reservations")
		d := s.Deploy
		// A slice, not a map: the warnings' order is the output's.
		for _, k := range []struct {
			key string
			set bool
		}{
			{"mode", d.Mode != "" && d.Mode != "replicated"}, {"labels", len(d.Labels) > 0},
			{"update_config", d.UpdateConfig != nil}, {"rollback_config", d.RollbackConfig != nil},
			{"placement", len(d.Placement.Constraints)+len(d.Placement.Preferences) > 0 || d.Placement.MaxReplicas != 0},
			{"endpoint_mode", d.EndpointMode != ""},
		} {
			if k.set {
				c.warn(s.Name, "deploy."+k.key, "not converted: dockctl has no equivalent")
			}
		}
		if rp := d.RestartPolicy; rp != nil && (rp.Delay != nil || rp.MaxAttempts != nil || rp.Window != nil) {
			c.warn(s.Name, "deploy.restart_policy", "delay, max_attempts and window not converted")
		}
	}
	// Kubernetes refuses a request above its limit (ValidateResourceRequirements);
	// one left out defaults to the limit.
	for _, r := range slices.Sorted(maps.Keys(requests)) {
		q, l := requests[r], limits[r]
		if _, ok := limits[r]; ok && q.Cmp(l) > 0 {
			c.warn(s.Name, "deploy.resources.reservations", "%s %s not converted: above the limit %s (the request is the limit)", r, q.String(), l.String())
			delete(requests, r)
		}
	}
	if len(limits) > 0 {
		ctr.Resources.Limits = limits
	}
	if len(requests) > 0 {
		ctr.Resources.Requests = requests
	}
}

// healthcheck makes the readiness probe. Compose's healthcheck gates
// depends_on (service_healthy) and never restarts a container that turns
// unhealthy, which is a readiness probe's meaning, not a liveness probe's
// (a failing liveness probe restarts the container).
func (c *converter) healthcheck(s types.ServiceConfig, ctr *manifests.Container) {
	h := s.HealthCheck
	if h == nil || h.Disable || len(h.Test) == 0 || h.Test[0] == "NONE" {
		return
	}
	var cmd []string
	switch h.Test[0] {
	case "CMD":
		cmd = h.Test[1:]
		if len(cmd) == 0 {
			// An exec probe needs a command (Kubernetes' validation).
			c.warn(s.Name, "healthcheck.test", "[CMD] names no command: no readiness probe is made")
			return
		}
	case "CMD-SHELL":
		cmd = []string{"/bin/sh", "-c", strings.Join(h.Test[1:], " ")}
	default:
		c.warn(s.Name, "healthcheck.test", "%q not converted: test must start with CMD, CMD-SHELL or NONE", h.Test[0])
		return
	}
	// Docker's defaults (interval 30s, timeout 30s, retries 3) when
	// unset or zero (the Engine API's HealthConfig: "0 means inherit"),
	// so that the probe checks as the healthcheck did.
	p := &manifests.Probe{Exec: &manifests.ExecAction{Command: cmd}, PeriodSeconds: 30, TimeoutSeconds: 30, FailureThreshold: 3}
	if h.Interval != nil && *h.Interval != 0 {
		p.PeriodSeconds = max(seconds(h.Interval), 1)
	}
	if h.Timeout != nil && *h.Timeout != 0 {
		p.TimeoutSeconds = max(seconds(h.Timeout), 1)
	}
	if h.Retries != nil && *h.Retries != 0 {
		p.FailureThreshold = int32(max(min(*h.Retries, 1<<31-1), 1))
	}
	if h.StartPeriod != nil {
		p.InitialDelaySeconds = seconds(h.StartPeriod)
	}
	if h.StartInterval != nil {
		c.warn(s.Name, "healthcheck.start_interval", "not converted: probes run every interval from the start")
	}
	ctr.ReadinessProbe = p
}

// network maps network_mode and networks. All services share the
// instance network (docs/design.md §10): Compose networks do not isolate.
func (c *converter) network(s types.ServiceConfig, ps *manifests.PodSpec) {
	// pid: host is hostPID (kompose maps it so too), which the
	// controller gates; a service's or container's namespace needs one
	// pod (shareProcessNamespace), a change of the app's shape.
	switch s.Pid {
	case "":
	case "host":
		ps.HostPID = true
	default:
		c.warn(s.Name, "pid", "%q not converted: the service gets its own process namespace", s.Pid)
	}
	switch nm := s.NetworkMode; {
	case nm == "" || nm == "bridge" || nm == "default":
	case nm == "host":
		ps.HostNetwork = true
	case strings.HasPrefix(nm, "service:") || strings.HasPrefix(nm, "container:"):
		c.warn(s.Name, "network_mode", "%q not converted: the service gets its own network namespace; make its container a second container of that service's pod by hand to share one", nm)
	default:
		c.warn(s.Name, "network_mode", "%q not converted: the service joins the instance network", nm)
	}
	for _, n := range slices.Sorted(maps.Keys(s.Networks)) {
		if n != "default" {
			c.warn(s.Name, "networks", "%s: not converted: every pod is on the instance network, reachable from every other (no isolation between Compose networks)", n)
		}
		if cfg := s.Networks[n]; cfg != nil && (len(cfg.Aliases) > 0 || cfg.Ipv4Address != "" || cfg.Ipv6Address != "") {
			c.warn(s.Name, "networks."+n, "aliases and fixed addresses not converted")
		}
	}
}

// port is one port of a service's Services.
type port struct {
	published int32 // 0: not published
	index     int   // in the service's ports, for warnings
	target    int32
	protocol  string
}

// services makes the service's Services, named so that other services
// reach it as in Compose, where the service's name resolves to its
// containers and every port of theirs answers:
//
//   - NAME is headless (clusterIP: None): its name resolves to the ready
//     pods' addresses (docs/design.md §10), any port reaching them as in
//     Compose; it lists the ports and expose ports. Its name resolving is
//     also what a depends_on wait waits for (dependsOn), since a cluster
//     IP's proxy accepts connections before any endpoint is ready.
//   - NAME-published is a LoadBalancer Service of the published ports,
//     which dockctl publishes on the host (--service-address), port
//     published, targetPort the container's.
//
// It returns the target ports (for dependsOn waits).
func (c *converter) services(s types.ServiceConfig, ctr *manifests.Container) []port {
	name := c.names[s.Name]
	var ports []port
	seen := map[string]bool{}
	addTarget := func(p port) {
		k := fmt.Sprintf("%d/%s", p.target, p.protocol)
		if !seen[k] {
			seen[k] = true
			ctr.Ports = append(ctr.Ports, manifests.ContainerPort{ContainerPort: p.target, Protocol: p.protocol})
		}
	}
	for i, sp := range s.Ports {
		at := fmt.Sprintf("ports[%d]", i)
		proto, ok := protocolOf(sp.Protocol)
		if !ok {
			c.warn(s.Name, at, "protocol %q not converted: dockctl serves TCP and UDP only", sp.Protocol)
			continue
		}
		p := port{target: int32(sp.Target), protocol: proto, index: i}
		if s.NetworkMode == "host" {
			// Docker discards published ports in the host's network
			// ("Published ports are discarded when using host network
			// mode"): the container binds the host's ports itself, and
			// a LoadBalancer's proxy on them would take them first.
			c.warn(s.Name, at, "not published: in the host's network (network_mode: host) the container's port %d is the host's, as Docker discards published ports", p.target)
			addTarget(p)
			continue
		}
		switch pub := sp.Published; {
		case pub == "" || pub == "0":
			// Docker picks a free host port (for 0 too, as docker run
			// -p 0:80); a LoadBalancer port is fixed, and 0 is none
			// Kubernetes takes, so it is the container's, as kompose
			// makes it.
			p.published = p.target
			c.warn(s.Name, at, "no published port (Docker would pick one): published on %d", p.target)
		default:
			first, _, isRange := strings.Cut(pub, "-")
			n, err := strconv.ParseInt(first, 10, 32)
			if err != nil {
				c.warn(s.Name, at, "published %q not converted", pub)
				continue
			}
			if isRange {
				c.warn(s.Name, at, "published range %q: only %d is published", pub, n)
			}
			p.published = int32(n)
		}
		if sp.HostIP != "" && sp.HostIP != "0.0.0.0" && sp.HostIP != "::" {
			c.warn(s.Name, at, "host_ip %s not converted: a LoadBalancer Service is published on the controller's --service-address", sp.HostIP)
		}
		if sp.Name != "" || sp.AppProtocol != "" {
			c.warn(s.Name, at, "name %q and app_protocol %q not converted: the Services' port names are PROTO-PORT", sp.Name, sp.AppProtocol)
		}
		if sp.Mode == "host" {
			c.warn(s.Name, at, "mode host not converted: published through the Service's proxy")
		}
		ports = append(ports, p)
		addTarget(port{target: p.target, protocol: p.protocol})
	}
	for i, e := range s.Expose {
		p, ok := exposed(e)
		if !ok {
			c.warn(s.Name, fmt.Sprintf("expose[%d]", i), "%q not converted (a range, not a port number from 1 to 65535, or a protocol other than tcp and udp: dockctl serves no other)", e)
			continue
		}
		addTarget(p)
	}
	var targets []port
	headless := &manifests.Service{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindService, Metadata: c.meta(name, s.Name),
		Spec: manifests.ServiceSpec{ClusterIP: manifests.ClusterIPNone, Selector: c.selector(s.Name)}}
	for _, cp := range ctr.Ports {
		targets = append(targets, port{target: cp.ContainerPort, protocol: cp.Protocol})
		headless.Spec.Ports = append(headless.Spec.Ports, manifests.ServicePort{Name: portName(cp.Protocol, cp.ContainerPort), Protocol: cp.Protocol, Port: cp.ContainerPort, TargetPort: intstr.FromInt32(cp.ContainerPort)})
	}
	c.add(manifests.KindService, name, headless)
	if len(ports) == 0 {
		return targets
	}
	pubName := withSuffix(name, "-published")
	lb := &manifests.Service{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindService, Metadata: c.meta(pubName, s.Name),
		Spec: manifests.ServiceSpec{Type: manifests.ServiceTypeLoadBalancer, Selector: c.selector(s.Name)}}
	used := map[string]bool{}
	for _, p := range ports {
		k := fmt.Sprintf("%d/%s", p.published, p.protocol)
		if used[k] {
			c.warn(s.Name, fmt.Sprintf("ports[%d]", p.index), "%s is published twice: only the first is kept", k)
			continue
		}
		used[k] = true
		// Every LoadBalancer port is a port of the one host: Compose
		// picks a free one where none is published, the manifest takes
		// the container's, so two services may now want the same.
		if other, ok := c.published[k]; ok {
			c.warn(s.Name, fmt.Sprintf("ports[%d]", p.index), "%s is also published by service %s: one host port serves one LoadBalancer; publish another", k, other)
		} else {
			c.published[k] = s.Name
		}
		lb.Spec.Ports = append(lb.Spec.Ports, manifests.ServicePort{Name: portName(p.protocol, p.published), Protocol: p.protocol, Port: p.published, TargetPort: intstr.FromInt32(p.target)})
	}
	c.add(manifests.KindService, pubName, lb)
	return targets
}

// portName is PROTO-PORT in lower case: a valid port name (it has a
// letter), unique per Service.
func portName(proto string, p int32) string {
	return strings.ToLower(proto) + "-" + strconv.Itoa(int(p))
}

// dependsOn makes one init container per dependency that waits until the
// dependency's name resolves to a ready pod answering on its first port:
// service_healthy is ready (its healthcheck is the readiness probe);
// service_started waits for the same, a little more than Compose.
func (c *converter) dependsOn(s types.ServiceConfig, ps *manifests.PodSpec) {
	// Container names are DNS-1123 labels unique among all the pod's
	// containers, init containers included (Kubernetes' validateContainers):
	// wait-for-HOST is shortened and numbered where it must be.
	taken := map[string]bool{c.names[s.Name]: true}
	for _, dep := range slices.Sorted(maps.Keys(s.DependsOn)) {
		d := s.DependsOn[dep]
		key := "depends_on." + dep
		if s.NetworkMode == "service:"+dep {
			// Compose's own dependency of network_mode, warned there.
			continue
		}
		switch d.Condition {
		case types.ServiceConditionHealthy, types.ServiceConditionStarted, "":
		case types.ServiceConditionCompletedSuccessfully:
			c.warn(s.Name, key, "condition %s not converted: the service starts without waiting for %s to complete", d.Condition, dep)
			continue
		default:
			c.warn(s.Name, key, "condition %q not converted", d.Condition)
			continue
		}
		if d.Restart {
			c.warn(s.Name, key+".restart", "not converted: the service is not restarted when %s is", dep)
		}
		depSvc, ok := c.p.Services[dep]
		if !ok {
			c.warn(s.Name, key, "not converted: %s is not converted (not in an active profile)", dep)
			continue
		}
		if d.Condition == types.ServiceConditionHealthy && (depSvc.HealthCheck == nil || depSvc.HealthCheck.Disable) {
			// Compose then waits on the image's HEALTHCHECK, which only
			// the image knows: no probe is made of it.
			c.warn(s.Name, key, "condition service_healthy: %s has no healthcheck in the Compose file; its image's HEALTHCHECK, if any, is not converted, so the wait is for its port only", dep)
		}
		port := firstPort(depSvc)
		if port == 0 {
			c.warn(s.Name, key, "not converted: %s has no ports or expose to wait on (add expose)", dep)
			continue
		}
		if runsOnce(depSvc) {
			// Its pod leaves the headless name when it ends: a wait that
			// starts after that never ends, where Compose would start.
			c.warn(s.Name, key, "%s runs once (a Pod): it is ready only while it runs, so a wait that starts after it has ended never ends", dep)
		}
		host := c.names[dep]
		repl := strings.NewReplacer("{host}", host, "{port}", strconv.Itoa(int(port)))
		var cmd []string
		for _, a := range c.opts.WaitCommand {
			cmd = append(cmd, repl.Replace(a))
		}
		ps.InitContainers = append(ps.InitContainers, manifests.Container{Name: uniqueLabel("wait-for-"+host, taken), Image: c.opts.WaitImage, Command: escapeK8s(cmd)})
		if !c.waitImageNamed && c.opts.WaitImage == DefaultWaitImage {
			// The one image convert adds that neither the Compose file
			// nor the user named: an offline host without it would leave
			// the waiting pods in ImagePullBackOff with no word from
			// convert.
			c.waitImageNamed = true
			c.warn("", "depends_on", "the waits run in init containers of image %s, which Docker pulls unless it has it (--wait-image and --wait-command choose another)", c.opts.WaitImage)
		}
	}
}

// uniqueLabel is base as a DNS-1123 label (dns1123), with -2, -3, ...
// where that is taken; the name returned is taken from then on.
func uniqueLabel(base string, taken map[string]bool) string {
	label := dns1123(base)
	n := label
	for i := 2; taken[n]; i++ {
		n = withSuffix(label, "-"+strconv.Itoa(i))
	}
	taken[n] = true
	return n
}

// withSuffix is label+suffix, label shortened (and any '-' it then ends
// with trimmed) so that the whole is a DNS-1123 label of at most 63.
func withSuffix(label, suffix string) string {
	return strings.TrimRight(label[:min(len(label), 63-len(suffix))], "-") + suffix
}

// firstPort is the first TCP target port of a service's ports, then of
// its expose.
func firstPort(s types.ServiceConfig) int32 {
	for _, p := range s.Ports {
		if proto, _ := protocolOf(p.Protocol); proto == manifests.ProtocolTCP {
			return int32(p.Target)
		}
	}
	for _, e := range s.Expose {
		if p, ok := exposed(e); ok && p.protocol == manifests.ProtocolTCP {
			return p.target
		}
	}
	return 0
}

// exposed parses an expose entry, "PORT[/PROTOCOL]" (tcp by default), as
// a port dockctl accepts: a number from 1 to 65535 and TCP or UDP
// (protocolOf); ok is false for anything else (a range among them).
func exposed(e string) (p port, ok bool) {
	num, proto, _ := strings.Cut(e, "/")
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || len(validation.IsValidPortNum(int(n))) > 0 {
		return port{}, false
	}
	proto, ok = protocolOf(proto)
	if !ok {
		return port{}, false
	}
	return port{target: int32(n), protocol: proto}, true
}

// protocolOf is a Compose port protocol (ports' protocol, expose's
// /PROTOCOL) as a Kubernetes one: tcp by default, TCP or UDP in any case;
// ok is false for any other. SCTP is valid on a cluster, but dockctl's
// validation refuses it on a container port and a Service port (its
// Service proxy serves TCP and UDP only): the whole converted set would
// be refused by apply.
func protocolOf(proto string) (string, bool) {
	switch proto = strings.ToUpper(proto); proto {
	case "":
		return manifests.ProtocolTCP, true
	case manifests.ProtocolTCP, manifests.ProtocolUDP:
		return proto, true
	}
	return proto, false
}

// volumes maps the service's mounts: a named volume to its claim, a bind
// mount to a hostPath (which the controller gates), an anonymous volume
// to an emptyDir (Compose makes a new one per container too), tmpfs to a
// memory emptyDir.
func (c *converter) volumes(s types.ServiceConfig, ps *manifests.PodSpec, ctr *manifests.Container) {
	add := func(v manifests.Volume, target string, ro bool) {
		v.Name = fmt.Sprintf("vol-%d", len(ps.Volumes))
		ps.Volumes = append(ps.Volumes, v)
		ctr.VolumeMounts = append(ctr.VolumeMounts, manifests.VolumeMount{Name: v.Name, MountPath: target, ReadOnly: ro})
	}
	for i, v := range s.Volumes {
		key := fmt.Sprintf("volumes[%d]", i)
		switch v.Type {
		case types.VolumeTypeVolume:
			if v.Source == "" {
				add(manifests.Volume{EmptyDir: &manifests.EmptyDirVolumeSource{}}, v.Target, v.ReadOnly)
				continue
			}
			claim := c.claimName(v.Source, s.Name)
			add(manifests.Volume{PersistentVolumeClaim: &manifests.PersistentVolumeClaimVolumeSource{ClaimName: claim}}, v.Target, v.ReadOnly)
			if vv := v.Volume; vv != nil && (vv.NoCopy || vv.Subpath != "") {
				c.warn(s.Name, key, "volume.nocopy and volume.subpath not converted")
			}
		case types.VolumeTypeBind:
			add(manifests.Volume{HostPath: &manifests.HostPathVolumeSource{Path: v.Source}}, v.Target, v.ReadOnly)
			if b := v.Bind; b != nil && (b.Propagation != "" && b.Propagation != "rprivate" || b.SELinux != "") {
				c.warn(s.Name, key, "bind.propagation and bind.selinux not converted")
			}
		case types.VolumeTypeTmpfs:
			ed := &manifests.EmptyDirVolumeSource{Medium: "Memory"}
			if v.Tmpfs != nil && v.Tmpfs.Size != 0 {
				ed.SizeLimit = resource.NewQuantity(int64(v.Tmpfs.Size), resource.BinarySI)
			}
			if v.Tmpfs != nil && v.Tmpfs.Mode != 0 {
				c.warn(s.Name, key, "tmpfs.mode %#o not converted: an emptyDir's mode is the runtime's", v.Tmpfs.Mode)
			}
			add(manifests.Volume{EmptyDir: ed}, v.Target, v.ReadOnly)
		default:
			c.warn(s.Name, key, "type %s not converted", v.Type)
		}
	}
	for _, t := range s.Tmpfs {
		// Docker's --tmpfs PATH[:OPTIONS]: size=N is the sizeLimit; the
		// other mount options have no emptyDir equivalent.
		target, options, _ := strings.Cut(t, ":")
		ed := &manifests.EmptyDirVolumeSource{Medium: "Memory"}
		for _, o := range strings.Split(options, ",") {
			if o == "" {
				continue
			}
			if v, ok := strings.CutPrefix(o, "size="); ok {
				if n, err := units.RAMInBytes(v); err == nil && n > 0 {
					ed.SizeLimit = resource.NewQuantity(n, resource.BinarySI)
					continue
				}
			}
			c.warn(s.Name, "tmpfs", "%s: option %s not converted: an emptyDir takes only a size", target, o)
		}
		add(manifests.Volume{EmptyDir: ed}, target, false)
	}
}

// claimName is the claim of a named volume, made once (projectVolumes).
func (c *converter) claimName(volume, service string) string {
	c.claims[volume] = true
	return dns1123(volume)
}

// serviceSecrets mounts each secret at its target, /run/secrets/NAME by
// default (a relative target is under /run/secrets), as Compose does.
func (c *converter) serviceSecrets(s types.ServiceConfig, ps *manifests.PodSpec, ctr *manifests.Container) error {
	for i, ref := range s.Secrets {
		key := fmt.Sprintf("secrets[%d]", i)
		if _, ok := c.p.Secrets[ref.Source]; !ok {
			return fmt.Errorf("%s: secret %q is not defined", key, ref.Source)
		}
		c.secrets[ref.Source] = true
		target := ref.Target
		if target == "" {
			target = ref.Source
		}
		if !path.IsAbs(target) {
			target = "/run/secrets/" + target
		}
		vol := manifests.Volume{Name: fmt.Sprintf("secret-%d", i), Secret: &manifests.SecretVolumeSource{SecretName: c.secretName(ref.Source)}}
		if ref.Mode != nil {
			vol.Secret.DefaultMode = ptr(c.fileMode(s.Name, key, *ref.Mode))
		}
		if ref.UID != "" || ref.GID != "" {
			c.warn(s.Name, key, "uid and gid not converted: the file is root's")
		}
		ps.Volumes = append(ps.Volumes, vol)
		ctr.VolumeMounts = append(ctr.VolumeMounts, manifests.VolumeMount{Name: vol.Name, MountPath: target, SubPath: secretKey(ref.Source), ReadOnly: true})
	}
	return nil
}

// fileMode is a secret's or config's mode as a defaultMode, which
// Kubernetes takes from 0 to 0777: other bits (setuid, setgid, sticky)
// are warned and left out.
func (c *converter) fileMode(service, key string, mode types.FileMode) int32 {
	if mode&^0o777 != 0 {
		c.warn(service, key, "mode %#o: only the permission bits %#o are converted (a defaultMode is 0 to 0777)", int64(mode), int64(mode&0o777))
	}
	return int32(mode & 0o777)
}

// serviceConfigs mounts each config at its target, /NAME by default (a
// relative target is under /), as Compose does: a ConfigMap volume with
// the config's one key, by subPath.
func (c *converter) serviceConfigs(s types.ServiceConfig, ps *manifests.PodSpec, ctr *manifests.Container) error {
	for i, ref := range s.Configs {
		key := fmt.Sprintf("configs[%d]", i)
		cfg, ok := c.p.Configs[ref.Source]
		if !ok {
			return fmt.Errorf("%s: config %q is not defined", key, ref.Source)
		}
		c.configs[ref.Source] = true
		target := ref.Target
		if target == "" {
			target = ref.Source
		}
		if !path.IsAbs(target) {
			target = "/" + target
		}
		name := dns1123(ref.Source)
		if cfg.External && cfg.Name != "" {
			name = dns1123(cfg.Name)
		}
		vol := manifests.Volume{Name: fmt.Sprintf("config-%d", i), ConfigMap: &manifests.ConfigMapVolumeSource{Name: name}}
		if ref.Mode != nil {
			vol.ConfigMap.DefaultMode = ptr(c.fileMode(s.Name, key, *ref.Mode))
		}
		if ref.UID != "" || ref.GID != "" {
			c.warn(s.Name, key, "uid and gid not converted: the file is root's")
		}
		ps.Volumes = append(ps.Volumes, vol)
		ctr.VolumeMounts = append(ctr.VolumeMounts, manifests.VolumeMount{Name: vol.Name, MountPath: target, SubPath: secretKey(ref.Source), ReadOnly: true})
	}
	return nil
}

// projectConfigs makes a ConfigMap of each config used, from its file,
// its environment variable or its content; an external one must exist.
func (c *converter) projectConfigs() error {
	all := map[string]types.FileObjectConfig{}
	for name, cfg := range c.p.Configs {
		all[name] = types.FileObjectConfig(cfg)
	}
	return c.projectFileObjects("configs", all, c.configs, func(name string, cfg types.FileObjectConfig) string {
		return fmt.Sprintf("external: no ConfigMap is made; create ConfigMap %q with key %q before the pods start", dns1123(cmpOr(cfg.Name, name)), secretKey(name))
	}, func(name string, data []byte) {
		n := dns1123(name)
		cm := &manifests.ConfigMap{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindConfigMap, Metadata: c.meta(n, "")}
		if utf8.Valid(data) {
			cm.Data = map[string]string{secretKey(name): string(data)}
		} else {
			cm.BinaryData = map[string][]byte{secretKey(name): data}
		}
		c.add(manifests.KindConfigMap, n, cm)
	})
}

// projectFileObjects makes an object of each secret or config (all, of
// the top-level section) a service uses, in name order, with emit; an
// external one is warned, with what its warning says, and made of nothing.
func (c *converter) projectFileObjects(section string, all map[string]types.FileObjectConfig, used map[string]bool,
	external func(name string, cfg types.FileObjectConfig) string, emit func(name string, data []byte)) error {
	for _, name := range slices.Sorted(maps.Keys(all)) {
		cfg := all[name]
		if !used[name] {
			continue
		}
		key := section + "." + name
		if cfg.External {
			c.warn("", key, "%s", external(name, cfg))
			continue
		}
		data, err := c.fileObject(key, cfg)
		if err != nil {
			return err
		}
		if len(data) > manifests.MaxConfigSize {
			// The API server's limit of a Secret or ConfigMap: apply
			// would refuse the object, and with it the whole set.
			return fmt.Errorf("%s: %d bytes, more than a %s holds (%d): mount the file with a bind mount (volumes: - ./FILE:/TARGET:ro) instead",
				key, len(data), map[string]string{"secrets": "Secret", "configs": "ConfigMap"}[section], manifests.MaxConfigSize)
		}
		emit(name, data)
	}
	return nil
}

// fileObject is the content of a secret or config: its file, its
// environment variable or its inline content.
func (c *converter) fileObject(key string, cfg types.FileObjectConfig) ([]byte, error) {
	if cfg.Driver != "" || cfg.TemplateDriver != "" {
		c.warn("", key, "driver and template_driver not converted")
	}
	switch {
	case cfg.File != "":
		b, err := readFile(cfg.File)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if !c.inProject(cfg.File) {
			// Compose mounts the file where it is; the manifest holds
			// its content, and so will the store and -o DIR: a file the
			// project did not bring (a key in $HOME) deserves a word.
			c.warn("", key, "file %s is outside the project directory %s: its content is copied into the manifest", cfg.File, c.p.WorkingDir)
		}
		return b, nil
	case cfg.Environment != "":
		v, ok := c.p.Environment[cfg.Environment]
		if !ok {
			return nil, fmt.Errorf("%s: environment variable %s is not set", key, cfg.Environment)
		}
		return []byte(v), nil
	case cfg.Content != "":
		return []byte(cfg.Content), nil
	}
	return nil, fmt.Errorf("%s: no file, environment or content", key)
}

// inProject says whether file, its links followed, is in the project's
// directory, its links followed too.
func (c *converter) inProject(file string) bool {
	dir, err := filepath.EvalSymlinks(c.p.WorkingDir)
	if err != nil {
		return false
	}
	f, err := filepath.EvalSymlinks(file)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, f)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (c *converter) secretName(name string) string {
	cfg := c.p.Secrets[name]
	if cfg.External && cfg.Name != "" {
		return dns1123(cfg.Name)
	}
	return dns1123(name)
}

// secretKey is the Secret's one key: the Compose name where it is a valid
// key, else its DNS-1123 form.
func secretKey(name string) string {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return dns1123(name)
		}
	}
	return name
}

// projectSecrets makes a Secret of each secret used, from its file, its
// environment variable or its content; an external one must exist.
func (c *converter) projectSecrets() error {
	all := map[string]types.FileObjectConfig{}
	for name, cfg := range c.p.Secrets {
		all[name] = types.FileObjectConfig(cfg)
	}
	return c.projectFileObjects("secrets", all, c.secrets, func(name string, _ types.FileObjectConfig) string {
		return fmt.Sprintf("external: no Secret is made; create Secret %q with key %q before the pods start", c.secretName(name), secretKey(name))
	}, func(name string, data []byte) {
		n := dns1123(name)
		c.add(manifests.KindSecret, n, &manifests.Secret{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindSecret, Metadata: c.meta(n, ""),
			Type: manifests.SecretTypeOpaque, Data: map[string][]byte{secretKey(name): data}})
	})
}

// projectVolumes makes a claim of each named volume used.
func (c *converter) projectVolumes() {
	for _, name := range slices.Sorted(maps.Keys(c.claims)) {
		cfg := c.p.Volumes[name]
		key := "volumes." + name
		if cfg.External {
			c.warn("", key, "external: a new claim is made; the existing Docker volume %q is not used", cmpOr(cfg.Name, name))
		}
		if cfg.Driver != "" && cfg.Driver != "local" || len(cfg.DriverOpts) > 0 {
			c.warn("", key, "driver and driver_opts not converted: a claim is a local Docker volume")
		}
		n := dns1123(name)
		pvc := &manifests.PersistentVolumeClaim{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindPersistentVolumeClaim, Metadata: c.meta(n, ""),
			Spec: manifests.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"},
				Resources: manifests.VolumeResourceRequirements{Requests: map[string]resource.Quantity{"storage": resource.MustParse(c.opts.ClaimSize)}}}}
		c.add(manifests.KindPersistentVolumeClaim, n, pvc)
	}
}

// projectLevel warns a top-level key with entries no service conversion
// used.
func (c *converter) projectLevel(key string) {
	switch key {
	case "networks":
		for _, n := range slices.Sorted(maps.Keys(c.p.Networks)) {
			if n != "default" {
				c.warn("", "networks."+n, "not converted: every pod is on the instance network")
			}
		}
	case "models":
		for _, n := range slices.Sorted(maps.Keys(c.p.Models)) {
			c.warn("", "models."+n, "not converted: dockctl has no equivalent")
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
