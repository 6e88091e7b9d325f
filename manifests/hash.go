package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HashLength is the number of hex digits of a template hash.
const HashLength = 10

// TemplateHash identifies a revision: the first HashLength lower-case hex
// digits of the SHA-256 of the canonical JSON of t, which should already be
// defaulted (SetDefaults). Canonical means: field names from the json tags,
// object keys sorted, zero non-pointer fields and empty lists and maps left
// out, set pointers kept even when they point at a zero value (runAsUser: 0
// and emptyDir: {} mean something), and quantities in their canonical form
// (0.5 and 500m hash alike). It does not rely on omitempty, so a field added
// to the types later changes no existing hash as long as it is left unset.
func TemplateHash(t *PodTemplateSpec) string {
	sum := sha256.Sum256(canonicalJSON(t))
	return hex.EncodeToString(sum[:])[:HashLength]
}

// canonicalJSON is the byte string TemplateHash hashes. encoding/json sorts
// map keys, which makes it canonical.
func canonicalJSON(t *PodTemplateSpec) []byte {
	v, _ := canonical(reflect.ValueOf(t).Elem())
	b, err := json.Marshal(v)
	if err != nil {
		// canonical only builds maps, slices, strings, numbers and
		// booleans, which always marshal.
		panic(fmt.Sprintf("manifests: marshal canonical template: %v", err))
	}
	return b
}

// TemplateHash is TemplateHash(&d.Spec.Template).
func (d *Deployment) TemplateHash() string { return TemplateHash(&d.Spec.Template) }

// canonical converts v to plain JSON-ready values and reports whether it is
// zero (to be left out when it is a struct field).
func canonical(v reflect.Value) (any, bool) {
	switch v.Type() {
	case quantityType:
		q := v.Interface().(resource.Quantity)
		return q.String(), q.IsZero()
	case intOrStringType:
		x := v.Interface().(intstr.IntOrString)
		if x.Type == intstr.String {
			return x.StrVal, x.StrVal == ""
		}
		return x.IntVal, x.IntVal == 0
	case timeType:
		t := v.Interface().(time.Time)
		return t.UTC().Format(time.RFC3339Nano), t.IsZero()
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil, true
		}
		out, _ := canonical(v.Elem())
		return out, false
	case reflect.Struct:
		out := map[string]any{}
		for name, f := range jsonFields(v.Type()) {
			if v.Type().FieldByIndex(f.index).Tag.Get("hash") == "-" {
				continue // read at container create only: no rollout (PodSpec.EnableServiceLinks)
			}
			if fv, zero := canonical(v.FieldByIndex(f.index)); !zero {
				out[name] = fv
			}
		}
		return out, len(out) == 0
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i], _ = canonical(v.Index(i))
		}
		return out, len(out) == 0
	case reflect.Map:
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out[iter.Key().String()], _ = canonical(iter.Value())
		}
		return out, len(out) == 0
	case reflect.String:
		return v.String(), v.String() == ""
	case reflect.Bool:
		return v.Bool(), !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint(), v.Uint() == 0
	}
	panic(fmt.Sprintf("manifests: template hash: unsupported kind %s", v.Kind()))
}
