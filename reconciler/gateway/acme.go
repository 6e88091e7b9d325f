package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Automatic HTTPS (docs/design.md §10, ACME). The controller, never the
// gateway helper (which holds only the certificates it serves), runs the
// ACME client: it orders a certificate for the hosts that want one, hands
// the HTTP-01 key authorizations to the gateway in its config (the
// gateway answers /.well-known/acme-challenge/TOKEN on its HTTP port
// before routing), tells the CA to validate only once the gateway
// acknowledged that config, and stores the certificate and its key as a
// kubernetes.io/tls Secret labelled as dockctl's, which the existing SNI
// path then serves. Orders run in goroutines of their own: a slow or
// failing CA never blocks a sync or another certificate.

// Opt-in annotations: a host gets a certificate only when its Ingress or
// Gateway asks for one (no host is issued for silently).
const (
	// AnnotationACME is dockctl's own opt-in ("true").
	AnnotationACME = manifests.ACMEAnnotation
	// AnnotationClusterIssuer and AnnotationIssuer are cert-manager's,
	// honoured as "this host wants a certificate" (their value, the
	// issuer's name, is not read: dockctl has one ACME account).
	AnnotationClusterIssuer = "cert-manager.io/cluster-issuer"
	AnnotationIssuer        = "cert-manager.io/issuer"
)

// ACME Secrets' metadata: the label says dockctl made (and may replace)
// the Secret; the annotation lists the hosts it was ordered for.
const (
	ACMEManagedByLabel  = "app.kubernetes.io/managed-by"
	ACMEManagedBy       = "dockctl-acme"
	ACMEHostsAnnotation = "acme.dockctl.io/hosts"
	// ReasonACMEFailed is the Warning event of a failed order.
	ReasonACMEFailed = "ACMEFailed"
	// CondACMECertificates is a Gateway's condition on its ACME
	// certificates (an implementation-specific type, domain-prefixed as
	// the Gateway API asks).
	CondACMECertificates = "dockctl.io/ACMECertificates"
)

// LetsEncryptDirectory is the default --acme-directory.
const LetsEncryptDirectory = "https://acme-v02.api.letsencrypt.org/directory"

// ACMEConfig enables automatic HTTPS; nil in Config: nothing changes.
type ACMEConfig struct {
	Email        string
	DirectoryURL string
	// HTTPClient talks to the CA (trusting --acme-ca-file); nil: the
	// default client.
	HTTPClient *http.Client
	// AccountKeyFile is where the account key is kept (created 0600).
	AccountKeyFile string
	// WriteSecret stores an issued certificate's Secret.
	WriteSecret func(*manifests.Secret) error
	// Backoff is the first retry delay after a failure, doubled per
	// failure up to MaxBackoff (1 min and 1 h when zero).
	Backoff, MaxBackoff time.Duration
	// OrderTimeout bounds one order: the gateway serving its challenges
	// and the CA's answers (10 min when zero).
	OrderTimeout time.Duration
}

// certWant is one certificate the routing objects want.
type certWant struct {
	secret gatewayroutes.ObjectRef
	hosts  []string // sorted, lower case
	owners []store.ObjectRef
	// unnamed: Ingress TLS entries without a secretName, whose Secret
	// (NAME-tls) no compile names: added to the HTTPS port here.
	unnamed bool
}

// acmeCert is what the controller knows of one certificate's orders.
type acmeCert struct {
	running  bool
	failures int
	retryAt  time.Time
	err      string // the last failure ("": none since the last success)
}

// acmeManager runs the orders.
type acmeManager struct {
	cfg ACMEConfig
	now func() time.Time
	log *slog.Logger
	ctx context.Context
	// stop cancels every order (Close).
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu         sync.Mutex
	certs      map[gatewayroutes.ObjectRef]*acmeCert
	challenges map[string]helperapi.GatewayACMEChallenge // by token
	// servedIn is the config generation that first carried each token.
	servedIn map[string]int64
	// changed is closed and replaced whenever a challenge's state or a
	// served generation may have changed: waiting orders look again.
	changed chan struct{}
	client  *acme.Client // registered; nil until the first order
	// notify queues the controller's sync; programmed says whether the
	// gateway acknowledged a config generation (both from SetDataPlane).
	notify     func()
	programmed func(gen int64) bool
}

func newACMEManager(cfg ACMEConfig, now func() time.Time, log *slog.Logger) *acmeManager {
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Minute
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = time.Hour
	}
	if cfg.OrderTimeout == 0 {
		cfg.OrderTimeout = 10 * time.Minute
	}
	if cfg.DirectoryURL == "" {
		cfg.DirectoryURL = LetsEncryptDirectory
	}
	ctx, stop := context.WithCancel(context.Background())
	return &acmeManager{cfg: cfg, now: now, log: log, ctx: ctx, stop: stop, certs: map[gatewayroutes.ObjectRef]*acmeCert{},
		challenges: map[string]helperapi.GatewayACMEChallenge{}, servedIn: map[string]int64{}, changed: make(chan struct{})}
}

// Close cancels the orders under way and waits for them.
func (c *Controller) Close() {
	if c.acme != nil {
		c.acme.stop()
		c.acme.wg.Wait()
	}
}

// wantsACME reports whether an object's annotations opt in.
func wantsACME(m *manifests.ObjectMeta) bool {
	a := m.Annotations
	return a[AnnotationACME] == "true" || a[AnnotationClusterIssuer] != "" || a[AnnotationIssuer] != ""
}

// acmeWants are the certificates the served routing objects want: an
// opted-in Ingress's TLS hosts whose secretName is unset (one Secret,
// NAME-tls) or names a Secret that is missing or dockctl's; an opted-in
// Gateway's HTTPS listeners (TLS mode Terminate) with a hostname whose
// first certificateRef names such a Secret of its namespace, as
// cert-manager's Gateway support does. Wildcards are left out: HTTP-01
// cannot prove them. secrets are the live Secrets.
func acmeWants(in gatewayroutes.Input, t *gatewayroutes.Table, secrets map[gatewayroutes.ObjectRef]*manifests.Secret) []certWant {
	byRef := map[gatewayroutes.ObjectRef]*certWant{}
	var order []gatewayroutes.ObjectRef
	add := func(secret gatewayroutes.ObjectRef, owner store.ObjectRef, unnamed bool, hosts ...string) {
		if s := secrets[secret]; s != nil && s.Metadata.Labels[ACMEManagedByLabel] != ACMEManagedBy {
			return // the user's Secret: never replaced
		}
		w := byRef[secret]
		if w == nil {
			w = &certWant{secret: secret, unnamed: unnamed}
			byRef[secret] = w
			order = append(order, secret)
		}
		for _, h := range hosts {
			h = strings.ToLower(strings.TrimSuffix(h, "."))
			if h != "" && !strings.Contains(h, "*") && !slices.Contains(w.hosts, h) {
				w.hosts = append(w.hosts, h)
			}
		}
		if !slices.Contains(w.owners, owner) {
			w.owners = append(w.owners, owner)
		}
	}
	for _, ing := range in.Ingresses {
		ref := gatewayroutes.ObjectRef{Namespace: ing.Metadata.NamespaceOrDefault(), Name: ing.Metadata.Name}
		if !wantsACME(&ing.Metadata) || !t.Status.Ingresses[ref].Served {
			continue
		}
		owner := store.ObjectRef{Kind: store.KindIngress, Namespace: ref.Namespace, Name: ref.Name}
		for _, tls := range ing.Spec.TLS {
			if tls.SecretName == "" {
				add(gatewayroutes.ObjectRef{Namespace: ref.Namespace, Name: ref.Name + "-tls"}, owner, true, tls.Hosts...)
			} else {
				add(gatewayroutes.ObjectRef{Namespace: ref.Namespace, Name: tls.SecretName}, owner, false, tls.Hosts...)
			}
		}
	}
	for _, gw := range in.Gateways {
		ref := gatewayroutes.ObjectRef{Namespace: gw.Metadata.NamespaceOrDefault(), Name: gw.Metadata.Name}
		if _, ours := t.Status.Gateways[ref]; !ours || !wantsACME(&gw.Metadata) {
			continue
		}
		owner := store.ObjectRef{Kind: store.KindGateway, Namespace: ref.Namespace, Name: ref.Name}
		for _, l := range gw.Spec.Listeners {
			if l.Protocol != helperapi.GatewayHTTPS || l.Hostname == nil || l.TLS == nil || len(l.TLS.CertificateRefs) == 0 ||
				l.TLS.Mode != nil && *l.TLS.Mode != manifests.TLSModeTerminate {
				continue
			}
			cr := l.TLS.CertificateRefs[0]
			if cr.Group != nil && *cr.Group != "" || cr.Kind != nil && *cr.Kind != "Secret" || cr.Namespace != nil && *cr.Namespace != ref.Namespace {
				continue
			}
			add(gatewayroutes.ObjectRef{Namespace: ref.Namespace, Name: cr.Name}, owner, false, *l.Hostname)
		}
	}
	var out []certWant
	for _, r := range order {
		w := byRef[r]
		if len(w.hosts) == 0 {
			continue
		}
		slices.Sort(w.hosts)
		out = append(out, *w)
	}
	return out
}

// renewAt is when a certificate is renewed: once less than a third of
// its lifetime remains (docs/design.md §10, ACME).
func renewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Add(-life / 3)
}

// needsOrder says why the Secret of w needs a (new) certificate at now,
// "" when it does not: missing, unreadable, not covering the hosts, or
// due for renewal.
func needsOrder(w certWant, sec *manifests.Secret, now time.Time) string {
	if sec == nil {
		return "no certificate yet"
	}
	leaf, err := leafOf(sec.Data["tls.crt"])
	if err != nil {
		return "the stored certificate is unreadable"
	}
	for _, h := range w.hosts {
		if leaf.VerifyHostname(h) != nil {
			return "the stored certificate does not cover " + h
		}
	}
	if !now.Before(renewAt(leaf)) {
		return "due for renewal"
	}
	return ""
}

func leafOf(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

// backoff is the delay before retrying after n failures.
func (m *acmeManager) backoff(n int) time.Duration {
	d := m.cfg.Backoff
	for i := 1; i < n && d < m.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, m.cfg.MaxBackoff)
}

// plan starts an order for each wanted certificate that needs one and is
// neither under way nor backing off; it returns the problems to report
// per owner and the delay until the earliest retry (0: none).
func (m *acmeManager) plan(wants []certWant, secrets map[gatewayroutes.ObjectRef]*manifests.Secret, now time.Time) (map[store.ObjectRef][]event, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	problems := map[store.ObjectRef][]event{}
	var retry time.Duration
	wanted := map[gatewayroutes.ObjectRef]bool{}
	for _, w := range wants {
		wanted[w.secret] = true
		st := m.certs[w.secret]
		if st == nil {
			st = &acmeCert{}
			m.certs[w.secret] = st
		}
		if st.err != "" {
			for _, o := range w.owners {
				problems[o] = append(problems[o], event{ReasonACMEFailed, fmt.Sprintf("certificate for %s (Secret %s): %s (failure %d, retried at %s)",
					strings.Join(w.hosts, ", "), w.secret, st.err, st.failures, st.retryAt.UTC().Format(time.RFC3339))})
			}
		}
		why := needsOrder(w, secrets[w.secret], now)
		if why == "" || st.running {
			continue
		}
		if now.Before(st.retryAt) {
			if d := st.retryAt.Sub(now); retry == 0 || d < retry {
				retry = d
			}
			continue
		}
		st.running = true
		m.wg.Add(1)
		go m.order(w, why, m.notify)
	}
	for ref, st := range m.certs {
		if !wanted[ref] && !st.running {
			delete(m.certs, ref) // no longer wanted: a new want starts afresh
		}
	}
	return problems, retry
}

// state is the ACME condition of a Gateway's certificates: True when
// all are stored, False when one failed, Unknown while one is ordered.
func (m *acmeManager) state(w certWant, sec *manifests.Secret) (status, reason, message string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.certs[w.secret]
	switch {
	case st != nil && st.err != "":
		return "False", ReasonACMEFailed, st.err
	case sec == nil:
		return "Unknown", gatewayroutes.ReasonPending, "ordering a certificate for " + strings.Join(w.hosts, ", ")
	}
	return "True", "Issued", ""
}

// order runs one order to its end and records how it ended.
func (m *acmeManager) order(w certWant, why string, notify func()) {
	defer m.wg.Done()
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.OrderTimeout)
	defer cancel()
	err := m.issue(ctx, w)
	m.mu.Lock()
	st := m.certs[w.secret]
	st.running = false
	if err != nil {
		st.failures++
		st.err = err.Error()
		st.retryAt = m.now().Add(m.backoff(st.failures))
	} else {
		st.failures, st.err, st.retryAt = 0, "", time.Time{}
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("acme order failed", "secret", w.secret.String(), "hosts", w.hosts, "reason", why, "err", err)
	} else {
		m.log.Info("acme certificate stored", "secret", w.secret.String(), "hosts", w.hosts, "reason", why)
	}
	if notify != nil {
		notify()
	}
}

// issue orders w's certificate and stores it.
func (m *acmeManager) issue(ctx context.Context, w certWant) error {
	cl, err := m.account(ctx)
	if err != nil {
		return err
	}
	o, err := cl.AuthorizeOrder(ctx, acme.DomainIDs(w.hosts...))
	if err != nil {
		return fmt.Errorf("new order: %w", err)
	}
	for _, u := range o.AuthzURLs {
		if err := m.authorize(ctx, cl, u); err != nil {
			return err
		}
	}
	orderURL := o.URI
	if o, err = cl.WaitOrder(ctx, orderURL); err != nil {
		return fmt.Errorf("order: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certificate key: %w", err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: w.hosts}, key)
	if err != nil {
		return fmt.Errorf("certificate request: %w", err)
	}
	ders, _, err := cl.CreateOrderCert(ctx, o.FinalizeURL, csr, true)
	if err != nil {
		// RFC 8555 §7.4 does not require a Location header on the
		// finalize answer, which the client waits on when the order is
		// still processing (pebble sends none): wait on the order's own
		// URL instead, and fetch the certificate from there.
		done, werr := cl.WaitOrder(ctx, orderURL)
		if werr != nil || done.Status != acme.StatusValid || done.CertURL == "" {
			return fmt.Errorf("finalize: %w", err)
		}
		if ders, err = cl.FetchCert(ctx, done.CertURL, true); err != nil {
			return fmt.Errorf("certificate: %w", err)
		}
	}
	var certPEM []byte
	for _, d := range ders {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d})...)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("certificate key: %w", err)
	}
	sec := &manifests.Secret{APIVersion: "v1", Kind: "Secret", Type: manifests.SecretTypeTLS,
		Metadata: manifests.ObjectMeta{Name: w.secret.Name, Namespace: w.secret.Namespace,
			Labels:      map[string]string{ACMEManagedByLabel: ACMEManagedBy},
			Annotations: map[string]string{ACMEHostsAnnotation: strings.Join(w.hosts, ",")}},
		Data: map[string][]byte{"tls.crt": certPEM, "tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}}
	if err := m.cfg.WriteSecret(sec); err != nil {
		return fmt.Errorf("store Secret %s: %w", w.secret, err)
	}
	return nil
}

// authorize proves control of one authorization's host by HTTP-01: the
// key authorization is handed to the gateway, and the CA told to look
// only once the gateway acknowledged a config that carries it.
func (m *acmeManager) authorize(ctx context.Context, cl *acme.Client, url string) error {
	z, err := cl.GetAuthorization(ctx, url)
	if err != nil {
		return fmt.Errorf("authorization: %w", err)
	}
	if z.Status == acme.StatusValid {
		return nil
	}
	var ch *acme.Challenge
	for _, c := range z.Challenges {
		if c.Type == "http-01" {
			ch = c
		}
	}
	if ch == nil {
		return fmt.Errorf("authorization of %s: the CA offers no http-01 challenge", z.Identifier.Value)
	}
	ka, err := cl.HTTP01ChallengeResponse(ch.Token)
	if err != nil {
		return fmt.Errorf("challenge of %s: %w", z.Identifier.Value, err)
	}
	m.setChallenge(ch.Token, &helperapi.GatewayACMEChallenge{Host: strings.ToLower(z.Identifier.Value), Token: ch.Token, KeyAuthorization: ka})
	defer m.setChallenge(ch.Token, nil)
	if err := m.waitServed(ctx, ch.Token); err != nil {
		return fmt.Errorf("challenge of %s: the gateway did not serve it: %w", z.Identifier.Value, err)
	}
	if _, err := cl.Accept(ctx, ch); err != nil {
		return fmt.Errorf("challenge of %s: %w", z.Identifier.Value, err)
	}
	if _, err := cl.WaitAuthorization(ctx, z.URI); err != nil {
		return fmt.Errorf("authorization of %s: %w", z.Identifier.Value, err)
	}
	return nil
}

// setChallenge adds (or, with nil, removes) a challenge and queues the
// controller's sync, which pushes it to the gateway.
func (m *acmeManager) setChallenge(token string, ch *helperapi.GatewayACMEChallenge) {
	m.mu.Lock()
	if ch != nil {
		m.challenges[token] = *ch
	} else {
		delete(m.challenges, token)
		delete(m.servedIn, token)
	}
	notify := m.notify
	m.mu.Unlock()
	if notify != nil {
		notify()
	}
}

// pending are the challenges to serve, sorted by token.
func (m *acmeManager) pending() []helperapi.GatewayACMEChallenge {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []helperapi.GatewayACMEChallenge
	for _, c := range m.challenges {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b helperapi.GatewayACMEChallenge) int { return strings.Compare(a.Token, b.Token) })
	return out
}

// served records that config generation gen carries chs, and wakes the
// orders waiting for the gateway to serve them.
func (m *acmeManager) served(chs []helperapi.GatewayACMEChallenge, gen int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range chs {
		if _, ok := m.servedIn[c.Token]; !ok {
			m.servedIn[c.Token] = gen
		}
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// waitServed waits until the gateway acknowledged a config carrying
// token (each sync wakes it: the acknowledgement queues one).
func (m *acmeManager) waitServed(ctx context.Context, token string) error {
	for {
		m.mu.Lock()
		gen, ok := m.servedIn[token]
		changed, programmed := m.changed, m.programmed
		m.mu.Unlock()
		if ok && programmed != nil && programmed(gen) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// account returns the registered client, creating the account key (in
// the state directory, 0600) and registering it on first use.
func (m *acmeManager) account(ctx context.Context) (*acme.Client, error) {
	m.mu.Lock()
	cl := m.client
	m.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	key, err := loadOrCreateKey(m.cfg.AccountKeyFile)
	if err != nil {
		return nil, err
	}
	cl = &acme.Client{Key: key, DirectoryURL: m.cfg.DirectoryURL, HTTPClient: m.cfg.HTTPClient, UserAgent: "dockctl"}
	acct := &acme.Account{Contact: []string{"mailto:" + m.cfg.Email}}
	if _, err := cl.Register(ctx, acct, acme.AcceptTOS); err != nil && !errors.Is(err, acme.ErrAccountAlreadyExists) {
		return nil, fmt.Errorf("acme account at %s: %w", m.cfg.DirectoryURL, err)
	}
	m.mu.Lock()
	m.client = cl
	m.mu.Unlock()
	return cl, nil
}

// loadOrCreateKey reads the account key at path, or creates one there
// (0600, its directory 0700): losing it only means a new account.
func loadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	if b, err := os.ReadFile(path); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("acme account key %s: no PEM block", path)
		}
		k, err := x509.ParseECPrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("acme account key %s: %w", path, err)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("acme account key: %w", err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("acme account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("acme account key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("acme account key: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("acme account key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("acme account key: %w", err)
	}
	return k, nil
}

// addACME completes a compiled config with what ACME adds: the Secrets
// of Ingress TLS entries without a secretName, once issued, on the HTTPS
// port (the compile names none for them), and the pending challenges,
// with the HTTP port that answers them when no route made one.
func addACME(cfg *helperapi.GatewayConfig, opts gatewayroutes.Options, wants []certWant, tlsSecrets map[gatewayroutes.ObjectRef]bool, chs []helperapi.GatewayACMEChallenge) {
	for _, w := range wants {
		if !w.unnamed || !tlsSecrets[w.secret] {
			continue
		}
		for i := range cfg.Ports {
			p := &cfg.Ports[i]
			if p.Port == opts.HTTPSPort && p.Protocol == helperapi.GatewayHTTPS && !slices.Contains(p.Certificates, w.secret.String()) {
				p.Certificates = append(p.Certificates, w.secret.String())
				slices.Sort(p.Certificates)
			}
		}
	}
	if len(chs) == 0 {
		return
	}
	cfg.ACMEChallenges = chs
	for _, p := range cfg.Ports {
		if p.Protocol == helperapi.GatewayHTTP && p.Port == opts.HTTPPort {
			return
		}
	}
	cfg.Ports = append(cfg.Ports, helperapi.GatewayPort{Port: opts.HTTPPort, Protocol: helperapi.GatewayHTTP, Hosts: []helperapi.GatewayHost{}})
	slices.SortFunc(cfg.Ports, func(a, b helperapi.GatewayPort) int { return a.Port - b.Port })
}

// acmeGatewayConditions adds each opted-in Gateway's ACME condition
// (CondACMECertificates) to its status: False when an order of its
// failed, Unknown while one is under way, else True.
func (m *acmeManager) acmeGatewayConditions(statuses map[store.ObjectRef]objectStatus, wants []certWant, secrets map[gatewayroutes.ObjectRef]*manifests.Secret, gens map[store.ObjectRef]int64, prev map[store.ObjectRef][]manifests.Condition, now time.Time) {
	type agg struct{ status, reason, message string }
	per := map[store.ObjectRef]*agg{}
	rank := map[string]int{"True": 0, "Unknown": 1, "False": 2}
	for _, w := range wants {
		status, reason, message := m.state(w, secrets[w.secret])
		for _, o := range w.owners {
			if o.Kind != store.KindGateway {
				continue
			}
			if a := per[o]; a == nil || rank[status] > rank[a.status] {
				per[o] = &agg{status, reason, message}
			}
		}
	}
	for ref, a := range per {
		os, ok := statuses[ref]
		gs, isGW := os.status.(manifests.GatewayStatus)
		if !ok || !isGW {
			continue
		}
		c := manifests.Condition{Type: CondACMECertificates, Status: a.status, Reason: a.reason, Message: a.message,
			ObservedGeneration: gens[ref], LastTransitionTime: now.UTC().Truncate(time.Second)}
		if o := manifests.FindCondition(prev[ref], c.Type); o != nil && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
		gs.Conditions = append(gs.Conditions, c)
		os.status = gs
		statuses[ref] = os
	}
}
