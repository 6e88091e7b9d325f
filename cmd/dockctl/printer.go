package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dockctl/dockctl/internal/jsontemplate"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/jsonpath"
)

// The one printer of get, for every kind: each kind lays its listing out
// as a table (columns, and for each object its cells, name, labels and the
// Kubernetes-shaped object -o json prints); the printer prints it in the
// format asked, as kubectl's printers do.

// printFlags are get's output flags, as kubectl's.
type printFlags struct {
	output       string
	showLabels   bool
	labelColumns []string
	sortBy       string
	// noHeaders is --no-headers: tables (and custom columns) without
	// their header line.
	noHeaders bool
}

// allowedFormats are the -o formats, as kubectl lists them (table, this
// CLI's name for the default, is accepted too).
const allowedFormats = "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,name,template,templatefile,wide,yaml"

// printer prints listings in one output format.
type printer struct {
	format string // table, wide, json, yaml, name, jsonpath, custom-columns
	// jp is -o jsonpath's (and jsonpath-as-json's) template.
	jp *jsonpath.JSONPath
	// tmpl is -o go-template's (and go-template-file's).
	tmpl *jsontemplate.Template
	// columns are -o custom-columns'.
	columns      []customColumn
	showLabels   bool
	labelColumns []string
	noHeaders    bool
	// sortBy is --sort-by's path, relaxed as kubectl's ({.a.b}); sort its
	// parsed form.
	sortBy string
	sort   *jsonpath.JSONPath
	// only, when set, are the names of a get of several: the rows of
	// those only are printed, in that order, and printed records them.
	only    []string
	printed map[string]bool
	// capture, when set, is handed each listing instead of printing it:
	// get -w (watch.go) diffs the tables the kinds build.
	capture func(t *table, allNamespaces bool)
}

type customColumn struct {
	header string
	path   *jsonpath.JSONPath
}

// newPrinter checks the flags and makes their printer: the errors are
// kubectl's for the same mistakes.
func newPrinter(f printFlags) (*printer, error) {
	format, value, hasValue := strings.Cut(f.output, "=")
	p := &printer{format: format, showLabels: f.showLabels, noHeaders: f.noHeaders}
	for _, k := range f.labelColumns {
		if k = strings.TrimSpace(k); k != "" {
			p.labelColumns = append(p.labelColumns, k)
		}
	}
	switch format {
	case "", "table", "wide", "json", "yaml", "name":
		if hasValue {
			return nil, unknownFormat(f.output)
		}
	case "jsonpath", "jsonpath-as-json":
		if value == "" {
			return nil, fmt.Errorf("template format specified but no template given")
		}
		p.jp = jsonpath.New("out").AllowMissingKeys(true)
		if err := p.jp.Parse(value); err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %v", value, err)
		}
		p.jp.EnableJSONOutput(format == "jsonpath-as-json")
		p.format = "jsonpath"
	case "go-template", "template", "go-template-file", "templatefile":
		if value == "" {
			return nil, fmt.Errorf("template format specified but no template given")
		}
		text := value
		if format == "go-template-file" || format == "templatefile" {
			b, err := os.ReadFile(value)
			if err != nil {
				return nil, fmt.Errorf("error reading --template %s, %v", value, err)
			}
			text = string(b)
		}
		t, err := newGoTemplate(text)
		if err != nil {
			return nil, fmt.Errorf("error parsing template %s, %v", text, err)
		}
		p.tmpl, p.format = t, "go-template"
	case "custom-columns":
		cols, err := parseCustomColumns(value)
		if err != nil {
			return nil, err
		}
		p.columns = cols
	case "custom-columns-file":
		b, err := os.ReadFile(value)
		if err != nil {
			return nil, fmt.Errorf("error reading template %s, %v", value, err)
		}
		cols, err := parseCustomColumnsFile(b)
		if err != nil {
			return nil, err
		}
		p.columns, p.format = cols, "custom-columns"
	default:
		return nil, unknownFormat(f.output)
	}
	if f.sortBy != "" {
		field, err := relaxedJSONPath(f.sortBy)
		if err != nil {
			return nil, err
		}
		p.sortBy, p.sort = field, jsonpath.New("sorting").AllowMissingKeys(true)
		if err := p.sort.Parse(field); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func unknownFormat(output string) error {
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", output, allowedFormats)
}

// parseCustomColumns parses kubectl's NAME:PATH,… spec.
func parseCustomColumns(spec string) ([]customColumn, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	var cols []customColumn
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		col, err := newColumn(header, path)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}
	return cols, nil
}

// parseCustomColumnsFile parses kubectl's custom-columns-file: a line of
// headers and a line of paths, whitespace-separated.
func parseCustomColumnsFile(b []byte) ([]customColumn, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return nil, fmt.Errorf("invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs.")
	}
	headers := strings.Fields(sc.Text())
	if !sc.Scan() {
		return nil, fmt.Errorf("invalid template, missing spec line. Expected format is one line of space separated headers, one line of space separated column specs.")
	}
	paths := strings.Fields(sc.Text())
	if len(headers) != len(paths) {
		return nil, fmt.Errorf("number of headers (%d) and field specifications (%d) don't match", len(headers), len(paths))
	}
	cols := make([]customColumn, 0, len(headers))
	for i := range headers {
		col, err := newColumn(headers[i], paths[i])
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}
	return cols, nil
}

func newColumn(header, path string) (customColumn, error) {
	field, err := relaxedJSONPath(path)
	if err != nil {
		return customColumn{}, err
	}
	jp := jsonpath.New(header).AllowMissingKeys(true)
	if err := jp.Parse(field); err != nil {
		return customColumn{}, fmt.Errorf("error parsing jsonpath %s, %v", field, err)
	}
	return customColumn{header: header, path: jp}, nil
}

var relaxedRegexp = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxedJSONPath accepts a.b, .a.b, {a.b} and {.a.b} for {.a.b}, as
// kubectl's custom columns and --sort-by do.
func relaxedJSONPath(path string) (string, error) {
	if path == "" {
		return path, nil
	}
	m := relaxedRegexp.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	if m[1] != "" {
		return "{." + m[1] + "}", nil
	}
	return "{." + m[2] + "}", nil
}

// table is a listing as every format prints it.
type table struct {
	// kind is -o name's prefix (pod, service, deployment.apps…).
	kind string
	// columns head the table (after NAMESPACE with -A); wide are -o
	// wide's extra ones.
	columns, wide []string
	rows          []row
	// clockFields are the top-level fields of the rows' objects that
	// change with the clock alone (Docker's "Up 3 minutes"): get -w does
	// not take them for a change of the object.
	clockFields []string
}

// row is one object of a listing.
type row struct {
	namespace, name string
	labels          map[string]string
	cells, wide     []string
	// id tells the object from another of its name (one deleted and
	// created again): its metadata.uid, else its creation time; "" for a
	// kind whose objects have neither. get -w reads it without making
	// the object.
	id string
	// object is what -o json prints of it, made when a format needs it.
	object func() (any, error)
}

// createdID is the id of an object known by its creation time.
func createdID(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// human tells whether the format is a table (table or wide, with or
// without label columns).
func (p *printer) human() bool {
	return p.format == "" || p.format == "table" || p.format == "wide"
}

// print prints the listing; single is a get of one name (its object
// printed alone rather than in a List), allNamespaces -A (a NAMESPACE
// column first).
func (p *printer) print(out io.Writer, t *table, single, allNamespaces bool) error {
	if p.capture != nil {
		p.capture(t, allNamespaces)
		return nil
	}
	rows := t.rows
	if p.only != nil {
		if rows = p.pick(rows); len(rows) == 0 && p.human() {
			return nil // as kubectl: no table, only the NotFound errors
		}
	}
	rows, objs, err := p.arrange(rows)
	if err != nil {
		return err
	}
	return p.output(out, t, rows, objs, single, allNamespaces)
}

// arrange sorts rows by --sort-by and makes their generic objects when
// the format or the sort needs them (nil otherwise): what may fail before
// anything is printed.
func (p *printer) arrange(rows []row) ([]row, []any, error) {
	if p.sort == nil && p.format != "jsonpath" && p.format != "custom-columns" {
		return rows, nil, nil
	}
	objs, err := genericObjects(rows)
	if err != nil {
		return nil, nil, err
	}
	if p.sort != nil {
		return p.sorted(rows, objs)
	}
	return rows, objs, nil
}

// output prints rows of t, as arrange left them, in p's format.
func (p *printer) output(out io.Writer, t *table, rows []row, objs []any, single, allNamespaces bool) error {
	switch p.format {
	case "", "table", "wide":
		return p.printTable(out, t, rows, allNamespaces)
	case "name":
		for _, r := range rows {
			if _, err := fmt.Fprintf(out, "%s/%s\n", t.kind, r.name); err != nil {
				return err
			}
		}
		return nil
	case "json", "yaml":
		items := make([]any, 0, len(rows))
		for _, r := range rows {
			obj, err := r.object()
			if err != nil {
				return err
			}
			items = append(items, obj)
		}
		return printObjects(out, p.format, items, single)
	case "jsonpath":
		var data any = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
		if single && len(objs) == 1 {
			data = objs[0]
		}
		var buf bytes.Buffer
		if err := p.jp.Execute(&buf, data); err != nil {
			return fmt.Errorf("error executing jsonpath: %v", err)
		}
		_, err := out.Write(buf.Bytes())
		return err
	case "custom-columns":
		return p.printColumns(out, objs)
	case "go-template":
		return p.printGoTemplate(out, rows, single)
	}
	return unknownFormat(p.format)
}

// printKinds prints the listings of several kinds (get all, get
// TYPE1,TYPE2, get TYPE1/NAME TYPE2/NAME) as kubectl prints them: a table
// per listing that has objects, each with its own NAMESPACE column or
// none (a cluster-scoped kind has none under -A), every table sorted
// before any is printed, each name prefixed with its kind (pod/web-…)
// when withKind (objects of several kinds), a blank line between two
// unless --no-headers; -o name each listing's names; the other formats
// every object in one List.
func (p *printer) printKinds(out io.Writer, lists []listing, withKind bool) error {
	if !p.human() && p.format != "name" {
		all := &table{}
		for _, l := range lists {
			all.rows = append(all.rows, l.t.rows...)
		}
		return p.print(out, all, false, false)
	}
	type arranged struct {
		listing
		rows []row
		objs []any
	}
	var todo []arranged
	for _, l := range lists {
		if len(l.t.rows) == 0 {
			continue
		}
		rows, objs, err := p.arrange(l.t.rows)
		if err != nil {
			return err
		}
		if p.human() && withKind {
			rows = l.t.withKind(rows)
		}
		todo = append(todo, arranged{l, rows, objs})
	}
	for i, a := range todo {
		if i > 0 && p.human() && !p.noHeaders {
			if _, err := fmt.Fprintln(out); err != nil {
				return err
			}
		}
		if err := p.output(out, a.t, a.rows, a.objs, false, a.allNamespaces); err != nil {
			return err
		}
	}
	return nil
}

// withKind are rows of t with each NAME cell prefixed by t's kind, as
// kubectl names objects in a listing of several kinds.
func (t *table) withKind(rows []row) []row {
	i := slices.Index(t.columns, "NAME")
	if i < 0 {
		return rows
	}
	out := make([]row, len(rows))
	for j, r := range rows {
		r.cells = slices.Clone(r.cells)
		r.cells[i] = t.kind + "/" + r.cells[i]
		out[j] = r
	}
	return out
}

// pick keeps the rows of the names of p.only, in their order (kubectl
// prints what it gets in the order of the arguments), and records them.
func (p *printer) pick(rows []row) []row {
	if p.printed == nil {
		p.printed = map[string]bool{}
	}
	var out []row
	for _, name := range p.only {
		if p.printed[name] {
			continue // named twice: printed once
		}
		for _, r := range rows {
			if r.name == name {
				out = append(out, r)
				p.printed[name] = true
			}
		}
	}
	return out
}

func (p *printer) printTable(out io.Writer, t *table, rows []row, allNamespaces bool) error {
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	if !p.noHeaders {
		fmt.Fprintln(tw, strings.Join(p.headerCells(t, allNamespaces), "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(p.rowCells(r, allNamespaces), "\t"))
	}
	return tw.Flush()
}

// headerCells head a table as printTable prints it: NAMESPACE with -A,
// the columns (and wide's), -L's and LABELS.
func (p *printer) headerCells(t *table, allNamespaces bool) []string {
	var header []string
	if allNamespaces {
		header = append(header, "NAMESPACE")
	}
	header = append(header, t.columns...)
	if p.format == "wide" {
		header = append(header, t.wide...)
	}
	header = append(header, p.labelHeaders()...)
	if p.showLabels {
		header = append(header, "LABELS")
	}
	return header
}

// rowCells are a row's cells under headerCells.
func (p *printer) rowCells(r row, allNamespaces bool) []string {
	var cells []string
	if allNamespaces {
		cells = append(cells, r.namespace)
	}
	cells = append(cells, r.cells...)
	if p.format == "wide" {
		cells = append(cells, r.wide...)
	}
	for _, k := range p.labelColumns {
		cells = append(cells, r.labels[k])
	}
	if p.showLabels {
		cells = append(cells, labels.FormatLabels(r.labels))
	}
	return cells
}

// labelHeaders are -L's columns: a key's last segment, upper-cased, as
// kubectl heads them.
func (p *printer) labelHeaders() []string {
	out := make([]string, 0, len(p.labelColumns))
	for _, k := range p.labelColumns {
		out = append(out, strings.ToUpper(k[strings.LastIndex(k, "/")+1:]))
	}
	return out
}

// printColumns prints -o custom-columns: a row per object, a value per
// column (several joined by commas, <none> for none), as kubectl's.
func (p *printer) printColumns(out io.Writer, objs []any) error {
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	if !p.noHeaders {
		fmt.Fprintln(tw, strings.Join(p.columnHeaders(), "\t"))
	}
	for _, obj := range objs {
		cells, err := p.columnCells(obj)
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func (p *printer) columnHeaders() []string {
	headers := make([]string, len(p.columns))
	for i, c := range p.columns {
		headers[i] = c.header
	}
	return headers
}

// columnCells are one object's custom columns.
func (p *printer) columnCells(obj any) ([]string, error) {
	cells := make([]string, len(p.columns))
	for i, c := range p.columns {
		results, err := c.path.FindResults(obj)
		if err != nil {
			return nil, err
		}
		var values []string
		for _, rs := range results {
			for _, v := range rs {
				values = append(values, fmt.Sprint(v.Interface()))
			}
		}
		if len(results) == 0 || len(results[0]) == 0 {
			values = append([]string{"<none>"}, values...)
		}
		cells[i] = strings.Join(values, ",")
	}
	return cells, nil
}

// genericObjects are the rows' objects as JSON decodes them (maps, slices,
// strings, int64 and float64 numbers): what jsonpath is evaluated on, as
// kubectl evaluates it on the server's JSON.
func genericObjects(rows []row) ([]any, error) {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		obj, err := r.object()
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, numbers(v))
	}
	return out, nil
}

// numbers turns JSON numbers into int64 (or float64 for the others).
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// sorted sorts rows (and their objects) by --sort-by's value, as kubectl:
// numbers numerically, strings in natural order, objects without the
// value first; an error when no object has it.
func (p *printer) sorted(rows []row, objs []any) ([]row, []any, error) {
	keys := make([]any, len(objs))
	found := false
	for i, obj := range objs {
		results, err := p.sort.FindResults(obj)
		if err != nil {
			return nil, nil, err
		}
		if len(results) > 0 && len(results[0]) > 0 {
			keys[i], found = results[0][0].Interface(), true
			if keys[i] == nil {
				keys[i] = "" // a null, as kubectl's empty value
			}
		}
	}
	if !found && len(objs) > 0 {
		return nil, nil, fmt.Errorf("couldn't find any field with path %q in the list of objects", p.sortBy)
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	var sortErr error
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := keys[idx[a]], keys[idx[b]]
		if ka == nil || kb == nil {
			return ka == nil && kb != nil
		}
		less, err := lessValue(ka, kb)
		if err != nil && sortErr == nil {
			sortErr = fmt.Errorf("field %s is an unsortable type: %v", p.sortBy, err)
		}
		return less
	})
	if sortErr != nil {
		return nil, nil, sortErr
	}
	outRows, outObjs := make([]row, len(rows)), make([]any, len(objs))
	for i, j := range idx {
		outRows[i], outObjs[i] = rows[j], objs[j]
	}
	return outRows, outObjs, nil
}

// lessValue compares two JSON values of a kind.
func lessValue(a, b any) (bool, error) {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return x < y, nil
		case float64:
			return float64(x) < y, nil
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return x < float64(y), nil
		case float64:
			return x < y, nil
		}
	case string:
		if y, ok := b.(string); ok {
			return naturalLess(x, y), nil
		}
	case bool:
		if y, ok := b.(bool); ok {
			return !x && y, nil
		}
	}
	ka, kb := reflect.ValueOf(a).Kind(), reflect.ValueOf(b).Kind()
	if ka == kb {
		return false, fmt.Errorf("%s", ka)
	}
	return false, fmt.Errorf("%s and %s", ka, kb)
}

// naturalLess orders strings as kubectl's sort does: runs of digits by
// their value ("pod-2" before "pod-10"), the rest byte by byte.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			if da != db { // equal values: fewer leading zeros first
				return da < db
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return a == "" && b != ""
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
