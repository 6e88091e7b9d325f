package gatewayroutes

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// Resolver gives what the table leaves to the controller: the ready
// endpoints of a Service port (addresses and target ports), and the
// certificate and key of a kubernetes.io/tls Secret.
type Resolver struct {
	Endpoints   func(BackendRef) []helperapi.Endpoint
	Certificate func(ObjectRef) (certPEM, keyPEM []byte, ok bool)
}

// Resolve returns the config to push for generation: a copy of the
// table's with each valid backend's ready endpoints and the certificates
// its HTTPS ports name (a certificate that cannot be read is left out, and
// the port presents the others).
func (t *Table) Resolve(gen int64, r Resolver) helperapi.GatewayConfig {
	cfg := deepCopy(t.Config)
	cfg.Generation = gen
	names := map[string]bool{}
	for pi := range cfg.Ports {
		p := &cfg.Ports[pi]
		for _, n := range p.Certificates {
			names[n] = true
		}
		for hi := range p.Hosts {
			for ri := range p.Hosts[hi].Routes {
				bs := p.Hosts[hi].Routes[ri].Backends
				for bi := range bs {
					if bs[bi].Invalid {
						continue
					}
					ref, err := ParseBackendRef(bs[bi].Service)
					if err != nil {
						bs[bi].Invalid = true
						continue
					}
					if eps := r.Endpoints(ref); eps != nil {
						bs[bi].Endpoints = eps
					}
				}
			}
		}
	}
	for _, n := range sortedNames(names) {
		namespace, name, _ := strings.Cut(n, "/")
		ref := ObjectRef{namespace, name}
		if cert, key, ok := r.Certificate(ref); ok {
			cfg.Certificates = append(cfg.Certificates, helperapi.GatewayCertificate{Name: n, CertPEM: cert, KeyPEM: key})
		}
	}
	return cfg
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// deepCopy copies a config through its wire format, which is what the
// helper receives anyway.
func deepCopy(c helperapi.GatewayConfig) helperapi.GatewayConfig {
	b, err := json.Marshal(c)
	if err != nil {
		panic("gatewayroutes: config does not marshal: " + err.Error())
	}
	var out helperapi.GatewayConfig
	if err := json.Unmarshal(b, &out); err != nil {
		panic("gatewayroutes: config does not unmarshal: " + err.Error())
	}
	return out
}
