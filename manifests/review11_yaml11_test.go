package manifests

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Review 11: kubectl reads YAML 1.1 (k8s.io/apimachinery/pkg/util/yaml ->
// sigs.k8s.io/yaml -> goyaml.v2, with no target type), so a plain y, n,
// yes, no, on, off (any case) becomes a JSON boolean, and the API server
// refuses it in a string field: "json: cannot unmarshal bool into Go
// struct field ConfigMap.data of type string". dockctl's walker reads YAML
// 1.2 (yaml.v3), where they are strings, and accepts them: a bundle that
// applies here fails on a cluster (DESIGN §8). ConfigMap data and Secret
// stringData are where such values live (FEATURE_X: on). The existing
// round-trip test misses it because sigsyaml.UnmarshalStrict converts
// with the target type, which kubectl does not. (The same walker accepts
// env[].value: yes in a Deployment.)
func TestReview11YAML11BooleansInConfigDataAreRefused(t *testing.T) {
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

// Review 11: the same YAML 1.1 reading of keys: kubectl sends
// `data: {on: "1"}` as the key "true" (a cluster accepts it, under that
// name), dockctl stores the key "on": the same file gives the container a
// different file name / variable than on a cluster.
func TestReview11YAML11BooleanKeysMeanTheSameAsOnACluster(t *testing.T) {
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
