package manifests

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode checks that no input panics and that whatever Decode accepts is
// valid, hashable, and survives a print/decode round trip in YAML and JSON
// unchanged: the same template hash and the same document (the property
// `get -o yaml | apply -f -` relies on).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		base, fullManifest, jsonManifest, withServerFields(), "", "---\n---\n", "a: [", "- 1\n",
		"apiVersion: v1\nkind: List\nitems: [{kind: Deployment}]\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: &m {name: a}\nspec: *m\n",
		strings.Replace(base, "replicas: 1", "replicas: 1e3", 1),
		base + "        resources: {limits: {cpu: 1.5x, memory: .5}}\n",
		podManifest,
		base + "        restartPolicy: Always\n      initContainers: [{name: web, image: i, livenessProbe: {exec: {command: [x]}}}]\n",
	} {
		f.Add([]byte(s))
	}
	examples, _ := filepath.Glob(filepath.Join("examples", "*.yaml"))
	for _, p := range examples {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := Decode("f.yaml", data)
		if err != nil {
			if docs != nil {
				t.Fatalf("documents returned alongside error %v", err)
			}
			list, ok := err.(ErrorList)
			if !ok || len(list) == 0 {
				t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
			}
			for _, fe := range list {
				if fe.File != "f.yaml" || fe.Msg == "" {
					t.Fatalf("malformed error %+v", fe)
				}
			}
			return
		}
		for _, doc := range docs {
			d := doc.Deployment
			if d == nil {
				continue // a Service or a Namespace: no template to hash
			}
			if err := Validate(d); err != nil {
				t.Fatalf("accepted deployment fails validation after defaults: %v", err)
			}
			for _, format := range []string{"yaml", "json"} {
				out, err := Marshal(d, format)
				if err != nil {
					t.Fatalf("Marshal %s: %v", format, err)
				}
				back, err := Decode("out."+format, out)
				if err != nil {
					t.Fatalf("printed deployment does not decode: %v\n%s", err, out)
				}
				if len(back) != 1 || back[0].Deployment.TemplateHash() != d.TemplateHash() {
					t.Fatalf("round trip changed the template hash:\n%s", out)
				}
				// The whole document, not only the template: a field lost
				// or changed on the way (replicas, strategy, metadata)
				// would undo itself at the next apply.
				again, err := Marshal(back[0].Deployment, format)
				if err != nil {
					t.Fatalf("Marshal %s after the round trip: %v", format, err)
				}
				if !bytes.Equal(again, out) {
					t.Fatalf("round trip changed the %s document:\nfirst:\n%s\nafter decoding it again:\n%s", format, out, again)
				}
			}
		}
	})
}
