//go:build e2e

package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/dockctl/dockctl/internal/pebbletest"
	"github.com/dockctl/dockctl/internal/testcerts"
)

// TestACMECertificateThroughTheGateway: automatic HTTPS against pebble,
// the ACME test server (a tool of the module), run as a process on
// 127.0.0.1 — never the internet. Its validation stays on: a DNS stub of
// this test resolves every name to 127.0.0.1, and pebble fetches the
// HTTP-01 challenge on the gateway's published HTTP port. The controller
// (on the host's network, to reach pebble on 127.0.0.1, trusting
// pebble's listener certificate with --acme-ca-file) orders a
// certificate for an opted-in Ingress's TLS host that has no Secret; the
// gateway then answers HTTPS for that host with a certificate issued by
// pebble's CA, stored as the Secret NAME-tls.
func TestACMECertificateThroughTheGateway(t *testing.T) {
	// Its pebble, ports and instance are its own: it runs beside others,
	// and the pebble build overlaps them.
	independent(t)
	e := newSvcEnv(t)
	httpPort, httpsPort := freePort(t), freePort(t)
	for httpsPort == httpPort {
		httpsPort = freePort(t)
	}
	pb := startPebbleProcess(t, httpPort)

	e.startControllerWith(func(req *testcontainers.ContainerRequest) {
		prev := req.HostConfigModifier
		req.HostConfigModifier = func(hc *container.HostConfig) {
			prev(hc)
			hc.NetworkMode = "host"
			hc.Binds = append(hc.Binds, pb.caDir+":/acme-ca:ro")
		}
	}, "--subnet", testSubnet(t), "--service-address", "127.0.0.1", "--settle-time", "1s",
		"--gateway-http-port", strconv.Itoa(httpPort), "--gateway-https-port", strconv.Itoa(httpsPort),
		"--acme-email", "e2e@example.test", "--acme-directory", pb.directory, "--acme-ca-file", "/acme-ca/cert.pem")

	e.apply(bundle(
		svcDeployment{name: "shop", app: "shop", replicas: 1, probePath: "/readyz", args: []string{"--message=app-shop"}}.manifest(),
		serviceManifest("", "shop", "shop", httpPort80),
		`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  annotations: {dockctl.io/acme: "true"}
spec:
  tls:
  - hosts: [shop.acme.test]
  rules:
  - host: shop.acme.test
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service: {name: shop, port: {number: 80}}
`))
	e.waitPodsRunning("default", "shop", 1)

	roots := pb.roots(t)
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "shop.acme.test"}}}
	eventually(t, 3*time.Minute, "GET https://shop.acme.test/ through the gateway with a certificate of pebble's CA", func() (bool, string) {
		body, err := gatewayGet(secure, "https", "127.0.0.1:"+strconv.Itoa(httpsPort), "shop.acme.test", "/")
		if err != nil {
			return false, err.Error() + "\npebble: " + pb.log()
		}
		return strings.Contains(body, "app-shop"), body
	})
	out, err := e.dockctl("", "get", "secret", "shop-tls", "-o", "json")
	if err != nil || !strings.Contains(out, `"app.kubernetes.io/managed-by": "dockctl-acme"`) || !strings.Contains(out, "kubernetes.io/tls") {
		t.Errorf("the Secret shop-tls: %v\n%s", err, out)
	}
}

// pebbleProcess is a running pebble.
type pebbleProcess struct {
	directory  string // the ACME directory URL
	management string // the management API's base URL (its roots)
	caDir      string // holds cert.pem, the listener's certificate
	client     *http.Client
	mu         sync.Mutex
	out        bytes.Buffer
}

func (p *pebbleProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *pebbleProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.out.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// startPebbleProcess builds the module's pebble tool and runs it on
// 127.0.0.1 with a listener certificate of this test, a DNS stub that
// resolves every name to 127.0.0.1, and httpPort as the port it fetches
// HTTP-01 challenges on. The process is killed when the test ends.
func startPebbleProcess(t testing.TB, httpPort int) *pebbleProcess {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pebble")
	if err := goBuild(root, "github.com/letsencrypt/pebble/v2/cmd/pebble", bin); err != nil {
		t.Fatal(err)
	}
	caDir := filepath.Join(dir, "ca")
	if err := os.Mkdir(caDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// pebble's listener, as the controller dials it.
	certPEM, keyPEM := testcerts.SelfSigned(t, 1, "127.0.0.1", "localhost")
	certFile, keyFile := filepath.Join(caDir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	listen, mgmt := freePort(t), freePort(t)
	for mgmt == listen || mgmt == httpPort || listen == httpPort {
		listen, mgmt = freePort(t), freePort(t)
	}
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           "127.0.0.1:" + strconv.Itoa(listen),
		"managementListenAddress": "127.0.0.1:" + strconv.Itoa(mgmt),
		"certificate":             certFile, "privateKey": keyFile,
		"httpPort": httpPort, "tlsPort": 0,
		"externalAccountBindingRequired": false,
		"keyAlgorithm":                   "ecdsa",
	}}
	cfgJSON, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, cfgJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &pebbleProcess{directory: "https://127.0.0.1:" + strconv.Itoa(listen) + "/dir",
		management: "https://127.0.0.1:" + strconv.Itoa(mgmt), caDir: caDir}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	p.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", pebbletest.DNSStub(t))
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pebble: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("pebble's output:\n%s", p.log())
		}
	})
	eventually(t, 30*time.Second, "pebble's directory", func() (bool, string) {
		resp, err := p.client.Get(p.directory)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// roots is pebble's issuing root (its management API's /roots/0).
func (p *pebbleProcess) roots(t testing.TB) *x509.CertPool {
	t.Helper()
	resp, err := p.client.Get(p.management + "/roots/0")
	if err != nil {
		t.Fatalf("pebble's root: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("pebble's root: %s %q", resp.Status, b)
	}
	return pool
}
