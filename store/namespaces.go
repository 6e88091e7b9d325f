package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// NamespaceRecord is a stored Namespace, live or tombstoned. "default"
// always exists: without a record of its own (nothing applied names it),
// ListNamespaces and LookupNamespace report it with no labels, created
// when the state directory was.
type NamespaceRecord struct {
	// Namespace is the object as applied, without server-set metadata but
	// creationTimestamp (filled from Created).
	Namespace manifests.Namespace `json:"namespace"`
	// Deleted marks a namespace deleted with everything in it. Applying it
	// again makes a new namespace; what was in it stays deleted.
	Deleted bool      `json:"deleted,omitempty"`
	Created time.Time `json:"createdAt"`
	// Ownership is who manages the namespace (ownership.go).
	Ownership
	// Applied is what its applier last applied (merge.go).
	Applied
}

type namespaceFile struct {
	Version int `json:"version"`
	NamespaceRecord
}

// ListNamespaces returns every namespace, live and tombstoned, sorted by
// name; default is always among them. An unreadable record fails the
// list: whether a namespace exists decides what apply accepts.
func (s *Store) ListNamespaces() ([]*NamespaceRecord, error) {
	m, err := s.namespaceRecords()
	if err != nil {
		return nil, err
	}
	if m[manifests.DefaultNamespace] == nil {
		m[manifests.DefaultNamespace] = s.implicitDefault()
	}
	out := make([]*NamespaceRecord, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace.Metadata.Name < out[j].Namespace.Metadata.Name })
	return out, nil
}

// LookupNamespace returns namespace name's record, tombstones included
// (NamespaceRecord.Deleted), or an error wrapping ErrNotFound
// (`namespaces "x" not found`).
func (s *Store) LookupNamespace(name string) (*NamespaceRecord, error) {
	if err := checkName(KindNamespace, name); err != nil {
		return nil, err
	}
	r, err := s.readNamespace(name)
	if errors.Is(err, ErrNotFound) && name == manifests.DefaultNamespace {
		return s.implicitDefault(), nil
	}
	return r, err
}

// DeleteNamespace tombstones namespace name and everything live in it (see
// DeleteObjects). Deleting default is refused, as Kubernetes refuses it.
func (s *Store) DeleteNamespace(name string) error {
	return s.deleteOne(ObjectRef{Kind: KindNamespace, Name: name})
}

// namespaceRecords reads every stored namespace record by name.
func (s *Store) namespaceRecords() (map[string]*NamespaceRecord, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, namespacesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*NamespaceRecord{}, nil // an earlier release's state: default only
	}
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	out := map[string]*NamespaceRecord{}
	var errs []error
	for _, e := range entries {
		fname := e.Name()
		if e.IsDir() || strings.HasPrefix(fname, ".") || !strings.HasSuffix(fname, ".json") {
			continue
		}
		name := strings.TrimSuffix(fname, ".json")
		if err := checkName(KindNamespace, name); err != nil {
			errs = append(errs, fmt.Errorf("state file %s: %w", namespacePath(name), err))
			continue
		}
		r, err := s.readNamespace(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = r
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (s *Store) readNamespace(name string) (*NamespaceRecord, error) {
	rel := namespacePath(name)
	var f namespaceFile
	switch found, err := s.readState(rel, &f, &f.Version); {
	case !found:
		return nil, fmt.Errorf("namespaces %q %w", name, ErrNotFound)
	case err != nil:
		return nil, err
	case f.Namespace.Metadata.Name != name:
		return nil, fmt.Errorf("state file %s: %w: records namespace %q, expected %q", rel, ErrCorrupt, f.Namespace.Metadata.Name, name)
	}
	return &f.NamespaceRecord, nil
}

// implicitDefault is the default namespace when no record names it:
// created with the state directory (its instance file).
func (s *Store) implicitDefault() *NamespaceRecord {
	r := &NamespaceRecord{Namespace: manifests.Namespace{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindNamespace,
		Metadata: manifests.ObjectMeta{Name: manifests.DefaultNamespace}}}
	if fi, err := os.Stat(filepath.Join(s.dir, instanceFile)); err == nil {
		r.Created = fi.ModTime().UTC()
	}
	stampNamespace(r)
	return r
}

func encodeNamespace(r *NamespaceRecord) ([]byte, error) {
	return encodeState(namespaceFile{Version: formatVersion, NamespaceRecord: *r}, "namespace", r.Namespace.Metadata.Name)
}

// normNamespace is a Namespace as the store compares it.
type normNamespace struct {
	ns  manifests.Namespace
	all []byte
}

func normalizeNamespace(n *manifests.Namespace) (normNamespace, error) {
	var c manifests.Namespace
	if err := roundTrip(n, &c); err != nil {
		return normNamespace{}, err
	}
	// Cluster-scoped, and the rest is the server's.
	c.Metadata.Namespace = ""
	c.Metadata.Generation = 0
	c.Metadata.CreationTimestamp = nil
	c.Metadata.ManagedFields = nil
	all, err := json.Marshal(c)
	if err != nil {
		return normNamespace{}, fmt.Errorf("encoding namespace: %w", err)
	}
	return normNamespace{ns: c, all: all}, nil
}

// planNamespace computes the record that storing n over old (nil: never
// known) gives. A namespace has no spec, hence no generation.
func planNamespace(old *NamespaceRecord, n normNamespace, now time.Time) (*NamespaceRecord, Action, error) {
	if old == nil || old.Deleted {
		rec := &NamespaceRecord{Namespace: n.ns, Created: now}
		stampNamespace(rec)
		return rec, Created, nil
	}
	prev, err := normalizeNamespace(&old.Namespace)
	if err != nil {
		return nil, "", fmt.Errorf("namespace %q: stored copy: %w", old.Namespace.Metadata.Name, err)
	}
	if bytes.Equal(prev.all, n.all) {
		return old, Unchanged, nil
	}
	rec := *old
	rec.Namespace = n.ns
	stampNamespace(&rec)
	return &rec, Configured, nil
}

func stampNamespace(r *NamespaceRecord) {
	created := r.Created
	r.Namespace.Metadata.CreationTimestamp = &created
}
