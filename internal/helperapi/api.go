// Package helperapi is the contract between the controller and the helper
// containers it runs for Services (docs/design.md §10): the Service proxy,
// the instance's DNS server, and the probe relay. Both sides link this
// package, so a field added here reaches both; the JSON shape is the wire
// format, carried in the argv of the helper's command and of `docker exec`
// (no host path is shared, so it works with a remote DOCKER_HOST).
//
// Invariants:
//   - A config is always the complete desired state of one helper (the
//     full endpoint set, every record), never a delta: a lost or repeated
//     push changes nothing, and a helper restarted from its last applied
//     config is correct.
//   - Generation strictly increases per helper. A helper applies a config
//     only if its Generation is greater than or equal to the one it has
//     (equal: a repeated push, acknowledged again); an older one is refused
//     (exit ExitStale), so a delayed push can never roll a helper back.
//   - A push is acknowledged (exit 0) only after the helper serves the new
//     config: a removed endpoint receives no new connection once the push
//     returned 0. Connections already open are left to finish.
package helperapi

import (
	"encoding/json"
	"fmt"
)

// Binary is the path of dockctl's own binary inside the helper image.
const Binary = "/dockctl"

// Command words: `dockctl helper <mode> …` (a hidden command).
const (
	ModeProxy = "proxy" // run a Service proxy: helper proxy --config JSON
	ModeDNS   = "dns"   // run the DNS server: helper dns --config JSON
	ModePush  = "push"  // exec'd in a running helper: helper push --config JSON
	ModeProbe = "probe" // exec'd in a helper: helper probe --spec JSON
)

// Exit codes of `helper push` and `helper probe`.
const (
	ExitOK      = 0
	ExitFailed  = 1 // push: not applied (invalid, or no server answering); probe: failure
	ExitStale   = 3 // push: the helper holds a newer generation
	ExitUsage   = 2
	ExitTimeout = 4 // probe timed out
)

// ControlSocket is the abstract unix socket (Linux, per network namespace)
// the serving helper listens on for pushes; `helper push` connects to it.
// An abstract socket needs no writable path in a FROM scratch image.
const ControlSocket = "@dockctl-helper-control"

// StateFile is where a serving helper keeps its last applied config, in
// its container's writable layer: a helper restarted by Docker's restart
// policy while the controller is down serves what it served before.
const StateFile = "/run/dockctl/config.json"

// Protocols, as Kubernetes spells them.
const (
	TCP = "TCP"
	UDP = "UDP"
)

// ProxyConfig is a Service proxy's complete desired state.
type ProxyConfig struct {
	Generation int64  `json:"generation"`
	Service    string `json:"service"` // "namespace/name", for logs
	// Ports: one listener per entry, on 0.0.0.0:Port/Protocol inside the
	// proxy's container. Ports published on the host are Docker port
	// bindings of the proxy's container onto these listeners.
	Ports []ProxyPort `json:"ports"`
}

// ProxyPort is one Service port and its ready endpoints.
type ProxyPort struct {
	Name      string     `json:"name,omitempty"`
	Protocol  string     `json:"protocol"` // TCP or UDP
	Port      int        `json:"port"`
	Endpoints []Endpoint `json:"endpoints"` // ready only; empty: refuse (TCP: close at once)
}

// Endpoint is one ready pod's address for one port.
type Endpoint struct {
	IP   string `json:"ip"`
	Port int    `json:"port"`
	Pod  string `json:"pod,omitempty"` // for logs
}

// DNSConfig is the DNS server's complete desired state.
type DNSConfig struct {
	Generation int64  `json:"generation"`
	Domain     string `json:"domain"` // "cluster.local": names under it are answered here only
	// Upstreams receive every other query (host:port). Empty: the
	// nameservers of the helper's own /etc/resolv.conf (Docker's embedded
	// DNS, which forwards to the host's resolvers).
	Upstreams []string    `json:"upstreams,omitempty"`
	Records   []DNSRecord `json:"records"`
}

// DNSRecord is one name under Domain with its A records (a ClusterIP, or the
// ready pods of a headless Service; none: the name exists, no address) and
// the SRV records of its named ports.
type DNSRecord struct {
	Name  string    `json:"name"` // fully qualified without the final dot: "web.default.svc.cluster.local"
	IPs   []string  `json:"ips"`
	Ports []SRVPort `json:"ports,omitempty"`
}

// SRVPort gives `_name._protocol.NAME` an SRV record.
type SRVPort struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Port     int    `json:"port"`
}

// ProbeSpec is one probe run by `helper probe` from inside the instance
// network (docs/design.md §10, Probes), for a controller that cannot reach
// it itself.
type ProbeSpec struct {
	Kind    string            `json:"kind"` // "http", "tcp" or "grpc"
	Address string            `json:"address"`
	Port    int               `json:"port"`
	Scheme  string            `json:"scheme,omitempty"` // HTTP or HTTPS
	Path    string            `json:"path,omitempty"`
	Host    string            `json:"host,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Service is a grpc probe's service name ("": the server as a whole).
	// A helper of an older dockctl knows no grpc kind: it exits ExitUsage,
	// which the controller counts as no verdict.
	Service string `json:"service,omitempty"`
	// TimeoutMillis bounds the probe; the relay exits ExitTimeout past it.
	TimeoutMillis int64 `json:"timeoutMillis"`
}

// Ack is what `helper push` prints on success: the generation now served.
type Ack struct {
	Generation int64 `json:"generation"`
	// Unbound are the ports of the config the helper could not bind, a
	// helper that binds host ports itself (--host-ports: the gateway and
	// the publisher, docs/design.md §10): its other ports are served, and
	// each push tries these again.
	Unbound []UnboundPort `json:"unbound,omitempty"`
}

// UnboundPort is a port a helper could not bind, and why.
type UnboundPort struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol"` // TCP or UDP
	Error    string `json:"error"`
}

// HostControlSocket is the control socket of a helper in the host's
// network namespace (the gateway, the publisher): a file in the
// container's own /run/dockctl, which only the container's processes
// (the push exec'd there) reach. ControlSocket, abstract, is per network
// namespace: in the host's, any process of the host could push to it.
const HostControlSocket = "/run/dockctl/control.sock"

// Marshal encodes a config for argv.
func Marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("helperapi: encode: %w", err)
	}
	return string(b), nil
}

// Modes of file volumes: the holder of a pod with file volumes keeps them
// mounted (read-only); a writer container of its own runs `helper files`
// for each write (dockerx/fileswriter.go), never in a namespace of the pod.
const (
	ModeHold  = "hold"  // a pod's holder: sleep, reap children, exit 0 on SIGTERM
	ModeFiles = "files" // a files writer: helper files (a FilesPayload on stdin), --check, --subpath
)

// Modes of a `dockctl port-forward` session's helper, a container in the
// pod's network namespace that the CLI creates, attached, for the
// session: its main process waits for its stdin's end (the CLI detached,
// however it ended) and then exits, and each forwarded connection is an
// exec of the relay with its stdin and stdout attached.
const (
	ModePortForward = "port-forward" // the helper's main process: exit at stdin's end
	ModeRelay       = "relay"        // exec'd in it: helper relay HOST:PORT… (stdin → the first port that accepts → stdout)
)

// VolumesDir is where a holder mounts a pod's volumes: VolumesDir/NAME.
const VolumesDir = "/volumes"

// FilesPayload is the complete desired content of a pod's file volumes
// (configMap, secret, projected, downwardAPI), written by `helper files`
// into each volume atomically (the kubelet's AtomicWriter scheme). It is
// carried on the exec's stdin only: it may hold Secret values, which must
// never be in an argument, a log or an error.
type FilesPayload struct {
	Volumes []FilesVolume `json:"volumes"`
}

// FilesVolume is one volume's files.
type FilesVolume struct {
	Name  string     `json:"name"` // the pod's volume name: written under VolumesDir/Name
	Files []FileItem `json:"files"`
	// FSGroup gives every file to that group, as Kubernetes does with the
	// pod's securityContext.fsGroup.
	FSGroup *int64 `json:"fsGroup,omitempty"`
}

// FileItem is one file.
type FileItem struct {
	Path string `json:"path"` // relative, validated as the kubelet does
	Mode int32  `json:"mode"` // permission bits
	Data []byte `json:"data"` // base64 in JSON
}

// FilesResult is what `helper files` prints on success: per volume,
// whether a new version was made and which one is current.
type FilesResult struct {
	Volumes []FilesVolumeResult `json:"volumes"`
}

type FilesVolumeResult struct {
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	Version string `json:"version"`
}

// ModeGateway runs the instance's HTTP(S) gateway: helper gateway --config
// JSON (a GatewayConfig; pushes reach it as they reach a proxy). Its
// config may hold TLS private keys: it travels on stdin only (`helper push
// --config -`), and the gateway keeps its state file on a tmpfs
// (--state-file), never in an argument, a log or an image layer.
const ModeGateway = "gateway"

// GatewayConfig is the gateway's complete desired state: what each port
// serves and the certificates its HTTPS ports present.
type GatewayConfig struct {
	Generation int64         `json:"generation"`
	Ports      []GatewayPort `json:"ports"`
	// Certificates are the certificates any HTTPS port may present, by
	// name ("namespace/secret", for logs and for GatewayPort.Certificates).
	Certificates []GatewayCertificate `json:"certificates,omitempty"`
	// ACMEChallenges are the HTTP-01 key authorizations the controller's
	// ACME client awaits validation of (docs/design.md §10, ACME): every
	// HTTP port answers GET /.well-known/acme-challenge/TOKEN for the
	// challenge's host before routing. They are not secret (the CA
	// fetches them over plain HTTP).
	ACMEChallenges []GatewayACMEChallenge `json:"acmeChallenges,omitempty"`
}

// ACMEChallengePath is the path prefix of HTTP-01 challenges (RFC 8555
// §8.3).
const ACMEChallengePath = "/.well-known/acme-challenge/"

// GatewayACMEChallenge is one pending HTTP-01 challenge.
type GatewayACMEChallenge struct {
	Host             string `json:"host"` // lower case, no port
	Token            string `json:"token"`
	KeyAuthorization string `json:"keyAuthorization"`
}

// Gateway port protocols.
const (
	GatewayHTTP  = "HTTP"
	GatewayHTTPS = "HTTPS"
)

// GatewayPort is one listening port with its virtual hosts.
type GatewayPort struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol"` // GatewayHTTP or GatewayHTTPS
	// Certificates names the entries of GatewayConfig.Certificates this
	// port presents, chosen per connection by SNI (the first when no name
	// matches the client's).
	Certificates []string `json:"certificates,omitempty"`
	// Hosts are tried in order; the first whose Hostname matches the
	// request's host serves it. A host's routes are tried in order, the
	// first match wins; with none matching, the catch-all host (Hostname
	// "") is tried, then the answer is 404.
	Hosts []GatewayHost `json:"hosts"`
}

// GatewayHost is one virtual host.
type GatewayHost struct {
	// Hostname is exact ("a.example.com"), a wildcard ("*.example.com"),
	// or "" (any host).
	Hostname string `json:"hostname"`
	// SingleLabel makes a wildcard match exactly one label, as an
	// Ingress's does ("*.example.com" matches "a.example.com", not
	// "a.b.example.com"); the Gateway API's wildcards match any number.
	SingleLabel bool           `json:"singleLabel,omitempty"`
	Routes      []GatewayRoute `json:"routes"`
}

// GatewayRoute is one matcher with what it does to a matching request.
type GatewayRoute struct {
	Source      string              `json:"source,omitempty"` // "HTTPRoute ns/name rule 0", for the access log
	Path        GatewayPathMatch    `json:"path"`
	Method      string              `json:"method,omitempty"`
	Headers     []GatewayValueMatch `json:"headers,omitempty"` // all must match (names case-insensitive)
	QueryParams []GatewayValueMatch `json:"queryParams,omitempty"`
	Filters     GatewayFilters      `json:"filters,omitempty"`
	Backends    []GatewayBackend    `json:"backends,omitempty"` // none (and no redirect): 500, as the Gateway API says
}

// Path match types of a GatewayRoute.
const (
	PathExact  = "Exact"
	PathPrefix = "Prefix" // element-wise: "/foo" matches "/foo" and "/foo/bar", not "/foobar"
)

type GatewayPathMatch struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type GatewayValueMatch struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// GatewayFilters are the Gateway API filters of a route, applied in this
// order: redirect (which answers), request headers, rewrite, response
// headers.
type GatewayFilters struct {
	RequestHeaders  *GatewayHeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *GatewayHeaderModifier `json:"responseHeaders,omitempty"`
	Redirect        *GatewayRedirect       `json:"redirect,omitempty"`
	Rewrite         *GatewayRewrite        `json:"rewrite,omitempty"`
}

type GatewayHeaderModifier struct {
	Set    []GatewayValueMatch `json:"set,omitempty"`
	Add    []GatewayValueMatch `json:"add,omitempty"`
	Remove []string            `json:"remove,omitempty"`
}

// GatewayPathModifier replaces the full path, or the prefix the route's
// Prefix match matched.
type GatewayPathModifier struct {
	ReplaceFullPath    *string `json:"replaceFullPath,omitempty"`
	ReplacePrefixMatch *string `json:"replacePrefixMatch,omitempty"`
}

type GatewayRedirect struct {
	Scheme     string               `json:"scheme,omitempty"`
	Hostname   string               `json:"hostname,omitempty"`
	Port       int                  `json:"port,omitempty"`
	Path       *GatewayPathModifier `json:"path,omitempty"`
	StatusCode int                  `json:"statusCode,omitempty"` // 0: 302
}

type GatewayRewrite struct {
	Hostname string               `json:"hostname,omitempty"`
	Path     *GatewayPathModifier `json:"path,omitempty"`
}

// GatewayBackend is one weighted backend of a route: a Service port, and
// its ready endpoints, dialled directly.
type GatewayBackend struct {
	Service string `json:"service"` // "namespace/name:port", for the access log
	Weight  int32  `json:"weight"`
	// H2C: the backend speaks HTTP/2 without TLS (appProtocol
	// kubernetes.io/h2c, gRPC); else HTTP/1.1.
	H2C bool `json:"h2c,omitempty"`
	// Invalid: a reference the Gateway API counts as unresolved (no such
	// Service or port, not permitted, not a Service): its share of the
	// requests is answered 500, as the specification requires.
	Invalid   bool       `json:"invalid,omitempty"`
	Endpoints []Endpoint `json:"endpoints"` // ready only; none: 503
}

// GatewayCertificate is one certificate chain and its key, PEM. Only on
// stdin and in memory or a tmpfs (see ModeGateway).
type GatewayCertificate struct {
	Name    string `json:"name"`
	CertPEM []byte `json:"certPEM"`
	KeyPEM  []byte `json:"keyPEM"`
}
