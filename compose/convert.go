package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
)

// Defaults of Options.
const (
	// DefaultClaimSize is the storage request of the claim made for each
	// named volume: Compose volumes have no size, and dockctl's claims
	// are Docker volumes that do not enforce one (docs/design.md §12).
	DefaultClaimSize = "1Gi"
	// DefaultWaitImage runs the init container that waits for a
	// dependency: it has sh and nc.
	DefaultWaitImage = "busybox:1.37"
)

// DefaultWaitCommand is the wait init container's command: {host} and
// {port} are replaced by the dependency's name and port.
var DefaultWaitCommand = []string{"sh", "-c", "until nc -z -w 2 {host} {port}; do echo waiting for {host}:{port}; sleep 1; done"}

// Labels every converted object carries; the pods' selector is both.
const (
	LabelName   = "app.kubernetes.io/name"
	LabelPartOf = "app.kubernetes.io/part-of"
)

// Options say what to read and how to write it.
type Options struct {
	// Files are the Compose files, merged in order as `docker compose -f`
	// merges them; "-" is standard input (not supported: compose-go reads
	// files by path).
	Files []string
	// EnvFiles replace the project directory's .env, as --env-file.
	EnvFiles []string
	// Profiles are the active profiles, as --profile.
	Profiles []string
	// ProjectName is --project-name; else the files' name:, else the
	// project directory's name, as Compose.
	ProjectName string
	// Environ is the environment interpolation reads (os.Environ()).
	Environ []string
	// Namespace is set on every object when not empty, and the
	// Namespace object is made.
	Namespace string
	// ClaimSize is each claim's storage request (DefaultClaimSize).
	ClaimSize string
	// WaitImage and WaitCommand make the init container that waits for a
	// dependency (DefaultWaitImage, DefaultWaitCommand).
	WaitImage   string
	WaitCommand []string
}

// Warning is what could not be converted, or not with the same meaning.
type Warning struct {
	Service string // "" for a project-level key
	Key     string
	Msg     string
}

func (w Warning) String() string {
	if w.Service == "" {
		return fmt.Sprintf("%s: %s", w.Key, w.Msg)
	}
	return fmt.Sprintf("service %s: %s: %s", w.Service, w.Key, w.Msg)
}

// Object is one converted manifest: a pointer to a manifests type.
type Object struct {
	Kind  string
	Name  string
	Value any
}

// FileName is the object's file in an output directory: NAME-KIND.yaml,
// kind in lower case, as kompose names them.
func (o Object) FileName() string {
	return o.Name + "-" + strings.ToLower(o.Kind) + ".yaml"
}

// Result is a converted project.
type Result struct {
	Project  string
	Objects  []Object
	Warnings []Warning
}

// YAML returns the objects as one YAML stream, documents separated by
// "---".
func (r *Result) YAML() ([]byte, error) {
	var b strings.Builder
	for i, o := range r.Objects {
		y, err := yaml.Marshal(o.Value)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", o.Kind, o.Name, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// Load reads the project as `docker compose config` would.
func Load(ctx context.Context, opts Options) (*types.Project, error) {
	if len(opts.Files) == 0 {
		return nil, fmt.Errorf("no Compose file given")
	}
	if slices.Contains(opts.Files, "-") {
		return nil, fmt.Errorf("reading a Compose file from standard input is not supported: name the file")
	}
	po, err := cli.NewProjectOptions(opts.Files,
		cli.WithEnv(opts.Environ),
		cli.WithName(opts.ProjectName),
		cli.WithEnvFiles(opts.EnvFiles...),
		cli.WithDotEnv,
		cli.WithProfiles(opts.Profiles),
	)
	if err != nil {
		return nil, fmt.Errorf("compose options: %w", err)
	}
	p, err := po.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("load compose project: %w", err)
	}
	return p, nil
}

// Convert loads the project and converts it.
func Convert(ctx context.Context, opts Options) (*Result, error) {
	p, err := Load(ctx, opts)
	if err != nil {
		return nil, err
	}
	return ConvertProject(p, opts)
}

// converter holds one conversion's state.
type converter struct {
	p    *types.Project
	opts Options
	res  *Result
	// names maps each service to its object name.
	names map[string]string
	// claims are the named volumes used, by claim name.
	claims map[string]bool
	// secrets and configs are the Compose secrets and configs used, by
	// Compose name.
	secrets, configs map[string]bool
	// published are the host ports (PORT/PROTOCOL) the LoadBalancer
	// Services made so far publish, by Compose service.
	published map[string]string
	// waitImageNamed: the depends_on waits' image was warned of.
	waitImageNamed bool
}

// ConvertProject converts a loaded project.
func ConvertProject(p *types.Project, opts Options) (*Result, error) {
	if opts.ClaimSize == "" {
		opts.ClaimSize = DefaultClaimSize
	}
	if _, err := resource.ParseQuantity(opts.ClaimSize); err != nil {
		return nil, fmt.Errorf("claim size %q: %w", opts.ClaimSize, err)
	}
	if opts.WaitImage == "" {
		opts.WaitImage = DefaultWaitImage
	}
	if len(opts.WaitCommand) == 0 {
		opts.WaitCommand = DefaultWaitCommand
	}
	c := &converter{p: p, opts: opts, res: &Result{Project: p.Name},
		names: map[string]string{}, claims: map[string]bool{}, secrets: map[string]bool{}, configs: map[string]bool{},
		published: map[string]string{}}
	for _, name := range slices.Sorted(maps.Keys(p.DisabledServices)) {
		c.warn(name, "profiles", "not converted: none of its profiles %v is active (--profile)", p.DisabledServices[name].Profiles)
	}
	serviceNames := slices.Sorted(maps.Keys(p.Services))
	used := map[string]string{}
	for _, name := range serviceNames {
		n := c.objectName(name, "service name")
		if other, dup := used[n]; dup {
			return nil, fmt.Errorf("services %q and %q both become %q: rename one", other, name, n)
		}
		used[n] = name
		c.names[name] = n
	}
	for _, name := range serviceNames {
		if err := c.service(p.Services[name]); err != nil {
			return nil, fmt.Errorf("service %s: %w", name, err)
		}
	}
	if err := c.projectSecrets(); err != nil {
		return nil, err
	}
	if err := c.projectConfigs(); err != nil {
		return nil, err
	}
	c.projectVolumes()
	if opts.Namespace != "" {
		// apply refuses objects of a namespace that does not exist, as
		// the API server does: the namespace comes with them.
		c.add(manifests.KindNamespace, opts.Namespace, &manifests.Namespace{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindNamespace,
			Metadata: manifests.ObjectMeta{Name: opts.Namespace}})
	}
	for _, key := range []string{"networks", "models"} {
		c.projectLevel(key)
	}
	seen := map[string]bool{}
	for _, o := range c.res.Objects {
		k := o.Kind + "/" + o.Name
		if seen[k] {
			return nil, fmt.Errorf("two objects would be %s (names are made DNS-1123, ConfigMaps of configs share names with the services' NAME-env): rename one", k)
		}
		seen[k] = true
	}
	sort.SliceStable(c.res.Objects, func(i, j int) bool {
		a, b := c.res.Objects[i], c.res.Objects[j]
		if ka, kb := kindOrder[a.Kind], kindOrder[b.Kind]; ka != kb {
			return ka < kb
		}
		return a.Name < b.Name
	})
	return c.res, nil
}

// kindOrder is manifests.Order's: what an object refers to comes first.
var kindOrder = map[string]int{
	manifests.KindNamespace: 0, manifests.KindConfigMap: 1, manifests.KindSecret: 2, manifests.KindPersistentVolumeClaim: 3,
	manifests.KindService: 4, manifests.Kind: 5, manifests.KindPod: 6,
}

func (c *converter) warn(service, key, format string, args ...any) {
	c.res.Warnings = append(c.res.Warnings, Warning{Service: service, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (c *converter) add(kind, name string, v any) {
	c.res.Objects = append(c.res.Objects, Object{Kind: kind, Name: name, Value: v})
}

func (c *converter) meta(name, service string) manifests.ObjectMeta {
	m := manifests.ObjectMeta{Name: name, Namespace: c.opts.Namespace, Labels: map[string]string{}}
	if service != "" {
		m.Labels[LabelName] = c.names[service]
	}
	m.Labels[LabelPartOf] = dns1123(c.p.Name)
	return m
}

// selector is the label set of a service's pods.
func (c *converter) selector(service string) map[string]string {
	return map[string]string{LabelName: c.names[service], LabelPartOf: dns1123(c.p.Name)}
}

// objectName is a service's object name, dns1123(name), warned when it
// differs: other services reach it by its name. (Volumes and secrets are
// renamed without a warning: only the manifests name them.)
func (c *converter) objectName(name, key string) string {
	n := dns1123(name)
	if n != name {
		c.warn(name, key, "%q becomes %q (object names are DNS-1123 labels); whatever reaches it by %q must use %q", name, n, name, n)
	}
	return n
}

// dns1123 is s in lower case with every character but a-z, 0-9 and '-'
// turned into '-', trimmed of '-' at both ends, at most 63 characters, and
// starting with a letter (a Service name must).
func dns1123(s string) string {
	b := []byte(strings.ToLower(s))
	for i, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	switch {
	case out == "":
		out = "x"
	case out[0] >= '0' && out[0] <= '9':
		out = "x-" + out
	}
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}

// serviceKeys are the keys of a service that service() converts; every
// other key set is warned as not converted (unconverted).
var serviceKeys = map[string]bool{
	"image": true, "command": true, "entrypoint": true, "environment": true, "ports": true,
	"expose": true, "volumes": true, "secrets": true, "healthcheck": true, "depends_on": true,
	"deploy": true, "scale": true, "restart": true, "user": true, "cap_add": true, "cap_drop": true,
	"read_only": true, "privileged": true, "working_dir": true, "network_mode": true,
	"networks": true, "tty": true, "stdin_open": true, "hostname": true, "stop_grace_period": true,
	"pull_policy": true, "mem_limit": true, "cpus": true, "extra_hosts": true, "tmpfs": true,
	"build": true, "profiles": true, "container_name": true, "mem_reservation": true, "configs": true,
	"labels": true, "pid": true, "env_file": true,
}

// unconverted warns each key of s that is set and not in serviceKeys.
func (c *converter) unconverted(s types.ServiceConfig) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if serviceKeys[k] || isZero(m[k]) {
			continue
		}
		c.warn(s.Name, k, "not converted: dockctl has no equivalent")
	}
	return nil
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// escapeK8s keeps s as written where Kubernetes expands $(NAME) (command,
// args): "$(" and "$$" become "$$(" and "$$$$" (manifests.ExpandVars).
func escapeK8s(s []string) []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s))
	for i, v := range s {
		var b strings.Builder
		for j := 0; j < len(v); j++ {
			if v[j] == '$' && j+1 < len(v) && (v[j+1] == '(' || v[j+1] == '$') {
				b.WriteString("$$")
				continue
			}
			b.WriteByte(v[j])
		}
		out[i] = b.String()
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func seconds(d *types.Duration) int32 {
	if d == nil {
		return 0
	}
	s := int64((*d + types.Duration(999_999_999)) / 1_000_000_000) // rounded up: a probe's unit is the second
	return int32(min(s, 1<<31-1))
}

func itoa(i int) string { return strconv.Itoa(i) }

func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return b, nil
}
