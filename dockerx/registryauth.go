package dockerx

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	cliconfig "github.com/docker/cli/cli/config"
	clitypes "github.com/docker/cli/cli/config/types"
	"github.com/docker/docker/api/types/registry"
)

// RegistryCredential is one registry login: the credentials of one key of
// a docker config file (a kubernetes.io/dockerconfigjson Secret's, or the
// docker CLI's own). Its values are unexported and every way of printing
// it (fmt, slog) shows the key and the source only, so that a credential
// never reaches a log, an error, an event or a status.
type RegistryCredential struct {
	// Registry is the key the credential is stored under: a host
	// ("registry.example.com:5000"), a URL ("https://index.docker.io/v1/"),
	// a host with a path prefix ("registry.example.com/team") or a host
	// glob ("*.example.com"), matched against an image as the kubelet
	// matches them.
	Registry string
	// Source names where it comes from, for logs and errors: "secret
	// NAMESPACE/NAME" or "docker config".
	Source string

	auth clitypes.AuthConfig
}

// String shows the registry and the source, never the credentials.
func (c RegistryCredential) String() string {
	return fmt.Sprintf("%s credentials for %s", c.Source, withoutUserinfo(c.Registry))
}

// withoutUserinfo is a config key as it may be printed: a key written as a
// URL with userinfo (https://robot:TOKEN@reg.example.com) loses it, the
// key's host being all that matches images anyway (keyringKey). A key that
// does not parse is printed as its scheme-less host part up to any "@".
func withoutUserinfo(key string) string {
	at := strings.LastIndexByte(key, '@')
	if at < 0 {
		return key
	}
	scheme := ""
	rest := key
	if i := strings.Index(key, "://"); i >= 0 && i < at {
		scheme, rest = key[:i+3], key[i+3:]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		if slash := strings.IndexByte(rest, '/'); slash < 0 || slash > j {
			rest = rest[j+1:] // the "@" is in the authority: userinfo
		}
	}
	return scheme + rest
}

// Format makes every fmt verb, %#v and %+v included, print String.
func (c RegistryCredential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue keeps the credentials out of slog output.
func (c RegistryCredential) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c RegistryCredential) empty() bool {
	return c.auth.Username == "" && c.auth.Password == "" && c.auth.IdentityToken == "" && c.auth.RegistryToken == ""
}

// encode returns the X-Registry-Auth value of a pull with c.
func (c RegistryCredential) encode(serverAddress string) (string, error) {
	return registry.EncodeAuthConfig(registry.AuthConfig{
		Username: c.auth.Username, Password: c.auth.Password, ServerAddress: serverAddress,
		IdentityToken: c.auth.IdentityToken, RegistryToken: c.auth.RegistryToken,
	})
}

// ParseDockerConfigJSON reads the credentials of a docker config file
// (the value of a kubernetes.io/dockerconfigjson Secret's .dockerconfigjson
// key: {"auths": {KEY: {"username", "password", "auth", ...}}}) with the
// docker CLI's own parser, sorted by key. The error names source but never
// repeats any of data.
func ParseDockerConfigJSON(data []byte, source string) ([]RegistryCredential, error) {
	cf, err := cliconfig.LoadFromReader(bytes.NewReader(data))
	if err != nil {
		// The parser's message may quote part of the input.
		return nil, fmt.Errorf("%s: not a valid docker config JSON", source)
	}
	var out []RegistryCredential
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range cf.AuthConfigs {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, RegistryCredential{Registry: key, Source: source, auth: cf.AuthConfigs[key]})
	}
	return out, nil
}

// ParseDockercfg reads a legacy kubernetes.io/dockercfg Secret's .dockercfg
// value: the "auths" map of a docker config file without the wrapper.
func ParseDockercfg(data []byte, source string) ([]RegistryCredential, error) {
	wrapped := make([]byte, 0, len(data)+12)
	wrapped = append(append(append(wrapped, `{"auths":`...), data...), '}')
	return ParseDockerConfigJSON(wrapped, source)
}

// MatchCredentials returns, of creds, those whose key matches image, most
// specific key first, as the kubelet's docker keyring does: the key's host
// matches the image's registry host part by part (each part a glob), the
// ports are equal, and the key's path is a prefix of the image's
// repository path; "/v1/" and "/v2/" key paths mean the host. Keys of
// Docker Hub ("index.docker.io", "https://index.docker.io/v1/") match
// images of Docker Hub when no other key does.
func MatchCredentials(image string, creds []RegistryCredential) []RegistryCredential {
	repo := image
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		repo = named.Name()
	}
	type keyed struct {
		key string
		c   RegistryCredential
	}
	var ks []keyed
	for _, c := range creds {
		if k, ok := keyringKey(c.Registry); ok {
			ks = append(ks, keyed{k, c})
		}
	}
	// The kubelet sorts its index in reverse, so that a longer key with a
	// common prefix (a path under a host) comes first; the sort is stable
	// so that credentials under one key keep their order.
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(b.key, a.key) })
	var out []RegistryCredential
	for _, k := range ks {
		if urlsMatch(k.key, repo) {
			out = append(out, k.c)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		for _, k := range ks {
			if k.key == dockerHubHost {
				out = append(out, k.c)
			}
		}
	}
	return out
}

const dockerHubHost = "index.docker.io"

// keyringKey is the kubelet's normalisation of a docker config key: the
// host, and the path unless it is empty, "/", or a "/v1/"/"/v2/" API root.
func keyringKey(loc string) (string, bool) {
	v := loc
	if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p != "" && p != "/" {
		return u.Host + p, true
	}
	return u.Host, true
}

func urlsMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, gp := range gParts {
		if ok, err := filepath.Match(gp, tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub reports whether a repository name (as ParseNormalizedNamed
// names it) is pulled from Docker Hub, as the kubelet decides it.
func isDockerHub(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	switch {
	case first == "":
		return false
	case !found:
		return true
	case first == "docker.io" || first == dockerHubHost:
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// authConfigKey is the docker CLI's key of a registry domain in its
// config file: Docker Hub's historical index address, else the domain.
func authConfigKey(domain string) string {
	if domain == "docker.io" || domain == dockerHubHost {
		return "https://index.docker.io/v1/"
	}
	return domain
}

// registryDomain is the registry host of image ("docker.io" for Docker
// Hub), or "" when image is not a valid reference.
func registryDomain(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	return reference.Domain(named)
}

// dockerCLICredential returns the credential the docker CLI would use to
// pull image: from the config.json in dir ("" means the CLI's own
// choice: $DOCKER_CONFIG, else ~/.docker), through its credential helper
// when credsStore or credHelpers name one, or DOCKER_AUTH_CONFIG — the
// docker CLI's library does all of it. ok is false when it has none. A
// credential helper is a program (docker-credential-NAME) on PATH: where
// none can run (the controller's FROM scratch image), the lookup fails and
// the pull goes on without.
func dockerCLICredential(dir, image string) (cred RegistryCredential, ok bool, err error) {
	domain := registryDomain(image)
	if domain == "" {
		return RegistryCredential{}, false, nil
	}
	cf, err := cliconfig.Load(dir)
	if err != nil {
		// The parser's message may quote part of the file.
		return RegistryCredential{}, false, fmt.Errorf("docker config %s: not readable or not valid JSON", cf.Filename)
	}
	ac, err := cf.GetAuthConfig(domain)
	if err != nil {
		// Only a credential helper fails here. Its output is not repeated:
		// what a helper prints is not ours to vouch for.
		helper := cf.CredentialsStore
		if h, ok := cf.CredentialHelpers[authConfigKey(domain)]; ok {
			helper = h
		}
		prog := "docker-credential-" + helper
		if _, lerr := exec.LookPath(prog); lerr != nil {
			return RegistryCredential{}, false, fmt.Errorf("docker config %s: credential helper %s for %s is not on PATH (the dockctl image has none)", cf.Filename, prog, domain)
		}
		return RegistryCredential{}, false, fmt.Errorf("docker config %s: credential helper %s failed for %s", cf.Filename, prog, domain)
	}
	c := RegistryCredential{Registry: domain, Source: "docker config", auth: ac}
	return c, !c.empty(), nil
}
