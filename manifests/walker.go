package manifests

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(time.Time{})
)

// serverSet are metadata fields the API server owns. They appear in the
// output of `get -o yaml` (ours and kubectl's, which even prints
// template.metadata.creationTimestamp: null) and are skipped on input so
// that such output can be applied again.
var serverSet = map[string]bool{
	"uid": true, "resourceVersion": true, "generation": true,
	"creationTimestamp": true, "managedFields": true, "selfLink": true,
}

// ignoredKeys lists, per Go type, the keys the walk skips without error.
var ignoredKeys = map[reflect.Type]map[string]bool{
	deploymentType:                 {"status": true},
	serviceType:                    {"status": true},
	namespaceType:                  {"status": true},
	namespaceSpecType:              {"finalizers": true},
	reflect.TypeOf(ObjectMeta{}):   serverSet,
	reflect.TypeOf(TemplateMeta{}): serverSet,
}

// walker fills Go values from a yaml.Node tree, checking every key against
// dockctl's type and, for keys dockctl lacks, Kubernetes' type at the same
// path. It records the line of every path it visits, so that validation
// errors found later on the Go value can point back into the file.
type walker struct {
	file  string
	errs  ErrorList
	lines map[string]int
	// bad holds the paths whose values could not be decoded; validation
	// errors on those paths (or around them) would only echo the decode
	// error with a less useful message.
	bad []string
}

func (w *walker) errorf(line int, path, format string, args ...any) {
	w.errs = append(w.errs, &FieldError{File: w.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (w *walker) badValue(n *yaml.Node, path, format string, args ...any) {
	w.errorf(n.Line, path, format, args...)
	w.bad = append(w.bad, path)
}

func (w *walker) typeError(n *yaml.Node, path, want string) {
	w.badValue(n, path, "expected %s, got %s", want, describe(n))
}

func (w *walker) overlapsBad(p string) bool {
	for _, b := range w.bad {
		if related(p, b) {
			return true
		}
	}
	return false
}

func (w *walker) lineOf(p string) int {
	return lineOf(w.lines, p)
}

func lineOf(lines map[string]int, p string) int {
	for {
		if l, ok := lines[p]; ok {
			return l
		}
		if p == "" {
			return 0
		}
		p = parent(p)
	}
}

// walk decodes n into v (settable). k8s is Kubernetes' type at the same
// path, or nil where there is none to compare with.
func (w *walker) walk(n *yaml.Node, v reflect.Value, k8s reflect.Type, path string) {
	// null means "not set" in Kubernetes manifests (JSON null into a Go
	// field is a no-op), so it leaves the zero value.
	if isNull(n) {
		return
	}
	t := v.Type()
	switch t {
	case quantityType:
		w.quantity(n, v, path)
		return
	case intOrStringType:
		w.intOrString(n, v, path)
		return
	case timeType:
		// Only server-set or status fields are times, and both are
		// skipped before getting here.
		w.badValue(n, path, "cannot be set in a manifest")
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		w.walk(n, v.Elem(), k8s, path)
	case reflect.Struct:
		w.structure(n, v, k8s, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.typeError(n, path, "a list")
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := index(path, i)
			w.lines[p] = item.Line
			w.walk(item, s.Index(i), k8s, p)
		}
		v.Set(s)
	case reflect.Map:
		w.mapping(n, v, path)
	case reflect.String:
		switch tag := n.ShortTag(); {
		case n.Kind == yaml.ScalarNode && (tag == "!!str" || tag == "!!timestamp"):
			v.SetString(n.Value)
		default:
			w.typeError(n, path, "a string")
		}
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			w.typeError(n, path, "a boolean")
			return
		}
		v.SetBool(b)
	case reflect.Int32, reflect.Int64:
		i, ok := w.integer(n, path, t.Bits())
		if ok {
			v.SetInt(i)
		}
	default:
		w.badValue(n, path, "cannot be set in a manifest")
	}
}

func (w *walker) structure(n *yaml.Node, v reflect.Value, k8s reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.typeError(n, path, "a mapping")
		return
	}
	t := v.Type()
	fields := jsonFields(t)
	ignored := ignoredKeys[t]
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.errorf(k.Line, path, "mapping keys must be strings, got %s", describe(k))
			continue
		}
		name := k.Value
		p := child(path, name)
		if first, dup := seen[name]; dup {
			w.errorf(k.Line, p, "duplicate field (first at line %d)", first)
			continue
		}
		seen[name] = k.Line
		if ignored[name] {
			continue
		}
		f, ok := fields[name]
		if !ok {
			if k8sChild(k8s, name) != nil {
				w.errorf(k.Line, p, "unsupported by dockctl")
			} else {
				w.errorf(k.Line, path, "unknown field %q", name)
			}
			continue
		}
		w.lines[p] = k.Line
		w.walk(val, v.FieldByIndex(f.index), k8sChild(k8s, name), p)
	}
}

func (w *walker) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		w.typeError(n, path, "a mapping")
		return
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.badValue(k, path, "mapping keys must be strings, got %s", describe(k))
			continue
		}
		p := key(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			w.errorf(k.Line, p, "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		w.lines[p] = k.Line
		elem := reflect.New(t.Elem()).Elem()
		w.walk(val, elem, nil, p)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), elem)
	}
	v.Set(m)
}

func (w *walker) integer(n *yaml.Node, path string, bits int) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		w.typeError(n, path, "an integer")
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		w.badValue(n, path, "integer %s is out of range", n.Value)
		return 0, false
	}
	if bits == 32 && (i < math.MinInt32 || i > math.MaxInt32) {
		w.badValue(n, path, "integer %s is out of range", n.Value)
		return 0, false
	}
	return i, true
}

// quantity parses with resource.ParseQuantity, never MustParse: a bad
// quantity is user input and must become a positioned error.
func (w *walker) quantity(n *yaml.Node, v reflect.Value, path string) {
	switch n.ShortTag() {
	case "!!int", "!!float", "!!str":
		if n.Kind != yaml.ScalarNode {
			break
		}
		q, err := resource.ParseQuantity(n.Value)
		if err != nil {
			w.badValue(n, path, "invalid quantity %q", n.Value)
			return
		}
		v.Set(reflect.ValueOf(q))
		return
	}
	w.typeError(n, path, "a quantity")
}

func (w *walker) intOrString(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int":
			if i, ok := w.integer(n, path, 32); ok {
				v.Set(reflect.ValueOf(intstr.FromInt32(int32(i))))
			}
			return
		case "!!str":
			v.Set(reflect.ValueOf(intstr.FromString(n.Value)))
			return
		}
	}
	w.typeError(n, path, "an integer or a string")
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node is, quoting short scalars so that the user can
// find them.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	val := n.Value
	if len(val) > 40 {
		val = val[:40] + "..."
	}
	switch n.ShortTag() {
	case "!!str":
		return "string " + strconv.Quote(val)
	case "!!int":
		return "integer " + val
	case "!!float":
		return "number " + val
	case "!!bool":
		return "boolean " + val
	case "!!null":
		return "null"
	default:
		return n.ShortTag() + " " + strconv.Quote(val)
	}
}
