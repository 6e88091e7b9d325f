package manifests

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The routing kinds' keys are checked against the upstream types
// (k8s.io/api networking/v1, sigs.k8s.io/gateway-api v1.4.1) through
// their shape only: testdata/routing_schema.json holds every JSON field
// name of each kind, nested as in the upstream types, generated from them
// by TestRoutingSchemaIsUpstreams (go test -update). At run time the
// shape becomes struct types (reflect.StructOf) with those json tags, all
// the walker needs to tell an unknown key from one dockctl does not serve,
// so no binary links the upstream packages (the gateway helper is
// dockctl's own binary, docs/design.md §10).
//
// v1.4.1 is the newest Gateway API whose module requires k8s.io 0.34
// (v1.5 requires 0.35): a newer one would move the k8s.io modules, whose
// API documentation and validation messages explain and error output
// show, or need replace directives in go.mod, which make the README's
// `go install github.com/dockctl/dockctl/cmd/dockctl@<version>` fail.

//go:embed testdata/routing_schema.json
var routingSchemaJSON []byte

// routingSchema is testdata/routing_schema.json: each kind's shape, and
// the upstream documentation of every object type in them (the type's
// description under "", each field's under its JSON name), for explain:
// k8s.io/api's SwaggerDoc, and for the Gateway API's types, which have
// none, the descriptions of the module's own generated OpenAPI
// definitions (sigs.k8s.io/gateway-api/pkg/generated/openapi), which
// kubectl explain prints from a cluster with its CRDs.
type routingSchema struct {
	Kinds map[string]*schemaNode       `json:"kinds"`
	Docs  map[string]map[string]string `json:"docs"`
}

// schemaNode is one object of the upstream shape: its upstream type
// (package path and name) and its fields, each another object or, with no
// fields, a scalar, list of scalars or map.
type schemaNode struct {
	Type   string                 `json:"type,omitempty"`
	Fields map[string]*schemaNode `json:"fields,omitempty"`
}

var (
	routingSchemaOnce  sync.Once
	routingSchemaTypes map[string]reflect.Type
	// upstreamDocs are the docs of each struct type structType built.
	upstreamDocs map[reflect.Type]UpstreamDoc
)

// UpstreamDoc is the documentation of an upstream type the binary does
// not link, which a routing kind's shape stands for.
type UpstreamDoc struct {
	// Name is the upstream type's name (HTTPRouteRule).
	Name string
	// Docs is its description under "" and each field's by JSON name, as
	// a k8s.io/api type's SwaggerDoc.
	Docs map[string]string
}

// UpstreamDocOf returns the documentation of the upstream type a shape
// struct (an AcceptedField's K8s or Owner of a routing kind) stands for.
func UpstreamDocOf(t reflect.Type) (UpstreamDoc, bool) {
	if t == nil {
		return UpstreamDoc{}, false
	}
	routingUpstream("")
	d, ok := upstreamDocs[t]
	return d, ok
}

// routingUpstream returns the upstream shape of kind as a struct type.
func routingUpstream(kind string) reflect.Type {
	routingSchemaOnce.Do(func() {
		var schema routingSchema
		if err := json.Unmarshal(routingSchemaJSON, &schema); err != nil {
			panic(fmt.Sprintf("manifests: routing schema: %v", err))
		}
		routingSchemaTypes = map[string]reflect.Type{}
		upstreamDocs = map[reflect.Type]UpstreamDoc{}
		for k, n := range schema.Kinds {
			routingSchemaTypes[k] = n.structType(schema.Docs)
		}
	})
	t, ok := routingSchemaTypes[kind]
	if !ok && kind != "" {
		panic("manifests: no routing schema for " + kind)
	}
	return t
}

var scalarType = reflect.TypeOf("")

// structType builds a struct with one field per name, in name order, and
// records its upstream type's docs. A last field, never a JSON key, names
// the upstream type, so that two upstream types of the same field names
// stay two struct types with their own docs.
func (n *schemaNode) structType(docs map[string]map[string]string) reflect.Type {
	names := make([]string, 0, len(n.Fields))
	for name := range n.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	fields := make([]reflect.StructField, len(names))
	for i, name := range names {
		typ := scalarType
		if c := n.Fields[name]; c != nil && len(c.Fields) > 0 {
			typ = c.structType(docs)
		}
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: typ, Tag: reflect.StructTag(`json:"` + name + `,omitempty"`)}
	}
	fields = append(fields, reflect.StructField{Name: "Upstream", Type: reflect.TypeFor[struct{}](),
		Tag: reflect.StructTag(`json:"-" upstream:` + strconv.Quote(n.Type))})
	t := reflect.StructOf(fields)
	upstreamDocs[t] = UpstreamDoc{Name: n.Type[strings.LastIndex(n.Type, ".")+1:], Docs: docs[n.Type]}
	return t
}
