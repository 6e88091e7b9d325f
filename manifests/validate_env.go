package manifests

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Environment from configuration: env[].valueFrom and envFrom, checked as
// Kubernetes' validateEnvVarValueFrom and validateEnvFrom
// (pkg/apis/core/validation/validation.go) check them. The values are
// resolved by the controller when it creates a container
// (podruntime.ResolveEnv).

// Field paths a fieldRef may name in an environment variable, as
// Kubernetes' validEnvDownwardAPIFieldPathExpressions, plus the subscripted
// metadata.labels['k'] and metadata.annotations['k'].
const (
	FieldMetadataName        = "metadata.name"
	FieldMetadataNamespace   = "metadata.namespace"
	FieldMetadataUID         = "metadata.uid"
	FieldMetadataLabels      = "metadata.labels"
	FieldMetadataAnnotations = "metadata.annotations"
	FieldSpecNodeName        = "spec.nodeName"
	FieldServiceAccountName  = "spec.serviceAccountName"
	FieldStatusHostIP        = "status.hostIP"
	FieldStatusHostIPs       = "status.hostIPs"
	FieldStatusPodIP         = "status.podIP"
	FieldStatusPodIPs        = "status.podIPs"
)

// EnvFieldPaths are the unsubscripted field paths of an env fieldRef.
var EnvFieldPaths = []string{
	FieldMetadataName, FieldMetadataNamespace, FieldMetadataUID, FieldSpecNodeName, FieldServiceAccountName,
	FieldStatusHostIP, FieldStatusHostIPs, FieldStatusPodIP, FieldStatusPodIPs,
}

// Resources a resourceFieldRef may name: Kubernetes'
// validContainerResourceFieldPathExpressions without ephemeral-storage and
// hugepages, which dockctl neither limits nor knows the host's amount of.
var EnvResourceFields = []string{"limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}

var (
	cpuDivisors    = []string{"1m", "1"}
	memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

// SplitFieldPath splits a subscripted field path, "metadata.labels['k']",
// into "metadata.labels" and "k" (Kubernetes' SplitMaybeSubscriptedPath);
// ok is false for a path without subscript.
func SplitFieldPath(fieldPath string) (path, subscript string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	s := strings.TrimSuffix(fieldPath, "']")
	parts := strings.SplitN(s, "['", 2)
	if len(parts) < 2 || len(parts[0]) == 0 {
		return fieldPath, "", false
	}
	return parts[0], parts[1], true
}

// envSources checks the valueFrom of c's env and its envFrom; p is the
// container's path.
func (v *validator) envSources(p string, c *Container, ps *PodSpec) {
	for i := range c.Env {
		e := &c.Env[i]
		if e.ValueFrom == nil {
			continue
		}
		vp := child(index(child(p, "env"), i), "valueFrom")
		n := 0
		if f := e.ValueFrom.FieldRef; f != nil {
			n++
			v.fieldRef(child(vp, "fieldRef"), f)
		}
		if r := e.ValueFrom.ResourceFieldRef; r != nil {
			n++
			v.resourceFieldRef(child(vp, "resourceFieldRef"), r, ps)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			n++
			v.keyRef(child(vp, "configMapKeyRef"), r.Name, r.Key)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			n++
			v.keyRef(child(vp, "secretKeyRef"), r.Name, r.Key)
		}
		switch {
		case n == 0:
			v.add(vp, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`")
		case n > 1:
			v.add(vp, "may not have more than one field specified at a time")
		}
		if n > 0 && e.Value != "" {
			v.add(vp, "may not be specified when `value` is not empty")
		}
	}
	for i := range c.EnvFrom {
		ef := &c.EnvFrom[i]
		fp := index(child(p, "envFrom"), i)
		if ef.Prefix != "" {
			// The API server checks a prefix as a variable's name, by
			// the relaxed rule since Kubernetes 1.34 (validate.go, env).
			if msgs := validation.IsRelaxedEnvVarName(ef.Prefix); len(msgs) > 0 {
				v.add(child(fp, "prefix"), "invalid value %q: %s", ef.Prefix, strings.Join(msgs, "; "))
			}
		}
		n := 0
		if r := ef.ConfigMapRef; r != nil {
			n++
			v.requiredName(child(fp, "configMapRef.name"), r.Name, validation.IsDNS1123Subdomain)
		}
		if r := ef.SecretRef; r != nil {
			n++
			v.requiredName(child(fp, "secretRef.name"), r.Name, validation.IsDNS1123Subdomain)
		}
		switch {
		case n == 0:
			v.add(fp, "must specify one of: `configMapRef` or `secretRef`")
		case n > 1:
			v.add(child(fp, "secretRef"), "may not have more than one field specified at a time")
		}
	}
}

// keyRef checks a configMapKeyRef or secretKeyRef: the object's name and
// the key, a file name as ConfigMap and Secret keys are.
func (v *validator) keyRef(p, name, k string) {
	v.requiredName(child(p, "name"), name, validation.IsDNS1123Subdomain)
	switch {
	case k == "":
		v.add(child(p, "key"), "required")
	default:
		if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
			v.add(child(p, "key"), "invalid value %q: %s", k, strings.Join(msgs, "; "))
		}
	}
}

// fieldRef checks a fieldRef of an environment variable, as Kubernetes'
// validateObjectFieldSelector with the env expressions.
func (v *validator) fieldRef(p string, f *ObjectFieldSelector) {
	if f.APIVersion != "" && f.APIVersion != "v1" {
		// ConvertDownwardAPIFieldLabel: only pods of v1 exist.
		v.add(child(p, "apiVersion"), "unsupported value %q: must be \"v1\"", f.APIVersion)
		return
	}
	fp := child(p, "fieldPath")
	if f.FieldPath == "" {
		v.add(fp, "required")
		return
	}
	if path, sub, ok := SplitFieldPath(f.FieldPath); ok {
		switch path {
		case FieldMetadataAnnotations:
			if msgs := validation.IsQualifiedName(strings.ToLower(sub)); len(msgs) > 0 {
				v.add(fp, "invalid annotation key %q: %s", sub, strings.Join(msgs, "; "))
			}
		case FieldMetadataLabels:
			if msgs := validation.IsQualifiedName(sub); len(msgs) > 0 {
				v.add(fp, "invalid label key %q: %s", sub, strings.Join(msgs, "; "))
			}
		default:
			v.add(fp, "unsupported value %q: a subscript is supported on %q and %q only", f.FieldPath, FieldMetadataLabels, FieldMetadataAnnotations)
		}
		return
	}
	for _, ok := range EnvFieldPaths {
		if f.FieldPath == ok {
			return
		}
	}
	v.add(fp, "unsupported value %q: must be one of %s, or %s['KEY'] or %s['KEY']", f.FieldPath,
		quoteAll(EnvFieldPaths), FieldMetadataLabels, FieldMetadataAnnotations)
}

// resourceFieldRef checks a resourceFieldRef of an environment variable,
// as Kubernetes' validateContainerResourceFieldSelector and
// validateContainerResourceDivisor. A containerName must name a container
// of the pod (Kubernetes finds out only when the kubelet starts it).
func (v *validator) resourceFieldRef(p string, r *ResourceFieldSelector, ps *PodSpec) {
	if r.ContainerName != "" && ps != nil {
		found := false
		for _, c := range ps.AllContainers() {
			found = found || c.Name == r.ContainerName
		}
		if !found {
			v.add(child(p, "containerName"), "no container named %q in the pod", r.ContainerName)
		}
	}
	rp := child(p, "resource")
	switch {
	case r.Resource == "":
		v.add(rp, "required")
		return
	case !contains(EnvResourceFields, r.Resource):
		v.add(rp, "unsupported value %q: must be one of %s", r.Resource, quoteAll(EnvResourceFields))
		return
	}
	if r.Divisor == nil || r.Divisor.IsZero() {
		return
	}
	d := r.Divisor.String()
	if strings.HasSuffix(r.Resource, ".cpu") {
		if !contains(cpuDivisors, d) {
			v.add(child(p, "divisor"), "invalid value %q: only divisor's values 1m and 1 are supported with the cpu resource", d)
		}
	} else if !contains(memoryDivisors, d) {
		v.add(child(p, "divisor"), "invalid value %q: only divisor's values %s are supported with the %s resource", d,
			strings.Join(memoryDivisors, ", "), strings.TrimPrefix(strings.TrimPrefix(r.Resource, "limits."), "requests."))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
