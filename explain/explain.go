// Package explain documents the fields of the manifests dockctl accepts,
// as `kubectl explain` documents a cluster's (its OpenAPI v3 "plaintext"
// layout): the kind's group, kind and version, the field's type and
// description, and its fields, each with its type and description.
//
// What is listed is exactly what the decoder takes (manifests.KindSchemas
// and manifests.AcceptedFields: dockctl's own types and the keys the walk
// skips or ignores), never Kubernetes' whole type. The descriptions are
// Kubernetes' own (the SwaggerDoc of the k8s.io/api type at the same
// path), with a "dockctl:" line where dockctl gives a field another
// meaning or a restriction (notes.go).
//
// Pure: no I/O but the writer it is given.
package explain

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
)

// Kinds lists the kinds explain covers: those of manifests, sorted.
func Kinds() []string {
	var out []string
	for _, k := range manifests.KindSchemas() {
		out = append(out, k.Kind)
	}
	return out
}

// node is the object or one of its fields, as explain shows it.
type node struct {
	manifests.AcceptedField
	// in is the Go type of the mapping the field is a key of (nil for the
	// object itself), for its note.
	in reflect.Type
}

func root(kind string) (node, manifests.KindSchema, error) {
	for _, k := range manifests.KindSchemas() {
		if k.Kind == kind {
			return node{AcceptedField: manifests.AcceptedField{Type: k.Type, K8s: k.K8s}}, k, nil
		}
	}
	return node{}, manifests.KindSchema{}, fmt.Errorf("no kind %q in manifests (explain covers %s)", kind, strings.Join(Kinds(), ", "))
}

// children are the fields of n's value (of its items for a list), sorted.
// Under a key the decoder skips whole (a status, managedFields) every
// field of Kubernetes' type is accepted, and skipped too.
func (n node) children() []node {
	in := elem(n.Type)
	var out []node
	for _, f := range manifests.AcceptedFields(in, elem(n.K8s)) {
		if n.How == manifests.AcceptSkipped {
			f.How = manifests.AcceptSkipped
		}
		out = append(out, node{AcceptedField: f, in: in})
	}
	return out
}

// walk follows path from the object's root; an unknown name is kubectl's
// error (which names the field, not the path).
func walk(kind string, path []string) (node, manifests.KindSchema, error) {
	n, ks, err := root(kind)
	if err != nil {
		return n, ks, err
	}
	for _, name := range path {
		found := false
		for _, c := range n.children() {
			if c.Name == name {
				n, found = c, true
				break
			}
		}
		if !found {
			return n, ks, fmt.Errorf("field %q does not exist", name)
		}
	}
	return n, ks, nil
}

// Fields names the fields of kind at path (the object's own for none), for
// completion.
func Fields(kind string, path []string) ([]string, error) {
	n, _, err := walk(kind, path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range n.children() {
		out = append(out, c.Name)
	}
	return out, nil
}

// Explain writes what `kubectl explain` writes for kind (as manifests
// names it: Deployment) and the field path under it; with recursive, the
// tree of fields without their descriptions.
func Explain(w io.Writer, kind string, path []string, recursive bool) error {
	n, ks, err := walk(kind, path)
	if err != nil {
		return err
	}
	var b strings.Builder
	group, version, found := strings.Cut(ks.APIVersion, "/")
	if !found {
		group, version = "", ks.APIVersion
	}
	if group != "" {
		fmt.Fprintf(&b, "GROUP:      %s\n", group)
	}
	fmt.Fprintf(&b, "KIND:       %s\nVERSION:    %s\n\n", ks.Kind, version)
	// The description as kubectl's template builds it: each part followed
	// by a newline, the field's own then its type's (a list's items', a
	// map's values').
	var desc []string
	if len(path) > 0 {
		fmt.Fprintf(&b, "FIELD: %s <%s>\n\n\n", n.Name, typeName(n.Type, n.K8s))
		desc = append(desc, fieldDoc(n))
	}
	desc = append(desc, typeDoc(n.Type, n.K8s, len(path) > 0), note(n))
	b.WriteString("DESCRIPTION:\n")
	b.WriteString(indent(wrap(or(lines(desc...), "<empty>"), 76), 4))
	b.WriteString("\n")
	if kids := n.children(); len(kids) > 0 {
		b.WriteString("FIELDS:\n")
		fieldList(&b, kids, 1, recursive, []reflect.Type{elem(n.Type)})
	}
	b.WriteString("\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// fieldList writes fields at an indentation level: each with its type and
// -required-, and its description, or with recursive its own fields
// instead. A type already on the path is not entered again (kubectl stops
// at a cycle of references).
func fieldList(b *strings.Builder, fields []node, level int, recursive bool, path []reflect.Type) {
	pad := 2 * level
	for _, f := range fields {
		b.WriteString(strings.Repeat(" ", pad) + f.Name + "\t<" + typeName(f.Type, f.K8s) + ">")
		if f.Required {
			b.WriteString(" -required-")
		}
		b.WriteString("\n")
		if !recursive {
			d := strings.TrimSuffix(lines(fieldDoc(f), note(f)), "\n")
			b.WriteString(indent(wrap(or(d, "<no description>"), 78-pad), pad+2) + "\n\n")
			continue
		}
		t := elem(f.Type)
		if t == nil || containsType(path, t) {
			continue
		}
		fieldList(b, f.children(), level+1, recursive, append(path, t))
	}
}

func containsType(ts []reflect.Type, t reflect.Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// lines joins the non-empty parts, each followed by a newline.
func lines(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p != "" {
			b.WriteString(p + "\n")
		}
	}
	return b.String()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// indent is kubectl's template function: n spaces before the text and
// after each of its newlines.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	bytesType       = reflect.TypeOf([]byte(nil))
	timeTypes       = []reflect.Type{reflect.TypeOf(time.Time{}), reflect.TypeOf(metav1.Time{}), reflect.TypeOf(metav1.MicroTime{})}
)

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// elem is the struct a field's value is made of (its items' for a list),
// nil for any other value: the type whose fields are the field's.
func elem(t reflect.Type) reflect.Type {
	t = deref(t)
	if t != nil && t.Kind() == reflect.Slice && t != bytesType {
		t = deref(t.Elem())
	}
	if t == nil || t.Kind() != reflect.Struct || scalar(t) {
		return nil
	}
	return t
}

// scalar tells the structs a manifest writes as a scalar.
func scalar(t reflect.Type) bool {
	return t == quantityType || t == intOrStringType || containsType(timeTypes, t)
}

// typeName is kubectl's type of a field (its template's typeGuess):
// string, integer, boolean, []T, map[string]T, or the name of Kubernetes'
// type of an object (Quantity, IntOrString, DeploymentSpec); a time is a
// string, as its schema says.
func typeName(t, k reflect.Type) string {
	t, k = deref(t), deref(k)
	switch {
	case t == quantityType:
		return "Quantity"
	case t == intOrStringType:
		return "IntOrString"
	case t == bytesType, containsType(timeTypes, t):
		return "string"
	}
	var kElem reflect.Type
	if k != nil && (k.Kind() == reflect.Slice || k.Kind() == reflect.Map) {
		kElem = k.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		return "[]" + typeName(t.Elem(), kElem)
	case reflect.Map:
		return "map[string]" + typeName(t.Elem(), kElem)
	case reflect.Struct:
		if u, ok := manifests.UpstreamDocOf(k); ok {
			return u.Name
		}
		if k != nil && k.Kind() == reflect.Struct {
			return k.Name()
		}
		return t.Name()
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return "Object"
}

// swaggerDoc is what every k8s.io/api type has: its description ("") and
// its fields' (by JSON name), Kubernetes' API documentation.
type swaggerDoc interface{ SwaggerDoc() map[string]string }

func docs(t reflect.Type) map[string]string {
	t = deref(t)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if d, ok := reflect.Zero(t).Interface().(swaggerDoc); ok {
		return d.SwaggerDoc()
	}
	// A routing kind's shape stands for an upstream type the binary does
	// not link (manifests/routing_schema.go): its docs were taken from it.
	if u, ok := manifests.UpstreamDocOf(t); ok {
		return u.Docs
	}
	return nil
}

// fieldDoc is Kubernetes' description of a field.
func fieldDoc(n node) string { return docs(n.Owner)[n.Name] }

// scalarDocs are the descriptions of the types Kubernetes' schema has
// without a SwaggerDoc (apimachinery's scalars), their doc comments' first
// paragraph.
var scalarDocs = map[reflect.Type]string{
	quantityType: "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling " +
		"in JSON and YAML, in addition to String() and AsInt64() accessors.",
	intOrStringType: "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling " +
		"and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field " +
		"that can accept a name or number.",
	reflect.TypeOf(metav1.Time{}): "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  " +
		"Wrappers are provided for many of the factory methods that the time package supports.",
}

// typeDoc is the description of a value's type (of its items' for a list,
// its values' for a map): Kubernetes' type's where it has one. A field
// path shows it after the field's own, as kubectl does for a schema
// reference; the object itself has only its type's.
func typeDoc(t, k reflect.Type, field bool) string {
	k = deref(k)
	if k == nil {
		k = deref(t)
	}
	if field && k != nil && (k.Kind() == reflect.Slice || k.Kind() == reflect.Map) && k != bytesType {
		k = deref(k.Elem())
	}
	if d, ok := scalarDocs[k]; ok {
		return d
	}
	return docs(k)[""]
}
