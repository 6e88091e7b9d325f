package dataplane

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/dockctl/dockctl/internal/clusterdns"
	"github.com/dockctl/dockctl/internal/helperapi"
)

// dnsServer is what the dns mode needs of package clusterdns's *Server.
type dnsServer interface {
	Serve(ctx context.Context, addr string) error // UDP and TCP, until ctx is done
	Apply(cfg helperapi.DNSConfig) error
	Generation() int64
}

// newDNSServer builds the dns mode's server; tests substitute a fake.
var newDNSServer = func(cfg helperapi.DNSConfig, log *slog.Logger) (dnsServer, error) {
	return clusterdns.New(cfg, log)
}

// dnsTarget is the DNS server as a control server's Target; the first
// config applied creates the server.
type dnsTarget struct {
	srv dnsServer
	log *slog.Logger
}

func (t *dnsTarget) Generation() int64 {
	if t.srv == nil {
		return 0
	}
	return t.srv.Generation()
}

func (t *dnsTarget) Apply(raw json.RawMessage) (int64, error) {
	var cfg helperapi.DNSConfig
	if err := decodeStrict(raw, &cfg); err != nil {
		return 0, fmt.Errorf("dns config: %w", err)
	}
	if t.srv != nil {
		return cfg.Generation, t.srv.Apply(cfg)
	}
	srv, err := newDNSServer(cfg, t.log)
	if err != nil {
		return 0, err
	}
	t.srv = srv
	return cfg.Generation, nil
}

func runDNS(ctx context.Context, args []string, stderr io.Writer) int {
	var listen *string
	f, log, code, ok := parseServe(helperapi.ModeDNS, args, stderr, func(fs *flag.FlagSet) {
		listen = fs.String("listen", "0.0.0.0:53", "address the DNS server listens on (UDP and TCP)")
	})
	if !ok {
		return code
	}
	t := &dnsTarget{log: log}
	return serve(ctx, f, log, t, func(ctx context.Context) error { return t.srv.Serve(ctx, *listen) }, nil)
}
