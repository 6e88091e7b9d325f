package manifests

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
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

// shapeOf is the JSON shape of an upstream type: objects with their field
// names, down to the scalars (a type with its own JSON decoding, such as a
// time or a quantity, is a scalar).
func shapeOf(t reflect.Type) *schemaNode {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return &schemaNode{}
	}
	n := &schemaNode{Fields: map[string]*schemaNode{}}
	addFields(t, n)
	return n
}

func addFields(t reflect.Type, n *schemaNode) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			addFields(f.Type, n) // inline (TypeMeta)
			continue
		}
		if name == "" {
			name = f.Name
		}
		n.Fields[name] = shapeOf(f.Type)
	}
}

func routingSchemaFromUpstream(t *testing.T) []byte {
	t.Helper()
	kinds := map[string]*schemaNode{}
	for k, typ := range upstreamRoutingTypes {
		kinds[k] = shapeOf(typ)
	}
	b, err := json.MarshalIndent(kinds, "", " ")
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
	if *update {
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
