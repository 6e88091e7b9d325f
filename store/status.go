package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Status is what only the controller knows about a deployment. Replica
// counts are not here: they are recomputed from Docker by whoever needs them.
type Status struct {
	// ObservedGeneration is the record generation the controller last
	// acted on; below Record.Generation, the conditions are stale.
	ObservedGeneration int64                           `json:"observedGeneration,omitempty"`
	Conditions         []manifests.DeploymentCondition `json:"conditions,omitempty"`
	Message            string                          `json:"message,omitempty"`
	// UpdatedAt is when the content last changed. WriteStatus sets it when
	// left zero.
	UpdatedAt time.Time `json:"updatedAt"`
	// Extra holds opaque blobs of later features (restart backoff,
	// revisions…), keyed by feature, so they need no change to this type.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

type statusFile struct {
	Version int `json:"version"`
	Status
}

// ReadStatus returns the controller status of deployment name in
// namespace ns; a status never written is the zero Status and no error.
func (s *Store) ReadStatus(ns, name string) (*Status, error) {
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return nil, err
	}
	rel := statusPath(ns, name)
	data, err := s.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return &Status{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	var f statusFile
	if err := decodeVersioned(data, &f, &f.Version); err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	return &f.Status, nil
}

// WriteStatus stores st as the status of deployment name in namespace ns,
// atomically. When only
// UpdatedAt would differ from the stored status it writes nothing: the
// controller calls it after every sync, and rewriting identical content
// would wake watchers and wear the disk for no information.
func (s *Store) WriteStatus(ns, name string, st *Status) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("status of %q: nil", display(ns, name))
	}
	return s.transaction(func() error {
		old, err := s.ReadStatus(ns, name)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err // a corrupt status is simply replaced
		}
		next := *st
		if old != nil {
			if SameStatus(old, &next) {
				return nil
			}
		}
		if next.UpdatedAt.IsZero() {
			next.UpdatedAt = storeNow()
		}
		if err := s.ensureNamespaceDirs(ns); err != nil {
			return err
		}
		return s.writeJSON(statusPath(ns, name), statusFile{Version: formatVersion, Status: next})
	})
}

// SameStatus reports whether a and b say the same, ignoring UpdatedAt, the
// JSON layout of Extra (a status read back is indented, one just encoded is
// not) and the time zone of the condition times. It is the one rule for
// "nothing changed": WriteStatus skips such a write, and the controller
// skips calling it.
func SameStatus(a, b *Status) bool {
	if !maps.EqualFunc(a.Extra, b.Extra, sameJSON) {
		return false
	}
	if a.ObservedGeneration != b.ObservedGeneration || a.Message != b.Message || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!x.LastTransitionTime.Equal(y.LastTransitionTime) || !x.LastUpdateTime.Equal(y.LastUpdateTime) {
			return false
		}
	}
	return true
}

// sameJSON compares two JSON documents ignoring layout.
func sameJSON(x, y json.RawMessage) bool {
	var cx, cy bytes.Buffer
	if json.Compact(&cx, x) != nil || json.Compact(&cy, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(cx.Bytes(), cy.Bytes())
}

// resetStatus removes the status of deployment name in namespace ns (the
// caller holds the write lock), so that it reads as never written.
func (s *Store) resetStatus(ns, name string) error {
	rel := statusPath(ns, name)
	err := os.Remove(filepath.Join(s.dir, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = syncDir(s.dirOf(rel))
	}
	if err != nil {
		return fmt.Errorf("state directory %s: resetting the status of %q: %w", s.dir, display(ns, name), err)
	}
	return nil
}
