package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// MaxInputSize is the largest file (or standard input) accepted. Real
	// manifests are a few KiB; the cap keeps a wrong path (a log file, a
	// disk image) from being read into memory.
	MaxInputSize = 4 << 20
	// MaxDepth is the deepest nesting accepted. A Deployment needs about a
	// dozen levels; the cap is far above that and far below anything that
	// could exhaust the stack.
	MaxDepth = 64
	// StdinName is the file name used in errors for input read from "-".
	StdinName = "<stdin>"
)

// Document is one decoded, validated and defaulted Deployment and where it
// came from.
type Document struct {
	File       string
	Line       int
	Deployment *Deployment
	// ReplicasSet tells whether the document set spec.replicas (null is
	// unset). Deployment is defaulted either way; apply keeps the live count
	// when it is false, as kubectl apply does, so that re-applying a file
	// without replicas does not undo a `scale`.
	ReplicasSet bool
	// PausedSet tells whether the document set spec.paused: apply keeps
	// the live value when it is false, as kubectl apply keeps a `rollout
	// pause` made since.
	PausedSet bool

	nameLine int // line of metadata.name, for duplicate reports
}

// Source returns "file:line", for messages that point at the document.
func (d *Document) Source() string { return d.File + ":" + strconv.Itoa(d.Line) }

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(time.Time{})
	deploymentType  = reflect.TypeOf(Deployment{})
	k8sDeployment   = reflect.TypeOf(appsv1.Deployment{})
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
	reflect.TypeOf(ObjectMeta{}):   serverSet,
	reflect.TypeOf(TemplateMeta{}): serverSet,
}

// Decode reads every Deployment in data (YAML or JSON, multi-document). file
// is only used in error messages. Empty documents are skipped. A document of
// kind List (apiVersion v1), as printed by `get -o yaml` for several
// objects, contributes each of its items. On any error Decode returns no
// documents and an ErrorList holding every problem found in data.
func Decode(file string, data []byte) ([]*Document, error) {
	docs, errs := decodeFile(file, data)
	errs = append(errs, duplicates(docs)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return docs, nil
}

// Load decodes every path: a file (any name), a directory (searched
// recursively for *.yaml, *.yml and *.json, in lexical order), or "-" for
// stdin. Errors of all files are collected; on any error Load returns no
// documents, so that applying a set of files is all-or-nothing.
func Load(paths []string, stdin io.Reader) ([]*Document, error) {
	var docs []*Document
	var errs ErrorList
	add := func(file string, data []byte) {
		d, e := decodeFile(file, data)
		docs = append(docs, d...)
		errs = append(errs, e...)
	}
	for _, p := range paths {
		if p == "-" {
			if stdin == nil {
				errs = append(errs, &FieldError{File: StdinName, Msg: "no standard input available"})
				continue
			}
			data, err := readLimited(stdin)
			if err != nil {
				errs = append(errs, &FieldError{File: StdinName, Msg: err.Error()})
				continue
			}
			add(StdinName, data)
			continue
		}
		files, err := expand(p)
		if err != nil {
			errs = append(errs, &FieldError{File: p, Msg: err.Error()})
		}
		for _, f := range files {
			data, err := readFile(f)
			if err != nil {
				errs = append(errs, &FieldError{File: f, Msg: err.Error()})
				continue
			}
			add(f, data)
		}
	}
	errs = append(errs, duplicates(docs)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return docs, nil
}

// expand turns a path into the files it names. A directory that cannot be
// fully walked still yields the files found, alongside the error.
func expand(p string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, pathErr(err)
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	var files []string
	var errs []error
	// WalkDir visits entries in lexical order, which is the documented order.
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, pathErr(err)))
			return nil
		}
		if d.IsDir() || !isManifestName(path) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Follow links to files, as kubectl does; links to
			// directories are not followed, which avoids cycles.
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return files, errors.Join(errs...)
}

func isManifestName(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// pathErr drops the operation and path from an *fs.PathError, because the
// FieldError that carries it names the file already.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, pathErr(err)
	}
	defer f.Close()
	return readLimited(f)
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputSize+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", pathErr(err))
	}
	if len(data) > MaxInputSize {
		return nil, tooBig()
	}
	return data, nil
}

func tooBig() error {
	return fmt.Errorf("input is larger than the %d MiB limit", MaxInputSize>>20)
}

// duplicates reports a second Deployment with the name of an earlier one:
// applying both would silently keep only the last.
func duplicates(docs []*Document) ErrorList {
	var errs ErrorList
	first := map[string]*Document{}
	for _, d := range docs {
		name := d.Deployment.Metadata.Name
		if prev, ok := first[name]; ok {
			errs = append(errs, &FieldError{File: d.File, Line: d.nameLine, Path: "metadata.name",
				Msg: fmt.Sprintf("duplicate deployment %q (first defined at %s:%d)", name, prev.File, prev.nameLine)})
			continue
		}
		first[name] = d
	}
	return errs
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeFile decodes one file's documents. The recover is a last line of
// defence: the YAML library is not ours, and a panic there must become an
// error for this file rather than a crash of the controller.
func decodeFile(file string, data []byte) (docs []*Document, errs ErrorList) {
	if len(data) > MaxInputSize {
		return nil, ErrorList{{File: file, Msg: tooBig().Error()}}
	}
	defer func() {
		if r := recover(); r != nil {
			docs = nil
			errs = append(errs, &FieldError{File: file, Msg: fmt.Sprintf("internal error while decoding: %v", r)})
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			// The parser cannot resynchronise after a syntax error, so
			// the rest of the file is not read.
			fe := &FieldError{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
			if m := yamlLineErr.FindStringSubmatch(err.Error()); m != nil {
				fe.Line, _ = strconv.Atoi(m[1])
				fe.Msg = "invalid YAML: " + m[2]
			}
			errs = append(errs, fe)
			break
		}
		d, e := decodeDocument(file, &n)
		docs = append(docs, d...)
		errs = append(errs, e...)
	}
	// Line order reads like the file; an error without a line (a parser
	// error that names none) goes last, where the parser stopped.
	byLine := func(l int) int {
		if l == 0 {
			return math.MaxInt
		}
		return l
	}
	sort.SliceStable(errs, func(i, j int) bool { return byLine(errs[i].Line) < byLine(errs[j].Line) })
	if len(errs) > 0 {
		return nil, errs
	}
	return docs, nil
}

func decodeDocument(file string, n *yaml.Node) ([]*Document, ErrorList) {
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return nil, nil
	}
	root := n.Content[0]
	if isNull(root) {
		return nil, nil
	}
	if fe := precheck(root); fe != nil {
		fe.File = file
		return nil, ErrorList{fe}
	}
	if root.Kind != yaml.MappingNode {
		return nil, ErrorList{{File: file, Line: root.Line, Msg: "document must be a mapping, got " + describe(root)}}
	}
	if kind, _ := scalarField(root, "kind"); kind == "List" {
		return decodeList(file, root)
	}
	d, errs := decodeDeployment(file, root, "")
	if d == nil {
		return nil, errs
	}
	return []*Document{d}, errs
}

// decodeList accepts the v1 List that `get -o yaml|json` prints for several
// Deployments, so that its output can be applied again.
func decodeList(file string, root *yaml.Node) ([]*Document, ErrorList) {
	var errs ErrorList
	seen := map[string]bool{}
	var items *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "apiVersion":
			if v.Value != "v1" {
				errs = append(errs, &FieldError{File: file, Line: k.Line, Path: "apiVersion", Msg: fmt.Sprintf(`must be "v1" for kind List, got %s`, describe(v))})
			}
		case "kind":
		case "metadata":
		case "items":
			items = v
		default:
			errs = append(errs, &FieldError{File: file, Line: k.Line, Msg: fmt.Sprintf("unknown field %q", k.Value)})
		}
		if seen[k.Value] {
			errs = append(errs, &FieldError{File: file, Line: k.Line, Path: k.Value, Msg: "duplicate field"})
		}
		seen[k.Value] = true
	}
	if items == nil || isNull(items) {
		return nil, errs
	}
	if items.Kind != yaml.SequenceNode {
		return nil, append(errs, &FieldError{File: file, Line: items.Line, Path: "items", Msg: "expected a list, got " + describe(items)})
	}
	var docs []*Document
	for i, item := range items.Content {
		p := index("items", i)
		if item.Kind != yaml.MappingNode {
			errs = append(errs, &FieldError{File: file, Line: item.Line, Path: p, Msg: "expected a mapping, got " + describe(item)})
			continue
		}
		d, e := decodeDeployment(file, item, p)
		errs = append(errs, e...)
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs, errs
}

// decodeDeployment walks one Deployment mapping. base is its path inside the
// document ("" or items[i]).
func decodeDeployment(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	var errs ErrorList
	for _, want := range []struct{ field, value string }{{"apiVersion", APIVersion}, {"kind", Kind}} {
		got, line := scalarField(n, want.field)
		switch {
		case line == 0:
			errs = append(errs, &FieldError{File: file, Line: n.Line, Path: child(base, want.field), Msg: "required"})
		case got != want.value:
			errs = append(errs, &FieldError{File: file, Line: line, Path: child(base, want.field),
				Msg: fmt.Sprintf("must be %q, got %q", want.value, got)})
		}
	}
	if len(errs) > 0 {
		// Checking the fields of some other kind against a Deployment
		// would only bury the one error that matters.
		return nil, errs
	}
	w := &walker{file: file, lines: map[string]int{base: n.Line}}
	dep := &Deployment{}
	w.walk(n, reflect.ValueOf(dep).Elem(), k8sDeployment, base)
	errs = w.errs
	for _, fe := range validate(dep, base, w.lines) {
		if !w.overlapsBad(fe.Path) {
			fe.File = file
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	replicasSet := dep.Spec.Replicas != nil
	_, pausedSet := w.lines[child(base, "spec.paused")]
	SetDefaults(dep)
	return &Document{File: file, Line: n.Line, Deployment: dep, ReplicasSet: replicasSet, PausedSet: pausedSet, nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}

// scalarField returns the value and line of a scalar key in a mapping (line 0
// when absent or not a scalar).
func scalarField(m *yaml.Node, name string) (string, int) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Value == name && v.Kind == yaml.ScalarNode {
			return v.Value, k.Line
		}
	}
	return "", 0
}

// precheck refuses aliases and excessive nesting before anything interprets
// the tree. Aliases are refused outright rather than expanded under a cap:
// Kubernetes manifests do not need them and it removes alias bombs (a few
// hundred bytes expanding to gigabytes) as a class. The walk is iterative so
// that the check itself cannot overflow the stack.
func precheck(root *yaml.Node) *FieldError {
	type item struct {
		n     *yaml.Node
		depth int
	}
	stack := []item{{root, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.n.Kind == yaml.AliasNode {
			return &FieldError{Line: it.n.Line, Msg: fmt.Sprintf("YAML aliases (*%s) are not supported", it.n.Value)}
		}
		if it.n.Kind == yaml.MappingNode && hasMergeKey(it.n) {
			return &FieldError{Line: it.n.Line, Msg: "YAML merge keys (<<) are not supported"}
		}
		if it.depth > MaxDepth {
			return &FieldError{Line: it.n.Line, Msg: fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
		}
		// Pushed in reverse so that the first problem in document order
		// is the one reported.
		for i := len(it.n.Content) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Content[i], it.depth + 1})
		}
	}
	return nil
}

func hasMergeKey(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].ShortTag() == "!!merge" {
			return true
		}
	}
	return false
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
