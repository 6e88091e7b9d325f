package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/internal/pebbletest"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// acmeIngressYAML is an opted-in Ingress with a TLS host and no Secret.
const acmeIngressYAML = `apiVersion: v1
kind: Service
metadata: {name: shop}
spec: {ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  annotations: {cert-manager.io/cluster-issuer: letsencrypt}
spec:
  tls: [{hosts: [shop.example.test]}]
  rules:
  - host: shop.example.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: shop, port: {number: 80}}}}
`

// testPebble is an in-process pebble (the ACME test server) whose
// validation authority resolves every name to 127.0.0.1 (a DNS stub: its
// validation stays on) and fetches HTTP-01 challenges on httpPort.
type testPebble struct {
	dir    string // the directory URL
	client *http.Client
	ca     *ca.CAImpl
}

func startPebble(t *testing.T, httpPort int) *testPebble {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	logger := log.New(io.Discard, "", 0)
	d := db.NewMemoryStore()
	authority := ca.New(logger, d, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {ValidityPeriod: 90 * 24 * 3600}})
	v := va.New(logger, httpPort, 0, false, pebbletest.DNSStub(t), d)
	w := wfe.New(logger, d, v, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	srv := httptest.NewTLSServer(w.Handler())
	t.Cleanup(srv.Close)
	return &testPebble{dir: srv.URL + wfe.DirectoryPath, client: srv.Client(), ca: authority}
}

// roots are the CA certificates pebble issues under.
func (p *testPebble) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	root := p.ca.GetRootCert(0)
	if root == nil {
		t.Fatal("pebble has no root")
	}
	pool.AddCert(root.Cert)
	return pool
}

// servingPlane is a DataPlane that acknowledges every table at once and
// answers, on an HTTP listener of its own, the ACME challenges of the
// last config it was handed, as the gateway does.
type servingPlane struct {
	mu      sync.Mutex
	cfg     helperapi.GatewayConfig
	acked   int64
	served  []helperapi.GatewayACMEChallenge // every challenge any config carried
	notify  func()
	httpURL string
	port    int
}

func newServingPlane(t *testing.T) *servingPlane {
	t.Helper()
	p := &servingPlane{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		token := strings.TrimPrefix(r.URL.Path, helperapi.ACMEChallengePath)
		host, _, _ := net.SplitHostPort(r.Host)
		for _, c := range p.cfg.ACMEChallenges {
			if c.Token == token && c.Host == host {
				_, _ = io.WriteString(w, c.KeyAuthorization)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	p.httpURL = srv.URL
	p.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return p
}

func (p *servingPlane) ServeGateway(t *gatewayroutes.Table, gen int64, notify func()) {
	p.mu.Lock()
	p.cfg = t.Config
	p.served = append(p.served, t.Config.ACMEChallenges...)
	newGen := gen > p.acked
	p.acked = max(p.acked, gen)
	p.mu.Unlock()
	if newGen && notify != nil {
		notify() // as the helper's acknowledgement of a new generation
	}
}

func (p *servingPlane) GatewayProgrammed(gen int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return gen > 0 && p.acked >= gen
}

func (p *servingPlane) GatewayUnavailable() map[int]string { return nil }

func (p *servingPlane) config() helperapi.GatewayConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}

// runLoop syncs c whenever it is queued (as its loop does) until the test
// ends; sync queues a sync.
func runLoop(t *testing.T, c *Controller, dp DataPlane) (sync func()) {
	t.Helper()
	queue := make(chan struct{}, 1)
	sync = func() {
		select {
		case queue <- struct{}{}:
		default:
		}
	}
	c.SetDataPlane(dp, sync)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-queue:
				if _, err := c.Reconcile(ctx, reconcile.Request{Key: Key}); err != nil {
					t.Errorf("sync: %v", err)
				}
			}
		}
	}()
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	return sync
}

// waitFor waits until cond holds (orders take the CA's time), failing
// the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeSecretTo(st *store.Store) func(*manifests.Secret) error {
	return func(sec *manifests.Secret) error {
		_, err := st.Apply(store.Bundle{Secrets: []*manifests.Secret{sec}}, store.ApplyOptions{Manager: ACMEManagedBy})
		return err
	}
}

// An opted-in Ingress TLS host without a Secret is ordered from the CA:
// the HTTP-01 key authorization reaches the gateway's config, pebble
// validates it there, and the certificate and its key are stored as the
// Secret NAME-tls, dockctl's, which the HTTPS port then presents; the
// challenge leaves the config, and the account key is kept 0600.
func TestACMEOrderStoresTheCertificateAsASecret(t *testing.T) {
	st := openStore(t)
	applyYAML(t, st, acmeIngressYAML)
	dp := newServingPlane(t)
	pb := startPebble(t, dp.port)
	keyFile := filepath.Join(t.TempDir(), "acme", "account.key")
	c := New(Config{Store: st, Address: "127.0.0.1", Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443},
		ACME: &ACMEConfig{Email: "ops@example.test", DirectoryURL: pb.dir, HTTPClient: pb.client, AccountKeyFile: keyFile, WriteSecret: writeSecretTo(st)}})
	sync := runLoop(t, c, dp)
	sync()
	var sec *manifests.Secret
	waitFor(t, "the Secret shop-tls", func() bool {
		sec, _ = st.LookupSecret("default", "shop-tls")
		return sec != nil
	})
	if sec.Type != manifests.SecretTypeTLS || sec.Metadata.Labels[ACMEManagedByLabel] != ACMEManagedBy || sec.Metadata.Annotations[ACMEHostsAnnotation] != "shop.example.test" {
		t.Errorf("Secret metadata %+v type %s", sec.Metadata, sec.Type)
	}
	leaf, err := leafOf(sec.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	inter := x509.NewCertPool()
	rest := sec.Data["tls.crt"]
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && !c.Equal(leaf) {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "shop.example.test", Roots: pb.roots(t), Intermediates: inter}); err != nil {
		t.Errorf("the stored certificate does not verify under pebble's root: %v", err)
	}
	if kb, _ := pem.Decode(sec.Data["tls.key"]); kb == nil {
		t.Errorf("tls.key is no PEM key")
	} else if k, err := x509.ParseECPrivateKey(kb.Bytes); err != nil || !k.PublicKey.Equal(leaf.PublicKey) {
		t.Errorf("tls.key does not match the certificate (%v)", err)
	}
	dp.mu.Lock()
	served := slices.Clone(dp.served)
	dp.mu.Unlock()
	if len(served) == 0 || served[0].Host != "shop.example.test" {
		t.Errorf("challenges handed to the gateway %+v, want shop.example.test's", served)
	}
	sync() // the Secret's change queues the sync in the controller
	waitFor(t, "the HTTPS port to present default/shop-tls, without challenges", func() bool {
		cfg := dp.config()
		for _, p := range cfg.Ports {
			if p.Port == 443 && slices.Contains(p.Certificates, "default/shop-tls") {
				return len(cfg.ACMEChallenges) == 0
			}
		}
		return false
	})
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("account key %v mode %v", err, fi)
	}
}

// certPEM is a self-signed certificate for hosts valid from notBefore
// for life.
func certPEM(t *testing.T, notBefore time.Time, life time.Duration, hosts ...string) []byte {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hosts[0]},
		DNSNames: hosts, NotBefore: notBefore, NotAfter: notBefore.Add(life)}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hosts[0]}}, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A certificate is renewed once less than a third of its lifetime is
// left, or when it does not cover the wanted hosts; a missing one is
// ordered.
func TestACMERenewalTiming(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	life := 90 * 24 * time.Hour // renewed from day 60
	w := certWant{hosts: []string{"a.example.test"}}
	ours := func(pem []byte) *manifests.Secret {
		return &manifests.Secret{Type: manifests.SecretTypeTLS, Data: map[string][]byte{"tls.crt": pem}}
	}
	for _, tc := range []struct {
		name string
		sec  *manifests.Secret
		now  time.Time
		want string
	}{
		{"missing", nil, issued, "no certificate yet"},
		{"fresh", ours(certPEM(t, issued, life, "a.example.test")), issued.Add(time.Hour), ""},
		{"just before two thirds", ours(certPEM(t, issued, life, "a.example.test")), issued.Add(60*24*time.Hour - time.Second), ""},
		{"at two thirds", ours(certPEM(t, issued, life, "a.example.test")), issued.Add(60 * 24 * time.Hour), "due for renewal"},
		{"expired", ours(certPEM(t, issued, life, "a.example.test")), issued.Add(100 * 24 * time.Hour), "due for renewal"},
		{"another host", ours(certPEM(t, issued, life, "b.example.test")), issued.Add(time.Hour), "the stored certificate does not cover a.example.test"},
		{"unreadable", ours([]byte("garbage")), issued, "the stored certificate is unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsOrder(w, tc.sec, tc.now); got != tc.want {
				t.Errorf("needsOrder = %q, want %q", got, tc.want)
			}
		})
	}
}

// Which hosts want a certificate: only opted-in Ingresses' TLS entries
// without a Secret or naming a missing (or dockctl's) one, and opted-in
// Gateways' HTTPS listeners with a hostname naming such a Secret;
// never a wildcard, never the user's Secret.
func TestACMEWantsOnlyOptedInHosts(t *testing.T) {
	st := openStore(t)
	applyYAML(t, st, `apiVersion: v1
kind: Secret
metadata: {name: users}
type: kubernetes.io/tls
data: {tls.crt: "", tls.key: ""}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: plain}
spec:
  tls: [{hosts: [plain.example.test]}]
  defaultBackend: {service: {name: x, port: {number: 80}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: mixed
  annotations: {dockctl.io/acme: "true"}
spec:
  tls:
  - {hosts: [a.example.test, "*.wild.example.test"]}
  - {hosts: [b.example.test], secretName: named}
  - {hosts: [c.example.test], secretName: users}
  defaultBackend: {service: {name: x, port: {number: 80}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dockctl}
spec: {controllerName: dockctl.io/gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: edge
  annotations: {cert-manager.io/issuer: le}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: g.example.test, tls: {certificateRefs: [{name: edge-cert}]}}
  - {name: nohost, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: other}]}}
  - {name: http, port: 80, protocol: HTTP, hostname: h.example.test}
`)
	c := New(Config{Store: st, Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443}})
	in, secrets, err := c.input()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range acmeWants(in, gatewayroutes.Compile(in, c.cfg.Routes), secrets) {
		got = append(got, w.secret.String()+"="+strings.Join(w.hosts, ","))
	}
	want := []string{"default/mixed-tls=a.example.test", "default/named=b.example.test", "default/edge-cert=g.example.test"}
	if !slices.Equal(got, want) {
		t.Errorf("wanted certificates %q, want %q", got, want)
	}
}

// refusingCA is an ACME directory that refuses every request (403, which
// the client does not retry), counting them; with gate, each answer
// waits until gate is closed.
func refusingCA(t *testing.T, gate <-chan struct{}) (*httptest.Server, func() int) {
	t.Helper()
	var (
		mu sync.Mutex
		n  int
	)
	ca := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		if gate != nil {
			<-gate
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"type":"urn:ietf:params:acme:error:unauthorized","detail":"refused for the test"}`)
	}))
	t.Cleanup(ca.Close)
	return ca, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// A failed order is reported on its Ingress (a Warning event, once per
// failure) and retried with a doubling backoff on the controller's
// clock, while the sync returns when to come back.
func TestACMEFailureIsReportedAndRetriedWithBackoff(t *testing.T) {
	st := openStore(t)
	applyYAML(t, st, acmeIngressYAML)
	ca, requests := refusingCA(t, nil)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	rec := &recorder{}
	c := New(Config{Store: st, Recorder: rec, Now: clock, Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443},
		ACME: &ACMEConfig{Email: "ops@example.test", DirectoryURL: ca.URL + "/dir", HTTPClient: ca.Client(),
			AccountKeyFile: filepath.Join(t.TempDir(), "account.key"), WriteSecret: writeSecretTo(st), Backoff: time.Minute, MaxBackoff: 10 * time.Minute}})
	dp := &fakePlane{}
	queued := make(chan struct{}, 16)
	c.SetDataPlane(dp, func() { queued <- struct{}{} })
	t.Cleanup(c.Close)
	sync := func() reconcile.Result {
		t.Helper()
		res, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	failures := func() []recorded {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var out []recorded
		for _, e := range rec.evs {
			if e.reason == ReasonACMEFailed {
				out = append(out, e)
			}
		}
		return out
	}
	sync()
	<-queued // the order ended
	if res := sync(); res.RequeueAfter != time.Minute {
		t.Errorf("after the first failure: requeue after %v, want 1m", res.RequeueAfter)
	}
	evs := failures()
	if len(evs) != 1 || evs[0].obj.Kind != store.KindIngress || evs[0].obj.Name != "shop" || evs[0].typ != "Warning" ||
		!strings.Contains(evs[0].m, "shop.example.test") || !strings.Contains(evs[0].m, "retried at 2026-03-01T12:01:00Z") {
		t.Fatalf("failure events %+v", evs)
	}
	first := requests()
	// Within the backoff: no new order, no new event.
	if res := sync(); res.RequeueAfter != time.Minute || len(failures()) != 1 {
		t.Errorf("within the backoff: requeue %v, %d events", res.RequeueAfter, len(failures()))
	}
	if n := requests(); n != first {
		t.Errorf("the CA was asked again within the backoff (%d, then %d requests)", first, n)
	}
	clockMu.Lock()
	now = now.Add(time.Minute)
	clockMu.Unlock()
	sync()
	<-queued
	if res := sync(); res.RequeueAfter != 2*time.Minute {
		t.Errorf("after the second failure: requeue after %v, want 2m (doubled)", res.RequeueAfter)
	}
	if evs := failures(); len(evs) != 2 || !strings.Contains(evs[1].m, "failure 2") {
		t.Errorf("failure events %+v, want a second one", evs)
	}
	if requests() == first {
		t.Errorf("no new order after the backoff")
	}
}

// Without ACME configured nothing changes: no challenge, no certificate
// named, no Secret written, for the same opted-in Ingress.
func TestNoACMEFlagChangesNothing(t *testing.T) {
	st := openStore(t)
	applyYAML(t, st, acmeIngressYAML)
	c := New(Config{Store: st, Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443}})
	dp := newServingPlane(t)
	c.SetDataPlane(dp, func() {})
	res, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("sync: %v, %+v", err, res)
	}
	in, _, err := c.input()
	if err != nil {
		t.Fatal(err)
	}
	want := gatewayroutes.Compile(in, c.cfg.Routes).Config
	got := dp.config()
	if len(got.ACMEChallenges) != 0 || !slices.EqualFunc(got.Ports, want.Ports, func(a, b helperapi.GatewayPort) bool {
		return a.Port == b.Port && slices.Equal(a.Certificates, b.Certificates)
	}) {
		t.Errorf("config %+v, want the compiled one %+v", got, want)
	}
	if c.acme != nil {
		t.Errorf("an ACME manager without ACME configured")
	}
	if sec, err := st.LookupSecret("default", "shop-tls"); err == nil {
		t.Errorf("a Secret was written: %+v", sec.Metadata)
	}
}

// An opted-in Gateway's condition dockctl.io/ACMECertificates says how
// its certificates stand: Unknown (Pending) while ordered, False
// (ACMEFailed, with why) once the order failed.
func TestACMEGatewayCondition(t *testing.T) {
	st := openStore(t)
	applyYAML(t, st, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dockctl}
spec: {controllerName: dockctl.io/gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: edge
  annotations: {dockctl.io/acme: "true"}
spec:
  gatewayClassName: dockctl
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: g.example.test, tls: {certificateRefs: [{name: edge-cert}]}}
`)
	gate := make(chan struct{})
	ca, _ := refusingCA(t, gate)
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the CA's Close, which waits for its handlers
	c := New(Config{Store: st, Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443},
		ACME: &ACMEConfig{Email: "ops@example.test", DirectoryURL: ca.URL + "/dir", HTTPClient: ca.Client(),
			AccountKeyFile: filepath.Join(t.TempDir(), "account.key"), WriteSecret: writeSecretTo(st)}})
	ended := make(chan struct{}, 16)
	c.SetDataPlane(&fakePlane{}, func() { ended <- struct{}{} })
	t.Cleanup(c.Close)
	cond := func() *manifests.Condition {
		t.Helper()
		if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
			t.Fatal(err)
		}
		gw, _ := readStatus[manifests.GatewayStatus](t, st, store.ObjectRef{Kind: store.KindGateway, Namespace: "default", Name: "edge"})
		return manifests.FindCondition(gw.Conditions, CondACMECertificates)
	}
	if got := cond(); got == nil || got.Status != "Unknown" || got.Reason != gatewayroutes.ReasonPending {
		t.Errorf("while ordering: %+v, want Unknown Pending", got)
	}
	release() // the CA answers: the order fails
	<-ended
	if got := cond(); got == nil || got.Status != "False" || got.Reason != ReasonACMEFailed || !strings.Contains(got.Message, "refused for the test") {
		t.Errorf("after the failure: %+v, want False ACMEFailed with why", got)
	}
}

// dockctl's stored certificate is renewed on the sync that finds a third
// of its lifetime left, on the controller's clock, and not before.
func TestACMERenewsOnTheSyncDueByTheClock(t *testing.T) {
	st := openStore(t)
	applyYAML(t, st, acmeIngressYAML)
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := writeSecretTo(st)(&manifests.Secret{APIVersion: "v1", Kind: "Secret", Type: manifests.SecretTypeTLS,
		Metadata: manifests.ObjectMeta{Name: "shop-tls", Namespace: "default", Labels: map[string]string{ACMEManagedByLabel: ACMEManagedBy}},
		Data:     map[string][]byte{"tls.crt": certPEM(t, issued, 90*24*time.Hour, "shop.example.test"), "tls.key": []byte("KEY")}}); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{}) // holds the order's first request, so that it is seen running
	ca, requests := refusingCA(t, gate)
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	now := issued.Add(60*24*time.Hour - time.Second)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	c := New(Config{Store: st, Now: clock, Routes: gatewayroutes.Options{HTTPPort: 80, HTTPSPort: 443},
		ACME: &ACMEConfig{Email: "ops@example.test", DirectoryURL: ca.URL + "/dir", HTTPClient: ca.Client(),
			AccountKeyFile: filepath.Join(t.TempDir(), "account.key"), WriteSecret: writeSecretTo(st)}})
	ended := make(chan struct{}, 16)
	c.SetDataPlane(&fakePlane{}, func() { ended <- struct{}{} })
	t.Cleanup(c.Close)
	sync := func() {
		t.Helper()
		if _, err := c.Reconcile(context.Background(), reconcile.Request{Key: Key}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() bool {
		c.acme.mu.Lock()
		defer c.acme.mu.Unlock()
		st := c.acme.certs[gatewayroutes.ObjectRef{Namespace: "default", Name: "shop-tls"}]
		return st != nil && st.running
	}
	sync()
	// An order starts within the sync (plan marks it running at once).
	if running() {
		t.Fatalf("an order a second before renewal is due")
	}
	clockMu.Lock()
	now = now.Add(time.Second)
	clockMu.Unlock()
	sync()
	if !running() {
		t.Fatalf("no order when renewal was due")
	}
	release()
	<-ended
	if requests() == 0 {
		t.Errorf("the CA was not asked")
	}
}
