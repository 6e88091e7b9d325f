package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

const routingCLIYAML = `apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: dockctl}
spec: {controller: dockctl.io/ingress}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dockctl}
spec: {controllerName: dockctl.io/gateway}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: apps}
spec:
  ingressClassName: dockctl
  tls: [{hosts: [a.test], secretName: a-tls}]
  rules:
  - host: a.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: a, port: {number: 80}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: apps}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b, namespace: apps}
spec:
  parentRefs: [{name: edge}]
  hostnames: [b.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /b}}]
    backendRefs: [{name: b, port: 80}]
`

// routingCLIFixture applies the routing objects and writes the statuses
// a gateway controller would.
func routingCLIFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, errOut, err := run(t, routingCLIYAML, "--state-dir", dir, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("apply: %v %s %s", err, out, errOut)
	}
	for _, want := range []string{
		// The CLI's words, as for every kind (deployment/web created).
		"namespace/apps created", "ingressclass/dockctl created", "gatewayclass/dockctl created",
		"ingress/web created", "gateway/edge created", "httproute/b created",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("apply output %q lacks %q", out, want)
		}
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	for ref, status := range map[store.ObjectRef]string{
		{Kind: store.KindIngress, Namespace: "apps", Name: "web"}:  `{"loadBalancer":{"ingress":[{"ip":"127.0.0.1"}]}}`,
		{Kind: store.KindGatewayClass, Name: "dockctl"}:            `{"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"","lastTransitionTime":"2026-12-01T00:00:00Z"}]}`,
		{Kind: store.KindGateway, Namespace: "apps", Name: "edge"}: `{"addresses":[{"type":"IPAddress","value":"127.0.0.1"}],"conditions":[{"type":"Programmed","status":"True","reason":"Programmed","message":"","lastTransitionTime":"2026-12-01T00:00:00Z"}]}`,
	} {
		if err := st.WriteRoutingStatus(ref, json.RawMessage(status)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// get prints kubectl's columns of each routing kind, by any of kubectl's
// names for it; the cluster-scoped ones whatever -n says.
func TestGetRoutingKinds(t *testing.T) {
	dir := routingCLIFixture(t)
	for _, tc := range []struct {
		args []string
		want string // a regular expression of the whole output
	}{
		{[]string{"get", "ing", "-n", "apps"}, `^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nweb\s+dockctl\s+a\.test\s+127\.0\.0\.1\s+80, 443\s+\S+\n$`},
		{[]string{"get", "gtw", "-n", "apps"}, `^NAME\s+CLASS\s+ADDRESS\s+PROGRAMMED\s+AGE\nedge\s+dockctl\s+127\.0\.0\.1\s+True\s+\S+\n$`},
		{[]string{"get", "httproutes", "-n", "apps"}, `^NAME\s+HOSTNAMES\s+AGE\nb\s+\["b\.test"\]\s+\S+\n$`},
		{[]string{"get", "gc", "-n", "apps"}, `^NAME\s+CONTROLLER\s+ACCEPTED\s+AGE\ndockctl\s+dockctl\.io/gateway\s+True\s+\S+\n$`},
		{[]string{"get", "ingressclass"}, `^NAME\s+CONTROLLER\s+PARAMETERS\s+AGE\ndockctl\s+dockctl\.io/ingress\s+<none>\s+\S+\n$`},
		{[]string{"get", "ingress", "-A"}, `^NAMESPACE\s+NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\napps\s+web\s+`},
		{[]string{"get", "ingress", "web", "-n", "apps", "-o", "name"}, `^ingress\.networking\.k8s\.io/web\n$`},
		{[]string{"get", "ingress", "web", "-n", "apps", "-o", "yaml"}, `(?s)kind: Ingress\n.*namespace: apps\n.*status:\n  loadBalancer:\n    ingress:\n    - ip: 127\.0\.0\.1\n`},
		{[]string{"describe", "ingress", "web", "-n", "apps"}, `(?s)Name:\s+web\n.*Ingress Class:\s+dockctl\n.*Address:\s+127\.0\.0\.1\n.*TLS:\s+a-tls terminates a\.test\n.*a\.test\s+/\s+a:80\n`},
		{[]string{"describe", "gateway", "edge", "-n", "apps"}, `(?s)Listeners:\n\s+http\s+HTTP/80\s+\*\n.*Programmed\s+True\s+Programmed`},
		{[]string{"describe", "httproute", "b", "-n", "apps"}, `(?s)Parents:\s+edge\n.*PathPrefix /b\s+b:80 \(weight 1\)\n.*Status:\s+<none: no controller has reported>`},
	} {
		out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, tc.args...)...)
		if err != nil {
			t.Errorf("%v: %v %s", tc.args, err, errOut)
			continue
		}
		if !regexp.MustCompile(tc.want).MatchString(out) {
			t.Errorf("%v:\n%s\nwant it to match %s", tc.args, out, tc.want)
		}
	}
}

// delete takes a routing object by name, a cluster-scoped one whatever
// -n says; get then finds none.
func TestDeleteRoutingKinds(t *testing.T) {
	dir := routingCLIFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"delete", "ingressclass", "dockctl", "-n", "apps"}, "ingressclass/dockctl deleted\n"},
		{[]string{"delete", "httproute", "b", "-n", "apps"}, "httproute/b deleted\n"},
	} {
		out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, tc.args...)...)
		if err != nil || out != tc.want {
			t.Errorf("%v = %q, %v %s; want %q", tc.args, out, err, errOut, tc.want)
		}
	}
	if _, _, err := run(t, "", "--state-dir", dir, "get", "httproute", "b", "-n", "apps"); err == nil || !strings.Contains(err.Error(), `httproutes.gateway.networking.k8s.io "b" not found`) {
		t.Errorf("get of a deleted route: %v", err)
	}
}
