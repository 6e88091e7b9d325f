package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

const (
	// MaxInputSize is the largest file (or standard input) accepted. Real
	// manifests are a few KiB; the cap keeps a wrong path (a log file, a
	// disk image) from being read into memory.
	MaxInputSize = 4 << 20
	// StdinName is the file name used in errors for input read from "-".
	StdinName = "<stdin>"
)

// Decode reads every object of the kinds dockctl runs in data (YAML or
// JSON, multi-document): Deployments, Services and Namespaces, returned in
// the order of Order. file is only used in error messages. Empty documents
// are skipped. A document of kind List (apiVersion v1), as printed by `get
// -o yaml` for several objects, contributes each of its items. On any error
// Decode returns no documents and an ErrorList holding every problem found
// in data.
//
// Objects of other kinds are handled as LoadAll says, with the default
// options; the ones skipped are not reported.
func Decode(file string, data []byte) ([]*Document, error) {
	return decodeOrdered(file, data, &decodeState{})
}

// decodeOrdered decodes data with st, refuses duplicates, and returns the
// documents in the order of Order, or every error found.
func decodeOrdered(file string, data []byte, st *decodeState) ([]*Document, error) {
	docs, errs := decodeFile(file, data, st)
	errs = append(errs, duplicates(docs)...)
	if len(errs) > 0 {
		return nil, errs
	}
	Order(docs)
	return docs, nil
}

// DecodeAll is Decode with opts, for data read by the caller: the objects
// of kinds dockctl does not run are skipped or refused as LoadAll does, and
// the skipped ones returned.
func DecodeAll(file string, data []byte, opts LoadOptions) ([]*Document, []Skipped, error) {
	st := &decodeState{opts: opts}
	docs, errs := decodeFile(file, data, st)
	errs = append(errs, duplicates(docs)...)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	Order(docs)
	return docs, st.skipped, nil
}

// Load is LoadAll with the default options, without the skipped objects.
func Load(paths []string, stdin io.Reader) ([]*Document, error) {
	docs, _, err := LoadAll(paths, stdin, LoadOptions{})
	return docs, err
}

// LoadAll decodes every path: a file (any name), a directory (searched
// recursively for *.yaml, *.yml and *.json, in lexical order), or "-" for
// stdin. Errors of all files are collected; on any error LoadAll returns no
// documents, so that applying a set of files is all-or-nothing. The
// documents come in the order of Order: Namespaces, ConfigMaps, Secrets,
// PersistentVolumeClaims, Services, Deployments,
// each kind in the order read (files in the order given, directories in
// lexical order). Objects of
// kinds dockctl does not run are skipped or refused (see otherKind); the
// skipped ones are returned, for the caller to warn about.
func LoadAll(paths []string, stdin io.Reader, opts LoadOptions) ([]*Document, []Skipped, error) {
	st := &decodeState{opts: opts}
	var docs []*Document
	var errs ErrorList
	add := func(file string, data []byte) {
		d, e := decodeFile(file, data, st)
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
		files, err := expand(p, opts.TopLevelOnly)
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
		return nil, nil, errs
	}
	Order(docs)
	return docs, st.skipped, nil
}

// ExpandPath is the list of manifest files path names, as LoadAll reads
// them: the file itself, or a directory's *.yaml, *.yml and *.json,
// recursively and in lexical order. err is set when path itself cannot
// be read (missing, or a directory that cannot be listed). Otherwise a
// directory below path that cannot be listed is returned in unreadable
// (its path, why), beside the files found elsewhere: a partial list.
func ExpandPath(path string) (files []string, unreadable map[string]error, err error) {
	return expandPath(path, false)
}

// expandPath is ExpandPath, of path's own files only when topOnly.
func expandPath(path string, topOnly bool) (files []string, unreadable map[string]error, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, statErr(path, err)
	}
	if !fi.IsDir() {
		return []string{path}, nil, nil
	}
	unreadable = map[string]error{}
	// WalkDir visits entries in lexical order, which is the documented order.
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			if p == path {
				err = fmt.Errorf("%s: %w", p, pathErr(werr))
			} else {
				unreadable[p] = pathErr(werr)
			}
			return nil
		}
		if d.IsDir() && topOnly && p != path {
			return fs.SkipDir
		}
		if d.IsDir() || !isManifestName(p) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Follow links to files, as kubectl does; links to
			// directories are not followed, which avoids cycles. A
			// dangling link is listed, as kubectl lists it: reading it
			// fails, rather than its objects silently missing. Emacs'
			// lock files (.#web.yaml) are always dangling links.
			fi, err := os.Stat(p)
			switch {
			case err != nil && strings.HasPrefix(d.Name(), ".#"):
				return nil
			case err == nil && !fi.Mode().IsRegular():
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return files, unreadable, nil
}

// expand turns a path into the files it names. A directory that cannot be
// fully walked still yields the files found, alongside the error.
func expand(p string, topOnly bool) ([]string, error) {
	files, unreadable, err := expandPath(p, topOnly)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, dir := range slices.Sorted(maps.Keys(unreadable)) {
		errs = append(errs, fmt.Errorf("%s: %w", dir, unreadable[dir]))
	}
	return files, errors.Join(errs...)
}

// statErr says why path cannot be read, naming the missing target of a
// dangling symbolic link.
func statErr(path string, err error) error {
	if target, lerr := os.Readlink(path); lerr == nil {
		return fmt.Errorf("symbolic link to %s: %w", target, pathErr(err))
	}
	return pathErr(err)
}

// IsManifestName reports whether a directory's file named p is read as
// a manifest (*.yaml, *.yml, *.json).
func IsManifestName(p string) bool { return isManifestName(p) }

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
		return nil, statErr(name, err)
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

// duplicates reports a second object of the kind, namespace and name of an
// earlier one: applying both would silently keep only the last. Names are
// scoped by kind and namespace, as in Kubernetes: a Service and a
// Deployment may share one, and so may two Deployments in two namespaces.
func duplicates(docs []*Document) ErrorList {
	type id struct{ kind, namespace, name string }
	var errs ErrorList
	first := map[id]*Document{}
	for _, d := range docs {
		m := d.Meta()
		k := id{d.Kind(), m.NamespaceOrDefault(), m.Name}
		if d.Namespace != nil {
			k.namespace = ""
		}
		if prev, ok := first[k]; ok {
			in := ""
			if k.namespace != "" && k.namespace != DefaultNamespace {
				in = fmt.Sprintf(" in namespace %q", k.namespace)
			}
			errs = append(errs, &FieldError{File: d.File, Line: d.nameLine, Path: "metadata.name",
				Msg: fmt.Sprintf("duplicate %s %q%s (first defined at %s:%d)", strings.ToLower(k.kind), k.name, in, prev.File, prev.nameLine)})
			continue
		}
		first[k] = d
	}
	return errs
}

// kindOrder is the order in which a bundle's kinds are applied: a
// Namespace before the objects in it, a Service before the Deployments it
// selects (so that its address and DNS name exist when their pods start,
// and the pods join its endpoints as they become ready). Helm's
// InstallOrder does the same; kubectl applies in file order.
var kindOrder = map[string]int{KindNamespace: 0, KindConfigMap: 1, KindSecret: 2, KindPersistentVolumeClaim: 3, KindService: 4, Kind: 5,
	// The workload kinds DecodeWorkloads reads: with the Deployments, in
	// the order read.
	KindStatefulSet: 5, KindDaemonSet: 5, KindReplicaSet: 5, KindJob: 5, KindCronJob: 5, KindPod: 5}

// Order sorts docs in place so that Namespaces come first, then
// ConfigMaps, Secrets and PersistentVolumeClaims (what pods refer to),
// then Services, then Deployments, each kind in the order read (stable). Decode and
// LoadAll return documents so ordered.
func Order(docs []*Document) {
	sort.SliceStable(docs, func(i, j int) bool { return kindOrder[docs[i].Kind()] < kindOrder[docs[j].Kind()] })
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeFile decodes one file's documents. The recover is a last line of
// defence: the YAML library is not ours, and a panic there must become an
// error for this file rather than a crash of the controller.
func decodeFile(file string, data []byte, st *decodeState) (docs []*Document, errs ErrorList) {
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
		d, e := decodeDocument(file, &n, st)
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

// decodeList accepts the v1 List that `get -o yaml|json` prints for several
// Deployments, so that its output can be applied again.
func decodeList(file string, root *yaml.Node, st *decodeState) ([]*Document, ErrorList) {
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
		d, e := decodeObject(file, item, p, st)
		errs = append(errs, e...)
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs, errs
}
