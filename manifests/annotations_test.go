package manifests

import (
	"strings"
	"testing"
)

// dockctl.io/ annotations are settings, not free text: an unknown key (a
// typo) or one on the Deployment's own metadata instead of the pod template
// would be silently ignored, so both are errors with file, line and path.
func TestDockctlAnnotations(t *testing.T) {
	withMeta := func(t *testing.T, ann string) string {
		return edit(t, "  name: web\n", "  name: web\n  annotations:\n"+ann)
	}
	withTemplate := func(t *testing.T, ann string) string {
		return edit(t, "      labels:\n        app: web\n", "      labels:\n        app: web\n      annotations:\n"+ann)
	}
	tests := []struct {
		name  string
		input func(t *testing.T) string
		want  []string // nil: valid
	}{
		{"known key on the template", func(t *testing.T) string { return withTemplate(t, "        dockctl.io/network: backend\n") }, nil},
		{"other prefixes are free", func(t *testing.T) string {
			return withMeta(t, "    example.com/owner: me\n    kubernetes.io/change-cause: first\n")
		}, nil},
		{"typo on the template", func(t *testing.T) string { return withTemplate(t, "        dockctl.io/netwrok: backend\n") },
			[]string{`t.yaml:15: spec.template.metadata.annotations[dockctl.io/netwrok]: unknown dockctl.io annotation (known: dockctl.io/network)`}},
		{"wrong case on the template", func(t *testing.T) string { return withTemplate(t, "        Dockctl.io/Network: backend\n") },
			[]string{`t.yaml:15: spec.template.metadata.annotations[Dockctl.io/Network]: unknown dockctl.io annotation (known: dockctl.io/network)`}},
		{"template key on the deployment", func(t *testing.T) string { return withMeta(t, "    dockctl.io/network: backend\n") },
			[]string{`t.yaml:6: metadata.annotations[dockctl.io/network]: misplaced: a pod template annotation, it belongs in spec.template.metadata.annotations`}},
		{"typo on the deployment", func(t *testing.T) string { return withMeta(t, "    dockctl.io/netwrok: backend\n") },
			[]string{`t.yaml:6: metadata.annotations[dockctl.io/netwrok]: unknown dockctl.io annotation (known: dockctl.io/network)`}},
		{"several at once", func(t *testing.T) string {
			return withTemplate(t, "        dockctl.io/network: a\n        dockctl.io/x: b\n        dockctl.io/y: c\n")
		}, []string{
			`t.yaml:16: spec.template.metadata.annotations[dockctl.io/x]: unknown dockctl.io annotation (known: dockctl.io/network)`,
			`t.yaml:17: spec.template.metadata.annotations[dockctl.io/y]: unknown dockctl.io annotation (known: dockctl.io/network)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("t.yaml", []byte(tt.input(t)))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if got := err.Error(); got != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
	// Code-built deployments (scale, undo) go through the same check.
	docs, err := Decode("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Deployment
	d.Metadata.Annotations = map[string]string{AnnotationNetwork: "x"}
	if err := Validate(d); err == nil || !strings.Contains(err.Error(), "metadata.annotations[dockctl.io/network]: misplaced") {
		t.Fatalf("Validate: %v", err)
	}
}

// dockctl.io/acme is the one dockctl.io annotation of a routing object:
// "true" or "false" on an Ingress or a Gateway (docs/design.md §10,
// ACME), unknown on any other kind.
func TestACMEAnnotationOnRoutingObjects(t *testing.T) {
	ingress := func(v string) string {
		return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  annotations: {dockctl.io/acme: \"" + v + "\"}\nspec:\n  defaultBackend: {service: {name: web, port: {number: 80}}}\n"
	}
	for _, tc := range []struct {
		name, input, want string // want "": valid
	}{
		{"true on an Ingress", ingress("true"), ""},
		{"false on an Ingress", ingress("false"), ""},
		{"true on a Gateway", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: edge\n  annotations: {dockctl.io/acme: \"true\"}\nspec:\n  gatewayClassName: dockctl\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n", ""},
		{"another value", ingress("yes"), `metadata.annotations[dockctl.io/acme]: must be "true" or "false"`},
		{"on a Service", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations: {dockctl.io/acme: \"true\"}\nspec: {ports: [{port: 80}]}\n", "dockctl defines none on a Service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("t.yaml", []byte(tc.input))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Decode: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Decode: %v, want %q", err, tc.want)
			}
		})
	}
}
