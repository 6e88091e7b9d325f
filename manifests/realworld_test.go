package manifests

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

// strictInputs are the manifests every kind of which must decode strictly
// into Kubernetes' types: the examples, the golden templates and
// marshalled outputs, the real-world corpus (testdata/realworld), and what
// the CLI's golden files show dockctl printing (`get -o yaml|json`).
func strictInputs(t *testing.T) map[string][]byte {
	t.Helper()
	inputs := map[string][]byte{}
	for _, dir := range []string{"examples", filepath.Join("testdata", "hash"), filepath.Join("testdata", "marshal"),
		filepath.Join("testdata", "realworld"), filepath.Join("..", "cmd", "dockctl", "testdata")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			// get containers prints dockctl's own listing, not objects;
			// get -w's goldens are streams of a fake kind of the watch
			// loop's tests.
			printed := (strings.HasSuffix(p, "-yaml.golden") || strings.HasSuffix(p, "-json.golden")) &&
				!strings.Contains(p, "get-containers") && !strings.Contains(p, "get-watch-")
			// A kustomization file is kustomize's input, no object of a
			// cluster's (kubectl -k builds it; -f refuses its directory).
			kustomization := slices.Contains([]string{"kustomization.yaml", "kustomization.yml", "Kustomization"}, filepath.Base(p))
			if d.IsDir() || kustomization || !isManifestName(p) && !printed {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			inputs[p] = b
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return inputs
}

// TestEveryKindDecodesStrictlyIntoKubernetesTypes holds docs/design.md §1 for every
// object of every kind in strictInputs, including the kinds dockctl skips
// (RBAC, disruption budgets, autoscalers) and the List that `get -o yaml`
// prints: each is decoded strictly (unknown and duplicate fields are
// errors) into the k8s.io/api type that client-go's scheme registers for
// its apiVersion and kind, so that a bundle dockctl reads is one a cluster
// reads too. The corpus is checked whether or not dockctl accepts it yet:
// it is written for clusters first.
func TestEveryKindDecodesStrictlyIntoKubernetesTypes(t *testing.T) {
	inputs := strictInputs(t)
	kinds := map[string]int{}
	corpus := 0
	for name, in := range inputs {
		if strings.Contains(name, "realworld") {
			corpus++
		}
		t.Run(name, func(t *testing.T) {
			for i, raw := range objectDocuments(t, in) {
				var tm struct{ APIVersion, Kind string }
				if err := sigsyaml.Unmarshal(raw, &tm); err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				gv, err := schema.ParseGroupVersion(tm.APIVersion)
				if err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				obj, err := scheme.Scheme.New(gv.WithKind(tm.Kind))
				if err != nil {
					t.Fatalf("object %d (%s %s): not a Kubernetes kind: %v", i, tm.APIVersion, tm.Kind, err)
				}
				if err := sigsyaml.UnmarshalStrict(raw, obj); err != nil {
					t.Fatalf("object %d is not a Kubernetes %s: %v\n%s", i, tm.Kind, err, raw)
				}
				kinds[tm.Kind]++
			}
		})
	}
	if corpus < 20 {
		t.Errorf("%d files of the real-world corpus found, want at least 20", corpus)
	}
	// The inputs cover every kind dockctl reads or skips.
	for _, k := range append([]string{Kind, KindService, KindNamespace, KindConfigMap, KindSecret, KindPersistentVolumeClaim}, IgnoredKinds()...) {
		if k == "Kustomization" {
			continue // not an object: kustomize's input, no k8s.io/api type
		}
		if kinds[k] == 0 {
			t.Errorf("no %s among the inputs", k)
		}
	}
	t.Logf("%d inputs, objects by kind: %v", len(inputs), kinds)
}

// objectDocuments splits a (multi-document) YAML or JSON input into its
// objects, each re-encoded alone; a List contributes its items.
func objectDocuments(t *testing.T, in []byte) [][]byte {
	t.Helper()
	var out [][]byte
	dec := yaml.NewDecoder(bytes.NewReader(in))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Content) == 0 || isNull(n.Content[0]) {
			continue
		}
		root := n.Content[0]
		if kind, _ := scalarField(root, "kind"); kind == "List" {
			for i := 0; i+1 < len(root.Content); i += 2 {
				if root.Content[i].Value != "items" {
					continue
				}
				for _, item := range root.Content[i+1].Content {
					b, err := yaml.Marshal(item)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, b)
				}
			}
			continue
		}
		b, err := yaml.Marshal(root)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
}

// A null value is "not set" in a Kubernetes manifest, also for a field
// dockctl does not support: charts render unset values as null
// (`runtimeClassName: null`), which asks for nothing.
func TestNullFieldDockctlLacksIsUnset(t *testing.T) {
	in := base + "      runtimeClassName: null\n      overhead: ~\n"
	docs, err := Decode("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	// A value is still refused, and a null for a field Kubernetes does
	// not have either is still unknown.
	for in, want := range map[string]string{
		base + "      runtimeClassName: nvidia\n": `t.yaml:20: spec.template.spec.runtimeClassName: unsupported by dockctl`,
		base + "      runtimeClass: null\n":       `t.yaml:20: spec.template.spec: unknown field "runtimeClass"`,
	} {
		if _, err := Decode("t.yaml", []byte(in)); err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}
