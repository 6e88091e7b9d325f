package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/reconciler/gateway"
	"github.com/dockctl/dockctl/store"
)

// gatewayOptions are the controller's flags of the gateway
// (docs/design.md §10, the gateway).
type gatewayOptions struct {
	ingressClasses      []string
	httpPort, httpsPort int
}

func (o *gatewayOptions) addFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.ingressClasses, "ingress-class", []string{gatewayroutes.DefaultIngressClass},
		"ingressClassNames the gateway serves (comma-separated), besides Ingresses without one when no IngressClass is the default; an Ingress of another class is reported as not served")
	f.IntVar(&o.httpPort, "gateway-http-port", 80, "host port the gateway serves Ingresses' HTTP on (on --service-address)")
	f.IntVar(&o.httpsPort, "gateway-https-port", 443, "host port the gateway serves Ingresses' HTTPS on (on --service-address)")
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
	return nil
}

// controller is the gateway controller of these flags. It compiles the
// routing objects and reports their status; package reconciler connects
// it to the Service controller, which runs the gateway helper
// (docs/design.md §10).
func (o *gatewayOptions) controller(st *store.Store, events reconciler.EventRecorder, address string, log *slog.Logger) *gateway.Controller {
	return gateway.New(gateway.Config{Store: st, Recorder: events, Logger: log, Address: address,
		Routes: gatewayroutes.Options{IngressClasses: o.ingressClasses, HTTPPort: o.httpPort, HTTPSPort: o.httpsPort}})
}
