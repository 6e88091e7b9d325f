package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/dockctl/dockctl/manifests"
)

// Where each object lives (see the package doc, "Layout"). Every path is
// relative to the state directory.
const (
	deploymentsDir   = "deployments"
	statusDir        = "status"
	servicesDir      = "services"
	serviceStatusDir = "service-status"
	namespacesDir    = "namespaces"
	networkFile      = "network.json"
	gatewayFile      = "gateway.json"
)

// nsSubdirs are the directories of one namespace, under its root: the
// stored kinds' records, and what the controller and the CLI write next
// to them.
var nsSubdirs = append(kindDirs(), statusDir, serviceStatusDir, workloadStatusDir, podDeletionsDir, routingStatusDir)

// nsRoot is the directory namespace ns's objects live under: the state
// directory itself for default (where every earlier release kept its
// deployments), namespaces/<ns> for any other.
func nsRoot(ns string) string {
	if ns = orDefault(ns); ns == manifests.DefaultNamespace {
		return ""
	}
	return filepath.Join(namespacesDir, ns)
}

func recordPath(ns, name string) string {
	return filepath.Join(nsRoot(ns), deploymentsDir, name+".json")
}
func statusPath(ns, name string) string { return filepath.Join(nsRoot(ns), statusDir, name+".json") }
func servicePath(ns, name string) string {
	return filepath.Join(nsRoot(ns), servicesDir, name+".json")
}
func serviceStatusPath(ns, name string) string {
	return filepath.Join(nsRoot(ns), serviceStatusDir, name+".json")
}
func namespacePath(name string) string { return filepath.Join(namespacesDir, name+".json") }

// dirOf is the directory of rel, a path in the state directory.
func (s *Store) dirOf(rel string) string { return filepath.Join(s.dir, filepath.Dir(rel)) }

func baseOf(rel string) string { return filepath.Base(rel) }

// dnsLabelRE is a DNS-1123 label. The store checks names and namespaces
// itself, whatever the caller validated, because they become file and
// directory names: they must never be able to escape the directory.
var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

// checkName checks the name of an object of kind: a DNS-1123 subdomain
// for a ConfigMap, Secret or claim (config.go), a label otherwise.
func checkName(kind, name string) error {
	if isConfigKind(kind) {
		if !isStoredSubdomain(name) {
			return fmt.Errorf("invalid %s name %q: must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most %d characters)", lower(kind), name, manifests.MaxStoredNameLength)
		}
		return nil
	}
	if !isDNSLabel(name) {
		return fmt.Errorf("invalid %s name %q: must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)", lower(kind), name)
	}
	return nil
}

// checkNamespace checks a namespace ("" is default).
func checkNamespace(ns string) error {
	if ns != "" && !isDNSLabel(ns) {
		return fmt.Errorf("invalid namespace %q: must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)", ns)
	}
	return nil
}

// checkObject checks the namespace and name of an object of kind.
func checkObject(kind, ns, name string) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	return checkName(kind, name)
}

// namespaceDirs returns the namespaces other than default that have a
// directory, sorted. A writing store reports an entry that is not a real
// directory (a symbolic link) instead of following it: what is under it
// would decide what the controller runs.
func (s *Store) namespaceDirs() ([]string, []error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, namespacesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a state directory of an earlier release, or read-only and empty
	}
	if err != nil {
		return nil, []error{fmt.Errorf("state directory %s: %w", s.dir, err)}
	}
	var out []string
	var errs []error
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".json") {
			continue // namespace records, temporary files
		}
		rel := filepath.Join(namespacesDir, n)
		switch {
		case !isDNSLabel(n) || n == manifests.DefaultNamespace:
			errs = append(errs, fmt.Errorf("state directory %s: %s: not a namespace's directory (the default namespace lives at the top)", s.dir, rel))
		case !e.IsDir():
			errs = append(errs, fmt.Errorf("state directory %s: %s: not a directory (mode %v): refusing it", s.dir, rel, e.Type()))
		default:
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, errs
}

// ensureNamespaceDirs creates namespace ns's directories (the caller holds
// the write lock), private and never through a symbolic link.
func (s *Store) ensureNamespaceDirs(ns string) error {
	root := nsRoot(ns)
	if root == "" {
		return nil // default's are made by Open
	}
	for _, rel := range append([]string{root}, subdirsOf(root)...) {
		path := filepath.Join(s.dir, rel)
		if err := os.Mkdir(path, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return notWritable(s.dir, err)
		}
		if err := checkPrivateDir(path, false); err != nil {
			return err
		}
	}
	return nil
}

func subdirsOf(root string) []string {
	out := make([]string, len(nsSubdirs))
	for i, d := range nsSubdirs {
		out[i] = filepath.Join(root, d)
	}
	return out
}

// stateDirs lists every directory of the state that holds files (the
// caller holds the write lock): for Open's checks and clean-up.
func (s *Store) stateDirs() ([]string, error) {
	dirs := []string{""}
	dirs = append(dirs, subdirsOf("")...)
	dirs = append(dirs, namespacesDir)
	if _, err := os.Lstat(filepath.Join(s.dir, eventsDir)); err == nil {
		dirs = append(dirs, eventsDir)
	}
	nss, errs := s.namespaceDirs()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, ns := range nss {
		dirs = append(dirs, nsRoot(ns))
		for _, d := range subdirsOf(nsRoot(ns)) {
			if _, err := os.Lstat(filepath.Join(s.dir, d)); err == nil {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, nil
}

// checkPrivateDir is checkPrivate; without follow, a symbolic link is
// refused rather than followed (the directories dockctl makes inside the
// state directory are never links).
func checkPrivateDir(dir string, follow bool) error {
	if !follow {
		fi, err := os.Lstat(dir)
		if err != nil {
			return fmt.Errorf("state directory %s: %w", dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("state directory %s: a symbolic link: refusing to follow it (dockctl makes real directories)", dir)
		}
		if !fi.IsDir() {
			return fmt.Errorf("state directory %s: not a directory", dir)
		}
	}
	return checkPrivate(dir)
}
