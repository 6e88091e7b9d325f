package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestAcceptedManifestsDecodeStrictlyIntoKubernetesTypes holds DESIGN §8:
// whatever dockctl accepts, a cluster accepts too. Every manifest dockctl
// accepts here (the examples, the golden hash templates, the test
// manifests, pods of several containers) is decoded strictly (unknown or
// duplicate fields are errors) into k8s.io/api's apps/v1 Deployment, as
// written and as dockctl prints it once defaulted (`get -o json`), and the
// pod fields must mean the same on both sides. Kubernetes' validation
// itself (k8s.io/kubernetes) is not a dependency; validate.go cites the
// rules of it that it follows.
func TestAcceptedManifestsDecodeStrictlyIntoKubernetesTypes(t *testing.T) {
	inputs := map[string]string{
		"base":                        base,
		"full":                        fullManifest,
		"json":                        jsonManifest,
		"server fields":               withServerFields(),
		"pod":                         podManifest,
		"pod on hostNetwork":          strings.Replace(podManifest, "      shareProcessNamespace: true\n", "      hostNetwork: true\n", 1),
		"two app containers":          base + "      - name: side\n        image: busybox:1.36\n        ports: [{containerPort: 8080, protocol: UDP}]\n",
		"an init container":           base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n        command: [\"true\"]\n",
		"a sidecar only":              base + "      initContainers:\n      - name: proxy\n        image: proxy:1\n        restartPolicy: Always\n        readinessProbe: {tcpSocket: {port: 8443}}\n",
		"shareProcessNamespace false": base + "      shareProcessNamespace: false\n",
	}
	for _, dir := range []string{"examples", filepath.Join("testdata", "hash")} {
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !isManifestName(f) {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inputs[f] = string(b)
		}
	}
	if len(inputs) < 15 {
		t.Fatalf("only %d inputs: the examples or golden templates were not found", len(inputs))
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			docs, err := Decode(name, []byte(in))
			if err != nil {
				t.Fatalf("dockctl refuses the input: %v", err)
			}
			raw := yamlDocuments(t, in)
			if len(raw) != len(docs) {
				t.Fatalf("%d YAML documents for %d objects", len(raw), len(docs))
			}
			for i, d := range docs {
				if d.Service != nil {
					var written corev1.Service
					if err := sigsyaml.UnmarshalStrict(raw[i], &written); err != nil {
						t.Fatalf("document %d as written is not a Kubernetes Service: %v", i, err)
					}
					sameService(t, &written, d.Service)
					continue
				}
				var written appsv1.Deployment
				if err := sigsyaml.UnmarshalStrict(raw[i], &written); err != nil {
					t.Fatalf("document %d as written is not a Kubernetes Deployment: %v", i, err)
				}
				samePod(t, "as written", &written.Spec.Template.Spec, &d.Deployment.Spec.Template.Spec)

				out, err := Marshal(d.Deployment, "json")
				if err != nil {
					t.Fatal(err)
				}
				dec := json.NewDecoder(bytes.NewReader(out))
				dec.DisallowUnknownFields()
				var printed appsv1.Deployment
				if err := dec.Decode(&printed); err != nil {
					t.Fatalf("document %d as dockctl prints it is not a Kubernetes Deployment: %v\n%s", i, err, out)
				}
				samePod(t, "as printed", &printed.Spec.Template.Spec, &d.Deployment.Spec.Template.Spec)
				if printed.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
					t.Errorf("printed restartPolicy = %q", printed.Spec.Template.Spec.RestartPolicy)
				}
			}
		})
	}
}

// sameService checks that Kubernetes reads a Service as written as dockctl
// does: the same type, selector and ports (dockctl's defaults standing for
// the fields left out).
func sameService(t *testing.T, k *corev1.Service, s *Service) {
	t.Helper()
	if typ := string(k.Spec.Type); typ != "" && typ != s.Spec.Type {
		t.Errorf("type: Kubernetes %q, dockctl %q", typ, s.Spec.Type)
	}
	if k.Spec.ClusterIP != "" && k.Spec.ClusterIP != s.Spec.ClusterIP {
		t.Errorf("clusterIP: Kubernetes %q, dockctl %q", k.Spec.ClusterIP, s.Spec.ClusterIP)
	}
	if !maps.Equal(k.Spec.Selector, s.Spec.Selector) {
		t.Errorf("selector: Kubernetes %v, dockctl %v", k.Spec.Selector, s.Spec.Selector)
	}
	if len(k.Spec.Ports) != len(s.Spec.Ports) {
		t.Fatalf("ports: Kubernetes %d, dockctl %d", len(k.Spec.Ports), len(s.Spec.Ports))
	}
	for i, kp := range k.Spec.Ports {
		sp := s.Spec.Ports[i]
		if kp.Name != sp.Name || kp.Port != sp.Port || kp.NodePort != sp.NodePort ||
			(kp.TargetPort != intstr.IntOrString{} && kp.TargetPort != sp.TargetPort) ||
			(kp.Protocol != "" && string(kp.Protocol) != sp.Protocol) {
			t.Errorf("port %d: Kubernetes %+v, dockctl %+v", i, kp, sp)
		}
	}
}

// samePod checks that Kubernetes reads the pod's containers as dockctl
// does: the same init and app containers in the same order, the same
// sidecars, the same shareProcessNamespace.
func samePod(t *testing.T, how string, k *corev1.PodSpec, ps *PodSpec) {
	t.Helper()
	if got, want := kubeNames(k.InitContainers), dockctlNames(ps.InitContainers); got != want {
		t.Errorf("%s: Kubernetes init containers %q, dockctl %q", how, got, want)
	}
	if got, want := kubeNames(k.Containers), dockctlNames(ps.Containers); got != want {
		t.Errorf("%s: Kubernetes containers %q, dockctl %q", how, got, want)
	}
	for i, c := range k.InitContainers {
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if sidecar != ps.InitContainers[i].IsSidecar() {
			t.Errorf("%s: init container %s: Kubernetes sidecar %v, dockctl %v", how, c.Name, sidecar, ps.InitContainers[i].IsSidecar())
		}
	}
	for _, c := range k.Containers {
		if c.RestartPolicy != nil {
			t.Errorf("%s: app container %s has restartPolicy %q", how, c.Name, *c.RestartPolicy)
		}
	}
	kspn, spn := k.ShareProcessNamespace, ps.ShareProcessNamespace
	if (kspn == nil) != (spn == nil) || (kspn != nil && *kspn != *spn) {
		t.Errorf("%s: shareProcessNamespace: Kubernetes %v, dockctl %v", how, kspn, spn)
	}
}

func kubeNames(cs []corev1.Container) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return strings.Join(n, " ")
}

func dockctlNames(cs []Container) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return strings.Join(n, " ")
}

// yamlDocuments splits a (multi-document) YAML or JSON input into its
// non-empty documents, each re-encoded alone.
func yamlDocuments(t *testing.T, in string) [][]byte {
	t.Helper()
	var out [][]byte
	dec := yaml.NewDecoder(strings.NewReader(in))
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
		b, err := yaml.Marshal(n.Content[0])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
}
