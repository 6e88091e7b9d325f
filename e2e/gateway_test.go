//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

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
// the address once the helper acknowledged. Then, on the same gateway:
// the Secret rotated under an open keep-alive TLS connection, an 80/20
// weighted HTTPRoute, and a `rollout restart` of a backend under load
// and an open WebSocket (the subtests say what each proves).
func TestGateway(t *testing.T) {
	e := newSvcEnv(t)
	httpPort, httpsPort := freePort(t), freePort(t)
	for httpsPort == httpPort {
		httpsPort = freePort(t)
	}
	e.startSvcController(testSubnet(t), "--gateway-http-port", strconv.Itoa(httpPort), "--gateway-https-port", strconv.Itoa(httpsPort))
	certPEM, keyPEM := testcerts.SelfSigned(t, 1, "a.test")
	e.apply(bundle(
		svcDeployment{name: "a", app: "a", replicas: 1, probePath: "/readyz", args: []string{"--message=app-a", "--drain-delay=1s"}}.manifest(),
		serviceManifest("", "a", "a", httpPort80),
		svcDeployment{name: "b", app: "b", replicas: 1, probePath: "/readyz", args: []string{"--message=app-b"}}.manifest(),
		serviceManifest("", "b", "b", httpPort80),
		tlsSecret("a-tls", certPEM, keyPEM),
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
	// It binds its ports on the host's network itself, on the service
	// address only: one userspace hop, no docker-proxy before it.
	if hc := inspect(t, gws[0].ID).HostConfig; !hc.NetworkMode.IsHost() || len(hc.PortBindings) != 0 {
		t.Errorf("the gateway runs on network %q with Docker publishing %v, want the host's and nothing", hc.NetworkMode, hc.PortBindings)
	}
	if got := tcpListeners(t, httpPort); got != "127.0.0.1" {
		t.Errorf("port %d listens on %q, want the service address 127.0.0.1 only", httpPort, got)
	}
	plainAddr := addr
	secureAddr := "127.0.0.1:" + strconv.Itoa(httpsPort)

	// Kubernetes ingress controllers load a Secret's new certificate for
	// new TLS handshakes and leave open connections alone: a rotation
	// (cert-manager's renewal, a re-apply) drops no client.
	t.Run("a Secret rotated under an open keep-alive connection keeps it, a new connection gets the new certificate", func(t *testing.T) {
		cert2PEM, key2PEM := testcerts.SelfSigned(t, 2, "a.test")
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		pool.AppendCertsFromPEM(cert2PEM)
		tlsConf := &tls.Config{RootCAs: pool, ServerName: "a.test"}
		kept := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf, MaxConnsPerHost: 1}}
		defer kept.CloseIdleConnections()
		fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true}}
		// keptGet GETs over the kept connection, which must be the first
		// one still, with the first certificate.
		first := true
		keptGet := func() {
			t.Helper()
			a, err := tlsGet(kept, secureAddr, "a.test")
			switch {
			case err != nil:
				t.Fatalf("GET over the kept-alive connection: %v", err)
			case a.serial != 1:
				t.Fatalf("the kept-alive connection has certificate %d, want 1 (a new connection?)", a.serial)
			case !first && !a.reused:
				t.Fatalf("the kept-alive connection was dropped: the request needed a new one")
			}
			first = false
		}
		keptGet()
		e.apply(tlsSecret("a-tls", cert2PEM, key2PEM))
		eventually(t, 30*time.Second, "a new connection to answer with the rotated certificate", func() (bool, string) {
			keptGet()
			a, err := tlsGet(fresh, secureAddr, "a.test")
			if err != nil {
				return false, err.Error()
			}
			return a.serial == 2, fmt.Sprintf("certificate %d", a.serial)
		})
		keptGet()
	})

	// The Gateway API's backendRef weight: each request goes to a
	// backend with probability weight / sum of the weights.
	t.Run("an 80/20 weighted HTTPRoute splits 1000 requests within 5 points of the weights", func(t *testing.T) {
		e.apply(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: w
spec:
  parentRefs:
  - name: web
  hostnames: [w.test]
  rules:
  - backendRefs:
    - {name: a, port: 80, weight: 80}
    - {name: b, port: 80, weight: 20}
`)
		eventually(t, 30*time.Second, "GET http://w.test/ through the gateway", func() (bool, string) {
			body, err := gatewayGet(plain, "http", plainAddr, "w.test", "/")
			return err == nil, fmt.Sprint(body, err)
		})
		const requests, clients = 1000, 8
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
				defer c.CloseIdleConnections()
				for range requests / clients {
					body, err := gatewayGet(c, "http", plainAddr, "w.test", "/")
					app := "failed: " + fmt.Sprint(err)
					if err == nil {
						app, _, _ = strings.Cut(body, "\n")
					}
					mu.Lock()
					counts[app]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("answers of %d requests to w.test: %v", requests, counts)
		if counts["app-a"]+counts["app-b"] != requests {
			t.Fatalf("answers %v: want every request answered by app-a or app-b", counts)
		}
		if share := float64(counts["app-a"]) / requests; share < 0.75 || share > 0.85 {
			t.Errorf("app-a answered %.1f %% of the requests, want 80 %% ± 5", 100*share)
		}
	})

	// A rolling update through an ingress controller: each old pod leaves
	// the endpoints before its stop signal, so no request fails; an open
	// WebSocket (an upgraded connection, which ingress-nginx, for one,
	// leaves open until either end closes it) lives through the pod's
	// drain and ends only when the pod stops; new WebSockets reach new
	// pods.
	t.Run("rollout restart of a backend: 0 failed requests, an open WebSocket lives until its pod stops", func(t *testing.T) {
		ws, err := wsDial(plainAddr, "a.test", "/ws")
		if err != nil {
			t.Fatalf("open a WebSocket to a.test/ws: %v", err)
		}
		defer ws.Close()
		oldHost, err := wsEcho(ws, "before")
		if err != nil {
			t.Fatalf("echo over the WebSocket: %v", err)
		}
		var oldID string
		for _, c := range e.podsOf("default", "a") {
			if inspect(t, c.ID).Config.Hostname == oldHost {
				oldID = c.ID
			}
		}
		if oldID == "" {
			t.Fatalf("no pod of a has the hostname %q the WebSocket answered with", oldHost)
		}
		// The old pod's log, followed until it is removed: its stop
		// signal shows there ("signal received").
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		oldLog, logEnded := followLogs(t, ctx, oldID)

		l := startLoadAs(t, "http://"+plainAddr+"/", "a.test")
		l.waitRequests(t, 20)
		l.mark("warm-up")
		e.mustDockctl("", "rollout", "restart", "deployment/a")

		// Until the WebSocket ends: an echo on it, and a new WebSocket
		// until one reaches a new pod.
		var newHost string
		echoes, echoesAfterNew := 0, 0
		var wsErr error
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(90 * time.Second); wsErr == nil; <-tick.C {
			if time.Now().After(deadline) {
				t.Fatalf("the WebSocket to %s still echoes 90 s after the rollout began (%d echoes; new pod %q); old pod's log:\n%s", oldHost, echoes, newHost, oldLog.String())
			}
			var got string
			if got, wsErr = wsEcho(ws, strconv.Itoa(echoes)); wsErr != nil {
				break
			}
			if got != oldHost {
				t.Fatalf("the open WebSocket echoed from %q, want %q (its pod)", got, oldHost)
			}
			echoes++
			if newHost != "" {
				echoesAfterNew++
				continue
			}
			if nws, err := wsDial(plainAddr, "a.test", "/ws"); err == nil {
				if h, err := wsEcho(nws, "new"); err == nil && h != oldHost {
					newHost = h
				}
				nws.Close()
			}
		}
		// The WebSocket ended: its pod must have been told to stop by
		// then (drain-before-stop), not dropped by the gateway's pushes.
		if logAtEnd := oldLog.String(); !strings.Contains(logAtEnd, "signal received") {
			t.Errorf("the WebSocket ended (%v) before its pod %s got its stop signal; its log:\n%s", wsErr, oldHost, logAtEnd)
		}
		if ne := net.Error(nil); errors.As(wsErr, &ne) && ne.Timeout() {
			t.Errorf("the WebSocket hung once its pod stopped (%v), want it closed as its backend connection was", wsErr)
		}
		if newHost == "" || echoesAfterNew == 0 {
			t.Errorf("no new WebSocket reached a new pod while the old one was open (new pod %q, %d echoes after)", newHost, echoesAfterNew)
		}
		t.Logf("the WebSocket to %s echoed %d times (%d after a new WebSocket reached %s), then ended: %v", oldHost, echoes, echoesAfterNew, newHost, wsErr)

		e.mustDockctl("", "rollout", "status", "deployment/a", "--timeout", "2m")
		select {
		case <-logEnded:
		case <-ctx.Done():
			t.Fatalf("the old pod %s was never removed", oldHost)
		}
		l.waitRequests(t, 20) // traffic onto the new pod too
		p := l.mark("rollout restart of a")
		l.stop()
		t.Log(l.report())
		if p.ok[newConn] == 0 || p.ok[keepAlive] == 0 {
			t.Errorf("%s: a kind of client made no successful request; the test measured nothing", p)
		}
		if p.failures() > 0 {
			t.Errorf("%d requests failed during the rollout; want 0. First errors:\n%s", p.failures(), l.firstErrors())
		}
		if ws, err := wsDial(plainAddr, "a.test", "/ws"); err != nil {
			t.Errorf("a new WebSocket after the rollout: %v", err)
		} else {
			if h, err := wsEcho(ws, "after"); err != nil || h == oldHost {
				t.Errorf("a new WebSocket after the rollout echoed from %q (%v), want a new pod", h, err)
			}
			ws.Close()
		}
	})
}

// tlsSecret is a kubernetes.io/tls Secret of certPEM and keyPEM.
func tlsSecret(name string, certPEM, keyPEM []byte) string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\ntype: kubernetes.io/tls\ndata:\n  tls.crt: %s\n  tls.key: %s\n", name, b64(certPEM), b64(keyPEM))
}

// tlsAnswer is what tlsGet learnt of a request: the serial number of the
// certificate the connection was set up with and whether the connection
// was reused (an open keep-alive connection).
type tlsAnswer struct {
	serial int64
	reused bool
}

// tlsGet GETs https://host/ from addr (SNI host) and checks it is app-a's
// answer.
func tlsGet(c *http.Client, addr, host string) (tlsAnswer, error) {
	var a tlsAnswer
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { a.reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, "https://"+addr+"/", nil)
	if err != nil {
		return a, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "app-a") {
		return a, fmt.Errorf("%s: %s", resp.Status, body)
	}
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return a, fmt.Errorf("no server certificate")
	}
	a.serial = resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	return a, nil
}

// wsDial opens a WebSocket to path on the gateway at addr with the Host
// header host (golang.org/x/net/websocket's client sends the Location's).
func wsDial(addr, host, path string) (*websocket.Conn, error) {
	cfg, err := websocket.NewConfig("ws://"+host+path, "http://"+host+"/")
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("WebSocket handshake with %s: %w", host, err)
	}
	return ws, nil
}

// wsEcho sends msg over a WebSocket to the workload's /ws and returns the
// hostname it echoed with ("HOSTNAME MSG").
func wsEcho(ws *websocket.Conn, msg string) (string, error) {
	_ = ws.SetDeadline(time.Now().Add(5 * time.Second))
	if err := websocket.Message.Send(ws, msg); err != nil {
		return "", fmt.Errorf("send: %w", err)
	}
	var got string
	if err := websocket.Message.Receive(ws, &got); err != nil {
		return "", fmt.Errorf("receive: %w", err)
	}
	host, echoed, _ := strings.Cut(got, " ")
	if echoed != msg {
		return "", fmt.Errorf("echoed %q, want %q", got, msg)
	}
	return host, nil
}

// tcpListeners are the IPv4 addresses a TCP port listens on in the test's
// network namespace (the host's), from /proc/net/tcp, space-separated.
func tcpListeners(t *testing.T, port int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" { // TCP_LISTEN
			continue
		}
		addr, p, ok := strings.Cut(f[1], ":")
		if n, err := strconv.ParseUint(p, 16, 16); !ok || err != nil || int(n) != port {
			continue
		}
		v, err := strconv.ParseUint(addr, 16, 32)
		if err != nil {
			continue
		}
		// Little-endian on the machines dockctl runs on (amd64, arm64).
		out = append(out, fmt.Sprintf("%d.%d.%d.%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24))
	}
	return strings.Join(out, " ")
}
