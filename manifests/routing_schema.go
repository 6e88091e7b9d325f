package manifests

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
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

// schemaNode is one object of the upstream shape: its fields, each
// another object or, with no fields, a scalar, list of scalars or map.
type schemaNode struct {
	Fields map[string]*schemaNode `json:"fields,omitempty"`
}

var (
	routingSchemaOnce  sync.Once
	routingSchemaTypes map[string]reflect.Type
)

// routingUpstream returns the upstream shape of kind as a struct type.
func routingUpstream(kind string) reflect.Type {
	routingSchemaOnce.Do(func() {
		var kinds map[string]*schemaNode
		if err := json.Unmarshal(routingSchemaJSON, &kinds); err != nil {
			panic(fmt.Sprintf("manifests: routing schema: %v", err))
		}
		routingSchemaTypes = map[string]reflect.Type{}
		for k, n := range kinds {
			routingSchemaTypes[k] = n.structType()
		}
	})
	t, ok := routingSchemaTypes[kind]
	if !ok {
		panic("manifests: no routing schema for " + kind)
	}
	return t
}

var scalarType = reflect.TypeOf("")

// structType builds a struct with one field per name, in name order.
func (n *schemaNode) structType() reflect.Type {
	names := make([]string, 0, len(n.Fields))
	for name := range n.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	fields := make([]reflect.StructField, len(names))
	for i, name := range names {
		typ := scalarType
		if c := n.Fields[name]; c != nil && len(c.Fields) > 0 {
			typ = c.structType()
		}
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: typ, Tag: reflect.StructTag(`json:"` + name + `,omitempty"`)}
	}
	return reflect.StructOf(fields)
}
