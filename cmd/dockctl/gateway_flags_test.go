package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// The gateway's flags are checked before the controller starts: a port
// out of range, the same port for HTTP and HTTPS, or an empty class name
// is an error, not a gateway that cannot serve.
func TestGatewayFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    gatewayOptions
		wantErr string
	}{
		{name: "the defaults", opts: gatewayOptions{ingressClasses: []string{"dockctl"}, httpPort: 80, httpsPort: 443}},
		{name: "high ports", opts: gatewayOptions{ingressClasses: []string{"dockctl", "nginx"}, httpPort: 8080, httpsPort: 8443}},
		{name: "port out of range", opts: gatewayOptions{httpPort: 0, httpsPort: 443}, wantErr: "--gateway-http-port 0"},
		{name: "one port for both", opts: gatewayOptions{httpPort: 8080, httpsPort: 8080}, wantErr: "both 8080"},
		{name: "an empty class", opts: gatewayOptions{ingressClasses: []string{""}, httpPort: 80, httpsPort: 443}, wantErr: "--ingress-class"},
		{name: "ACME by default", opts: gatewayOptions{httpPort: 80, httpsPort: 443, acmeEmail: "ops@example.test", acmeDirectory: "https://acme.example.test/directory"}},
		{name: "ACME directory not https", opts: gatewayOptions{httpPort: 80, httpsPort: 443, acmeEmail: "ops@example.test", acmeDirectory: "http://acme.example.test/dir"}, wantErr: "--acme-directory"},
		{name: "ACME CA file missing", opts: gatewayOptions{httpPort: 80, httpsPort: 443, acmeEmail: "ops@example.test", acmeDirectory: "https://127.0.0.1:14000/dir", acmeCAFile: "/nonexistent/ca.pem"}, wantErr: "--acme-ca-file"},
		{name: "ACME flags ignored without an email", opts: gatewayOptions{httpPort: 80, httpsPort: 443, acmeDirectory: "ftp://nowhere"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.check()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("check: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("check: %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// Without --acme-email the gateway controller gets no ACME configuration
// (nothing changes); with it, the account key lives in the state
// directory.
func TestACMEConfigOnlyWithAnEmail(t *testing.T) {
	st, err := store.Open(t.TempDir(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := (&gatewayOptions{acmeDirectory: "https://acme.example.test/dir"}).acme(st); cfg != nil {
		t.Errorf("ACME configured without --acme-email: %+v", cfg)
	}
	cfg := (&gatewayOptions{acmeEmail: "ops@example.test", acmeDirectory: "https://acme.example.test/dir"}).acme(st)
	if cfg == nil || cfg.Email != "ops@example.test" || cfg.DirectoryURL != "https://acme.example.test/dir" ||
		cfg.AccountKeyFile != filepath.Join(st.Dir(), "acme", "account.key") || cfg.WriteSecret == nil {
		t.Errorf("ACME config %+v", cfg)
	}
}
