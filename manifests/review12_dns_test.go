package manifests

import (
	"strings"
	"testing"
)

func review12Dep(extra string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
` + extra + `      containers:
      - name: app
        image: nginx
`
}

// Review 12: every spelling of ClusterFirst keeps the hash of a template
// that names none (what earlier releases stored).
func TestReview12DNSPolicyHashStable(t *testing.T) {
	docs, err := Decode("x.yaml", []byte(review12Dep("")))
	if err != nil {
		t.Fatal(err)
	}
	base := TemplateHash(&docs[0].Deployment.Spec.Template)
	for _, extra := range []string{
		"      dnsPolicy: ClusterFirst\n",
		"      dnsPolicy: \"\"\n",
		"      dnsPolicy: null\n",
		"      dnsPolicy: ClusterFirstWithHostNet\n",
		"      dnsPolicy: ClusterFirst\n      hostNetwork: false\n",
	} {
		docs, err := Decode("x.yaml", []byte(review12Dep(extra)))
		if err != nil {
			t.Errorf("%q: %v", strings.TrimSpace(extra), err)
			continue
		}
		if h := TemplateHash(&docs[0].Deployment.Spec.Template); h != base {
			t.Errorf("%q: hash %s, want %s", strings.TrimSpace(extra), h, base)
		}
		if len(docs[0].Ignored) > 0 {
			t.Errorf("%q: ignored %v", strings.TrimSpace(extra), docs[0].Ignored)
		}
	}
}
