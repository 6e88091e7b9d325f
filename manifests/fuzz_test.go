package manifests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode checks that no input panics and that whatever Decode accepts is
// valid, hashable, and survives a print/decode round trip in YAML and JSON
// unchanged: the same template hash and the same document (the property
// `get -o yaml | apply -f -` relies on), for every kind.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		base, fullManifest, jsonManifest, withServerFields(), "", "---\n---\n", "a: [", "- 1\n",
		"apiVersion: v1\nkind: List\nitems: [{kind: Deployment}]\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: &m {name: a}\nspec: *m\n",
		strings.Replace(base, "replicas: 1", "replicas: 1e3", 1),
		base + "        resources: {limits: {cpu: 1.5x, memory: .5}}\n",
		podManifest,
		base + "        restartPolicy: Always\n      initContainers: [{name: web, image: i, livenessProbe: {exec: {command: [x]}}}]\n",
		svcBase, kubectlService, kubectlNamespace,
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: a}, spec: {clusterIP: None}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a.b}\nimmutable: true\ndata: {k: v}\nbinaryData: {b: AAEC}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\ndata: {tls.crt: QQ==}\nstringData: {tls.key: k}\n",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\nstatus: {phase: Bound}\n",
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
			if doc.Deployment == nil {
				roundTripOther(t, doc)
				continue
			}
			d := doc.Deployment
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

// roundTripOther is FuzzDecode's check of a Service or Namespace: valid
// once defaulted, and printed, decoded and printed again unchanged.
func roundTripOther(t *testing.T, doc *Document) {
	print := func(d *Document, format string) ([]byte, error) {
		switch {
		case d.Kind() != doc.Kind():
			return nil, fmt.Errorf("a %s decoded as a %s", doc.Kind(), d.Kind())
		case d.Service != nil:
			return MarshalService(d.Service, format)
		case d.Namespace != nil:
			return MarshalNamespace(d.Namespace, format)
		case d.ConfigMap != nil:
			return MarshalConfigMap(d.ConfigMap, format)
		case d.Secret != nil:
			return MarshalSecret(d.Secret, format)
		case d.PVC != nil:
			return MarshalPVC(d.PVC, format)
		}
		return nil, fmt.Errorf("document %s carries no object", d.Source())
	}
	var err error
	if doc.Service != nil {
		err = ValidateService(doc.Service)
	} else if doc.Namespace != nil {
		err = ValidateNamespace(doc.Namespace)
	} else if doc.ConfigMap != nil {
		err = ValidateConfigMap(doc.ConfigMap)
	} else if doc.Secret != nil {
		err = ValidateSecret(doc.Secret)
	} else if doc.PVC != nil {
		err = ValidatePVC(doc.PVC)
	}
	if err != nil {
		t.Fatalf("accepted %s fails validation after defaults: %v", doc.Kind(), err)
	}
	for _, format := range []string{"yaml", "json"} {
		out, err := print(doc, format)
		if err != nil {
			t.Fatalf("print %s: %v", format, err)
		}
		back, err := Decode("out."+format, out)
		if err != nil || len(back) != 1 {
			t.Fatalf("printed %s does not decode: %v\n%s", doc.Kind(), err, out)
		}
		again, err := print(back[0], format)
		if err != nil {
			t.Fatalf("print %s after the round trip: %v", format, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("round trip changed the %s document:\nfirst:\n%s\nafter decoding it again:\n%s", format, out, again)
		}
	}
}
