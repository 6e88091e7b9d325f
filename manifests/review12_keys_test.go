package manifests

import (
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

// Review 12: plain keys kubectl keeps as the same string mean the same
// here: dockctl stores a key a cluster stores, and refuses exactly those
// the API server refuses (ValidateConfigMap checks each key with
// IsConfigMapKey). A refusal of a key a cluster accepts fails, whatever
// its message.
func TestReview12PlainKeysKubectlKeeps(t *testing.T) {
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

// Review 12: a ConfigMap of 10k keys decodes quickly.
func TestReview12ManyKeysPerformance(t *testing.T) {
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
