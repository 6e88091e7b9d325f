package manifests

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Objects of the kinds dockctl does not run (DESIGN §10.6). Real bundles
// ship a Deployment with RBAC objects, disruption budgets and autoscalers
// beside it; on one host those grant nothing and mean nothing, so they are
// skipped with a warning and the rest applies. A kind whose absence would
// change security or behaviour — a NetworkPolicy that would isolate, a Job
// that would run, a Service that would route, any kind not listed — is an
// error naming the object, unless the user asks to skip it
// (LoadOptions.SkipUnsupported).

// ignoredKinds are the kinds skipped with a warning: they grant nothing,
// and have no meaning on one host.
var ignoredKinds = map[string]string{
	"ServiceAccount":          "no API server on one host: nothing uses its credentials",
	"Role":                    "no API server on one host: it grants nothing",
	"RoleBinding":             "no API server on one host: it grants nothing",
	"ClusterRole":             "no API server on one host: it grants nothing",
	"ClusterRoleBinding":      "no API server on one host: it grants nothing",
	"PodDisruptionBudget":     "no node drains on one host",
	"HorizontalPodAutoscaler": "dockctl does not autoscale: replicas are what the Deployment says",
	"Kustomization":           "a kustomize input, not an object (run kustomize build first)",
}

// IgnoredKinds lists the kinds skipped with a warning, sorted.
func IgnoredKinds() []string {
	out := make([]string, 0, len(ignoredKinds))
	for k := range ignoredKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LoadOptions tune how LoadAll treats objects of other kinds.
type LoadOptions struct {
	// SkipUnsupported skips objects of kinds dockctl does not support,
	// with a warning, instead of refusing the whole input
	// (--skip-unsupported).
	SkipUnsupported bool
}

// Skipped is an object that was read but is not applied.
type Skipped struct {
	File       string
	Line       int
	APIVersion string
	Kind       string
	Name       string
	// Unsupported: skipped only because the user asked
	// (SkipUnsupported); its absence may change what the application does.
	Unsupported bool
	Why         string
}

// String words the warning, one line naming the object.
func (s Skipped) String() string {
	obj := s.Kind
	if s.Name != "" {
		obj += fmt.Sprintf(" %q", s.Name)
	}
	if s.Unsupported {
		return fmt.Sprintf("%s:%d: skipped %s: not supported by dockctl (--skip-unsupported); the application may behave differently without it", s.File, s.Line, obj)
	}
	return fmt.Sprintf("%s:%d: skipped %s: %s", s.File, s.Line, obj, s.Why)
}

// decodeState carries what decoding one input collects besides documents.
type decodeState struct {
	opts    LoadOptions
	skipped []Skipped
}

// otherKind handles an object of a kind that has no decoder: it is skipped
// (recorded) or refused (returned as an error).
func (st *decodeState) otherKind(file string, n *yaml.Node, base, kind string, kindLine int) ErrorList {
	apiVersion, _ := scalarField(n, "apiVersion")
	name := ""
	if md := mappingField(n, "metadata"); md != nil {
		name, _ = scalarField(md, "name")
	}
	s := Skipped{File: file, Line: n.Line, APIVersion: apiVersion, Kind: kind, Name: name}
	if why, ok := ignoredKinds[kind]; ok {
		s.Why = why
		st.skipped = append(st.skipped, s)
		return nil
	}
	if st.opts.SkipUnsupported {
		s.Unsupported = true
		st.skipped = append(st.skipped, s)
		return nil
	}
	obj := ""
	if name != "" {
		obj = fmt.Sprintf(" (%s %q)", kind, name)
	}
	return ErrorList{{File: file, Line: kindLine, Path: child(base, "kind"),
		Msg: fmt.Sprintf("unsupported kind %q%s: dockctl runs %s; --skip-unsupported applies the rest without it", kind, obj, strings.Join(supportedKinds(), ", "))}}
}

// supportedKinds lists the kinds dockctl runs, sorted.
func supportedKinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mappingField returns the mapping value of a key in a mapping, or nil.
func mappingField(m *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Value == name && v.Kind == yaml.MappingNode {
			return v
		}
	}
	return nil
}
