package manifests

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/kube-openapi/pkg/validation/spec"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayopenapi "sigs.k8s.io/gateway-api/pkg/generated/openapi"

	goldenfile "github.com/dockctl/dockctl/internal/golden"
)

// upstreamRoutingTypes are the types the routing kinds mirror.
var upstreamRoutingTypes = map[string]reflect.Type{
	KindIngress:        reflect.TypeFor[networkingv1.Ingress](),
	KindIngressClass:   reflect.TypeFor[networkingv1.IngressClass](),
	KindGatewayClass:   reflect.TypeFor[gatewayv1.GatewayClass](),
	KindGateway:        reflect.TypeFor[gatewayv1.Gateway](),
	KindHTTPRoute:      reflect.TypeFor[gatewayv1.HTTPRoute](),
	KindReferenceGrant: reflect.TypeFor[gatewayv1beta1.ReferenceGrant](),
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

// gatewayDefinitions are the Gateway API module's generated OpenAPI
// definitions, the descriptions of its types, which have no SwaggerDoc.
var gatewayDefinitions = gatewayopenapi.GetOpenAPIDefinitions(func(path string) spec.Ref {
	return spec.MustCreateRef("#/definitions/" + path)
})

// docsOfUpstream is the documentation of upstream type t: its SwaggerDoc
// with its inlined types' (TypeMeta's apiVersion and kind), else its
// generated OpenAPI definition's descriptions.
func docsOfUpstream(t reflect.Type) map[string]string {
	out := map[string]string{}
	if d, ok := reflect.Zero(t).Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		for k, v := range d.SwaggerDoc() {
			out[k] = v
		}
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.Anonymous && strings.Split(f.Tag.Get("json"), ",")[0] == "" {
				for k, v := range docsOfUpstream(f.Type) {
					if _, dup := out[k]; !dup && k != "" {
						out[k] = v
					}
				}
			}
		}
		return out
	}
	def, ok := gatewayDefinitions[t.PkgPath()+"."+t.Name()]
	if !ok {
		return out
	}
	if def.Schema.Description != "" {
		out[""] = def.Schema.Description
	}
	for name, p := range def.Schema.Properties {
		if p.Description != "" {
			out[name] = p.Description
		}
	}
	if _, ok := def.Schema.Properties["metadata"]; ok && out["metadata"] == "" {
		// A CRD's metadata has no description of its own: the API server
		// publishes PartialObjectMetadata's (apiextensions-apiserver's
		// OpenAPI builder), which is what kubectl explain prints.
		out["metadata"] = metav1beta1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]
	}
	return out
}

// shapeOf is the JSON shape of an upstream type: objects with their field
// names, down to the scalars (a type with its own JSON decoding, such as a
// time or a quantity, is a scalar); docs gets each object type's docs.
func shapeOf(t reflect.Type, docs map[string]map[string]string) *schemaNode {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return &schemaNode{}
	}
	n := &schemaNode{Type: t.PkgPath() + "." + t.Name(), Fields: map[string]*schemaNode{}}
	if _, done := docs[n.Type]; !done {
		docs[n.Type] = docsOfUpstream(t)
	}
	addFields(t, n, docs)
	return n
}

func addFields(t reflect.Type, n *schemaNode, docs map[string]map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			addFields(f.Type, n, docs) // inline (TypeMeta)
			continue
		}
		if name == "" {
			name = f.Name
		}
		c := shapeOf(f.Type, docs)
		n.Fields[name] = c
		if d := docs[n.Type]; d[name] == "" && c.Type != "" && docs[c.Type][""] != "" {
			// A field without a comment of its own is described by its
			// type, as the published OpenAPI (and so kubectl explain)
			// describes it.
			d[name] = docs[c.Type][""]
		}
	}
}

func routingSchemaFromUpstream(t *testing.T) []byte {
	t.Helper()
	schema := routingSchema{Kinds: map[string]*schemaNode{}, Docs: map[string]map[string]string{}}
	for k, typ := range upstreamRoutingTypes {
		schema.Kinds[k] = shapeOf(typ, schema.Docs)
	}
	b, err := json.MarshalIndent(schema, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// The shapes the decoder checks keys against are those of the upstream
// types (go test -update regenerates them after a module upgrade).
func TestRoutingSchemaIsUpstreams(t *testing.T) {
	want := routingSchemaFromUpstream(t)
	const file = "testdata/routing_schema.json"
	if *goldenfile.Update {
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(routingSchemaJSON, want) {
		t.Errorf("%s is not the shape of the upstream types: run go test -run TestRoutingSchemaIsUpstreams -update ./manifests/", file)
	}
}

// Every field of dockctl's routing types is one the upstream type has at
// the same place: a mirror never accepts a key a cluster refuses.
func TestRoutingTypesMirrorUpstream(t *testing.T) {
	for kind, dec := range routingKinds() {
		var check func(ours, up reflect.Type, path string)
		check = func(ours, up reflect.Type, path string) {
			ours, up = k8sStruct(ours), k8sStruct(up)
			if ours == nil || ours == reflect.TypeFor[ObjectMeta]() {
				return
			}
			for name, f := range jsonFields(ours) {
				uf, ok := jsonFields(up)[name]
				if !ok {
					t.Errorf("%s: %s.%s is not an upstream field", kind, path, name)
					continue
				}
				check(f.typ, uf.typ, path+"."+name)
			}
		}
		check(dec.typ, upstreamRoutingTypes[kind], kind)
	}
}
