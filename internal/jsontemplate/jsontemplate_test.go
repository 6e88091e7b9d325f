package jsontemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/template"
)

const deployment = `{
 "apiVersion": "apps/v1", "kind": "Deployment",
 "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front", "a-b": "dash"},
   "annotations": null, "generation": 3},
 "spec": {"replicas": 3, "paused": false, "ratio": 1.5, "big": 1e21, "neg": -2,
   "template": {"spec": {"containers": [
     {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
     {"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]}]}}},
 "status": {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "False"}]},
 "empty": {}, "none": [], "str": "<a href=\"x\">&'=</a>", "uni": "héllo\u0001", "secret": "aGVsbG8="
}`

const podList = `{
 "apiVersion": "v1", "kind": "List",
 "items": [
  {"metadata": {"name": "web-1", "labels": {"app": "web"}}, "status": {"phase": "Running", "podIP": "10.0.0.2",
    "containerStatuses": [{"name": "nginx", "restartCount": 0, "ready": true}]}},
  {"metadata": {"name": "web-2", "labels": {}}, "status": {"phase": "Pending",
    "containerStatuses": [{"name": "nginx", "restartCount": 5, "ready": false}]}},
  {"metadata": {"name": "db-0"}, "status": {"phase": "Failed"}},
  null,
  "text"
 ]
}`

// jsonData decodes s as encoding/json decodes into an any: the only data
// the package runs over.
func jsonData(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// upper is a caller's function, in both packages' forms.
func upper(args []any) (any, error) {
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("not a string: %v", args[0])
	}
	return strings.ToUpper(s), nil
}

func upperStd(s string) (string, error) {
	v, err := upper([]any{s})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// join is a variadic caller's function: a string, then any values.
func join(args []any) (any, error) {
	return fmt.Sprint(args...), nil
}

func joinStd(sep string, items ...any) string {
	v, _ := join(append([]any{sep}, items...))
	return v.(string)
}

// ownFuncs and stdFuncs are the caller's functions in both packages' forms.
var (
	ownFuncs = map[string]Func{
		"upper": {Params: []Param{String}, Call: upper},
		"join":  {Params: []Param{String, Any}, Variadic: true, Call: join},
	}
	stdFuncs = template.FuncMap{"upper": upperStd, "join": joinStd}
)

// run executes text over data with this package and with text/template.
func run(t *testing.T, text string, data any) (got, want string, gotErr, wantErr error) {
	t.Helper()
	std, stdParseErr := template.New("output").Funcs(stdFuncs).Parse(text)
	own, ownParseErr := Parse("output", text, ownFuncs)
	if (stdParseErr == nil) != (ownParseErr == nil) || stdParseErr != nil && stdParseErr.Error() != ownParseErr.Error() {
		t.Fatalf("parse error %v, text/template's %v", ownParseErr, stdParseErr)
	}
	if stdParseErr != nil {
		return "", "", ownParseErr, stdParseErr
	}
	var a, b bytes.Buffer
	gotErr = own.Execute(&a, data)
	wantErr = std.Execute(&b, data)
	return a.String(), b.String(), gotErr, wantErr
}

// The evaluator prints what text/template prints and fails where it
// fails, on the same templates over the same JSON data; where the error
// is marked same, with the same message.
func TestExecuteMatchesTextTemplate(t *testing.T) {
	dep, list := deployment, podList
	for _, tt := range []struct {
		name, data, text string
		sameErr          bool // the error message is text/template's, word for word
	}{
		{"field", dep, `{{.metadata.name}} {{.kind}}`, true},
		{"number prints as text/template prints float64", dep, `{{.spec.replicas}} {{.spec.ratio}} {{.spec.big}} {{.spec.neg}}`, true},
		{"bool", dep, `{{.spec.paused}}`, true},
		{"missing key prints no value", dep, `{{.metadata.nope}}|{{.nope.deeper.still}}`, true},
		{"null prints no value", dep, `{{.metadata.annotations}}`, true},
		{"field of null fails", dep, `{{.metadata.annotations.x}}`, true},
		{"field of a string fails", dep, `{{.metadata.name.x}}`, true},
		{"field of a string through with fails", dep, `{{with .metadata.name}}{{.x}}{{end}}`, true},
		{"field of a number fails", dep, `{{with .spec.replicas}}{{.x}}{{end}}`, true},
		{"field with arguments fails", dep, `{{.metadata.name "x"}}`, true},
		{"map and slice print as fmt", dep, `{{.metadata.labels}} {{.status.conditions}} {{.empty}} {{.none}}`, true},
		{"dot and root", dep, `{{with .metadata}}{{.name}} {{$.kind}}{{end}}`, true},
		{"range over a list", list, `{{range .items}}{{.metadata.name}}{{"\t"}}{{.status.phase}}{{"\n"}}{{end}}`, true},
		{"range over a list of objects", list, `{{range $i, $p := slice .items 0 3}}{{$i}}:{{$p.metadata.name}} {{end}}`, true},
		{"range element null fails on field", list, `{{range .items}}{{.metadata.name}} {{end}}`, true},
		{"range element string fails on field", list, `{{range (slice .items 4)}}{{.metadata}}{{end}}`, true},
		{"range element prints", list, `{{range .items}}[{{.}}]{{end}}`, true},
		{"nested ranges", dep, `{{range .spec.template.spec.containers}}{{.name}}:{{range .ports}}{{.containerPort}},{{end}};{{end}}`, true},
		{"range over a map in key order", dep, `{{range $k, $v := .metadata.labels}}{{$k}}={{$v}} {{end}}`, true},
		{"range over a map, one variable", dep, `{{range $v := .metadata.labels}}{{$v}} {{end}}`, true},
		{"range else", dep, `{{range .none}}x{{else}}empty{{end}} {{range .nope}}x{{else}}missing{{end}} {{range .empty}}x{{else}}nokeys{{end}}`, true},
		{"range over a string fails", dep, `{{range .kind}}x{{end}}`, true},
		{"range over a number fails", dep, `{{range .spec.replicas}}x{{end}}`, true},
		{"range over an int constant", dep, `{{range 3}}{{.}}{{end}}{{range $i := 2}}{{$i}}{{end}}`, true},
		{"range over an int, two variables fails", dep, `{{range $i, $e := 3}}{{end}}`, true},
		{"break and continue", list, `{{range $i, $p := .items}}{{if eq $i 1}}{{continue}}{{end}}{{if eq $i 3}}{{break}}{{end}}{{$i}}{{end}}`, true},
		{"break in nested if and with", dep, `{{range .spec.template.spec.containers}}{{with .args}}{{if true}}{{break}}{{end}}{{end}}{{.name}}{{end}}`, true},
		{"if else if else", dep, `{{if .nope}}a{{else if .spec.paused}}b{{else if .spec.replicas}}c{{else}}d{{end}}`, true},
		{"if on empty things", dep, `{{if .empty}}a{{end}}{{if .none}}b{{end}}{{if ""}}c{{end}}{{if 0}}d{{end}}{{if .metadata.annotations}}e{{end}}{{if .spec.neg}}f{{end}}`, true},
		{"with else", dep, `{{with .nope}}{{.}}{{else}}none{{end}} {{with .metadata.labels.app}}{{.}}{{else}}x{{end}}`, true},
		{"else with", dep, `{{with .nope}}a{{else with .metadata.generation}}{{.}}{{else}}c{{end}}`, true},
		{"variables and assignment", dep, `{{$n := .metadata.name}}{{$r := 0}}{{range .status.conditions}}{{$r = .type}}{{end}}{{$n}} {{$r}}`, true},
		{"variable scope ends with if", dep, `{{$x := 1}}{{if true}}{{$x := 2}}{{$x}}{{end}}{{$x}}`, true},
		{"variable field chain", dep, `{{$m := .metadata}}{{$m.labels.app}} {{$m.nope.x}}`, true},
		{"parenthesized chain", dep, `{{(index .spec.template.spec.containers 0).image}} {{(.metadata).name}}`, true},
		{"chain on nil fails", dep, `{{(nil).x}}`, true},
		{"printf with several args", dep, `{{printf "%s has %v/%v ready (%.1f%%) %d %q" .metadata.name .status.readyReplicas .spec.replicas .spec.ratio 7 .kind}}`, true},
		{"printf %d of a JSON number", dep, `{{printf "%d" .spec.replicas}}`, true},
		{"printf of missing keys", dep, `{{printf "%v %s" .nope .metadata.nope}}`, true},
		{"printf format not a string fails", dep, `{{printf .spec.replicas}}`, true},
		{"printf format of a missing key fails", dep, `{{printf .nope}}`, true},
		{"printf format nil fails", dep, `{{printf nil}}`, true},
		{"eq of a map and a slice fails", dep, `{{eq .metadata.labels .none}}`, true},
		{"print and println", dep, `{{print .metadata.name .spec.replicas 1 "x" .nope}}{{println .kind 2}}`, true},
		{"pipelines", dep, `{{.metadata.name | printf "%s-x" | printf "%q"}} {{"a" | print "b"}}`, true},
		{"eq of strings and numbers", dep, `{{eq .kind "Deployment"}} {{eq .spec.replicas 3.0}} {{eq .metadata.name "a" "b" "web"}} {{ne .kind "x"}}`, true},
		{"eq of a float and an int constant fails", dep, `{{eq .spec.replicas 3}}`, true},
		{"eq of a missing key", dep, `{{eq .nope "x"}} {{eq .nope nil}} {{eq .metadata.annotations .nope}}`, true},
		{"eq of maps fails", dep, `{{eq .metadata.labels .metadata.labels}}`, true},
		{"eq without arguments fails", dep, `{{eq .kind}}`, true},
		{"order of numbers and strings", dep, `{{lt .status.readyReplicas .spec.replicas}} {{le 1.5 .spec.ratio}} {{gt .kind "Apple"}} {{ge "a" "b"}} {{lt 1 2}} {{gt 2 1}}`, true},
		{"order of incompatible types fails", dep, `{{lt .spec.replicas "3"}}`, true},
		{"order of bools fails", dep, `{{lt true false}}`, true},
		{"order of a missing key fails", dep, `{{gt .nope 1}}`, true},
		{"index of maps and slices", dep, `{{index .metadata.labels "a-b"}} {{index .spec.template.spec.containers 1 "args" 0}} {{index .metadata.labels "nope"}} {{index .metadata "labels" "app"}}`, true},
		{"index of a string is a byte", dep, `{{index .kind 0}} {{printf "%c" (index .kind 1)}}`, true},
		{"index out of range fails", dep, `{{index .status.conditions 5}}`, true},
		{"index with a float fails", dep, `{{index .status.conditions .spec.replicas}}`, true},
		{"index of a map with a number fails", dep, `{{index .metadata 0}}`, true},
		{"index of a number fails", dep, `{{index .spec.replicas 0}}`, true},
		{"index of a missing key fails", dep, `{{index .nope 0}}`, true},
		{"index through a missing key fails", dep, `{{index .metadata "nope" "x"}}`, true},
		{"slice", dep, `{{slice .kind 1 3}} {{slice .status.conditions 1}} {{slice .kind}} {{len (slice .spec.template.spec.containers 0 1)}}`, true},
		{"slice out of range fails", dep, `{{slice .kind 3 1}}`, true},
		{"len", dep, `{{len .metadata.labels}} {{len .status.conditions}} {{len .kind}} {{len .empty}} {{len .none}}`, true},
		{"len of a number fails", dep, `{{len .spec.replicas}}`, true},
		{"len of null fails", dep, `{{len .metadata.annotations}}`, true},
		{"len of a missing key fails", dep, `{{len .nope}}`, true},
		{"len of null through a pipeline fails", dep, `{{.metadata.annotations | len}} {{len (index .metadata "annotations")}}`, true},
		{"slice with a null index fails", dep, `{{slice .kind .metadata.annotations}}`, true},
		{"slice with a list index fails", dep, `{{slice .status.conditions .none}}`, true},
		{"slice with a missing index fails", dep, `{{slice .kind .nope}}`, true},
		{"and or not", dep, `{{and .kind .spec.replicas}} {{and .nope .kind}} {{or .nope .empty .kind}} {{or .nope .none}} {{not .nope}} {{not .kind}} {{and 1 0 2}}`, true},
		{"and short-circuits", dep, `{{and .nope (index .kind 99)}} {{or .kind (index .kind 99)}}`, true},
		{"and does not short-circuit on truth", dep, `{{and .kind (index .kind 99)}}`, true},
		{"and in a pipeline", dep, `{{.kind | and 1}} {{.nope | or 0}}`, true},
		{"html js urlquery", dep, `{{html .str}} {{js .str}} {{js .uni}} {{urlquery .str "a b"}} {{html .nope}} {{html 1 2}} {{urlquery .metadata.labels}}`, true},
		{"call fails", dep, `{{call .kind}}`, true},
		{"call of a missing key fails", dep, `{{call .nope}}`, true},
		{"caller's function", dep, `{{upper .metadata.name}} {{.kind | upper}}`, true},
		{"caller's function's error", dep, `{{upper .spec.replicas}}`, true},
		{"caller's function without its argument fails", dep, `{{upper}}`, true},
		{"caller's function with an argument too many fails", dep, `{{upper .kind .kind}}`, true},
		{"caller's function given an argument and the pipeline fails", dep, `{{"a" | upper "b"}}`, true},
		{"caller's string parameter given a number fails", dep, `{{upper .spec.replicas}} {{upper 3}}`, true},
		{"caller's string parameter given a missing key fails", dep, `{{upper .nope}}`, true},
		{"caller's string parameter given null fails", dep, `{{upper .metadata.annotations}}`, true},
		{"caller's string parameter given nil fails", dep, `{{upper nil}}`, true},
		{"caller's string parameter given a bool fails", dep, `{{upper true}}`, true},
		{"caller's string parameter given a piped number fails", dep, `{{len .kind | upper}}`, true},
		{"caller's string parameter given a null range element fails", list, `{{range .items}}{{upper .}}{{end}}`, true},
		{"caller's variadic function", dep, `{{join "a" .kind 1 .nope}} {{join "x"}} {{.kind | join "y"}} {{"z" | join}}`, true},
		{"caller's variadic function without its fixed argument fails", dep, `{{join}}`, true},
		{"caller's variadic function's fixed string given a number fails", dep, `{{join 1 2}} {{.spec.replicas | join}}`, true},
		{"printf given only the pipeline", dep, `{{"%s!" | printf}} {{.kind | printf "%s."}}`, true},
		{"printf given a piped number fails", dep, `{{.spec.replicas | printf}}`, true},
		{"whitespace trim", dep, "a  {{- .kind -}}  \n b {{- /* a comment */ -}} c", true},
		{"comments", dep, `{{/* nothing */}}x{{- /* trimmed */}}`, true},
		{"constants", dep, `{{1}} {{1.0}} {{0x10}} {{'a'}} {{1e3}} {{-2}} {{true}} {{"s"}} {{1i}} {{0x1p4}}`, true},
		{"int overflow fails", dep, `{{18446744073709551615}}`, true},
		{"nil is not a command", dep, `{{nil}}`, true},
		{"argument to a non-function fails", dep, `{{"a" 1}}`, true},
		{"wrong number of args fails", dep, `{{len 1 2}}`, true},
		{"define and template", dep, `{{define "c"}}[{{.name}}|{{$.name}}]{{end}}{{range .spec.template.spec.containers}}{{template "c" .}}{{end}}{{template "c"}}`, true},
		{"block", dep, `{{block "b" .metadata}}{{.name}}{{end}}`, true},
		{"undefined template fails", dep, `{{template "nope"}}`, true},
		{"range assigns declared variables", dep, `{{$k := ""}}{{$v := ""}}{{range $k, $v = .metadata.labels}}{{end}}{{$k}}={{$v}} {{$e := 0}}{{range $e = .status.conditions}}{{end}}{{$e.type}}`, true},
		{"break in a range over a map", dep, `{{range $k, $v := .metadata.labels}}{{if eq $k "app"}}{{break}}{{end}}{{$k}}{{end}}`, true},
		{"recursive template", dep, `{{define "t"}}{{if .}}{{index . 0}}{{template "t" (slice . 1)}}{{end}}{{end}}{{template "t" .spec.template.spec.containers}}`, true},
		{"printf format constant not a string fails", dep, `{{printf 3}} {{printf nil}}`, true},
		{"template with only defines prints nothing", dep, `{{define "x"}}x{{end}}`, true},
		{"parse error", dep, `{{.metadata.name`, true},
		{"undefined function", dep, `{{nope .}}`, true},
		{"undefined variable", dep, `{{$x}}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, want, gotErr, wantErr := run(t, tt.text, jsonData(t, tt.data))
			if got != want {
				t.Errorf("output %q, text/template's %q", got, want)
			}
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("error %v, text/template's %v", gotErr, wantErr)
			}
			if tt.sameErr && gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("error %q, text/template's %q", gotErr, wantErr)
			}
		})
	}
}

// text/template turns a panic in a caller's function into an execution
// error ("error calling f: ..."); the evaluator must not crash the CLI.
func TestCallerFuncPanicIsAnError(t *testing.T) {
	tpl, err := Parse("output", `{{boom .}}`, map[string]Func{"boom": {Params: []Param{Any}, Call: func([]any) (any, error) { panic("kaboom") }}})
	if err != nil {
		t.Fatal(err)
	}
	var perr any
	func() {
		defer func() { perr = recover() }()
		err = tpl.Execute(new(strings.Builder), map[string]any{})
	}()
	if perr != nil {
		t.Fatalf("Execute panicked: %v; text/template returns an error", perr)
	}
	if err == nil {
		t.Fatal("no error; text/template returns \"error calling boom: kaboom\"")
	}
	if want := "error calling boom: kaboom"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q as text/template does", err, want)
	}
}
