package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"text/template"
)

// get -o go-template and go-template-file print what kubectl's would:
// the template over the object (a get of one name) or the List, numbers
// as JSON decodes them, kubectl's base64decode, "<no value>" for a
// missing key. Golden files are the contract.
func TestGoTemplateOutputGolden(t *testing.T) {
	for _, tt := range []struct {
		golden, kind string
		output       string
		single       bool
	}{
		{"get-deployments-go-template-single", "deployments", `go-template={{.metadata.name}} {{.spec.replicas}} {{.status.readyReplicas}}{{"\n"}}`, true},
		{"get-pods-go-template-range", "pods", `go-template={{range .items}}{{.metadata.name}}{{"\t"}}{{.status.phase}}{{"\n"}}{{end}}`, false},
		{"get-secrets-go-template-base64decode", "secrets", `go-template={{base64decode .data.password}}{{"\n"}}`, true},
		{"get-deployments-go-template-missing-key", "deployments", `go-template={{.metadata.nope}}{{"\n"}}`, true},
		{"get-deployments-go-template-file", "deployments", "go-template-file=" + filepath.Join("testdata", "deployments.gotmpl"), false},
		{"get-deployments-template-alias", "deployments", `template={{len .items}}{{"\n"}}`, false},
	} {
		t.Run(tt.golden, func(t *testing.T) { printGolden(t, tt.golden, tt.kind, printFlags{output: tt.output}, tt.single) })
	}
}

// A bad template is kubectl's error, before anything is printed; a
// template that fails to run prints nothing.
func TestGoTemplateErrors(t *testing.T) {
	for _, tt := range []struct {
		situation, output, want string
		runtime                 bool
	}{
		{"no template", "go-template", "template format specified but no template given", false},
		{"empty template", "go-template=", "template format specified but no template given", false},
		{"unclosed action", "go-template={{.metadata.name", "error parsing template {{.metadata.name, ", false},
		{"missing file", "go-template-file=" + filepath.Join(t.TempDir(), "nope"), "error reading --template ", false},
		{"undefined function", "go-template={{nope .}}", `error parsing template {{nope .}}, template: output:1: function "nope" not defined`, false},
		{"bad base64", `go-template={{base64decode .metadata.name}}`, `error executing template "{{base64decode .metadata.name}}"`, true},
		{"base64decode of a number", `go-template={{base64decode .spec.replicas}}`, `error executing template "{{base64decode .spec.replicas}}"`, true},
		{"field of a string", `go-template={{.metadata.name.x}}`, `error executing template "{{.metadata.name.x}}": template: output:1:11: executing "output" at <.metadata.name.x>: can't evaluate field x in type interface {}`, true},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			p, err := newPrinter(printFlags{output: tt.output})
			if !tt.runtime {
				if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
					t.Fatalf("err %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			err = kindRenderers["deployments"](t, &buf, p, true)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || buf.Len() != 0 {
				t.Fatalf("err %v, output %q; want %q and nothing printed", err, buf.String(), tt.want)
			}
		})
	}
}

// kubectlTemplateFuncs are the functions kubectl's GoTemplatePrinter adds
// to text/template (k8s.io/cli-runtime/pkg/printers: template.go's
// base64decode, jsonpath.go's exists), as kubectl declares them: the
// reference the go-template output is compared with.
var kubectlTemplateFuncs = template.FuncMap{
	"base64decode": func(v string) (string, error) {
		data, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return "", fmt.Errorf("base64 decode failed: %v", err)
		}
		return string(data), nil
	},
	"exists": kubectlExists,
}

// kubectlExists is kubectl's exists (cli-runtime printers/jsonpath.go,
// Apache-2.0): whether index could be called with these arguments.
func kubectlExists(item any, indices ...any) bool {
	v := reflect.ValueOf(item)
	for _, i := range indices {
		index := reflect.ValueOf(i)
		var isNil bool
		if v, isNil = kubectlIndirect(v); isNil {
			return false
		}
		switch v.Kind() {
		case reflect.Array, reflect.Slice, reflect.String:
			var x int64
			switch index.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				x = index.Int()
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				x = int64(index.Uint())
			default:
				return false
			}
			if x < 0 || x >= int64(v.Len()) {
				return false
			}
			v = v.Index(int(x))
		case reflect.Map:
			if !index.IsValid() {
				index = reflect.Zero(v.Type().Key())
			}
			if !index.Type().AssignableTo(v.Type().Key()) {
				return false
			}
			if x := v.MapIndex(index); x.IsValid() {
				v = x
			} else {
				v = reflect.Zero(v.Type().Elem())
			}
		default:
			return false
		}
	}
	_, isNil := kubectlIndirect(v)
	return !isNil
}

func kubectlIndirect(v reflect.Value) (reflect.Value, bool) {
	for ; v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface; v = v.Elem() {
		if v.IsNil() {
			return v, true
		}
	}
	return v, false
}

// The go-template functions are kubectl's: exists and base64decode print
// and fail as kubectl's text/template with its functions does, over the
// same JSON object.
func TestGoTemplateFunctionsMatchKubectl(t *testing.T) {
	const secret = `{"kind": "Secret", "metadata": {"name": "db", "labels": {"app": "db"}, "annotations": null},
	  "data": {"password": "czNjcjN0", "bad": "!!"}, "list": [1, null, "x"], "n": 2}`
	var data any
	if err := json.Unmarshal([]byte(secret), &data); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, text string }{
		{"exists of present keys", `{{exists . "metadata" "name"}} {{exists . "data"}} {{exists .metadata "labels" "app"}}`},
		{"exists of missing keys", `{{exists . "nope"}} {{exists . "metadata" "nope" "deeper"}} {{exists .metadata "labels" "nope"}}`},
		{"exists of null", `{{exists . "metadata" "annotations"}} {{exists .metadata.annotations}} {{exists .list 1}}`},
		{"exists of list indexes", `{{exists .list 0}} {{exists .list 2}} {{exists .list 3}} {{exists .list -1}} {{exists . "list" 0}}`},
		{"exists with a JSON number index", `{{exists .list .n}}`},
		{"exists of a string's byte", `{{exists .kind 0}} {{exists .kind 99}} {{exists .kind "x"}}`},
		{"exists of a scalar", `{{exists .n 0}} {{exists .n}} {{exists .nope}} {{exists .nope "x"}}`},
		{"exists with a nil index", `{{exists .metadata nil}} {{exists .list nil}}`},
		{"exists in an if", `{{if exists . "data" "password"}}{{base64decode .data.password}}{{else}}none{{end}}`},
		{"exists in a pipeline", `{{"name" | exists .metadata}}`},
		{"exists without arguments fails", `{{exists}}`},
		{"base64decode", `{{base64decode .data.password}} {{.data.password | base64decode}}`},
		{"base64decode of bad data fails", `{{base64decode .data.bad}}`},
		{"base64decode of a number fails", `{{base64decode .n}}`},
		{"base64decode of a number constant fails", `{{base64decode 3}}`},
		{"base64decode of a missing key fails", `{{base64decode .data.nope}}`},
		{"base64decode of null fails", `{{base64decode .metadata.annotations}}`},
		{"base64decode of a piped number fails", `{{.n | base64decode}}`},
		{"base64decode without arguments fails", `{{base64decode}}`},
		{"base64decode with two arguments fails", `{{base64decode .data.password .data.password}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			std, stdErr := template.New("output").Funcs(kubectlTemplateFuncs).Parse(tt.text)
			own, ownErr := newGoTemplate(tt.text)
			if (stdErr == nil) != (ownErr == nil) || stdErr != nil && stdErr.Error() != ownErr.Error() {
				t.Fatalf("parse error %v, kubectl's %v", ownErr, stdErr)
			}
			if stdErr != nil {
				return
			}
			var got, want bytes.Buffer
			gotErr, wantErr := own.Execute(&got, data), std.Execute(&want, data)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("error %v, kubectl's %v", gotErr, wantErr)
			}
			if wantErr == nil && got.String() != want.String() {
				t.Errorf("output %q, kubectl's %q", got.String(), want.String())
			}
		})
	}
}
