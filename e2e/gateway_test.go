//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/testcerts"
)

// gatewayGet GETs path from addr with the Host header host (over TLS with
// SNI host when client is a TLS client) and returns the body of a 200.
func gatewayGet(client *http.Client, scheme, addr, host, path string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, scheme+"://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	return bodyOf(client, req)
}

// TestGateway: two apps behind one gateway helper on 127.0.0.1 — an
// Ingress for host a.test and an HTTPRoute for b.test/b (rewritten to /,
// the workload's page) on a Gateway of dockctl's class — each request
// reaching its backend by Host header, and
// an HTTPS request with SNI a.test answered with the certificate of the
// Ingress's kubernetes.io/tls Secret. The Ingress and the Gateway report
// the address once the helper acknowledged.
func TestGateway(t *testing.T) {
	e := newSvcEnv(t)
	httpPort, httpsPort := freePort(t), freePort(t)
	for httpsPort == httpPort {
		httpsPort = freePort(t)
	}
	e.startSvcController(testSubnet(t), "--gateway-http-port", strconv.Itoa(httpPort), "--gateway-https-port", strconv.Itoa(httpsPort))
	certPEM, keyPEM := testcerts.SelfSigned(t, 1, "a.test")
	b64 := base64.StdEncoding.EncodeToString
	e.apply(bundle(
		svcDeployment{name: "a", app: "a", replicas: 1, probePath: "/readyz", args: []string{"--message=app-a"}}.manifest(),
		serviceManifest("", "a", "a", httpPort80),
		svcDeployment{name: "b", app: "b", replicas: 1, probePath: "/readyz", args: []string{"--message=app-b"}}.manifest(),
		serviceManifest("", "b", "b", httpPort80),
		fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: a-tls\ntype: kubernetes.io/tls\ndata:\n  tls.crt: %s\n  tls.key: %s\n", b64(certPEM), b64(keyPEM)),
		`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: a
spec:
  tls:
  - hosts: [a.test]
    secretName: a-tls
  rules:
  - host: a.test
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service: {name: a, port: {number: 80}}
`,
		"apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: dockctl\nspec:\n  controllerName: dockctl.io/gateway\n",
		fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: web
spec:
  gatewayClassName: dockctl
  listeners:
  - name: http
    protocol: HTTP
    port: %d
`, httpPort),
		`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: b
spec:
  parentRefs:
  - name: web
  hostnames: [b.test]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /b}
    filters:
    - type: URLRewrite
      urlRewrite:
        path: {type: ReplacePrefixMatch, replacePrefixMatch: /}
    backendRefs:
    - name: b
      port: 80
`))
	e.waitPodsRunning("default", "a", 1)
	e.waitPodsRunning("default", "b", 1)

	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	addr := "127.0.0.1:" + strconv.Itoa(httpPort)
	for _, c := range []struct{ host, path, want string }{
		{"a.test", "/", "app-a"},
		{"b.test", "/b", "app-b"},
	} {
		eventually(t, 60*time.Second, "GET http://"+c.host+c.path+" through the gateway", func() (bool, string) {
			body, err := gatewayGet(plain, "http", addr, c.host, c.path)
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(body, c.want), body
		})
	}
	// b.test serves /b only: a path no route matches is the gateway's 404.
	if body, err := gatewayGet(plain, "http", addr, "b.test", "/"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("GET http://b.test/ = %q, %v; want a 404", body, err)
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "a.test"}}}
	eventually(t, 30*time.Second, "GET https://a.test/ through the gateway (SNI a.test)", func() (bool, string) {
		body, err := gatewayGet(secure, "https", "127.0.0.1:"+strconv.Itoa(httpsPort), "a.test", "/")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(body, "app-a"), body
	})

	// The address is reported once the helper acknowledged.
	eventually(t, 30*time.Second, "the service address in the Ingress's and the Gateway's status", func() (bool, string) {
		ing, _ := e.dockctl("", "get", "ingress", "a", "-o", "json")
		gw, _ := e.dockctl("", "get", "gateway", "web", "-o", "json")
		return strings.Contains(ing, "127.0.0.1") && strings.Contains(gw, "127.0.0.1") && strings.Contains(gw, `"Programmed"`), ing + "\n" + gw
	})
	gws := e.helpers("gateway", "", "")
	if len(gws) != 1 {
		t.Fatalf("%d gateway helpers, want 1: %s", len(gws), describe(gws))
	}
	for port, bindings := range inspect(t, gws[0].ID).HostConfig.PortBindings {
		for _, b := range bindings {
			if b.HostIP != "127.0.0.1" {
				t.Errorf("the gateway publishes %s on %q, want 127.0.0.1", port, b.HostIP)
			}
		}
	}
}
