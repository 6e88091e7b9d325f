package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestAcceptedManifestsDecodeStrictlyIntoKubernetesTypes holds docs/design.md §1:
// whatever dockctl accepts, a cluster accepts too. Every manifest dockctl
// accepts here (the examples, the golden hash templates, the test
// manifests, pods of several containers, Services and Namespaces) is
// decoded strictly (unknown or duplicate fields are errors) into
// k8s.io/api's apps/v1 Deployment or core/v1 Service or Namespace, as
// written and as dockctl prints it once defaulted (`get -o json`), and the
// pod and Service fields must mean the same on both sides. Kubernetes'
// validation itself (k8s.io/kubernetes) is not a dependency; validate.go
// and service_validate.go cite the rules of it that they follow.
func TestAcceptedManifestsDecodeStrictlyIntoKubernetesTypes(t *testing.T) {
	inputs := map[string]string{
		"base":                           base,
		"full":                           fullManifest,
		"json":                           jsonManifest,
		"server fields":                  withServerFields(),
		"pod":                            podManifest,
		"pod on hostNetwork":             strings.Replace(podManifest, "      shareProcessNamespace: true\n", "      hostNetwork: true\n", 1),
		"two app containers":             base + "      - name: side\n        image: busybox:1.36\n        ports: [{containerPort: 8080, protocol: UDP}]\n",
		"an init container":              base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n        command: [\"true\"]\n",
		"a sidecar only":                 base + "      initContainers:\n      - name: proxy\n        image: proxy:1\n        restartPolicy: Always\n        readinessProbe: {tcpSocket: {port: 8443}}\n",
		"shareProcessNamespace false":    base + "      shareProcessNamespace: false\n",
		"service":                        svcBase,
		"service as kubectl prints it":   kubectlService,
		"namespace as kubectl prints it": kubectlNamespace,
		"headless service":               "apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: shop}\nspec: {clusterIP: None, selector: {app: db}, publishNotReadyAddresses: true}\n",
		"load balancer": strings.Replace(svcBase, "spec:\n", "spec:\n  type: LoadBalancer\n  allocateLoadBalancerNodePorts: false\n"+
			"  externalTrafficPolicy: Cluster\n  internalTrafficPolicy: Local\n  ipFamilyPolicy: PreferDualStack\n  clusterIP: 10.222.8.3\n", 1) +
			"  - {name: metrics, port: 9090, targetPort: metrics, nodePort: 32767, protocol: UDP}\n",
		"configuration and storage": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: shop}\nimmutable: true\n" +
			"data: {a.conf: \"x = 1\\n\"}\nbinaryData: {logo.png: iVBORw0KGgo=}\n---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\ntype: kubernetes.io/basic-auth\n" +
			"data: {username: YWRtaW4=}\nstringData: {password: not-a-password}\n---\n" +
			"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: shop}\n" +
			"spec: {accessModes: [ReadWriteOnce], storageClassName: local-path, resources: {requests: {storage: 5Gi}}}\n",
		"a bundle, namespace last": svcBase + "---\n" + strings.Replace(base, "  name: web\n", "  name: web\n  namespace: shop\n", 1) +
			"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {team: a}}\n",
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
	// The real-world corpus, as far as dockctl accepts it (what it
	// refuses, and why, is cmd/dockctl's TestRealworldCorpusDryRun); a
	// directory bundle as one input.
	corpus, err := os.ReadDir(filepath.Join("testdata", "realworld"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range corpus {
		p := filepath.Join("testdata", "realworld", e.Name())
		files := []string{p}
		if e.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.yaml"))
		}
		var in []byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in = append(append(in, "\n---\n"...), b...)
		}
		if _, err := Decode(p, in); err == nil {
			inputs[p] = string(in)
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
			// The objects of the kinds dockctl decodes (a List's items
			// one by one); the others are skipped with a warning, and
			// TestEveryKindDecodesStrictlyIntoKubernetesTypes checks them.
			var raw [][]byte
			for _, r := range objectDocuments(t, []byte(in)) {
				if _, ok := kinds[rawKind(t, r)]; ok {
					raw = append(raw, r)
				}
			}
			if len(raw) != len(docs) {
				t.Fatalf("%d YAML documents for %d objects", len(raw), len(docs))
			}
			// Decode orders a bundle by kind (Order); so are the
			// raw documents, to pair them.
			sort.SliceStable(raw, func(i, j int) bool { return kindOrder[rawKind(t, raw[i])] < kindOrder[rawKind(t, raw[j])] })
			for i, d := range docs {
				if d.Kind() != rawKind(t, raw[i]) {
					t.Fatalf("document %d is a %s, decoded as a %s", i, rawKind(t, raw[i]), d.Kind())
				}
				switch {
				case d.Service != nil:
					strictService(t, raw[i], d.Service)
					continue
				case d.Namespace != nil:
					strictNamespace(t, raw[i], d.Namespace)
					continue
				case d.ConfigMap != nil:
					strictConfig(t, raw[i], d)
					continue
				case d.Secret != nil:
					strictConfig(t, raw[i], d)
					continue
				case d.PVC != nil:
					strictConfig(t, raw[i], d)
					continue
				case d.Deployment == nil:
					continue // another kind: TestEveryKindDecodesStrictlyIntoKubernetesTypes
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

// strictConfig checks a ConfigMap, Secret or claim as written and as
// dockctl prints it against Kubernetes' type: strict decoding, the same
// name and namespace, and the same data (a Secret's stringData merged into
// data, as the API server does, and only data printed).
func strictConfig(t *testing.T, raw []byte, d *Document) {
	t.Helper()
	var out []byte
	var err error
	var written, printed interface{ GetName() string }
	switch {
	case d.ConfigMap != nil:
		var w, p corev1.ConfigMap
		written, printed = &w, &p
		out, err = MarshalConfigMap(d.ConfigMap, "json")
		defer func() {
			if !reflect.DeepEqual(w.Data, d.ConfigMap.Data) || !reflect.DeepEqual(p.Data, d.ConfigMap.Data) ||
				len(w.BinaryData) != len(p.BinaryData) {
				t.Errorf("ConfigMap %s: Kubernetes reads other data than dockctl", w.Name)
			}
		}()
	case d.Secret != nil:
		var w, p corev1.Secret
		written, printed = &w, &p
		out, err = MarshalSecret(d.Secret, "json")
		defer func() {
			merged := map[string][]byte{}
			for k, v := range w.Data {
				merged[k] = v
			}
			for k, v := range w.StringData {
				merged[k] = []byte(v)
			}
			if len(merged) != len(d.Secret.Data) || len(p.StringData) != 0 || !reflect.DeepEqual(p.Data, d.Secret.Data) {
				t.Errorf("Secret %s: Kubernetes reads %d keys as written, %d printed (stringData %d); dockctl holds %d",
					w.Name, len(merged), len(p.Data), len(p.StringData), len(d.Secret.Data))
			}
			for k, v := range merged {
				if !bytes.Equal(v, d.Secret.Data[k]) {
					t.Errorf("Secret %s: key %s differs", w.Name, k)
				}
			}
		}()
	default:
		var w, p corev1.PersistentVolumeClaim
		written, printed = &w, &p
		out, err = MarshalPVC(d.PVC, "json")
		defer func() {
			if !reflect.DeepEqual(w.Spec.AccessModes, p.Spec.AccessModes) || !w.Spec.Resources.Requests.Storage().Equal(*p.Spec.Resources.Requests.Storage()) {
				t.Errorf("claim %s: Kubernetes reads %v %v as written, %v %v printed", w.Name, w.Spec.AccessModes,
					w.Spec.Resources.Requests.Storage(), p.Spec.AccessModes, p.Spec.Resources.Requests.Storage())
			}
		}()
	}
	if err := sigsyaml.UnmarshalStrict(raw, written); err != nil {
		t.Fatalf("as written, not a Kubernetes %s: %v", d.Kind(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	strictJSON(t, out, printed)
	if written.GetName() != d.Meta().Name || printed.GetName() != d.Meta().Name {
		t.Errorf("Kubernetes reads %s %q as written, %q printed; dockctl %q", d.Kind(), written.GetName(), printed.GetName(), d.Meta().Name)
	}
}

func rawKind(t *testing.T, raw []byte) string {
	t.Helper()
	var tm struct{ Kind string }
	if err := sigsyaml.Unmarshal(raw, &tm); err != nil {
		t.Fatal(err)
	}
	return tm.Kind
}

// strictJSON decodes what dockctl prints of an object into Kubernetes'
// type, refusing unknown fields.
func strictJSON(t *testing.T, out []byte, into any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("as dockctl prints it, not a Kubernetes %T: %v\n%s", into, err, out)
	}
}

func strictService(t *testing.T, raw []byte, s *Service) {
	t.Helper()
	var written corev1.Service
	if err := sigsyaml.UnmarshalStrict(raw, &written); err != nil {
		t.Fatalf("as written, not a Kubernetes Service: %v", err)
	}
	// Kubernetes' defaults for what dockctl defaults, so that the Service
	// as written reads as dockctl's defaulted one.
	if written.Spec.Type == "" {
		written.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if written.Spec.ClusterIP == "" && len(written.Spec.ClusterIPs) > 0 {
		written.Spec.ClusterIP = written.Spec.ClusterIPs[0]
	}
	for i := range written.Spec.Ports {
		p := &written.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	sameService(t, "as written", &written, s)
	out, err := MarshalService(s, "json")
	if err != nil {
		t.Fatal(err)
	}
	var printed corev1.Service
	strictJSON(t, out, &printed)
	sameService(t, "as printed", &printed, s)
}

// sameService checks that Kubernetes reads the Service as dockctl does:
// name, namespace, type, cluster IP, selector, and each port's name,
// protocol, port, targetPort and nodePort.
func sameService(t *testing.T, how string, k *corev1.Service, s *Service) {
	t.Helper()
	ks := &k.Spec
	if k.Name != s.Metadata.Name || k.Namespace != s.Metadata.Namespace || string(ks.Type) != s.Spec.Type || ks.ClusterIP != s.Spec.ClusterIP ||
		!reflect.DeepEqual(ks.Selector, s.Spec.Selector) || ks.PublishNotReadyAddresses != s.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: Kubernetes reads %s/%s %s %q %v, dockctl %s/%s %s %q %v", how, k.Namespace, k.Name, ks.Type, ks.ClusterIP, ks.Selector,
			s.Metadata.Namespace, s.Metadata.Name, s.Spec.Type, s.Spec.ClusterIP, s.Spec.Selector)
	}
	if len(ks.Ports) != len(s.Spec.Ports) {
		t.Fatalf("%s: Kubernetes reads %d ports, dockctl %d", how, len(ks.Ports), len(s.Spec.Ports))
	}
	for i, kp := range ks.Ports {
		p := s.Spec.Ports[i]
		if kp.Name != p.Name || string(kp.Protocol) != p.Protocol || kp.Port != p.Port || kp.TargetPort != p.TargetPort || kp.NodePort != p.NodePort {
			t.Errorf("%s: port %d: Kubernetes reads %+v, dockctl %+v", how, i, kp, p)
		}
	}
}

func strictNamespace(t *testing.T, raw []byte, n *Namespace) {
	t.Helper()
	var written corev1.Namespace
	if err := sigsyaml.UnmarshalStrict(raw, &written); err != nil {
		t.Fatalf("as written, not a Kubernetes Namespace: %v", err)
	}
	out, err := MarshalNamespace(n, "json")
	if err != nil {
		t.Fatal(err)
	}
	var printed corev1.Namespace
	strictJSON(t, out, &printed)
	for _, k := range []*corev1.Namespace{&written, &printed} {
		if k.Name != n.Metadata.Name || !reflect.DeepEqual(k.Labels, n.Metadata.Labels) {
			t.Errorf("Kubernetes reads namespace %q %v, dockctl %q %v", k.Name, k.Labels, n.Metadata.Name, n.Metadata.Labels)
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
