package manifests

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Fields with no meaning on one host: a cluster uses them to pick a node, an
// identity or a priority, which one Docker host has no choice of. They are
// accepted so that real manifests apply, and decoded strictly against
// Kubernetes' type (a value a cluster refuses is an error here too), but
// never stored: the Deployment has no field for them, so they are never in
// the template hash and never shown by `get -o yaml`. apply names them in
// one warning line (IgnoredWarning).
type ignoredField struct{}

var ignoredFields = map[reflect.Type]map[string]ignoredField{
	reflect.TypeOf(PodSpec{}): {
		"serviceAccountName":           {},
		"serviceAccount":               {}, // the deprecated alias of serviceAccountName
		"automountServiceAccountToken": {},
		"nodeSelector":                 {},
		"affinity":                     {},
		"tolerations":                  {},
		"topologySpreadConstraints":    {},
		"schedulerName":                {},
		"priorityClassName":            {},
		"priority":                     {},
		"preemptionPolicy":             {},
	},
	reflect.TypeOf(Container{}): {
		"terminationMessagePath":   {},
		"terminationMessagePolicy": {},
	},
	// A pod template's name: Kubernetes accepts it and names the pods a
	// workload makes by their controller's rules, never by it
	// (ValidatePodTemplateSpec checks only the template's labels and
	// annotations); Helm charts set it. Never stored, it leaves the
	// template hash of every template as it was.
	reflect.TypeOf(TemplateMeta{}): {
		"name": {},
	},
}

// ignore handles key name of a mapping of Go type t (Kubernetes' type k8s)
// at path p: it reports whether the key is one of the ignored fields, and
// if so decodes its value into *sink, a value of Kubernetes' type made on
// the first ignored key, which structure then puts through Kubernetes'
// validation rules (validateIgnored), and records it.
func (w *walker) ignore(t reflect.Type, name string, k8s reflect.Type, sink *reflect.Value, key, val *yaml.Node, p string) bool {
	if _, ok := ignoredFields[t][name]; !ok {
		return false
	}
	ks := k8sStruct(k8s)
	if ks == nil {
		return false
	}
	kf, ok := jsonFields(ks)[name]
	if !ok {
		return false
	}
	w.lines[p] = key.Line
	if !sink.IsValid() {
		*sink = reflect.New(ks).Elem()
	}
	// Decoded into Kubernetes' own type, then dropped: the walk checks
	// every key and scalar as for a supported field.
	w.walk(val, sink.FieldByIndex(kf.index), kf.typ, p)
	w.ignored = append(w.ignored, p)
	return true
}

// IgnoredWarning words the one warning line an apply prints about the
// ignored fields of the documents, or "" when there are none: each object
// and the fields it sets, by name.
func IgnoredWarning(docs []*Document) string {
	var parts []string
	for _, d := range docs {
		if len(d.Ignored) == 0 {
			continue
		}
		var names []string
		for _, p := range d.Ignored {
			n := p
			if i := strings.LastIndexByte(p, '.'); i >= 0 {
				n = p[i+1:]
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		ref := strings.ToLower(d.Kind()) + "/" + d.Meta().Name
		if ns := d.Meta().Namespace; ns != "" && ns != DefaultNamespace {
			ref += " -n " + ns
		}
		parts = append(parts, ref+" ("+strings.Join(names, ", ")+")")
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("fields with no meaning on one host are ignored: %s", strings.Join(parts, "; "))
}
