package manifests

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Review 12: plain keys kubectl keeps as the same string must apply.
func TestReview12PlainKeysKubectlKeeps(t *testing.T) {
	keys := []string{"app.kubernetes.io/name", "example.com/x", "a:b", "http://x", "=", "<<x", "ключ", "日本", "a#b", "a,b", "-a", "a[0]", "a{b}", "x:", "null-ish", "on-call", "Yes-no", "2001-12-14", "1.2.3", "0.0.0.0", "v1.0", "1:30", "12:30:00", ":a", "a b", "?x", "..data", "a\tb", "1-2", "0x", "e1", "inf", "NaN-x"}
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  " + key + ": \"v\"\n"
			j, err := utilyaml.ToJSON([]byte(in))
			if err != nil {
				t.Skipf("kubectl cannot convert: %v", err)
			}
			var k8s corev1.ConfigMap
			if err := json.Unmarshal(j, &k8s); err != nil {
				t.Skipf("cluster refuses: %v", err)
			}
			if _, ok := k8s.Data[key]; !ok {
				t.Skipf("kubectl renames it")
			}
			docs, err := Decode("x.yaml", []byte(in))
			if err != nil {
				if strings.Contains(err.Error(), "not a string in YAML 1.1") {
					t.Errorf("kubectl keeps key %q as is; dockctl refuses it: %v", key, err)
				}
				return
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
