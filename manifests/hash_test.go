package manifests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	goldenfile "github.com/dockctl/dockctl/internal/golden"
)

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// TestTemplateHashGolden pins the hashes of a few templates. These hashes
// are stored on running containers: if this test fails, every container of
// every existing deployment would be replaced on upgrade. Update the golden
// file only for a deliberate, documented break.
func TestTemplateHashGolden(t *testing.T) {
	docs, err := Load([]string{filepath.Join("testdata", "hash")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, d := range docs {
		name := filepath.Base(d.File)
		lines = append(lines, fmt.Sprintf("%s %s", name, d.Deployment.TemplateHash()))
		// The canonical form is pinned too, so that a failing hash
		// shows what changed.
		golden(t, filepath.Join("hash", strings.TrimSuffix(name, filepath.Ext(name))+".canonical.golden"),
			append(canonicalJSON(&d.Deployment.Spec.Template), '\n'))
	}
	sort.Strings(lines)
	golden(t, "hash.golden", []byte(strings.Join(lines, "\n")+"\n"))
}

func TestTemplateHash(t *testing.T) {
	decode := func(t *testing.T, s string) *Deployment {
		t.Helper()
		docs, err := Decode("t.yaml", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return docs[0].Deployment
	}
	tests := []struct {
		name   string
		change func(t *testing.T) *Deployment
		same   bool
	}{
		{"replicas are outside the template", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "replicas: 1", "replicas: 5", 1))
		}, true},
		{"deployment metadata is outside the template", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "  name: web\n", "  name: web\n  annotations: {kubernetes.io/change-cause: x}\n", 1))
		}, true},
		{"strategy is outside the template", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "  replicas: 1\n", "  strategy: {type: Recreate}\n", 1))
		}, true},
		{"key order does not matter", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "      - name: web\n        image: nginx:1.25\n", "      - image: nginx:1.25\n        name: web\n", 1))
		}, true},
		{"explicit defaults hash like omitted ones", func(t *testing.T) *Deployment {
			return decode(t, base+"          protocol: TCP\n        imagePullPolicy: IfNotPresent\n      restartPolicy: Always\n      terminationGracePeriodSeconds: 30\n")
		}, true},
		{"image", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "nginx:1.25", "nginx:1.26", 1))
		}, false},
		{"env value", func(t *testing.T) *Deployment {
			return decode(t, base+"        env: [{name: A, value: \"2\"}]\n")
		}, false},
		{"template annotation (rollout restart)", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "      labels:\n        app: web\n    spec", "      annotations: {kubectl.kubernetes.io/restartedAt: now}\n      labels:\n        app: web\n    spec", 1))
		}, false},
		{"a second container", func(t *testing.T) *Deployment {
			return decode(t, base+"      - name: side\n        image: nginx:1.25\n")
		}, false},
		{"an init container", func(t *testing.T) *Deployment {
			return decode(t, base+"      initContainers:\n      - name: init\n        image: nginx:1.25\n")
		}, false},
		{"template label", func(t *testing.T) *Deployment {
			return decode(t, strings.Replace(base, "        app: web\n    spec", "        app: web\n        v: \"2\"\n    spec", 1))
		}, false},
	}
	ref := decode(t, base).TemplateHash()
	if !regexp.MustCompile(`^[0-9a-f]{10}$`).MatchString(ref) {
		t.Fatalf("hash %q is not 10 lower-case hex digits", ref)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.change(t).TemplateHash()
			if (got == ref) != tt.same {
				t.Errorf("hash %s vs reference %s: same = %v, want %v", got, ref, got == ref, tt.same)
			}
		})
	}
}

func TestTemplateHashCanonicalValues(t *testing.T) {
	withEnv := func(s string) string { return base + s }
	pairs := []struct {
		name string
		a, b string
		same bool
	}{
		{"equal quantities in different notation",
			withEnv("        resources: {limits: {cpu: 0.5, memory: 1Gi}}\n"),
			withEnv("        resources: {limits: {cpu: 500m, memory: 1024Mi}}\n"), true},
		{"empty lists and maps are omitted",
			withEnv("        command: []\n        env: []\n        resources: {limits: {}}\n"), base, true},
		{"no init containers hash like the templates of earlier releases",
			withEnv("      initContainers: []\n      shareProcessNamespace: null\n"), base, true},
		{"a sidecar differs from an init container",
			withEnv("      initContainers: [{name: init, image: nginx:1.25, restartPolicy: Always}]\n"),
			withEnv("      initContainers: [{name: init, image: nginx:1.25}]\n"), false},
		{"shareProcessNamespace false differs from unset",
			withEnv("      shareProcessNamespace: false\n"), base, false},
		{"runAsUser 0 differs from unset",
			withEnv("        securityContext: {runAsUser: 0}\n"),
			withEnv("        securityContext: {}\n"), false},
		{"privileged false differs from unset",
			withEnv("        securityContext: {privileged: false}\n"),
			withEnv("        securityContext: {}\n"), false},
		{"emptyDir {} is kept",
			withEnv("        volumeMounts: [{name: v, mountPath: /v}]\n      volumes: [{name: v, emptyDir: {}}]\n"),
			withEnv("        volumeMounts: [{name: v, mountPath: /v}]\n      volumes: [{name: v, emptyDir: {medium: Memory}}]\n"), false},
	}
	for _, tt := range pairs {
		t.Run(tt.name, func(t *testing.T) {
			da, err := Decode("a.yaml", []byte(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			db, err := Decode("b.yaml", []byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			ha, hb := da[0].Deployment.TemplateHash(), db[0].Deployment.TemplateHash()
			if (ha == hb) != tt.same {
				t.Errorf("hashes %s and %s: same = %v, want %v", ha, hb, ha == hb, tt.same)
			}
		})
	}
}

// depWithPodSpecFields is a Deployment whose pod spec has extra's lines
// before its containers.
func depWithPodSpecFields(extra string) string {
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

// Every spelling of ClusterFirst (Kubernetes' default dnsPolicy, which
// ClusterFirstWithHostNet means too without hostNetwork) keeps the hash of
// a template that names none (what earlier releases stored), so that
// spelling it out does not roll the pods.
func TestDNSPolicyClusterFirstSpellingsKeepTheTemplateHash(t *testing.T) {
	docs, err := Decode("x.yaml", []byte(depWithPodSpecFields("")))
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
		docs, err := Decode("x.yaml", []byte(depWithPodSpecFields(extra)))
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
