package manifests

import (
	"strings"
	"testing"
)

// YAML 1.1 booleans (y, yes, on, n, no, off in their three cases) are
// refused, plain, where a string is expected, with the hint to quote them;
// quoted, tagged !!str or in a block scalar they are strings everywhere.
func TestYAML11BooleansWhereAStringIsExpected(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	const dep = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
`
	tests := []struct {
		name, in string
		want     string // "" accepted
	}{
		{"configmap value", cm + "data: {ENABLED: yes}\n", `x.yaml:4: data[ENABLED]: expected a string, got yes, the boolean true in YAML 1.1, which kubectl reads: quote it ("yes")`},
		{"configmap value OFF", cm + "data:\n  tls: OFF\n", `x.yaml:5: data[tls]: expected a string, got OFF, the boolean false in YAML 1.1, which kubectl reads: quote it ("OFF")`},
		{"configmap key", cm + "data: {on: \"1\"}\n", `x.yaml:4: data[on]: key on is not a string in YAML 1.1, which kubectl reads (a cluster would name it "true"): quote it ("on")`},
		{"label value", strings.Replace(cm, "{name: c}", "{name: c, labels: {debug: N}}", 1), `x.yaml:3: metadata.labels[debug]: expected a string, got N`},
		{"secret stringData names no value", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {answer: No}\n",
			"x.yaml:4: stringData[answer]: expected a string, got a plain value that YAML 1.1, which kubectl reads, takes for a boolean: quote it"},
		{"env value", dep + "        env: [{name: DEBUG, value: on}]\n", `x.yaml:12: spec.template.spec.containers[0].env[0].value: expected a string, got on`},
		{"args item", dep + "        args: [--verbose, Y]\n", `x.yaml:12: spec.template.spec.containers[0].args[1]: expected a string, got Y`},
		{"quoted", cm + "data: {\"on\": 'yes', b: \"no\", c: !!str off}\n", ""},
		{"block scalar", cm + "data:\n  a: |\n    yes\n", ""},
		{"true is not a string either", cm + "data: {a: true}\n", `x.yaml:4: data[a]: expected a string, got boolean true`},
		{"longer words are strings", cm + "data: {a: yess, b: nope, c: online}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("x.yaml", []byte(tt.in))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("got %v\nwant %q", err, tt.want)
			}
		})
	}
}
