package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Mapping keys that are not plain strings. kubectl converts YAML to JSON
// with a YAML 1.1 reader (goyaml.v2 through sigs.k8s.io/yaml), which
// resolves a plain key such as 1.0, 0x1F, 1e3 or True to a number or
// boolean and then names it by that value ("1", "31", "1000", "true").
// A walker that took the key's source text (k.Value) whatever its tag
// would give a container a different file name (or variable, through
// envFrom) than a cluster does, or accept a key a cluster refuses.
func TestNonStringMappingKeysMeanTheSameAsOnACluster(t *testing.T) {
	for _, key := range []string{"True", "FALSE", "1.0", "0x1F", "1e3", "010", "+1", ".5", "1_000"} {
		t.Run(key, func(t *testing.T) {
			in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  " + key + ": \"v\"\n"
			docs, err := Decode("x.yaml", []byte(in))
			if err != nil {
				return // refusing it is fine
			}
			j, err := utilyaml.ToJSON([]byte(in))
			if err != nil {
				t.Fatalf("dockctl accepts a file kubectl cannot convert: %v", err)
			}
			var k8s corev1.ConfigMap
			if err := json.Unmarshal(j, &k8s); err != nil {
				t.Fatalf("dockctl accepts a ConfigMap a cluster refuses: %v", err)
			}
			var want, got []string
			for k := range k8s.Data {
				want = append(want, k)
			}
			for k := range docs[0].ConfigMap.Data {
				got = append(got, k)
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(want, ",") != strings.Join(got, ",") {
				t.Errorf("key written %s: a cluster stores key(s) %q, dockctl stores %q", key, want, got)
			}
		})
	}
}

// kubectl reads YAML 1.1 (k8s.io/apimachinery/pkg/util/yaml ->
// sigs.k8s.io/yaml -> goyaml.v2, with no target type), so a plain y, n,
// yes, no, on, off (any case) becomes a JSON boolean, and the API server
// refuses it in a string field: "json: cannot unmarshal bool into Go
// struct field ConfigMap.data of type string". dockctl's walker reads YAML
// 1.2 (yaml.v3), where they are strings: accepting them would let a bundle
// apply here that fails on a cluster (docs/design.md §1). ConfigMap data and
// Secret stringData are where such values live (FEATURE_X: on). A
// round-trip through sigsyaml.UnmarshalStrict does not show it, because
// that converts with the target type, which kubectl does not. (The same
// walker reads env[].value: yes in a Deployment.)
func TestYAML11BooleansInConfigDataAreRefused(t *testing.T) {
	for name, in := range map[string]string{
		"configmap data yes":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {ENABLED: yes}\n",
		"configmap data on":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {FEATURE_X: on}\n",
		"configmap data N":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {country: N}\n",
		"secret stringData off":  "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {tls: off}\n",
		"secret stringData No":   "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {answer: No}\n",
		"configmap data block y": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  verbose: y\n",
	} {
		t.Run(name, func(t *testing.T) {
			// What a cluster does with it: kubectl's conversion, then the
			// API server's decoding into core/v1.
			j, err := utilyaml.ToJSON([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			var into any = &corev1.ConfigMap{}
			if bytes.Contains(j, []byte(`"kind":"Secret"`)) {
				into = &corev1.Secret{}
			}
			dec := json.NewDecoder(bytes.NewReader(j))
			dec.DisallowUnknownFields()
			kerr := dec.Decode(into)
			if kerr == nil {
				t.Fatalf("precondition: Kubernetes accepts %s", j)
			}
			if _, err := Decode("x.yaml", []byte(in)); err == nil {
				t.Errorf("dockctl accepts what a cluster refuses (%v)", kerr)
			}
		})
	}
}

// The same YAML 1.1 reading of keys: kubectl sends `data: {on: "1"}` as
// the key "true" (a cluster accepts it, under that name). Storing the key
// "on" would give the container a different file name / variable than on
// a cluster; dockctl stores what a cluster stores, or refuses the file.
func TestYAML11BooleanKeysMeanTheSameAsOnACluster(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {on: \"1\", N: \"2\"}\n"
	j, err := utilyaml.ToJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var k8s corev1.ConfigMap
	if err := json.Unmarshal(j, &k8s); err != nil {
		t.Fatalf("precondition: a cluster refuses it: %v", err)
	}
	docs, err := Decode("x.yaml", []byte(in))
	if err != nil {
		return // refusing it is fine too
	}
	got := docs[0].ConfigMap.Data
	for k, v := range k8s.Data {
		if got[k] != v {
			t.Errorf("a cluster stores key %q = %q; dockctl stores %v", k, v, got)
		}
	}
}

// Plain keys kubectl keeps as the same string mean the same here: dockctl stores a key a cluster stores, and refuses exactly those
// the API server refuses (ValidateConfigMap checks each key with
// IsConfigMapKey). A refusal of a key a cluster accepts fails, whatever
// its message.
func TestPlainKeysKubectlKeepsMeanTheSameAsOnACluster(t *testing.T) {
	keys := []string{"app.kubernetes.io/name", "example.com/x", "a:b", "http://x", "=", "<<x", "ключ", "日本", "a#b", "a,b", "-a", "a[0]", "a{b}", "x:", "null-ish", "on-call", "Yes-no", "2001-12-14", "1.2.3", "0.0.0.0", "v1.0", "1:30", "12:30:00", ":a", "a b", "?x", "..data", "a\tb", "1-2", "0x", "e1", "inf", "NaN-x"}
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  " + key + ": \"v\"\n"
			// Every key of the table is one kubectl keeps as written.
			j, err := utilyaml.ToJSON([]byte(in))
			if err != nil {
				t.Fatalf("kubectl cannot convert: %v", err)
			}
			var k8s corev1.ConfigMap
			if err := json.Unmarshal(j, &k8s); err != nil {
				t.Fatalf("the ConfigMap does not decode: %v", err)
			}
			if _, ok := k8s.Data[key]; !ok {
				t.Fatalf("kubectl renames it: %q", k8s.Data)
			}
			refused := validation.IsConfigMapKey(key)
			docs, err := Decode("x.yaml", []byte(in))
			switch {
			case err != nil && len(refused) == 0:
				t.Fatalf("kubectl keeps key %q as is and a cluster accepts it; dockctl refuses it: %v", key, err)
			case err == nil && len(refused) > 0:
				t.Fatalf("dockctl accepts key %q, which a cluster refuses: %s", key, strings.Join(refused, "; "))
			case err != nil:
				return // refused, as by a cluster
			}
			if _, ok := docs[0].ConfigMap.Data[key]; !ok {
				var got []string
				for k := range docs[0].ConfigMap.Data {
					got = append(got, k)
				}
				sort.Strings(got)
				t.Errorf("key %q: dockctl stores %q", key, got)
			}
		})
	}
}

// A ConfigMap of 10k keys decodes (the time it took is logged, not
// asserted).
func TestConfigMapOfManyKeysDecodes(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "  key-%d.conf: v\n", i)
	}
	start := time.Now()
	if _, err := Decode("x.yaml", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	t.Logf("10k keys: %v", time.Since(start))
}
