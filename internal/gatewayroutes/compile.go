package gatewayroutes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// entry is one route on its way into the snapshot, with its sort key.
type entry struct {
	route helperapi.GatewayRoute
	// fallback: an Ingress's defaultBackend, after every rule.
	fallback bool
	// Precedence inputs (see less).
	exact              bool
	prefixLen          int
	method             bool
	headers, query     int
	created            time.Time
	owner              string // namespace/name
	ruleIndex, matchIx int
}

// less orders routes by the Gateway API's HTTPRoute match precedence,
// which the Ingress rules (Exact before Prefix, longest prefix) agree with.
func less(a, b *entry) int {
	if a.fallback != b.fallback {
		return boolFirst(b.fallback, a.fallback)
	}
	if a.exact != b.exact {
		if a.exact {
			return -1
		}
		return 1
	}
	return cmp.Or(
		cmp.Compare(b.prefixLen, a.prefixLen),
		boolFirst(a.method, b.method),
		cmp.Compare(b.headers, a.headers),
		cmp.Compare(b.query, a.query),
		a.created.Compare(b.created),
		cmp.Compare(a.owner, b.owner),
		cmp.Compare(a.ruleIndex, b.ruleIndex),
		cmp.Compare(a.matchIx, b.matchIx),
	)
}

func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// portTable gathers one port's hosts while compiling.
type portTable struct {
	protocol string
	certs    map[string]bool
	hosts    map[hostKey][]*entry
}

type hostKey struct {
	name        string
	singleLabel bool
}

type compiler struct {
	in    *Input
	opts  Options
	ports map[int]*portTable
	table *Table
}

// Compile builds the route table and the status of every object of in.
func Compile(in Input, opts Options) *Table {
	if opts.ControllerName == "" {
		opts.ControllerName = DefaultControllerName
	}
	if opts.IngressClasses == nil {
		opts.IngressClasses = []string{DefaultIngressClass}
	}
	c := &compiler{in: &in, opts: opts, ports: map[int]*portTable{}, table: &Table{Status: Status{
		GatewayClasses: map[string][]Condition{},
		Gateways:       map[ObjectRef]GatewayStatus{},
		HTTPRoutes:     map[ObjectRef][]RouteParentStatus{},
		Ingresses:      map[ObjectRef]IngressStatus{},
	}}}
	c.ingresses()
	c.gateways()
	c.table.Config = c.config()
	return c.table
}

// port returns the table of port, or nil if the port serves the other
// protocol already (the first to claim a port keeps it).
func (c *compiler) port(port int, protocol string) *portTable {
	p, ok := c.ports[port]
	if !ok {
		p = &portTable{protocol: protocol, certs: map[string]bool{}, hosts: map[hostKey][]*entry{}}
		c.ports[port] = p
	}
	if p.protocol != protocol {
		return nil
	}
	return p
}

// config turns the gathered ports into the snapshot, every list sorted.
func (c *compiler) config() helperapi.GatewayConfig {
	var cfg helperapi.GatewayConfig
	for _, num := range sortedKeys(c.ports) {
		p := c.ports[num]
		gp := helperapi.GatewayPort{Port: num, Protocol: p.protocol, Hosts: []helperapi.GatewayHost{}}
		for name := range p.certs {
			gp.Certificates = append(gp.Certificates, name)
		}
		slices.Sort(gp.Certificates)
		keys := make([]hostKey, 0, len(p.hosts))
		for k := range p.hosts {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, hostOrder)
		for _, k := range keys {
			es := p.hosts[k]
			slices.SortStableFunc(es, less)
			h := helperapi.GatewayHost{Hostname: k.name, SingleLabel: k.singleLabel, Routes: make([]helperapi.GatewayRoute, len(es))}
			for i, e := range es {
				h.Routes[i] = e.route
			}
			gp.Hosts = append(gp.Hosts, h)
		}
		cfg.Ports = append(cfg.Ports, gp)
	}
	return cfg
}

// hostOrder puts exact names first (by name), then wildcards from the
// most labels, then the catch-all "".
func hostOrder(a, b hostKey) int {
	rank := func(k hostKey) int {
		switch {
		case k.name == "":
			return 2
		case strings.HasPrefix(k.name, "*."):
			return 1
		}
		return 0
	}
	return cmp.Or(
		cmp.Compare(rank(a), rank(b)),
		cmp.Compare(strings.Count(b.name, "."), strings.Count(a.name, ".")),
		cmp.Compare(a.name, b.name),
		boolFirst(a.singleLabel, b.singleLabel),
	)
}

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func created(m *manifests.ObjectMeta) time.Time {
	if m.CreationTimestamp == nil {
		return time.Time{}
	}
	return *m.CreationTimestamp
}

// olderFirst orders objects as the specifications break ties: the oldest
// creation time, then namespace/name.
func olderFirst(a, b *manifests.ObjectMeta) int {
	return cmp.Or(created(a).Compare(created(b)), cmp.Compare(ns(a.Namespace), ns(b.Namespace)), cmp.Compare(a.Name, b.Name))
}

// pathEntry fills an entry's path and its precedence inputs; prefixes lose
// a trailing "/" (both specifications ignore it: "/foo/" matches "/foo").
func pathEntry(e *entry, typ, value string) {
	if typ == helperapi.PathPrefix && len(value) > 1 {
		value = strings.TrimRight(value, "/")
		if value == "" {
			value = "/"
		}
	}
	e.route.Path = helperapi.GatewayPathMatch{Type: typ, Value: value}
	e.exact = typ == helperapi.PathExact
	e.prefixLen = len(value)
}

func errorf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
