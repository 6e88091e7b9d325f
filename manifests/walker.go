package manifests

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"
)

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(time.Time{})
	bytesType       = reflect.TypeOf([]byte(nil))
)

// serverSet are metadata fields the API server owns. They appear in the
// output of `get -o yaml` (ours and kubectl's, which even prints
// template.metadata.creationTimestamp: null) and are skipped on input so
// that such output can be applied again.
var serverSet = map[string]bool{
	"uid": true, "resourceVersion": true, "generation": true,
	"creationTimestamp": true, "managedFields": true, "selfLink": true,
	// Set by dockctl's controllers (a CronJob's Jobs name it), as
	// Kubernetes' controllers set them (docs/design.md §17).
	"ownerReferences": true,
}

// ignoredKeys lists, per Go type, the keys the walk skips without error.
var ignoredKeys = map[reflect.Type]map[string]bool{
	deploymentType:                 {"status": true},
	serviceType:                    {"status": true},
	namespaceType:                  {"status": true},
	namespaceSpecType:              {"finalizers": true},
	statefulSetType:                {"status": true},
	daemonSetType:                  {"status": true},
	replicaSetType:                 {"status": true},
	jobType:                        {"status": true},
	cronJobType:                    {"status": true},
	podType:                        {"status": true},
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
	// ignored holds the paths of the fields accepted and ignored
	// (ignored.go), for the warning.
	ignored []string
	// redact holds the paths whose values are secret (a Secret's data and
	// stringData): an error about them names the kind of value, never
	// the value (config_decode.go).
	redact []string
	// zeros holds the paths of the boolean and integer fields set to
	// false or 0, with that value (explicitZeros).
	zeros map[string]any
}

func (w *walker) errorf(line int, path, format string, args ...any) {
	w.errs = append(w.errs, &FieldError{File: w.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (w *walker) badValue(n *yaml.Node, path, format string, args ...any) {
	w.errorf(n.Line, path, format, args...)
	w.bad = append(w.bad, path)
}

func (w *walker) typeError(n *yaml.Node, path, want string) {
	if w.redacted(path) {
		w.badValue(n, path, "expected %s, got %s", want, describeKind(n))
		return
	}
	w.badValue(n, path, "expected %s, got %s", want, describe(n))
}

func (w *walker) redacted(p string) bool {
	for _, r := range w.redact {
		if under(p, r) {
			return true
		}
	}
	return false
}

func (w *walker) overlapsBad(p string) bool {
	for _, b := range w.bad {
		if related(p, b) {
			return true
		}
	}
	return false
}

// explicitZeros returns the boolean and integer fields of the object at
// base that the document set to false or 0, by path relative to the
// object, with that value (nil for none). A typed object cannot tell them
// from fields left out (their JSON omits zeros), and apply must: kubectl
// sends the file's false or 0, which replaces what an edit set since,
// where a field the file leaves out keeps it. Fields accepted and ignored,
// and values that could not be decoded, are left out.
func (w *walker) explicitZeros(base string) map[string]any {
	var out map[string]any
next:
	for p, v := range w.zeros {
		for _, q := range append(slices.Clip(w.ignored), w.bad...) {
			if under(p, q) {
				continue next
			}
		}
		rel := p
		if base != "" {
			rel = strings.TrimPrefix(p, base+".")
		}
		if out == nil {
			out = map[string]any{}
		}
		out[rel] = v
	}
	return out
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
	case bytesType:
		w.base64(n, v, path)
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
		case yaml11Bool(n):
			w.yaml11BoolError(n, path, "a string")
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
	// sink holds the ignored fields (ignored.go), decoded into a value of
	// Kubernetes' type so that its validation rules apply to them.
	var sink reflect.Value
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
		if w.ignore(t, name, k8s, &sink, k, val, p) {
			continue
		}
		f, ok := fields[name]
		if !ok {
			switch {
			case k8sChild(k8s, name) != nil && isNull(val):
				// null is "not set" (as for the fields dockctl has): a
				// rendered chart's `runtimeClassName: null` asks for
				// nothing dockctl lacks.
			case k8sChild(k8s, name) != nil:
				w.errorf(k.Line, p, "unsupported by dockctl")
			default:
				w.errorf(k.Line, path, "unknown field %q", name)
			}
			continue
		}
		w.lines[p] = k.Line
		fv := v.FieldByIndex(f.index)
		w.walk(val, fv, k8sChild(k8s, name), p)
		switch fv.Kind() {
		case reflect.Bool, reflect.Int32, reflect.Int64:
			if fv.IsZero() && !isNull(val) {
				if w.zeros == nil {
					w.zeros = map[string]any{}
				}
				w.zeros[p] = reflect.Zero(fv.Type()).Interface()
			}
		}
	}
	if sink.IsValid() {
		w.validateIgnored(sink.Addr().Interface(), path)
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
		if name, ok := yaml11KeyName(k); !ok {
			w.badValue(k, p, "key %s is not a string in YAML 1.1, which kubectl reads (a cluster would name it %q): quote it (\"%s\")", k.Value, name, k.Value)
			continue
		}
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
			if yaml11Bool(n) {
				w.yaml11BoolError(n, path, "an integer or a string")
				return
			}
			v.Set(reflect.ValueOf(intstr.FromString(n.Value)))
			return
		}
	}
	w.typeError(n, path, "an integer or a string")
}

// yaml11Bools are the plain scalars other than true and false that YAML
// 1.1 reads as booleans. kubectl converts YAML to JSON with a YAML 1.1
// parser (sigs.k8s.io/yaml, goyaml.v2, without the target type), so where
// dockctl's YAML 1.2 reads the string "yes", a cluster gets the boolean
// true: a string field refuses it ("cannot unmarshal bool into Go struct
// field ... of type string"), a mapping key becomes "true". dockctl
// refuses them where a string is expected, telling to quote them, so that
// a bundle means the same here and on a cluster (docs/design.md §1).
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// yaml11Bool tells a plain (unquoted, untagged) scalar that YAML 1.1
// reads as a boolean and YAML 1.2 as a string.
func yaml11Bool(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.ShortTag() != "!!str" {
		return false
	}
	_, ok := yaml11Bools[n.Value]
	return ok
}

// yaml11KeyName returns the name kubectl gives plain mapping key k, and
// whether it is k's own. kubectl converts YAML to JSON with a YAML 1.1
// reader (sigs.k8s.io/yaml), which reads a plain key such as yes, True,
// 1.0, 0x1F, 010 or 1_000 as a boolean or a number and names it by that
// value ("true", "1", "31", "8", "1000"): a ConfigMap's key, a label, a
// file name would differ between dockctl and a cluster. A quoted or
// tagged key is a string in both.
func yaml11KeyName(k *yaml.Node) (string, bool) {
	if k.Style != 0 || k.ShortTag() != "!!str" && k.Tag != "" && k.Tag[0] != '!' {
		return k.Value, true
	}
	if k.Value == "" || !strings.ContainsRune("0123456789+-.~<yYnNtTfFoO", rune(k.Value[0])) {
		// YAML 1.1 reads no other plain scalar as anything but a string:
		// numbers start with a digit, a sign or a dot, and its booleans
		// and null are y/yes, n/no, true, false, on, off, null and ~.
		return k.Value, true
	}
	j, err := sigsyaml.YAMLToJSON([]byte(k.Value + ": 0\n"))
	if err != nil {
		return k.Value, true // not a key YAML 1.1 reads alone; the walk reports what it must
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(j, &m); err != nil || len(m) != 1 {
		return k.Value, true
	}
	for name := range m {
		return name, name == k.Value
	}
	return k.Value, true
}

// yaml11BoolError refuses a value yaml11Bool tells, naming it unless it
// is secret.
func (w *walker) yaml11BoolError(n *yaml.Node, path, want string) {
	if w.redacted(path) {
		w.badValue(n, path, "expected %s, got a plain value that YAML 1.1, which kubectl reads, takes for a boolean: quote it", want)
		return
	}
	w.badValue(n, path, "expected %s, got %s, the boolean %t in YAML 1.1, which kubectl reads: quote it (\"%s\")", want, n.Value, yaml11Bools[n.Value], n.Value)
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

// base64 decodes a []byte field (a Secret's data, a ConfigMap's
// binaryData), which JSON and hence Kubernetes manifests carry as standard
// base64. The error never quotes the value: it may be a secret.
func (w *walker) base64(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		w.badValue(n, path, "expected a base64 string, got %s", describeKind(n))
		return
	}
	b, err := base64.StdEncoding.DecodeString(n.Value)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			w.badValue(n, path, "invalid base64 data at byte %d (values of data and binaryData are base64; stringData takes plain text)", int64(ce))
			return
		}
		w.badValue(n, path, "invalid base64 data")
		return
	}
	v.SetBytes(b)
}

// describeKind names what a node is without its value.
func describeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode, yaml.AliasNode:
		return describe(n)
	}
	switch n.ShortTag() {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return n.ShortTag()
}
