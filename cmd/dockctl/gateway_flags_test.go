package main

import (
	"strings"
	"testing"
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
