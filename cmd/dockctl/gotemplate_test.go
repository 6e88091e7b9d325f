package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
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
		t.Run(tt.golden, func(t *testing.T) {
			p, err := newPrinter(printFlags{output: tt.output})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := kindRenderers[tt.kind](t, &buf, p, tt.single); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, buf.Bytes())
		})
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
