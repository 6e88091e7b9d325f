package explain

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// visit calls f on every field of every kind, depth first, entering no
// type twice on one path.
func visit(t *testing.T, f func(path string, n node)) {
	t.Helper()
	var walk func(n node, path string, on []reflect.Type)
	walk = func(n node, path string, on []reflect.Type) {
		for _, c := range n.children() {
			p := path + "." + c.Name
			f(p, c)
			if e := elem(c.Type); e != nil && !containsType(on, e) {
				walk(c, p, append(on, e))
			}
		}
	}
	kinds := Kinds()
	var want []string
	for _, k := range manifests.KindSchemas() {
		want = append(want, k.Kind)
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want every kind apply stores %v", kinds, want)
	}
	for _, k := range kinds {
		n, _, err := root(k)
		if err != nil {
			t.Fatal(err)
		}
		walk(n, k, []reflect.Type{elem(n.Type)})
	}
}

// Every field dockctl accepts has Kubernetes' description and a type
// kubectl would name; so has every kind.
func TestEveryFieldHasADescription(t *testing.T) {
	fields := 0
	visit(t, func(path string, n node) {
		fields++
		if fieldDoc(n) == "" {
			t.Errorf("%s: no description", path)
		}
		if typ := typeName(n.Type, n.K8s); typ == "Object" || typ == "" {
			t.Errorf("%s: type %q", path, typ)
		}
	})
	if fields < 300 {
		t.Errorf("visited %d fields only", fields)
	}
	for _, k := range Kinds() {
		n, _, _ := root(k)
		if typeDoc(n.Type, n.K8s, false) == "" {
			t.Errorf("%s: no description", k)
		}
	}
}

// Every note is about a field dockctl accepts (or a kind), so that a
// renamed or removed field cannot leave a note behind.
func TestNotesAreOnAcceptedFields(t *testing.T) {
	used := map[noteKey]bool{}
	visit(t, func(_ string, n node) { used[noteKey{n.in, n.Name}] = true })
	for _, k := range manifests.KindSchemas() {
		used[noteKey{k.Type, ""}] = true
	}
	for k := range notes {
		if !used[k] {
			t.Errorf("note on %v %q, which dockctl does not accept", k.in, k.name)
		}
	}
}

// The class notes: a skipped key and an ignored field say so.
func TestNoteOfTheDecodersHandling(t *testing.T) {
	for _, tc := range []struct {
		kind string
		path []string
		want string
	}{
		{"Service", []string{"status"}, "dockctl: output only; ignored on input."},
		{"Deployment", []string{"spec", "template", "metadata", "uid"}, "dockctl: ignored on input."},
		{"Deployment", []string{"spec", "template", "spec", "nodeSelector"}, "dockctl: no meaning on one host"},
		{"Deployment", []string{"spec", "template", "spec", "containers", "ports", "hostPort"}, "dockctl: published by Docker"},
		{"Deployment", []string{"spec", "template", "spec", "containers", "name"}, ""},
	} {
		n, _, err := walk(tc.kind, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := note(n); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("%v: note %q, want %q…", tc.path, got, tc.want)
		}
	}
}

func TestTypeName(t *testing.T) {
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"spec"}, "DeploymentSpec"},
		{[]string{"spec", "replicas"}, "integer"},
		{[]string{"spec", "paused"}, "boolean"},
		{[]string{"spec", "template", "metadata"}, "ObjectMeta"},
		{[]string{"spec", "template", "metadata", "labels"}, "map[string]string"},
		{[]string{"spec", "template", "metadata", "creationTimestamp"}, "string"},
		{[]string{"spec", "template", "spec", "containers"}, "[]Container"},
		{[]string{"spec", "template", "spec", "containers", "command"}, "[]string"},
		{[]string{"spec", "template", "spec", "containers", "resources", "limits"}, "map[string]Quantity"},
		{[]string{"spec", "strategy", "rollingUpdate", "maxSurge"}, "IntOrString"},
		{[]string{"spec", "template", "spec", "securityContext", "supplementalGroups"}, "[]integer"},
		{[]string{"status", "conditions", "lastUpdateTime"}, "string"},
	} {
		n, _, err := walk("Deployment", tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := typeName(n.Type, n.K8s); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.path, got, tc.want)
		}
	}
	n, _, _ := walk("Secret", []string{"data"})
	if got := typeName(n.Type, n.K8s); got != "map[string]string" {
		t.Errorf("Secret.data: %q, want map[string]string (base64)", got)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		lim  int
		want string
	}{
		{"a b c", 80, "a b c"},
		{"aaa bbb ccc", 7, "aaa bbb\nccc"},
		{"aaa bbb ccc", 6, "aaa\nbbb\nccc"},
		// A word longer than a line is left whole on a line of its own.
		{"see https://example.com/a/long/path now", 12, "see\nhttps://example.com/a/long/path\nnow"},
		// Its own line breaks and indentation are kept; the spaces before
		// a word moved to the next line are dropped.
		{"one two\n\n - three four", 9, "one two\n\n - three\nfour"},
		{"ab   cd", 4, "ab\ncd"},
		{"trailing  ", 9, "trailing"},
		{"", 10, ""},
	} {
		if got := wrap(tc.in, tc.lim); got != tc.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.lim, got, tc.want)
		}
	}
}

// TestExplainListsFieldsUnderKeysTheDecoderSkips: explain lists "exactly
// the fields dockctl accepts". Under a key the decoder skips whole
// (ignoredKeys: a status, metadata.managedFields) every key is accepted -
// the walk never looks inside - so explain must list there the fields
// Kubernetes has, not only those of dockctl's own output type: else
// `dockctl explain deployment.status.collisionCount` says `field
// "collisionCount" does not exist` while `apply` takes a Deployment
// carrying it (what `kubectl get -o yaml` prints). The manifests test
// (TestAcceptedFieldsAreWhatTheWalkTakes) recurses into decoded fields
// only, never into skipped ones, so this is checked here.
func TestExplainListsFieldsUnderKeysTheDecoderSkips(t *testing.T) {
	for _, tc := range []struct {
		kind, doc string
		path      []string
		field     string
	}{
		{"Deployment", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web:1}]}
status: {collisionCount: 1}
`, []string{"status"}, "collisionCount"},
		{"Service", `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
status: {conditions: [{type: Ready, status: "True"}]}
`, []string{"status"}, "conditions"},
		{"Service", `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}
`, []string{"status", "loadBalancer", "ingress"}, "hostname"},
		{"Secret", `apiVersion: v1
kind: Secret
metadata:
  name: s
  managedFields: [{manager: kubectl, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {}}}]
stringData: {a: b}
`, []string{"metadata", "managedFields"}, "fieldsV1"},
	} {
		if _, err := manifests.Decode("x.yaml", []byte(tc.doc)); err != nil {
			t.Fatalf("%s: the decoder refuses %s: %v", tc.kind, tc.field, err)
		}
		fields, err := Fields(tc.kind, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(fields, tc.field) {
			t.Errorf("%s %v: apply accepts %s, explain lists only %v", tc.kind, tc.path, tc.field, fields)
		}
	}
}

// The routing kinds, whose upstream types the binary does not link, are
// described by those types' own documentation: k8s.io/api's SwaggerDoc for
// Ingress, the Gateway API module's generated OpenAPI for HTTPRoute.
func TestRoutingKindsHaveTheirUpstreamDescriptions(t *testing.T) {
	for _, tc := range []struct {
		kind string
		path []string
		want []string
	}{
		{"Ingress", []string{"spec", "rules"}, []string{"FIELD: rules <[]IngressRule>",
			"IngressRule represents the rules mapping the paths", "http\t<HTTPIngressRuleValue>"}},
		{"HTTPRoute", []string{"spec", "rules", "matches"}, []string{"FIELD: matches <[]HTTPRouteMatch>",
			"Matches define conditions used for matching the rule", "path\t<HTTPPathMatch>"}},
		{"Gateway", []string{"metadata"}, []string{"FIELD: metadata <ObjectMeta>", "Standard object's metadata."}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var b strings.Builder
			if err := Explain(&b, tc.kind, tc.path, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in\n%s", w, b.String())
				}
			}
		})
	}
}
