package manifests

import (
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// The shape of what the decoder accepts, for `dockctl explain`: read from
// the same tables the walk reads (jsonFields, ignoredKeys, ignoredFields),
// so that what explain lists is what apply takes.

// KindSchema is one kind dockctl accepts: its apiVersion, dockctl's type
// and Kubernetes' type of the same object.
type KindSchema struct {
	Kind, APIVersion string
	Type, K8s        reflect.Type
}

// KindSchemas lists the kinds dockctl accepts, sorted by kind.
func KindSchemas() []KindSchema {
	out := make([]KindSchema, 0, len(kinds))
	for k, d := range kinds {
		out = append(out, KindSchema{Kind: k, APIVersion: d.apiVersion, Type: d.typ, K8s: d.k8s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Acceptance is what the decoder does with a key it accepts.
type Acceptance int

const (
	// AcceptDecoded: decoded into dockctl's type, validated and stored.
	AcceptDecoded Acceptance = iota
	// AcceptSkipped: skipped on input, whatever its value: a status,
	// server-set metadata, a Namespace's finalizers (ignoredKeys).
	AcceptSkipped
	// AcceptIgnored: no meaning on one host; decoded against Kubernetes'
	// type and validated, never stored, named in apply's warning
	// (ignored.go).
	AcceptIgnored
)

// AcceptedField is one key the decoder accepts in a mapping.
type AcceptedField struct {
	Name string
	// Type is the Go type the value is read as: dockctl's, or
	// Kubernetes' for an ignored field; for a skipped key, which is not
	// read at all, Kubernetes' where it has one (what a cluster prints
	// there, a Deployment's status.collisionCount too, applies), else
	// dockctl's.
	Type reflect.Type
	// K8s is Kubernetes' type of the field, nil where it has none; Owner
	// is Kubernetes' struct that declares it (an embedded one, as
	// TypeMeta, for an inlined field).
	K8s, Owner reflect.Type
	// Required: Kubernetes requires it, as its API schema says (its JSON
	// tag lacks omitempty, which is what openapi-gen reads).
	Required bool
	How      Acceptance
}

// optionalUntagged are the fields of Kubernetes' types whose JSON tag
// lacks omitempty but whose +optional comment (not at hand at run time)
// makes their schema say optional.
var optionalUntagged = map[reflect.Type]string{
	reflect.TypeFor[corev1.GRPCAction]():            "service",
	reflect.TypeFor[corev1.ProjectedVolumeSource](): "sources",
}

// AcceptedFields lists, sorted by name, the keys the decoder accepts in a
// mapping read as Go type t beside Kubernetes' type k (pointers and
// slices of structs are looked through; nil when t is not a struct).
func AcceptedFields(t, k reflect.Type) []AcceptedField {
	t, k = k8sStruct(t), k8sStruct(k)
	if t == nil {
		return nil
	}
	var kf map[string]jsonField
	if k != nil {
		kf = jsonFields(k)
	}
	field := func(name string, typ reflect.Type, how Acceptance) AcceptedField {
		f := AcceptedField{Name: name, Type: typ, How: how}
		if kk, ok := kf[name]; ok {
			f.K8s, f.Owner = kk.typ, kk.owner
			f.Required = !kk.optional && optionalUntagged[kk.owner] != name
			if f.Type == nil || how == AcceptSkipped {
				f.Type = kk.typ
			}
		}
		return f
	}
	var out []AcceptedField
	seen := map[string]bool{}
	for name, f := range jsonFields(t) {
		how := AcceptDecoded
		if ignoredKeys[t][name] {
			how = AcceptSkipped
		}
		out = append(out, field(name, f.typ, how))
		seen[name] = true
	}
	for name := range ignoredKeys[t] {
		// A key neither type has (a ConfigMap's status, skipped so that
		// any printed object applies) is no field: it is left out.
		if _, ok := kf[name]; ok && !seen[name] {
			out = append(out, field(name, nil, AcceptSkipped))
			seen[name] = true
		}
	}
	for name := range ignoredFields[t] {
		// The walk takes an ignored key only where Kubernetes' type has
		// it (ignore), decoded into Kubernetes' type.
		if _, ok := kf[name]; ok && !seen[name] {
			out = append(out, field(name, kf[name].typ, AcceptIgnored))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
