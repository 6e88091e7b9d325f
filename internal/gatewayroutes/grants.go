package gatewayroutes

import "github.com/dockctl/dockctl/manifests"

// Reference is one side of a cross-object reference, as a ReferenceGrant
// names it: an API group ("" for the core group), a kind and a namespace
// (and, for the target, a name).
type Reference struct {
	Group, Kind, Namespace, Name string
}

// Permitted reports whether from may refer to to. A reference within a
// namespace always may; across namespaces only a ReferenceGrant in to's
// namespace whose from list names from's group, kind and namespace and
// whose to list names to's group and kind (and its name, if the entry has
// one) permits it (the Gateway API's ReferenceGrant semantics).
func Permitted(grants []*manifests.ReferenceGrant, from, to Reference) bool {
	if from.Namespace == to.Namespace {
		return true
	}
	for _, g := range grants {
		if ns(g.Metadata.Namespace) != to.Namespace {
			continue
		}
		fromOK := false
		for _, f := range g.Spec.From {
			if f.Group == from.Group && f.Kind == from.Kind && f.Namespace == from.Namespace {
				fromOK = true
				break
			}
		}
		if !fromOK {
			continue
		}
		for _, t := range g.Spec.To {
			if t.Group == to.Group && t.Kind == to.Kind && (t.Name == nil || *t.Name == to.Name) {
				return true
			}
		}
	}
	return false
}

// ns is a namespace as written, "" being the default one.
func ns(s string) string {
	if s == "" {
		return manifests.DefaultNamespace
	}
	return s
}
