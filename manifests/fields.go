package manifests

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// jsonField is one JSON-visible field of a struct type, with embedded
// (",inline") structs flattened the way encoding/json flattens them. The
// Kubernetes types rely on inlining (TypeMeta, ProbeHandler), so the
// unsupported-field detection must see through it.
type jsonField struct {
	index []int
	typ   reflect.Type
	// owner is the struct that declares the field (an embedded one for an
	// inlined field); optional tells that its JSON tag has omitempty.
	owner    reflect.Type
	optional bool
}

var fieldCache sync.Map // reflect.Type -> map[string]jsonField

func jsonFields(t reflect.Type) map[string]jsonField {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.(map[string]jsonField)
	}
	out := map[string]jsonField{}
	collectFields(t, nil, out)
	fieldCache.Store(t, out)
	return out
}

func collectFields(t reflect.Type, prefix []int, out map[string]jsonField) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		index := append(append([]int(nil), prefix...), i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, index, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := out[name]; !dup {
			out[name] = jsonField{index: index, typ: f.Type, owner: t, optional: strings.Contains(opts, "omitempty")}
		}
	}
}

// k8sChild returns the type of field name in Kubernetes' type k (nil when k
// is unknown or lacks the field), looking through pointers and slices so
// that the walk can follow dockctl's types and Kubernetes' side by side.
func k8sChild(k reflect.Type, name string) reflect.Type {
	k = k8sStruct(k)
	if k == nil {
		return nil
	}
	f, ok := jsonFields(k)[name]
	if !ok {
		return nil
	}
	return f.typ
}

func k8sStruct(k reflect.Type) reflect.Type {
	for k != nil && (k.Kind() == reflect.Pointer || k.Kind() == reflect.Slice) {
		k = k.Elem()
	}
	if k == nil || k.Kind() != reflect.Struct {
		return nil
	}
	return k
}

// Field path helpers, in Kubernetes' notation.

func child(p, name string) string {
	if p == "" {
		return name
	}
	return p + "." + name
}

func index(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }

func key(p, k string) string { return p + "[" + k + "]" }

// parent strips the last segment of a path; it is only used to find the
// nearest line of a field that is absent from the input.
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// related reports whether one path is the other or lies under it.
func related(a, b string) bool {
	return under(a, b) || under(b, a)
}

func under(p, pre string) bool {
	if pre == "" {
		return p == ""
	}
	if !strings.HasPrefix(p, pre) {
		return false
	}
	return len(p) == len(pre) || p[len(pre)] == '.' || p[len(pre)] == '['
}
