package manifests

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"path"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks a Deployment that was built or changed in code (scale,
// rollout undo) with the same rules Decode applies to files. Errors carry
// field paths but no file or line. The result is nil or an ErrorList.
func Validate(d *Deployment) error {
	return validate(d, "", nil).Err()
}

// ValidateDeploymentUpdate checks that storing next over live (both
// valid, live not deleted) is allowed: as apps/v1's
// ValidateDeploymentUpdate, spec.selector is immutable (a Deployment
// selecting other pods would orphan the ones it runs; on a cluster the
// change is refused, so a history dockctl accepted would fail there).
func ValidateDeploymentUpdate(next, live *Deployment) error {
	var a, b map[string]string
	if next.Spec.Selector != nil {
		a = next.Spec.Selector.MatchLabels
	}
	if live.Spec.Selector != nil {
		b = live.Spec.Selector.MatchLabels
	}
	if maps.Equal(a, b) { // nil and empty alike, as the API's semantic equality
		return nil
	}
	v := &validator{}
	value, _ := json.Marshal(next.Spec.Selector)
	v.add("spec.selector", "Invalid value: %s: field is immutable", value)
	return v.errs.Err()
}

// maxAnnotationsSize is Kubernetes' limit on the total size of annotations.
const maxAnnotationsSize = 256 * 1024

var hostPathTypes = map[string]bool{
	"": true, "DirectoryOrCreate": true, "Directory": true, "FileOrCreate": true,
	"File": true, "Socket": true, "CharDevice": true, "BlockDevice": true,
}

type validator struct {
	lines map[string]int
	errs  ErrorList
}

func (v *validator) add(p, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Line: lineOf(v.lines, p), Path: p, Msg: fmt.Sprintf(format, args...)})
}

// validate works on the Deployment as written, before defaults, because
// several rules (both rolling-update bounds zero, Recreate with a
// rollingUpdate block) are about what the user wrote. base is the
// Deployment's path inside its document.
func validate(d *Deployment, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.meta(child(base, "metadata"), &d.Metadata, Kind)

	s := child(base, "spec")
	if r := d.Spec.Replicas; r != nil && *r < 0 {
		v.add(child(s, "replicas"), "must be greater than or equal to 0")
	} else if r != nil && *r > MaxReplicasLimit {
		v.add(child(s, "replicas"), "must be less than or equal to %d", MaxReplicasLimit)
	}
	v.nonNegative(child(s, "minReadySeconds"), int64(d.Spec.MinReadySeconds))
	if r := d.Spec.RevisionHistoryLimit; r != nil {
		v.nonNegative(child(s, "revisionHistoryLimit"), int64(*r))
	}
	if p := d.Spec.ProgressDeadlineSeconds; p != nil && *p <= d.Spec.MinReadySeconds {
		v.add(child(s, "progressDeadlineSeconds"), "must be greater than minReadySeconds (%d)", d.Spec.MinReadySeconds)
	}

	v.selector(s, d.Spec.Selector, d.Spec.Template.Metadata.Labels)
	v.strategy(child(s, "strategy"), &d.Spec.Strategy)
	v.template(child(s, "template"), &d.Spec.Template, d.Replicas(), restartAlways)
	return v.errs
}

// selector checks the selector of a workload whose spec is at s: required,
// of matchLabels (the only form dockctl supports), and matching the
// template's labels, as apps/v1 requires of every controller that selects
// the pods of its template.
func (v *validator) selector(s string, sel *LabelSelector, templateLabels map[string]string) {
	switch {
	case sel == nil:
		v.add(child(s, "selector"), "required")
	case len(sel.MatchLabels) == 0:
		v.add(child(s, "selector.matchLabels"), "required")
	default:
		v.labels(child(s, "selector.matchLabels"), sel.MatchLabels)
		var missing []string
		for _, k := range sortedKeys(sel.MatchLabels) {
			if got, ok := templateLabels[k]; !ok || got != sel.MatchLabels[k] {
				missing = append(missing, k+"="+sel.MatchLabels[k])
			}
		}
		if len(missing) > 0 {
			v.add(child(s, "template.metadata.labels"), "does not match spec.selector.matchLabels (missing %s)", strings.Join(missing, ", "))
		}
	}
}

// template checks a pod template at path tp, of any workload kind: its
// labels and annotations, then its pod spec (podSpec), with the kind's
// rule for the pod's restartPolicy. replicas is the most pods of it that
// run at once (a host port allows one).
func (v *validator) template(tp string, t *PodTemplateSpec, replicas int32, restart restartRule) {
	v.podLabels(child(tp, "metadata.labels"), t.Metadata.Labels)
	v.annotations(child(tp, "metadata.annotations"), t.Metadata.Annotations, onTemplate)
	v.network(child(tp, "metadata.annotations"), t.Metadata.Annotations)
	v.podSpec(child(tp, "spec"), &t.Spec, replicas, restart)
}

// podLabels checks the labels a pod's containers get.
func (v *validator) podLabels(p string, labels map[string]string) {
	v.labels(p, labels)
	v.reservedLabels(p, labels)
}

func (v *validator) reservedLabels(p string, labels map[string]string) {
	for _, k := range sortedKeys(labels) {
		// Template labels go on the containers, where dockctl's own say
		// who owns them and which pod they belong to: a template may
		// not claim them.
		if ReservedLabels[k] {
			v.add(key(p, k), "label key %s is reserved for dockctl", k)
		}
	}
}

// restartRule checks a pod's restartPolicy at path p as the API server
// checks it for the kind that owns the pod.
type restartRule func(v *validator, p, policy string)

// restartAlways is the rule of the controllers that keep their pods
// running (Deployment, ReplicaSet, StatefulSet, DaemonSet): Always only.
func restartAlways(v *validator, p, rp string) {
	if rp != "" && rp != "Always" {
		v.add(p, `unsupported value %q: only "Always" is supported`, rp)
	}
}

func (v *validator) strategy(p string, st *DeploymentStrategy) {
	ru := st.RollingUpdate
	if !v.strategyType(p, st.Type, StrategyRecreate, ru != nil) {
		return
	}
	rp := child(p, "rollingUpdate")
	surgeOK := v.intOrPercent(child(rp, "maxSurge"), ru.MaxSurge, false)
	unavailOK := v.intOrPercent(child(rp, "maxUnavailable"), ru.MaxUnavailable, true)
	// Only an explicit pair of zeros is an error: an absent bound defaults
	// to 25%.
	if surgeOK && unavailOK && ru.MaxSurge != nil && ru.MaxUnavailable != nil &&
		isZeroIntOrPercent(*ru.MaxSurge) && isZeroIntOrPercent(*ru.MaxUnavailable) {
		v.add(child(rp, "maxUnavailable"), "may not be 0 when maxSurge is 0")
	}
}

// strategyType checks the type of a workload's update strategy at p:
// RollingUpdate (unset is RollingUpdate) or the kind's other type, which
// takes no rollingUpdate block. It reports whether there is a
// rollingUpdate block to check further.
func (v *validator) strategyType(p, typ, other string, rollingUpdate bool) bool {
	switch typ {
	case "", StrategyRollingUpdate, other:
	default:
		v.add(child(p, "type"), `unsupported value %q: must be "RollingUpdate" or %q`, typ, other)
	}
	if !rollingUpdate {
		return false
	}
	if typ == other {
		v.add(child(p, "rollingUpdate"), `may not be specified when strategy type is %q`, other)
		return false
	}
	return true
}

func (v *validator) intOrPercent(p string, x *intstr.IntOrString, atMost100 bool) bool {
	if x == nil {
		return true
	}
	if x.Type == intstr.Int {
		if x.IntVal < 0 {
			v.add(p, "must be greater than or equal to 0")
			return false
		}
		return true
	}
	if len(validation.IsValidPercent(x.StrVal)) > 0 {
		v.add(p, `invalid value %q: must be an integer or a percentage (e.g. "25%%")`, x.StrVal)
		return false
	}
	if atMost100 {
		if n, _ := intstr.GetScaledValueFromIntOrPercent(x, 100, false); n > 100 {
			v.add(p, "must not be greater than 100%%")
			return false
		}
	}
	return true
}

func isZeroIntOrPercent(x intstr.IntOrString) bool {
	n, err := intstr.GetScaledValueFromIntOrPercent(&x, 100, true)
	return err == nil && n == 0
}

func (v *validator) podSpec(p string, ps *PodSpec, replicas int32, restart restartRule) {
	restart(v, child(p, "restartPolicy"), ps.RestartPolicy)
	if g := ps.TerminationGracePeriodSeconds; g != nil {
		v.nonNegative(child(p, "terminationGracePeriodSeconds"), *g)
	}
	volumes := map[string]bool{}
	for i := range ps.Volumes {
		vol := &ps.Volumes[i]
		vp := index(child(p, "volumes"), i)
		if v.dnsLabel(child(vp, "name"), vol.Name) {
			if volumes[vol.Name] {
				v.add(child(vp, "name"), "duplicate volume name %q", vol.Name)
			}
			volumes[vol.Name] = true
		}
		switch n := btoi(vol.HostPath != nil) + btoi(vol.EmptyDir != nil) + btoi(vol.PersistentVolumeClaim != nil) +
			btoi(vol.ConfigMap != nil) + btoi(vol.Secret != nil) + btoi(vol.Projected != nil) + btoi(vol.DownwardAPI != nil); {
		case n == 0:
			v.add(vp, "must specify a volume type (one of hostPath, emptyDir, persistentVolumeClaim, configMap, secret, projected, downwardAPI)")
		case n > 1:
			v.add(vp, "may not specify more than 1 volume type")
		}
		if pvc := vol.PersistentVolumeClaim; pvc != nil {
			v.claimVolume(child(vp, "persistentVolumeClaim"), pvc) // validate_claims.go
		}
		v.fileVolume(vp, vol, ps) // files.go
		if hp := vol.HostPath; hp != nil {
			v.absPath(child(vp, "hostPath.path"), hp.Path)
			if !hostPathTypes[hp.Type] {
				v.add(child(vp, "hostPath.type"), "unsupported value %q", hp.Type)
			}
		}
		if ed := vol.EmptyDir; ed != nil {
			if ed.Medium != "" && ed.Medium != "Memory" {
				v.add(child(vp, "emptyDir.medium"), `unsupported value %q: must be "" or "Memory"`, ed.Medium)
			}
			if ed.SizeLimit != nil && ed.SizeLimit.Sign() < 0 {
				v.add(child(vp, "emptyDir.sizeLimit"), "must be greater than or equal to 0")
			}
		}
	}
	if sp := ps.ShareProcessNamespace; sp != nil && *sp && ps.HostPID {
		// Kubernetes, validatePodSpecSecurityContext: "ShareProcessNamespace
		// and HostPID cannot both be enabled".
		v.add(child(p, "shareProcessNamespace"), "may not be true when hostPID is true")
	}
	v.podSecurity(p, ps)
	pc := &podChecks{
		spec:     ps,
		volumes:  volumes,
		replicas: replicas,
		names:    map[string]string{},
		declared: map[portKey]string{},
		bound:    map[binding]portUse{},
		grace:    ps.TerminationGracePeriodSeconds,
	}
	// App containers first, then init containers, as Kubernetes'
	// ValidatePodSpec does (validateContainers, then
	// validateInitContainers): a name or port an init container shares
	// with an app container is reported on the init container.
	cp := child(p, "containers")
	if len(ps.Containers) == 0 {
		v.add(cp, "required")
	}
	for i := range ps.Containers {
		v.container(index(cp, i), &ps.Containers[i], false, pc)
	}
	ip := child(p, "initContainers")
	for i := range ps.InitContainers {
		v.container(index(ip, i), &ps.InitContainers[i], true, pc)
	}
}

// podChecks carries what the rules across the containers of one pod need:
// its volumes and replica count, and the names and ports the containers
// checked so far use.
type podChecks struct {
	spec     *PodSpec
	volumes  map[string]bool
	replicas int32
	// names maps a container name to the path of the container that has
	// it: names are unique across containers and initContainers.
	names map[string]string
	// declared maps a containerPort and protocol to the path of the
	// container that declares it.
	declared map[portKey]string
	// bound maps a host binding to the port that asks for it.
	bound map[binding]portUse
	// grace is the pod's terminationGracePeriodSeconds (a sleep hook's
	// bound; validate_probes.go).
	grace *int64
}

type portKey struct {
	port  int32
	proto string
}

type binding struct {
	ip    string
	port  int32
	proto string
}

type portUse struct {
	container, port string // paths
}

// container checks one container; p is its path, init tells an init
// container (initContainers[i]) from an app container. The rules follow
// Kubernetes' validateContainerCommon, validateContainers and
// validateInitContainers (pkg/apis/core/validation/validation.go) for the
// fields dockctl supports.
func (v *validator) container(p string, c *Container, init bool, pc *podChecks) {
	np := child(p, "name")
	if v.dnsLabel(np, c.Name) {
		// Kubernetes: names are unique within containers and
		// initContainers together (field.Duplicate).
		if first, dup := pc.names[c.Name]; dup {
			v.add(np, "duplicate container name %q (also %s)", c.Name, child(first, "name"))
		} else {
			pc.names[c.Name] = p
		}
	}
	switch {
	case c.Image == "":
		v.add(child(p, "image"), "required")
	case strings.TrimSpace(c.Image) != c.Image:
		v.add(child(p, "image"), "must not have leading or trailing whitespace")
	}
	switch c.ImagePullPolicy {
	case "", PullAlways, PullIfNotPresent, PullNever:
	default:
		v.add(child(p, "imagePullPolicy"), `unsupported value %q: must be "Always", "IfNotPresent" or "Never"`, c.ImagePullPolicy)
	}
	if c.WorkingDir != "" && !path.IsAbs(c.WorkingDir) {
		v.add(child(p, "workingDir"), "must be an absolute path")
	}
	for i, e := range c.Env {
		np := child(index(child(p, "env"), i), "name")
		if e.Name == "" {
			v.add(np, "required")
		} else if msgs := validation.IsRelaxedEnvVarName(e.Name); len(msgs) > 0 {
			// Kubernetes 1.34's rule (RelaxedEnvironmentVariableValidation,
			// GA): any printable ASCII but '=', so "1st", "a.b" and "A B"
			// are names; Docker passes any name without '='.
			v.add(np, "invalid value %q: %s", e.Name, strings.Join(msgs, "; "))
		}
	}
	v.envSources(p, c, pc.spec) // validate_env.go
	v.ports(p, c.Ports, pc)
	v.resources(child(p, "resources"), &c.Resources)
	mounts := map[string]bool{}
	for i, m := range c.VolumeMounts {
		mp := index(child(p, "volumeMounts"), i)
		switch {
		case m.Name == "":
			v.add(child(mp, "name"), "required")
		case !pc.volumes[m.Name]:
			v.add(child(mp, "name"), "no volume named %q in spec.template.spec.volumes", m.Name)
		}
		v.subPath(child(mp, "subPath"), m.SubPath) // files.go
		if m.SubPath != "" {
			v.subPathSource(child(mp, "subPath"), pc.spec, m.Name) // files.go
		}
		if v.absPath(child(mp, "mountPath"), m.MountPath) {
			if mounts[path.Clean(m.MountPath)] {
				v.add(child(mp, "mountPath"), "duplicate mount path %q", m.MountPath)
			}
			mounts[path.Clean(m.MountPath)] = true
		}
	}
	// Kubernetes' validateInitContainerRestartPolicy: an init container's
	// restartPolicy may only be Always (a native sidecar); on an app
	// container validateContainers forbids it ("may not be set for
	// non-init containers": the ContainerRestartRules of 1.34 are an alpha
	// feature, off by default).
	rp := child(p, "restartPolicy")
	switch {
	case !init && c.RestartPolicy != "":
		v.add(rp, "may not be set for non-init containers")
	case init && c.RestartPolicy != "" && c.RestartPolicy != ContainerRestartPolicyAlways:
		v.add(rp, `unsupported value %q: must be "Always" (a native sidecar) or unset`, c.RestartPolicy)
	}
	// Kubernetes' validateInitContainers: probes are for containers that
	// keep running, so an init container that runs to completion may have
	// none; a sidecar's are checked as an app container's.
	probesAllowed := !init || c.IsSidecar()
	for _, pr := range []struct {
		name     string
		probe    *Probe
		liveness bool
	}{{"readinessProbe", c.ReadinessProbe, false}, {"livenessProbe", c.LivenessProbe, true}, {"startupProbe", c.StartupProbe, true}} {
		switch {
		case pr.probe == nil:
		case !probesAllowed:
			v.add(child(p, pr.name), "may not be set for init containers without restartPolicy=Always")
		default:
			v.probe(child(p, pr.name), pr.probe, c, pr.liveness)
		}
	}
	v.lifecycle(child(p, "lifecycle"), c, probesAllowed, pc.grace)
	v.containerSecurity(p, c)
}

// ports checks the ports of the container at path cp. Within a container
// they follow Kubernetes' validateContainerPorts (names unique, numbers in
// range). Across the pod dockctl is stricter than Kubernetes, which only
// warns about a containerPort declared twice and checks an init
// container's host ports against its own only: every container of a pod
// shares one network namespace, whose owner (the holder, for a pod of
// several containers) publishes the ports of all of them at once, so a
// containerPort and protocol belongs to one container, and a host binding
// (hostIP, hostPort, protocol) to one port of the pod. A container may
// still declare its own containerPort twice (to publish it on two host
// ports), as it could before pods.
func (v *validator) ports(cp string, ports []ContainerPort, pc *podChecks) {
	p := child(cp, "ports")
	names := map[string]bool{}
	for i, port := range ports {
		pp := index(p, i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				v.add(child(pp, "name"), "invalid value %q: %s", port.Name, strings.Join(msgs, "; "))
			} else if names[port.Name] {
				v.add(child(pp, "name"), "duplicate port name %q", port.Name)
			}
			names[port.Name] = true
		}
		portOK := v.requiredPort(child(pp, "containerPort"), port.ContainerPort)
		proto, protoOK := v.protocol(child(pp, "protocol"), port.Protocol)
		if portOK && protoOK {
			k := portKey{port.ContainerPort, proto}
			switch first, ok := pc.declared[k]; {
			case !ok:
				pc.declared[k] = cp
			case first != cp:
				v.add(child(pp, "containerPort"), "%d/%s is also declared by %s: the containers of a pod share one network namespace",
					port.ContainerPort, proto, first)
			}
		}
		if port.HostIP != "" && net.ParseIP(port.HostIP) == nil {
			v.add(child(pp, "hostIP"), "invalid value %q: must be an IP address", port.HostIP)
		}
		if port.HostPort == 0 {
			continue
		}
		hp := child(pp, "hostPort")
		if !v.portNumber(hp, port.HostPort) {
			continue
		}
		// Each replica would need the same host port, and only one
		// container can bind it.
		if pc.replicas > 1 {
			v.add(hp, "may not be used with more than one replica (replicas: %d)", pc.replicas)
		}
		b := binding{port.HostIP, port.HostPort, proto}
		switch first, ok := pc.bound[b]; {
		case !ok:
			pc.bound[b] = portUse{container: cp, port: pp}
		case first.container == cp:
			v.add(hp, "duplicate hostPort %d/%s", port.HostPort, proto)
		default:
			v.add(hp, "duplicate hostPort %d/%s (also published by %s)", port.HostPort, proto, first.port)
		}
	}
}

// requiredPort checks a port number that must be set.
func (v *validator) requiredPort(p string, n int32) bool {
	if n == 0 {
		v.add(p, "required")
		return false
	}
	return v.portNumber(p, n)
}

// protocol checks a port's protocol and returns it defaulted ("" is TCP).
func (v *validator) protocol(p, proto string) (string, bool) {
	switch proto {
	case "":
		return ProtocolTCP, true
	case ProtocolTCP, ProtocolUDP:
		return proto, true
	}
	v.add(p, `unsupported value %q: must be "TCP" or "UDP"`, proto)
	return proto, false
}

func (v *validator) portNumber(p string, n int32) bool {
	if n < 1 || n > 65535 {
		v.add(p, "must be between 1 and 65535, inclusive")
		return false
	}
	return true
}

func (v *validator) resources(p string, r *ResourceRequirements) {
	for _, list := range []struct {
		name string
		rl   ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		lp := child(p, list.name)
		for _, k := range sortedKeys(list.rl) {
			q := list.rl[k]
			switch {
			case !isSupportedResource(k):
				v.add(key(lp, k), "%s", unsupportedResourceMsg(k))
			case q.Sign() < 0:
				v.add(key(lp, k), "must be greater than or equal to 0")
			}
		}
	}
	for _, k := range []string{"cpu", "memory"} {
		req, okr := r.Requests[k]
		lim, okl := r.Limits[k]
		if okr && okl && req.Sign() >= 0 && lim.Sign() >= 0 && req.Cmp(lim) > 0 {
			v.add(key(child(p, "requests"), k), "must be less than or equal to %s limit of %s", k, lim.String())
		}
	}
	v.extendedResources(p, r)
}

func (v *validator) probe(p string, pr *Probe, c *Container, liveness bool) {
	handlers := v.handlers(p, pr.Exec, pr.HTTPGet, pr.TCPSocket, c)
	handlers += v.grpcProbe(child(p, "grpc"), pr.GRPC)
	switch {
	case handlers == 0:
		v.add(p, "exactly one of exec, httpGet, tcpSocket or grpc is required")
	case handlers > 1:
		v.add(p, "may not specify more than one of exec, httpGet, tcpSocket or grpc")
	}
	for _, f := range []struct {
		name string
		val  int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds}, {"timeoutSeconds", pr.TimeoutSeconds},
		{"periodSeconds", pr.PeriodSeconds}, {"successThreshold", pr.SuccessThreshold},
		{"failureThreshold", pr.FailureThreshold},
	} {
		v.nonNegative(child(p, f.name), int64(f.val))
	}
	if liveness && pr.SuccessThreshold > 1 {
		v.add(child(p, "successThreshold"), "must be 1 for a liveness probe")
	}
}

// handlers checks the handlers a probe and a lifecycle hook share, and
// counts those set.
func (v *validator) handlers(p string, exec *ExecAction, get *HTTPGetAction, tcp *TCPSocketAction, c *Container) int {
	n := 0
	if exec != nil {
		n++
		if len(exec.Command) == 0 {
			v.add(child(p, "exec.command"), "required")
		}
	}
	if get != nil {
		n++
		v.probePort(child(p, "httpGet.port"), get.Port, c)
		switch get.Scheme {
		case "", "HTTP", "HTTPS":
		default:
			v.add(child(p, "httpGet.scheme"), `unsupported value %q: must be "HTTP" or "HTTPS"`, get.Scheme)
		}
		for i, hd := range get.HTTPHeaders {
			if hd.Name == "" {
				v.add(child(index(child(p, "httpGet.httpHeaders"), i), "name"), "required")
			}
		}
	}
	if tcp != nil {
		n++
		v.probePort(child(p, "tcpSocket.port"), tcp.Port, c)
	}
	return n
}

// probePort accepts a port number or the name of one of the container's
// ports, as Kubernetes does.
func (v *validator) probePort(p string, port intstr.IntOrString, c *Container) {
	if port.Type == intstr.Int {
		if port.IntVal == 0 {
			v.add(p, "required")
			return
		}
		v.portNumber(p, port.IntVal)
		return
	}
	if msgs := validation.IsValidPortName(port.StrVal); len(msgs) > 0 {
		v.add(p, "invalid value %q: %s", port.StrVal, strings.Join(msgs, "; "))
		return
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return
		}
	}
	v.add(p, "no container port named %q", port.StrVal)
}

func (v *validator) dnsLabel(p, s string) bool {
	return v.requiredName(p, s, validation.IsDNS1123Label)
}

func (v *validator) dns1035Label(p, s string) bool {
	return v.requiredName(p, s, validation.IsDNS1035Label)
}

// requiredName checks a name that must be set and pass check.
func (v *validator) requiredName(p, s string, check func(string) []string) bool {
	if s == "" {
		v.add(p, "required")
		return false
	}
	if msgs := check(s); len(msgs) > 0 {
		v.add(p, "invalid value %q: %s", s, strings.Join(msgs, "; "))
		return false
	}
	return true
}

func (v *validator) absPath(p, s string) bool {
	if s == "" {
		v.add(p, "required")
		return false
	}
	if !path.IsAbs(s) {
		v.add(p, "must be an absolute path")
		return false
	}
	return true
}

func (v *validator) nonNegative(p string, n int64) {
	if n < 0 {
		v.add(p, "must be greater than or equal to 0")
	}
}

// ReservedLabels are the container labels dockctl sets itself (ownership,
// role, pod membership; docs/design.md §4): a template may not set them.
var ReservedLabels = map[string]bool{
	"io.dockctl.instance": true, "io.dockctl.deployment": true, "io.dockctl.template-hash": true,
	"io.dockctl.namespace": true, "io.dockctl.role": true, "io.dockctl.pod": true,
	"io.dockctl.pod-uid": true, "io.dockctl.container": true, "io.dockctl.service": true, "io.dockctl.config-hash": true,
	// A workload's pod's owner and incarnation (docs/design.md §4, §17.1):
	// a template claiming them would make its pods pose as another
	// owner's, which that owner would take and remove.
	"io.dockctl.owner-kind": true, "io.dockctl.owner": true, "io.dockctl.owner-uid": true,
	"io.dockctl.hostname": true, "io.dockctl.subdomain": true, "io.dockctl.claim": true, "io.dockctl.version": true,
}

func (v *validator) labels(p string, labels map[string]string) {
	for _, k := range sortedKeys(labels) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			v.add(key(p, k), "invalid label key %q: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(labels[k]); len(msgs) > 0 {
			v.add(key(p, k), "invalid label value %q: %s", labels[k], strings.Join(msgs, "; "))
		}
	}
}

// onTemplate is the "kind" of a pod template's annotations.
const onTemplate = "template"

// meta checks the metadata of an object of kind: its name (a DNS-1035
// label for a Service, whose name becomes a DNS name and environment
// variables in Kubernetes; a DNS-1123 label otherwise, as Kubernetes'
// ValidateObjectMeta with each kind's name rule), its namespace (a DNS-1123
// label; a Namespace, cluster-scoped, has none to check), labels and
// annotations.
func (v *validator) meta(p string, m *ObjectMeta, kind string) {
	if kind == KindService {
		v.dns1035Label(child(p, "name"), m.Name)
	} else {
		v.dnsLabel(child(p, "name"), m.Name)
	}
	if kind != KindNamespace && m.Namespace != "" {
		v.dnsLabel(child(p, "namespace"), m.Namespace)
	}
	v.labels(child(p, "labels"), m.Labels)
	v.annotations(child(p, "annotations"), m.Annotations, kind)
}

// ACMEAnnotation ("true") on an Ingress or a Gateway asks for
// certificates by ACME for its TLS hosts (docs/design.md §10, ACME): the
// one dockctl.io annotation of a routing object.
const ACMEAnnotation = "dockctl.io/acme"

// annotations checks annotation keys and size; on is onTemplate for a pod
// template's, or the kind whose own metadata they are, for the dockctl.io/
// keys (all of which belong on a pod template).
func (v *validator) annotations(p string, ann map[string]string, on string) {
	size := 0
	for _, k := range sortedKeys(ann) {
		size += len(k) + len(ann[k])
		// Kubernetes checks annotation keys case-insensitively.
		if msgs := validation.IsQualifiedName(strings.ToLower(k)); len(msgs) > 0 {
			v.add(key(p, k), "invalid annotation key %q: %s", k, strings.Join(msgs, "; "))
		}
		// Case-insensitive prefix: "Dockctl.io/network" is a typo too.
		if !strings.HasPrefix(strings.ToLower(k), DockerAnnotationPrefix) {
			continue
		}
		switch {
		case k == ACMEAnnotation && (on == KindIngress || on == KindGateway):
			if ann[k] != "true" && ann[k] != "false" {
				v.add(key(p, k), "must be \"true\" or \"false\"")
			}
		case on != onTemplate && on != Kind:
			v.add(key(p, k), "unknown dockctl.io annotation: dockctl defines none on a %s", on)
		case !TemplateAnnotations[k]:
			v.add(key(p, k), "unknown dockctl.io annotation (known: %s)", strings.Join(sortedKeys(TemplateAnnotations), ", "))
		case on != onTemplate:
			v.add(key(p, k), "misplaced: a pod template annotation, it belongs in spec.template.metadata.annotations")
		}
	}
	if size > maxAnnotationsSize {
		v.add(p, "too long: must have at most %d bytes", maxAnnotationsSize)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// dockerNetworkName is what Docker accepts as a network name.
var dockerNetworkName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// network checks the dockctl.io/network annotation. It names a network to
// join, which once every replica joins its instance's network
// (docs/design.md §10) is an additional one: host, none and container:… are
// network modes, not networks to join, so they are refused now rather than
// change meaning later. hostNetwork is the way to the host's network.
func (v *validator) network(p string, ann map[string]string) {
	n, ok := ann[AnnotationNetwork]
	if !ok {
		return
	}
	p = key(p, AnnotationNetwork)
	switch ln := strings.ToLower(n); {
	case ln == "host":
		v.add(p, `"host" is not a network to join: use spec.template.spec.hostNetwork: true (which the controller allows only with %s)`, FlagAllowHostNamespaces)
	case ln == "none":
		v.add(p, `"none" is not a network to join: every replica has a network`)
	case strings.HasPrefix(ln, "container:"):
		v.add(p, "invalid value %q: joining another container's network namespace is not supported", n)
	case !dockerNetworkName.MatchString(n):
		v.add(p, "invalid value %q: must be the name of a Docker network", n)
	}
}
