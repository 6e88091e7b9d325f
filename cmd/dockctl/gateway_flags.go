package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/reconciler/gateway"
	"github.com/dockctl/dockctl/store"
)

// gatewayOptions are the controller's flags of the gateway
// (docs/design.md §10, the gateway).
type gatewayOptions struct {
	ingressClasses      []string
	httpPort, httpsPort int
	// Automatic HTTPS (docs/design.md §10, ACME): off without acmeEmail.
	acmeEmail, acmeDirectory, acmeCAFile string
	acmeRoots                            *x509.CertPool // of acmeCAFile, read by check
}

func (o *gatewayOptions) addFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.ingressClasses, "ingress-class", []string{gatewayroutes.DefaultIngressClass},
		"ingressClassNames the gateway serves (comma-separated), besides Ingresses without one when no IngressClass is the default; an Ingress of another class is reported as not served")
	f.IntVar(&o.httpPort, "gateway-http-port", 80, "host port the gateway serves Ingresses' HTTP on (on --service-address)")
	f.IntVar(&o.httpsPort, "gateway-https-port", 443, "host port the gateway serves Ingresses' HTTPS on (on --service-address)")
	f.StringVar(&o.acmeEmail, "acme-email", "", "contact of the ACME account: with it, opted-in Ingress TLS hosts and Gateway HTTPS listeners get certificates by ACME (HTTP-01 through the gateway); without it, none")
	f.StringVar(&o.acmeDirectory, "acme-directory", gateway.LetsEncryptDirectory, "ACME directory URL of the CA (with --acme-email)")
	f.StringVar(&o.acmeCAFile, "acme-ca-file", "", "PEM file of CA certificates trusted for the ACME directory's HTTPS besides the system's (a test CA)")
}

func (o *gatewayOptions) check() error {
	for _, p := range []struct {
		flag string
		port int
	}{{"--gateway-http-port", o.httpPort}, {"--gateway-https-port", o.httpsPort}} {
		if p.port < 1 || p.port > 65535 {
			return fmt.Errorf("%s %d: must be a port between 1 and 65535", p.flag, p.port)
		}
	}
	if o.httpPort == o.httpsPort {
		return fmt.Errorf("--gateway-http-port and --gateway-https-port are both %d: give two ports", o.httpPort)
	}
	for _, c := range o.ingressClasses {
		if c == "" {
			return fmt.Errorf("--ingress-class: an empty class name")
		}
	}
	if o.acmeEmail == "" {
		return nil
	}
	if u, err := url.Parse(o.acmeDirectory); err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("--acme-directory %q: want an https URL", o.acmeDirectory)
	}
	if o.acmeCAFile != "" {
		pem, err := os.ReadFile(o.acmeCAFile)
		if err != nil {
			return fmt.Errorf("--acme-ca-file: %w", err)
		}
		if o.acmeRoots, err = x509.SystemCertPool(); err != nil {
			o.acmeRoots = x509.NewCertPool()
		}
		if !o.acmeRoots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--acme-ca-file %s: no PEM certificate", o.acmeCAFile)
		}
	}
	return nil
}

// acme is the ACME configuration of the flags; nil without --acme-email.
// The account key is kept in the state directory.
func (o *gatewayOptions) acme(st *store.Store) *gateway.ACMEConfig {
	if o.acmeEmail == "" {
		return nil
	}
	hc := &http.Client{Timeout: time.Minute}
	if o.acmeRoots != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: o.acmeRoots, MinVersion: tls.VersionTLS12}
		hc.Transport = t
	}
	return &gateway.ACMEConfig{Email: o.acmeEmail, DirectoryURL: o.acmeDirectory, HTTPClient: hc,
		AccountKeyFile: filepath.Join(st.Dir(), "acme", "account.key"),
		WriteSecret: func(sec *manifests.Secret) error {
			// Its own manager: a user's apply of the same name
			// conflicts instead of silently taking it over.
			_, err := st.Apply(store.Bundle{Secrets: []*manifests.Secret{sec}}, store.ApplyOptions{Manager: gateway.ACMEManagedBy})
			return err
		}}
}

// controller is the gateway controller of these flags. It compiles the
// routing objects and reports their status; package reconciler connects
// it to the Service controller, which runs the gateway helper
// (docs/design.md §10).
func (o *gatewayOptions) controller(st *store.Store, events reconciler.EventRecorder, address string, log *slog.Logger) *gateway.Controller {
	return gateway.New(gateway.Config{Store: st, Recorder: events, Logger: log, Address: address, ACME: o.acme(st),
		Routes: gatewayroutes.Options{IngressClasses: o.ingressClasses, HTTPPort: o.httpPort, HTTPSPort: o.httpsPort}})
}
