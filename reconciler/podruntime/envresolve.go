package podruntime

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The environment of a container from configuration, as the kubelet's
// makeEnvironmentVariables makes it: envFrom first, in order, each key with
// its prefix (keys that are no valid variable name skipped, as the kubelet
// skips them); then env in order, a literal value with $(VAR) references to
// the variables defined before it expanded, a valueFrom resolved from a
// ConfigMap, a Secret, the pod's identity or the container's resources. A
// later definition of a name replaces an earlier one in place. A reference
// to a ConfigMap or Secret (or a key of one) that does not exist is skipped
// when optional and otherwise fails the whole container: Kubernetes leaves
// such a pod pending, and dockctl creates nothing of its revision
// (MissingRefsError).
//
// ResolveEnv is a pure function of the template, the ConfigStore and the
// pod's identity. A Secret's values are never in what it returns as an
// error: only the Secret's name and the key.

// PodIdentity is what a fieldRef or resourceFieldRef reads of the pod and
// its host.
type PodIdentity struct {
	Name      string // the pod's name (its hostname)
	Namespace string // "default" for ""
	UID       string
	// Labels are the pod's labels (the template's, with
	// pod-template-hash), Annotations the template's.
	Labels      map[string]string
	Annotations map[string]string
	// ServiceAccountName is "default": dockctl ignores the field, as a
	// cluster without one would fill it.
	ServiceAccountName string
	// NodeName is the Docker host's name, HostIP its address as the pod
	// reaches it (the instance network's gateway), PodIP the pod's
	// address, assigned by dockctl before the create ("" when it has
	// none, e.g. off the instance network).
	NodeName, HostIP, PodIP string
	// NodeCPUs and NodeMemory are the host's, the values of an unset
	// limit (Kubernetes reports the node's allocatable).
	NodeCPUs   int64
	NodeMemory int64
}

// MissingRef is a reference to a ConfigMap or Secret, or to a key of one,
// that cannot be resolved. It names the object and key, never a value.
type MissingRef struct {
	Kind      string // manifests.KindConfigMap or KindSecret
	Namespace string
	Name      string
	Key       string // "" for an envFrom, or when the object itself is missing
	Container string
	// Env is the variable that needs it ("" for an envFrom).
	Env string
	// KeyMissing says the object exists but lacks Key.
	KeyMissing bool
}

func (m MissingRef) String() string {
	obj := fmt.Sprintf("%s %s/%s", m.Kind, m.Namespace, m.Name)
	what := "not found"
	if m.KeyMissing {
		what = fmt.Sprintf("has no key %q", m.Key)
	}
	use := fmt.Sprintf("container %q", m.Container)
	if m.Env != "" {
		use += fmt.Sprintf(", env %s", m.Env)
	} else {
		use += ", envFrom"
	}
	return fmt.Sprintf("%s %s (%s)", obj, what, use)
}

// MissingRefsError lists the references that are not optional and cannot
// be resolved.
type MissingRefsError struct{ Refs []MissingRef }

func (e *MissingRefsError) Error() string {
	parts := make([]string, len(e.Refs))
	for i, r := range e.Refs {
		parts[i] = r.String()
	}
	return "waiting for " + strings.Join(parts, "; ")
}

// ResolvedEnv is a container's environment as "NAME=value" in definition
// order, and the envFrom keys skipped as invalid variable names, by source.
type ResolvedEnv struct {
	Vars    []string
	Skipped []SkippedKeys
}

// SkippedKeys are the keys of one envFrom source (with its prefix) that
// are no valid variable name, sorted, reported in a Warning event of the
// pod (InvalidEnvironmentVariableNames), as kubelets before Kubernetes
// 1.30 did for names that were no C identifier. Since 1.34 a name is any
// printable ASCII but '=' (RelaxedEnvironmentVariableValidation, GA): a
// ConfigMap or Secret key ([-._a-zA-Z0-9]+) behind a prefix the API
// server accepted always is one, and the kubelet no longer checks. Only a
// key that escaped validation (an '=' Docker would split the variable at)
// is still skipped here.
type SkippedKeys struct {
	Kind      string // manifests.KindConfigMap or KindSecret
	Namespace string
	Name      string
	Keys      []string
}

// ReasonInvalidEnvNames is the reason of the kubelet's event.
const ReasonInvalidEnvNames = "InvalidEnvironmentVariableNames"

// Message is the kubelet's message of the event, word for word
// (makeEnvironmentVariables): the keys are names, never values.
func (s SkippedKeys) Message() string {
	src := "configMap"
	if s.Kind == manifests.KindSecret {
		src = "secret"
	}
	return fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
		strings.Join(s.Keys, ", "), src, s.Namespace, s.Name)
}

// ResolveEnv resolves the environment of container c of pod spec ps. A nil
// cs has no ConfigMap nor Secret: every reference to one is missing. The
// error is a *MissingRefsError when only references are missing, else a
// store failure (never with a value).
func ResolveEnv(ps *manifests.PodSpec, c *manifests.Container, pod PodIdentity, cs ConfigStore) (ResolvedEnv, error) {
	return ResolveEnvWithServices(ps, c, pod, cs, nil)
}

// ResolveEnvWithServices is ResolveEnv with the pod's Service variables
// (the Service controller computes them: docs/design.md §10),
// as the kubelet's makeEnvironmentVariables adds them: a $(VAR) reference
// may name one, a variable the container defines wins over one, and the
// others follow the container's own, sorted by name.
func ResolveEnvWithServices(ps *manifests.PodSpec, c *manifests.Container, pod PodIdentity, cs ConfigStore, services map[string]string) (ResolvedEnv, error) {
	r := &envResolver{ps: ps, c: c, pod: pod, cs: cs, index: map[string]int{}, services: services,
		cms: map[string]*manifests.ConfigMap{}, secrets: map[string]*manifests.Secret{}}
	if r.pod.Namespace == "" {
		r.pod.Namespace = manifests.DefaultNamespace
	}
	for _, ef := range c.EnvFrom {
		r.envFrom(ef)
	}
	for i := range c.Env {
		r.env(&c.Env[i])
	}
	out := ResolvedEnv{Vars: make([]string, len(r.names)), Skipped: r.skipped}
	for i, n := range r.names {
		out.Vars[i] = n + "=" + r.values[i]
	}
	for _, n := range slices.Sorted(maps.Keys(services)) {
		if _, own := r.index[n]; !own {
			out.Vars = append(out.Vars, n+"="+services[n])
		}
	}
	if len(r.errs) > 0 {
		return out, errors.Join(r.errs...)
	}
	if len(r.missing) > 0 {
		return out, &MissingRefsError{Refs: r.missing}
	}
	return out, nil
}

type envResolver struct {
	ps  *manifests.PodSpec
	c   *manifests.Container
	pod PodIdentity
	cs  ConfigStore
	// services are the pod's Service variables, by name.
	services map[string]string

	names, values []string
	index         map[string]int
	skipped       []SkippedKeys
	missing       []MissingRef
	errs          []error
	// Lookups, once per object: nil for one that does not exist.
	cms     map[string]*manifests.ConfigMap
	secrets map[string]*manifests.Secret
}

func (r *envResolver) set(name, value string) {
	if i, ok := r.index[name]; ok {
		r.values[i] = value
		return
	}
	r.index[name] = len(r.names)
	r.names = append(r.names, name)
	r.values = append(r.values, value)
}

func (r *envResolver) lookup(name string) (string, bool) {
	if i, ok := r.index[name]; ok {
		return r.values[i], true
	}
	v, ok := r.services[name] // the kubelet's mapping falls back to them
	return v, ok
}

// configMap returns the ConfigMap, nil when it does not exist; a store
// failure other than not found is recorded.
func (r *envResolver) configMap(name string) *manifests.ConfigMap {
	if cm, ok := r.cms[name]; ok {
		return cm
	}
	var cm *manifests.ConfigMap
	if r.cs != nil {
		got, err := r.cs.LookupConfigMap(r.pod.Namespace, name)
		switch {
		case err == nil:
			cm = got
		case !errors.Is(err, store.ErrNotFound):
			r.errs = append(r.errs, fmt.Errorf("ConfigMap %s/%s: %w", r.pod.Namespace, name, err))
		}
	}
	r.cms[name] = cm
	return cm
}

// secret returns the Secret, nil when it does not exist. The store's
// error names the Secret only (ConfigStore's contract).
func (r *envResolver) secret(name string) *manifests.Secret {
	if s, ok := r.secrets[name]; ok {
		return s
	}
	var s *manifests.Secret
	if r.cs != nil {
		got, err := r.cs.LookupSecret(r.pod.Namespace, name)
		switch {
		case err == nil:
			s = got
		case !errors.Is(err, store.ErrNotFound):
			r.errs = append(r.errs, fmt.Errorf("Secret %s/%s: %w", r.pod.Namespace, name, err))
		}
	}
	r.secrets[name] = s
	return s
}

func (r *envResolver) miss(kind, name, key, env string, keyMissing bool) {
	r.missing = append(r.missing, MissingRef{Kind: kind, Namespace: r.pod.Namespace, Name: name, Key: key,
		Container: r.c.Name, Env: env, KeyMissing: keyMissing})
}

func (r *envResolver) envFrom(ef manifests.EnvFromSource) {
	var (
		kind, name string
		optional   *bool
		data       map[string]string
		found      bool
	)
	switch {
	case ef.ConfigMapRef != nil:
		kind, name, optional = manifests.KindConfigMap, ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional
		if cm := r.configMap(name); cm != nil {
			// The kubelet reads data only: binaryData is for files.
			data, found = cm.Data, true
		}
	case ef.SecretRef != nil:
		kind, name, optional = manifests.KindSecret, ef.SecretRef.Name, ef.SecretRef.Optional
		if s := r.secret(name); s != nil {
			found = true
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
	default:
		return // refused by validation
	}
	if !found {
		if optional == nil || !*optional {
			r.miss(kind, name, "", "", false)
		}
		return
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a map has no order; the kubelet's result has none either
	var invalid []string
	for _, k := range keys {
		n := ef.Prefix + k
		// The API server's rule for a variable's name since 1.34 (see
		// SkippedKeys): "1st-key" and "log.level" are passed as they are.
		if len(validation.IsRelaxedEnvVarName(n)) > 0 {
			invalid = append(invalid, n)
			continue
		}
		r.set(n, data[k])
	}
	if len(invalid) > 0 {
		sort.Strings(invalid) // the kubelet sorts the names it reports
		r.skipped = append(r.skipped, SkippedKeys{Kind: kind, Namespace: r.pod.Namespace, Name: name, Keys: invalid})
	}
}

func (r *envResolver) env(e *manifests.EnvVar) {
	src := e.ValueFrom
	if src == nil {
		r.set(e.Name, manifests.ExpandVars(e.Value, r.lookup))
		return
	}
	switch {
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm := r.configMap(ref.Name)
		if cm == nil {
			if !optional {
				r.miss(manifests.KindConfigMap, ref.Name, ref.Key, e.Name, false)
			}
			return
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if !optional {
				r.miss(manifests.KindConfigMap, ref.Name, ref.Key, e.Name, true)
			}
			return
		}
		r.set(e.Name, v)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s := r.secret(ref.Name)
		if s == nil {
			if !optional {
				r.miss(manifests.KindSecret, ref.Name, ref.Key, e.Name, false)
			}
			return
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if !optional {
				r.miss(manifests.KindSecret, ref.Name, ref.Key, e.Name, true)
			}
			return
		}
		r.set(e.Name, string(v))
	case src.FieldRef != nil:
		v, err := r.field(src.FieldRef.FieldPath)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("container %q, env %s: %w", r.c.Name, e.Name, err))
			return
		}
		r.set(e.Name, v)
	case src.ResourceFieldRef != nil:
		v, err := r.resource(src.ResourceFieldRef)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("container %q, env %s: %w", r.c.Name, e.Name, err))
			return
		}
		r.set(e.Name, v)
	}
}

// field reads a fieldRef's path of the pod (manifests.EnvFieldPaths).
func (r *envResolver) field(path string) (string, error) {
	if p, sub, ok := manifests.SplitFieldPath(path); ok {
		switch p {
		case manifests.FieldMetadataLabels:
			return r.pod.Labels[sub], nil
		case manifests.FieldMetadataAnnotations:
			return r.pod.Annotations[sub], nil
		}
		return "", fmt.Errorf("fieldRef %q: unsupported field path", path)
	}
	switch path {
	case manifests.FieldMetadataName:
		return r.pod.Name, nil
	case manifests.FieldMetadataNamespace:
		return r.pod.Namespace, nil
	case manifests.FieldMetadataUID:
		return r.pod.UID, nil
	case manifests.FieldSpecNodeName:
		return r.pod.NodeName, nil
	case manifests.FieldServiceAccountName:
		return r.pod.ServiceAccountName, nil
	case manifests.FieldStatusHostIP, manifests.FieldStatusHostIPs:
		// One address family: the list is the one address.
		return r.pod.HostIP, nil
	case manifests.FieldStatusPodIP, manifests.FieldStatusPodIPs:
		return r.pod.PodIP, nil
	}
	return "", fmt.Errorf("fieldRef %q: unsupported field path", path)
}

// resource reads a resourceFieldRef as the kubelet's
// ExtractContainerResourceValue: the value divided by the divisor (default
// 1) and rounded up; an unset limit is the node's capacity, an unset
// request its limit (as the API server defaults it), else 0.
func (r *envResolver) resource(ref *manifests.ResourceFieldSelector) (string, error) {
	c := r.c
	if ref.ContainerName != "" {
		if c = r.ps.FindContainer(ref.ContainerName); c == nil {
			return "", fmt.Errorf("resourceFieldRef: no container named %q", ref.ContainerName)
		}
	}
	divisor := resource.MustParse("1")
	if ref.Divisor != nil && !ref.Divisor.IsZero() {
		divisor = *ref.Divisor
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	limit, hasLimit := c.Resources.Limits[name]
	request, hasRequest := c.Resources.Requests[name]
	var q resource.Quantity
	switch {
	case kind == "limits" && hasLimit:
		q = limit
	case kind == "limits" && name == "cpu":
		q = *resource.NewQuantity(r.pod.NodeCPUs, resource.DecimalSI)
	case kind == "limits" && name == "memory":
		q = *resource.NewQuantity(r.pod.NodeMemory, resource.BinarySI)
	case kind == "requests" && hasRequest:
		q = request
	case kind == "requests" && hasLimit:
		q = limit
	case kind == "requests":
		q = resource.Quantity{}
	default:
		return "", fmt.Errorf("resourceFieldRef: unsupported resource %q", ref.Resource)
	}
	if name == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}
