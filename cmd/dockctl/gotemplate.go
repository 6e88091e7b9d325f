package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/dockctl/dockctl/internal/jsontemplate"
)

// get -o go-template and go-template-file, as kubectl's GoTemplatePrinter:
// the template runs over the object as encoding/json decodes it (maps,
// slices, strings, float64 numbers: {{.spec.replicas}} prints 3), a get
// of one name over that object, any other over a List of items; a
// missing key prints "<no value>", as kubectl's default
// --allow-missing-template-keys.
//
// Why not text/template: its executor calls reflect.Value.MethodByName
// and Call, and linking it turns off the linker's dead-method elimination
// for the whole binary. Measured on the stripped static build
// (CGO_ENABLED=0 go build -trimpath -tags grpcnotrace -ldflags '-s -w'):
// 41,472,162 bytes with text/template's Execute, 34,238,626 without
// go-template at all, 34,472,098 with internal/jsontemplate (+143 KB of
// it text/template/parse). jsontemplate parses with text/template/parse
// (the same grammar and parse errors) and evaluates the tree over JSON
// data only, with text/template's output and errors (its differential
// tests), so the output stays the one kubectl's scripts read
// (docs/design.md §15).

// newGoTemplate parses text with kubectl's template functions
// (k8s.io/cli-runtime's GoTemplatePrinter): base64decode (a Secret's
// data) and exists, declared with kubectl's Go signatures so that a call
// is checked as kubectl's text/template checks it.
func newGoTemplate(text string) (*jsontemplate.Template, error) {
	return jsontemplate.Parse("output", text, map[string]jsontemplate.Func{
		// func base64decode(v string) (string, error)
		"base64decode": {Params: []jsontemplate.Param{jsontemplate.String}, Call: base64decode},
		// func exists(item interface{}, indices ...interface{}) bool
		"exists": {Params: []jsontemplate.Param{jsontemplate.Any, jsontemplate.Any}, Variadic: true, Call: exists},
	})
}

// base64decode is kubectl's: its string argument decoded from standard
// base64.
func base64decode(args []any) (any, error) {
	b, err := base64.StdEncoding.DecodeString(args[0].(string))
	if err != nil {
		return nil, fmt.Errorf("base64 decode failed: %v", err)
	}
	return string(b), nil
}

// exists is kubectl's: whether index could be called with these
// arguments and reach a value that is not null. A list or string takes
// an integer index in range (a JSON number is a float64, which kubectl's
// refuses too), a map a string key (nil is the key ""); the item alone,
// with no indexes, always exists, as kubectl's.
func exists(args []any) (any, error) {
	v := args[0]
	for _, ix := range args[1:] {
		var i int
		switch n := ix.(type) {
		case int:
			i = n
		case uint8:
			i = int(n)
		default:
			i = -1
		}
		switch x := v.(type) {
		case []any:
			if i < 0 || i >= len(x) {
				return false, nil
			}
			v = x[i]
		case string:
			if i < 0 || i >= len(x) {
				return false, nil
			}
			v = x[i]
		case map[string]any:
			key, ok := ix.(string)
			if !ok && ix != nil {
				return false, nil
			}
			v = x[key]
		default:
			return false, nil
		}
	}
	return len(args) == 1 || v != nil, nil
}

// printGoTemplate runs p's template over rows' objects (one alone when
// single).
func (p *printer) printGoTemplate(out io.Writer, rows []row, single bool) error {
	items := make([]any, 0, len(rows))
	for _, r := range rows {
		obj, err := r.object()
		if err != nil {
			return err
		}
		items = append(items, obj)
	}
	var data any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	if single && len(items) == 1 {
		data = items[0]
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	// Executed into a buffer first: a failing template prints nothing
	// (kubectl prints what ran before the error; a partial line is of no
	// use to a script).
	var buf bytes.Buffer
	if err := p.tmpl.Execute(&buf, v); err != nil {
		return fmt.Errorf("error executing template %q: %v", p.tmpl.Root().String(), err)
	}
	_, err = out.Write(buf.Bytes())
	return err
}
