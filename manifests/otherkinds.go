package manifests

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Objects of the kinds dockctl does not run (docs/design.md §1 lists those
// it does). Real bundles ship a Deployment with RBAC objects, disruption
// budgets and autoscalers beside it; on one host those grant nothing and
// mean nothing, so they are skipped with a warning and the rest applies. A
// kind whose absence would change security or behaviour — a NetworkPolicy
// that would isolate, a Job that would run, any kind not listed — is an error naming the object, unless the user asks to
// skip it (LoadOptions.SkipUnsupported). The kinds dockctl runs (kinds:
// Deployment, Service, Namespace) are never skipped.

// ignoredKinds are the kinds skipped with a warning: they grant nothing,
// and have no meaning on one host. Each is checked as a cluster checks it,
// against the apiVersions that serve it (a group ending in "/" takes any
// version), so that a bundle dockctl passes does not fail on a cluster.
var ignoredKinds = map[string]struct {
	why         string
	apiVersions []string
}{
	"ServiceAccount":          {"no API server on one host: nothing uses its credentials", []string{"v1"}},
	"Role":                    {"no API server on one host: it grants nothing", []string{"rbac.authorization.k8s.io/v1"}},
	"RoleBinding":             {"no API server on one host: it grants nothing", []string{"rbac.authorization.k8s.io/v1"}},
	"ClusterRole":             {"no API server on one host: it grants nothing", []string{"rbac.authorization.k8s.io/v1"}},
	"ClusterRoleBinding":      {"no API server on one host: it grants nothing", []string{"rbac.authorization.k8s.io/v1"}},
	"PodDisruptionBudget":     {"no node drains on one host", []string{"policy/v1"}},
	"HorizontalPodAutoscaler": {"dockctl does not autoscale: replicas are what the Deployment says", []string{"autoscaling/v1", "autoscaling/v2"}},
	"Kustomization":           {"a kustomize input, not an object (run kustomize build first)", []string{"kustomize.config.k8s.io/"}},
}

// servedBy reports whether apiVersion is one of versions (an entry ending
// in "/" is a group: any of its versions).
func servedBy(apiVersion string, versions []string) bool {
	for _, v := range versions {
		if apiVersion == v || strings.HasSuffix(v, "/") && strings.HasPrefix(apiVersion, v) && len(apiVersion) > len(v) {
			return true
		}
	}
	return false
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
	// TopLevelOnly reads only a directory's own files, not those of its
	// subdirectories: kubectl's -f DIR without -R (dockctl's -f DIR
	// recurses unless --recursive=false is given, as it always has).
	TopLevelOnly bool
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
	// extra are decoders of kinds beyond kinds (DecodeWorkloads: the
	// workload kinds not served yet). A field, not a reference to their
	// table, so that a binary that never calls DecodeWorkloads does not
	// link their decoders.
	extra map[string]kindDecoder
}

// otherKind handles an object of a kind that has no decoder: it is skipped
// (recorded) or refused (returned as an error).
//
// Never skipped, whatever the options: an object without apiVersion, or
// with one that does not serve its kind (a cluster refuses it); a kind
// that is one of dockctl's but for its case (kubectl finds no such kind,
// and skipping it would let `--prune` delete the deployment it declares);
// and a list kind other than a top-level List (kubectl applies its items,
// which skipping would drop, and prune delete).
func (st *decodeState) otherKind(file string, n *yaml.Node, base, kind string, kindLine int) ErrorList {
	apiVersion, avLine := scalarField(n, "apiVersion")
	name := ""
	if md := mappingField(n, "metadata"); md != nil {
		name, _ = scalarField(md, "name")
	}
	fail := func(line int, field, format string, args ...any) ErrorList {
		return ErrorList{{File: file, Line: line, Path: child(base, field), Msg: fmt.Sprintf(format, args...)}}
	}
	if avLine == 0 {
		return fail(n.Line, "apiVersion", "required")
	}
	for k := range kinds {
		if strings.EqualFold(k, kind) {
			return fail(kindLine, "kind", "must be %q, got %q", k, kind)
		}
	}
	if strings.HasSuffix(kind, "List") {
		return fail(kindLine, "kind", "%q: only a top-level v1 List is read; put its items in it", kind)
	}
	s := Skipped{File: file, Line: n.Line, APIVersion: apiVersion, Kind: kind, Name: name}
	if ig, ok := ignoredKinds[kind]; ok {
		if !servedBy(apiVersion, ig.apiVersions) {
			return fail(avLine, "apiVersion", "%s is not served by %q (expected %s)", kind, apiVersion, strings.Join(ig.apiVersions, " or "))
		}
		s.Why = ig.why
		st.skipped = append(st.skipped, s)
		return nil
	}
	if why, ok := notServedWhy[kind]; ok && !st.opts.SkipUnsupported {
		return fail(kindLine, "kind", "unsupported kind %q: %s; --skip-unsupported applies the rest without it", kind, why)
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
