package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// svcBase is a minimal valid Service. Cases edit it with one
// line-preserving replacement or by appending, so that the expected lines
// can be checked against this listing:
//
//	1 apiVersion     5 spec          9 - name: http
//	2 kind           6 selector     10 port: 80
//	3 metadata       7 app: web     11 targetPort: 8080
//	4 name: web      8 ports
const svcBase = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
`

func editSvc(t *testing.T, old, new string) string {
	t.Helper()
	if n := strings.Count(svcBase, old); n != 1 {
		t.Fatalf("editSvc: %q occurs %d times in svcBase", old, n)
	}
	return strings.Replace(svcBase, old, new, 1)
}

// kubectlService is a Service as `kubectl get svc -o yaml` prints it from
// a cluster: server-set metadata, the fields the API server defaults, a
// status. It must apply as is.
const kubectlService = `apiVersion: v1
kind: Service
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Service"}
  creationTimestamp: "2024-05-01T10:00:00Z"
  labels:
    app: api
  name: api
  namespace: shop
  resourceVersion: "4711"
  uid: 5c1d8a40-0000-4000-8000-000000000001
  managedFields:
  - manager: kubectl-client-side-apply
    operation: Update
spec:
  clusterIP: 10.222.8.20
  clusterIPs:
  - 10.222.8.20
  externalTrafficPolicy: Cluster
  internalTrafficPolicy: Cluster
  ipFamilies:
  - IPv4
  ipFamilyPolicy: SingleStack
  ports:
  - name: http
    nodePort: 30080
    port: 80
    protocol: TCP
    targetPort: http
    appProtocol: http
  - name: dns
    nodePort: 30053
    port: 53
    protocol: UDP
    targetPort: 5353
  - name: dns-tcp
    nodePort: 30053
    port: 53
    protocol: TCP
    targetPort: 5353
  selector:
    app: api
  sessionAffinity: None
  type: NodePort
status:
  loadBalancer: {}
`

// kubectlNamespace is a Namespace as `kubectl get ns -o yaml` prints it.
const kubectlNamespace = `apiVersion: v1
kind: Namespace
metadata:
  creationTimestamp: "2024-05-01T10:00:00Z"
  labels:
    kubernetes.io/metadata.name: shop
  name: shop
  resourceVersion: "12"
  uid: 5c1d8a40-0000-4000-8000-000000000002
spec:
  finalizers:
  - kubernetes
status:
  phase: Active
`

const dns1035Msg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"

func TestDecodeServiceValid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, s *Service)
	}{
		{"minimal Service is defaulted", svcBase, func(t *testing.T, s *Service) {
			p := s.Spec.Ports[0]
			if s.Spec.Type != ServiceTypeClusterIP || p.Protocol != ProtocolTCP || p.TargetPort != intstr.FromInt32(8080) || s.IsHeadless() {
				t.Errorf("not defaulted: %+v", s.Spec)
			}
			if s.Metadata.Namespace != "" || s.Metadata.NamespaceOrDefault() != DefaultNamespace {
				t.Errorf("namespace = %q, want it left empty", s.Metadata.Namespace)
			}
		}},
		{"targetPort defaults to port", editSvc(t, "    targetPort: 8080\n", ""), func(t *testing.T, s *Service) {
			if tp := s.Spec.Ports[0].TargetPort; tp != intstr.FromInt32(80) {
				t.Errorf("targetPort = %v, want 80", tp.String())
			}
		}},
		{"targetPort 0 and \"\" are unset, as Kubernetes defaults them",
			editSvc(t, "    targetPort: 8080\n", "    targetPort: 0\n  - {name: b, port: 81, targetPort: \"\"}\n"), func(t *testing.T, s *Service) {
				if a, b := s.Spec.Ports[0].TargetPort, s.Spec.Ports[1].TargetPort; a != intstr.FromInt32(80) || b != intstr.FromInt32(81) {
					t.Errorf("targetPorts = %s, %s, want 80, 81", a.String(), b.String())
				}
			}},
		{"named targetPort", editSvc(t, "targetPort: 8080", "targetPort: http-alt"), func(t *testing.T, s *Service) {
			if tp := s.Spec.Ports[0].TargetPort; tp.Type != intstr.String || tp.StrVal != "http-alt" {
				t.Errorf("targetPort = %v", tp.String())
			}
		}},
		{"headless without ports", "apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {clusterIP: None, selector: {app: db}}\n", func(t *testing.T, s *Service) {
			if !s.IsHeadless() || len(s.Spec.Ports) != 0 {
				t.Errorf("headless %v ports %v", s.IsHeadless(), s.Spec.Ports)
			}
		}},
		{"headless given as clusterIPs only", "apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {clusterIPs: [None], ports: [{port: 5432}]}\n", func(t *testing.T, s *Service) {
			if !s.IsHeadless() || s.Spec.ClusterIP != ClusterIPNone {
				t.Errorf("clusterIP %q, headless %v", s.Spec.ClusterIP, s.IsHeadless())
			}
		}},
		{"no selector: accepted, as Kubernetes", editSvc(t, "  selector:\n    app: web\n", ""), func(t *testing.T, s *Service) {
			if s.Spec.Selector != nil {
				t.Errorf("selector = %v", s.Spec.Selector)
			}
		}},
		{"what kubectl prints of a cluster's Service", kubectlService, func(t *testing.T, s *Service) {
			if s.Metadata.Namespace != "shop" || s.Status != nil || s.Metadata.Generation != 0 || s.Metadata.CreationTimestamp != nil {
				t.Errorf("server-set fields decoded: %+v", s.Metadata)
			}
			if s.Spec.Type != ServiceTypeNodePort || s.Spec.ClusterIP != "10.222.8.20" || len(s.Spec.Ports) != 3 ||
				s.Spec.Ports[0].NodePort != 30080 || s.Spec.Ports[0].AppProtocol != "http" || s.Spec.Ports[1].Protocol != ProtocolUDP {
				t.Errorf("spec = %+v", s.Spec)
			}
		}},
		{"clusterIP defaulted from clusterIPs", editSvc(t, "spec:\n", "spec:\n  clusterIPs: [10.222.8.9]\n"), func(t *testing.T, s *Service) {
			if s.Spec.ClusterIP != "10.222.8.9" {
				t.Errorf("clusterIP = %q", s.Spec.ClusterIP)
			}
		}},
		{"LoadBalancer with its accepted fields", editSvc(t, "spec:\n", "spec:\n  type: LoadBalancer\n  allocateLoadBalancerNodePorts: false\n  externalTrafficPolicy: Cluster\n  internalTrafficPolicy: Local\n  ipFamilyPolicy: PreferDualStack\n  publishNotReadyAddresses: true\n"),
			func(t *testing.T, s *Service) {
				if s.Spec.Type != ServiceTypeLoadBalancer || s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts || !s.Spec.PublishNotReadyAddresses {
					t.Errorf("spec = %+v", s.Spec)
				}
			}},
		{"namespace", editSvc(t, "  name: web\n", "  name: web\n  namespace: shop\n"), func(t *testing.T, s *Service) {
			if s.Metadata.NamespaceOrDefault() != "shop" {
				t.Errorf("namespace = %q", s.Metadata.Namespace)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("s.yaml", []byte(tt.input))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			d := one(t, docs)
			if d.Service == nil || d.Deployment != nil || d.Namespace != nil || d.Kind() != KindService {
				t.Fatalf("document carries %+v, want a Service only", d)
			}
			tt.check(t, d.Service)
			if err := ValidateService(d.Service); err != nil {
				t.Errorf("the defaulted Service fails validation: %v", err)
			}
		})
	}
}

// TestDecodeServiceInvalid holds the error lines `apply` prints for bad
// Services: file, line, field path and message, every error of the file.
func TestDecodeServiceInvalid(t *testing.T) {
	tests := []struct {
		name  string
		input func(t *testing.T) string
		want  []string
	}{
		{"name is a DNS-1035 label",
			func(t *testing.T) string { return editSvc(t, "name: web\n", "name: 1web\n") },
			[]string{`s.yaml:4: metadata.name: invalid value "1web": ` + dns1035Msg}},
		{"namespace is a DNS-1123 label",
			func(t *testing.T) string { return editSvc(t, "  name: web\n", "  name: web\n  namespace: Shop\n") },
			[]string{`s.yaml:5: metadata.namespace: invalid value "Shop": ` + labelMsg}},
		{"no dockctl.io annotation on a Service",
			func(t *testing.T) string {
				return editSvc(t, "  name: web\n", "  name: web\n  annotations: {dockctl.io/network: x}\n")
			},
			[]string{`s.yaml:5: metadata.annotations[dockctl.io/network]: unknown dockctl.io annotation: dockctl defines none on a Service`}},
		{"ports required",
			func(t *testing.T) string {
				return editSvc(t, "  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n", "")
			},
			[]string{`s.yaml:5: spec.ports: required (only a headless Service, clusterIP: None, may have none)`}},
		{"port out of range, port missing",
			func(t *testing.T) string {
				return editSvc(t, "port: 80\n", "port: 65536\n") + "  - {name: b, targetPort: 80}\n"
			},
			[]string{
				`s.yaml:10: spec.ports[0].port: must be between 1 and 65535, inclusive`,
				`s.yaml:12: spec.ports[1].port: required`,
			}},
		{"port names: required when several, DNS-1123 labels, unique",
			func(t *testing.T) string {
				return svcBase + "  - {port: 81}\n  - {name: Http, port: 82}\n  - {name: http, port: 83}\n"
			},
			[]string{
				`s.yaml:12: spec.ports[1].name: required when the Service has more than one port`,
				`s.yaml:13: spec.ports[2].name: invalid value "Http": ` + labelMsg,
				`s.yaml:14: spec.ports[3].name: duplicate port name "http" (also spec.ports[0])`,
			}},
		{"port and protocol unique; the same port over UDP is another",
			func(t *testing.T) string {
				return svcBase + "  - {name: b, port: 80, protocol: UDP}\n  - {name: c, port: 80, protocol: TCP}\n"
			},
			[]string{`s.yaml:13: spec.ports[2].port: duplicate port 80/TCP (also spec.ports[0])`}},
		{"protocols",
			func(t *testing.T) string {
				return svcBase + "  - {name: b, port: 81, protocol: SCTP}\n  - {name: c, port: 82, protocol: tcp}\n"
			},
			[]string{
				`s.yaml:12: spec.ports[1].protocol: unsupported value "SCTP": dockctl's Service proxy serves TCP and UDP only`,
				`s.yaml:13: spec.ports[2].protocol: unsupported value "tcp": must be "TCP" or "UDP"`,
			}},
		{"targetPort: a port number or an IANA_SVC_NAME",
			func(t *testing.T) string {
				return editSvc(t, "targetPort: 8080", "targetPort: 70000") +
					"  - {name: b, port: 81, targetPort: \"8080\"}\n  - {name: c, port: 82, targetPort: a-very-long-port-name}\n  - {name: d, port: 83, targetPort: -1}\n"
			},
			[]string{
				`s.yaml:11: spec.ports[0].targetPort: must be between 1 and 65535, inclusive`,
				`s.yaml:12: spec.ports[1].targetPort: invalid value "8080": must contain at least one letter (a-z)`,
				`s.yaml:13: spec.ports[2].targetPort: invalid value "a-very-long-port-name": must be no more than 15 characters`,
				`s.yaml:14: spec.ports[3].targetPort: must be between 1 and 65535, inclusive`,
			}},
		{"types",
			func(t *testing.T) string { return editSvc(t, "spec:\n", "spec:\n  type: ExternalName\n") },
			[]string{`s.yaml:6: spec.type: unsupported value "ExternalName": dockctl's DNS server answers for Services it proxies, not aliases of external names`}},
		{"an unknown type",
			func(t *testing.T) string { return editSvc(t, "spec:\n", "spec:\n  type: clusterip\n") },
			[]string{`s.yaml:6: spec.type: unsupported value "clusterip": must be "ClusterIP", "NodePort" or "LoadBalancer"`}},
		{"externalName is unsupported",
			func(t *testing.T) string { return svcBase + "  externalName: db.example.com\n" },
			[]string{`s.yaml:12: spec.externalName: unsupported by dockctl`}},
		{"nodePort on a ClusterIP Service",
			func(t *testing.T) string { return editSvc(t, "port: 80\n", "port: 80\n    nodePort: 30080\n") },
			[]string{`s.yaml:11: spec.ports[0].nodePort: may not be used when type is "ClusterIP"`}},
		{"nodePort range and uniqueness per protocol",
			func(t *testing.T) string {
				return editSvc(t, "spec:\n", "spec:\n  type: NodePort\n") +
					"  - {name: b, port: 81, nodePort: 8080}\n  - {name: c, port: 82, nodePort: 30080}\n  - {name: d, port: 83, nodePort: 30080}\n  - {name: e, port: 83, protocol: UDP, nodePort: 30080}\n"
			},
			[]string{
				`s.yaml:13: spec.ports[1].nodePort: must be between 30000 and 32767, inclusive (the node port range)`,
				`s.yaml:15: spec.ports[3].nodePort: duplicate nodePort 30080/TCP (also spec.ports[2])`,
			}},
		{"clusterIP: an IPv4 address",
			func(t *testing.T) string { return editSvc(t, "spec:\n", "spec:\n  clusterIP: 10.0.0.300\n") },
			[]string{`s.yaml:6: spec.clusterIP: invalid value "10.0.0.300": must be "None" or an IPv4 address`}},
		{"clusterIP: IPv6",
			func(t *testing.T) string { return editSvc(t, "spec:\n", "spec:\n  clusterIP: fd00::1\n") },
			[]string{`s.yaml:6: spec.clusterIP: invalid value "fd00::1": the instance network is IPv4 only`}},
		{"clusterIPs: one, matching clusterIP",
			func(t *testing.T) string {
				return editSvc(t, "spec:\n", "spec:\n  clusterIP: 10.222.8.1\n  clusterIPs: [10.222.8.2, fd00::2]\n")
			},
			[]string{
				`s.yaml:7: spec.clusterIPs[0]: must match spec.clusterIP ("10.222.8.1")`,
				`s.yaml:7: spec.clusterIPs[1]: dual-stack is not supported: the instance network is IPv4 only, so a Service has one cluster IP`,
			}},
		{"headless NodePort and LoadBalancer",
			func(t *testing.T) string {
				return editSvc(t, "spec:\n", "spec:\n  type: NodePort\n  clusterIP: None\n") + "---\n" +
					editSvc(t, "spec:\n", "spec:\n  type: LoadBalancer\n  clusterIPs: [None]\n")
			},
			[]string{
				`s.yaml:7: spec.clusterIP: may not be "None" when type is "NodePort"`,
				`s.yaml:21: spec.clusterIPs[0]: may not be "None" when type is "LoadBalancer"`,
			}},
		{"LoadBalancer may not take the kubelet's port",
			func(t *testing.T) string {
				return editSvc(t, "spec:\n", "spec:\n  type: LoadBalancer\n") + "  - {name: k, port: 10250}\n"
			},
			[]string{`s.yaml:13: spec.ports[1].port: may not be 10250 on a LoadBalancer Service (a cluster keeps it for the kubelet)`}},
		{"fields that would change behaviour name themselves",
			func(t *testing.T) string {
				return svcBase + "  sessionAffinity: ClientIP\n  externalTrafficPolicy: Local\n  ipFamilyPolicy: RequireDualStack\n  ipFamilies: [IPv6]\n"
			},
			[]string{
				`s.yaml:12: spec.sessionAffinity: unsupported value "ClientIP": dockctl's Service proxy spreads connections round robin, whatever the client`,
				`s.yaml:13: spec.externalTrafficPolicy: unsupported value "Local": dockctl's Service proxy does not keep the client's source address`,
				`s.yaml:14: spec.ipFamilyPolicy: unsupported value "RequireDualStack": the instance network is IPv4 only`,
				`s.yaml:15: spec.ipFamilies[0]: unsupported value "IPv6": the instance network is IPv4 only`,
			}},
		{"accepted fields with values a cluster refuses",
			func(t *testing.T) string {
				return svcBase + "  sessionAffinity: none\n  externalTrafficPolicy: Cluster\n  internalTrafficPolicy: Everywhere\n  ipFamilyPolicy: Single\n  ipFamilies: [IPv4, IPv4]\n  allocateLoadBalancerNodePorts: true\n"
			},
			[]string{
				`s.yaml:12: spec.sessionAffinity: unsupported value "none": must be "None"`,
				`s.yaml:13: spec.externalTrafficPolicy: may only be set when type is "NodePort" or "LoadBalancer"`,
				`s.yaml:14: spec.internalTrafficPolicy: unsupported value "Everywhere": must be "Cluster" or "Local"`,
				`s.yaml:15: spec.ipFamilyPolicy: unsupported value "Single": must be "SingleStack" or "PreferDualStack"`,
				`s.yaml:16: spec.ipFamilies[1]: dual-stack is not supported: the instance network is IPv4 only`,
				`s.yaml:17: spec.allocateLoadBalancerNodePorts: may only be used when type is "LoadBalancer"`,
			}},
		{"fields a cluster has and dockctl does not support",
			func(t *testing.T) string {
				return svcBase + "  externalIPs: [192.0.2.1]\n  loadBalancerIP: 192.0.2.2\n  loadBalancerSourceRanges: [10.0.0.0/8]\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 10}}\n" +
					"  loadBalancerClass: x/y\n  healthCheckNodePort: 30000\n  trafficDistribution: PreferClose\n"
			},
			[]string{
				`s.yaml:12: spec.externalIPs: unsupported by dockctl`,
				`s.yaml:13: spec.loadBalancerIP: unsupported by dockctl`,
				`s.yaml:14: spec.loadBalancerSourceRanges: unsupported by dockctl`,
				`s.yaml:15: spec.sessionAffinityConfig: unsupported by dockctl`,
				`s.yaml:16: spec.loadBalancerClass: unsupported by dockctl`,
				`s.yaml:17: spec.healthCheckNodePort: unsupported by dockctl`,
				`s.yaml:18: spec.trafficDistribution: unsupported by dockctl`,
			}},
		{"selector keys and values are labels",
			func(t *testing.T) string { return editSvc(t, "    app: web\n", "    app: web/1\n    -x: v\n") },
			[]string{
				`s.yaml:7: spec.selector[app]: invalid label value "web/1": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				`s.yaml:8: spec.selector[-x]: invalid label key "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			}},
		{"decode errors: types and unknown fields",
			func(t *testing.T) string { return editSvc(t, "port: 80", "port: http") + "  bogus: 1\n" },
			[]string{
				`s.yaml:10: spec.ports[0].port: expected an integer, got string "http"`,
				`s.yaml:12: spec: unknown field "bogus"`,
			}},
		{"appProtocol is a qualified name",
			func(t *testing.T) string { return editSvc(t, "port: 80\n", "port: 80\n    appProtocol: \"h t t p\"\n") },
			[]string{`s.yaml:11: spec.ports[0].appProtocol: invalid value "h t t p": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		{"apiVersion of a Service is v1",
			func(t *testing.T) string { return editSvc(t, "apiVersion: v1", "apiVersion: apps/v1") },
			[]string{`s.yaml:1: apiVersion: must be "v1", got "apps/v1"`}},
		{"a miscased kind is not skipped",
			func(t *testing.T) string { return editSvc(t, "kind: Service", "kind: service") },
			[]string{`s.yaml:2: kind: must be "Service", got "service"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, _, err := LoadAll([]string{"-"}, strings.NewReader(tt.input(t)), LoadOptions{SkipUnsupported: true})
			if err == nil {
				t.Fatalf("accepted (%d documents), want errors:\n%s", len(docs), strings.Join(tt.want, "\n"))
			}
			got := strings.ReplaceAll(err.Error(), StdinName, "s.yaml")
			if want := strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
		})
	}
}

func TestDecodeNamespace(t *testing.T) {
	docs, err := Decode("n.yaml", []byte(kubectlNamespace+"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: other, namespace: shop, labels: {team: a}}\n"))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents", len(docs))
	}
	for _, d := range docs {
		ns := d.Namespace
		if ns == nil || d.Kind() != KindNamespace || ns.Spec != nil || ns.Status != nil || ns.Metadata.Namespace != "" || ns.Metadata.CreationTimestamp != nil {
			t.Errorf("%s: %+v, want a Namespace without spec, status, namespace or server fields", d.Source(), ns)
		}
		if err := ValidateNamespace(ns); err != nil {
			t.Errorf("%s: ValidateNamespace: %v", d.Source(), err)
		}
	}
	if docs[0].Namespace.Metadata.Name != "shop" || docs[1].Namespace.Metadata.Labels["team"] != "a" {
		t.Errorf("got %s", names(docs))
	}

	for _, tt := range []struct{ name, in, want string }{
		{"name is a DNS-1123 label", "apiVersion: v1\nkind: Namespace\nmetadata: {name: Shop}\n",
			`n.yaml:3: metadata.name: invalid value "Shop": ` + labelMsg},
		{"name required", "apiVersion: v1\nkind: Namespace\nmetadata: {labels: {a: b}}\n",
			`n.yaml:3: metadata.name: required`},
		{"a spec field other than finalizers", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nspec:\n  finalizers: [kubernetes]\n  other: 1\n",
			`n.yaml:6: spec: unknown field "other"`},
		{"apiVersion", "apiVersion: apps/v1\nkind: Namespace\nmetadata: {name: a}\n",
			`n.yaml:1: apiVersion: must be "v1", got "apps/v1"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("n.yaml", []byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

// TestBundleNamesAndOrder: names are unique per kind and namespace; a
// bundle comes back Namespaces first, then Services, then Deployments, each
// kind in file order.
func TestBundleNamesAndOrder(t *testing.T) {
	dep := func(name, ns string) string {
		s := strings.Replace(base, "  name: web\n", "  name: "+name+"\n", 1)
		if ns != "" {
			s = strings.Replace(s, "  name: "+name+"\n", "  name: "+name+"\n  namespace: "+ns+"\n", 1)
		}
		return s + "---\n"
	}
	svc := func(name, ns string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: \"" + ns + "\"}\nspec: {ports: [{port: 80}]}\n---\n"
	}
	ns := func(name string) string {
		return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + "}\n---\n"
	}

	in := dep("web", "") + svc("web", "") + dep("web", "shop") + ns("shop") + svc("api", "shop") + dep("api", "default") + ns("tools")
	docs, err := Decode("b.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Kind()+" "+d.Meta().NamespaceOrDefault()+"/"+d.Meta().Name)
	}
	want := "Namespace default/shop, Namespace default/tools, Service default/web, Service shop/api, Deployment default/web, Deployment shop/web, Deployment default/api"
	if strings.Join(got, ", ") != want {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, ", "), want)
	}

	_, err = Decode("b.yaml", []byte(in+dep("web", "default")+svc("api", "shop")+ns("shop")+dep("web", "shop")))
	wantErr := strings.Join([]string{
		`b.yaml:84: metadata.name: duplicate deployment "web" (first defined at b.yaml:4)`,
		`b.yaml:104: metadata.name: duplicate service "api" in namespace "shop" (first defined at b.yaml:53)`,
		`b.yaml:109: metadata.name: duplicate namespace "shop" (first defined at b.yaml:49)`,
		`b.yaml:114: metadata.name: duplicate deployment "web" in namespace "shop" (first defined at b.yaml:29)`,
	}, "\n")
	if err == nil || err.Error() != wantErr {
		t.Errorf("duplicates:\n got %v\nwant %s", err, wantErr)
	}
}

func TestSelectorMatches(t *testing.T) {
	pod := map[string]string{"app": "web", "tier": "front"}
	for _, tt := range []struct {
		name     string
		selector map[string]string
		labels   map[string]string
		want     bool
	}{
		{"subset", map[string]string{"app": "web"}, pod, true},
		{"all", map[string]string{"app": "web", "tier": "front"}, pod, true},
		{"value differs", map[string]string{"app": "api"}, pod, false},
		{"key missing", map[string]string{"app": "web", "env": "prod"}, pod, false},
		{"empty value must be present", map[string]string{"env": ""}, pod, false},
		{"empty value present", map[string]string{"env": ""}, map[string]string{"env": ""}, true},
		{"empty selector matches nothing", map[string]string{}, pod, false},
		{"nil selector matches nothing", nil, pod, false},
		{"no labels", map[string]string{"app": "web"}, nil, false},
	} {
		if got := SelectorMatches(tt.selector, tt.labels); got != tt.want {
			t.Errorf("%s: SelectorMatches(%v, %v) = %v, want %v", tt.name, tt.selector, tt.labels, got, tt.want)
		}
	}
}

func TestResolveTargetPort(t *testing.T) {
	ps := &PodSpec{
		InitContainers: []Container{
			{Name: "migrate", Ports: []ContainerPort{{Name: "admin", ContainerPort: 7000}}},
			{Name: "proxy", RestartPolicy: ContainerRestartPolicyAlways, Ports: []ContainerPort{{Name: "tls", ContainerPort: 8443}}},
		},
		Containers: []Container{
			{Name: "app", Ports: []ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 5353, Protocol: ProtocolUDP}}},
			{Name: "metrics", Ports: []ContainerPort{{Name: "metrics", ContainerPort: 9090, Protocol: ProtocolTCP}, {Name: "http", ContainerPort: 8081}}},
		},
	}
	containers := ps.ServingContainers()
	if got := dockctlNames(containers); got != "app metrics proxy" {
		t.Fatalf("ServingContainers = %q, want the app containers then the sidecars", got)
	}
	for _, tt := range []struct {
		name string
		port ServicePort
		want int32
		ok   bool
	}{
		{"number", ServicePort{Port: 80, TargetPort: intstr.FromInt32(9999)}, 9999, true},
		{"unset: the port", ServicePort{Port: 80}, 80, true},
		{"name, protocol defaulted on both sides", ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"name in a second container", ServicePort{Port: 80, Protocol: ProtocolTCP, TargetPort: intstr.FromString("metrics")}, 9090, true},
		{"name in a sidecar", ServicePort{Port: 443, TargetPort: intstr.FromString("tls")}, 8443, true},
		{"name with its protocol", ServicePort{Port: 53, Protocol: ProtocolUDP, TargetPort: intstr.FromString("dns")}, 5353, true},
		{"name with another protocol", ServicePort{Port: 53, Protocol: ProtocolTCP, TargetPort: intstr.FromString("dns")}, 0, false},
		{"name of an init container that has exited", ServicePort{Port: 70, TargetPort: intstr.FromString("admin")}, 0, false},
		{"unknown name", ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}, 0, false},
	} {
		got, ok := ResolveTargetPort(tt.port, containers)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ResolveTargetPort = %d, %v, want %d, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := ResolveTargetPort(ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, nil); ok {
		t.Errorf("a named port resolved in a pod without containers")
	}
}

func TestServiceDeepCopyAndMarshal(t *testing.T) {
	docs, err := Decode("s.yaml", []byte(kubectlService+"---\n"+kubectlNamespace))
	if err != nil {
		t.Fatal(err)
	}
	ns, svc := docs[0].Namespace, docs[1].Service
	c := svc.DeepCopy()
	c.Spec.Ports[0].Name = "changed"
	c.Spec.Selector["app"] = "changed"
	if svc.Spec.Ports[0].Name != "http" || svc.Spec.Selector["app"] != "api" {
		t.Errorf("DeepCopy shares memory with the original")
	}
	if nc := ns.DeepCopy(); nc.Metadata.Name != "shop" {
		t.Errorf("Namespace DeepCopy = %+v", nc)
	} else if nc.Metadata.Labels["x"] = "y"; ns.Metadata.Labels["x"] != "" {
		t.Errorf("Namespace DeepCopy shares its labels")
	}
	for _, format := range []string{"yaml", "json"} {
		out, err := MarshalService(svc, format)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode("out."+format, out)
		if err != nil || len(back) != 1 || back[0].Service == nil {
			t.Fatalf("printed Service does not decode: %v\n%s", err, out)
		}
		again, _ := MarshalService(back[0].Service, format)
		if string(again) != string(out) {
			t.Errorf("%s round trip changed the Service:\n%s\n---\n%s", format, out, again)
		}
		out, err = MarshalNamespace(ns, format)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := Decode("out."+format, out); err != nil || back[0].Namespace.Metadata.Name != "shop" {
			t.Errorf("printed Namespace does not decode: %v\n%s", err, out)
		}
	}
	if _, err := MarshalService(svc, "xml"); err == nil {
		t.Errorf("MarshalService accepted format xml")
	}
}
