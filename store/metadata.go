package store

import (
	"errors"
	"fmt"

	"github.com/dockctl/dockctl/manifests"
)

// UpdateMetadata applies fn to the metadata of the live object ref names
// (`label`, `annotate`) under the write lock, validates the object with
// the rules of apply, and stores it as Apply stores it: a change of
// metadata alone keeps the generation, and a deployment's template (no
// rollout). It returns Unchanged when fn changed nothing (nothing is
// written), and an error wrapping ErrNotFound for an object with no live
// record. fn must not change the name or namespace.
func (s *Store) UpdateMetadata(ref ObjectRef, fn func(*manifests.ObjectMeta) error) (Action, error) {
	return s.UpdateMetadataAs("", ref, fn)
}

// UpdateMetadataAs is UpdateMetadata recorded as a change by updater (a
// command's name: label, annotate; "" is "update"), never a conflict with
// the object's manager, which stays.
func (s *Store) UpdateMetadataAs(updater string, ref ObjectRef, fn func(*manifests.ObjectMeta) error) (Action, error) {
	if s.readOnly {
		return "", ErrReadOnly
	}
	ref = unscoped(ref)
	if ref.Kind == KindNamespace {
		if err := checkName(KindNamespace, ref.Name); err != nil {
			return "", err
		}
	} else if err := checkObject(ref.Kind, ref.Namespace, ref.Name); err != nil {
		return "", err
	}
	var act Action
	err := s.transaction(func() error {
		var (
			b        Bundle
			meta     *manifests.ObjectMeta
			validate func() error
			err      error
		)
		if ref.Kind == KindNamespace {
			meta, validate, b, err = liveNamespace(s, ref.Name)
		} else if k := kindNamed(ref.Kind); k != nil {
			meta, validate, b, err = k.liveCopy(s, ref)
		} else {
			err = fmt.Errorf("update: unknown kind %q", ref.Kind)
		}
		if err != nil {
			return err
		}
		name, ns := meta.Name, meta.NamespaceOrDefault()
		if err := fn(meta); err != nil {
			return err
		}
		if meta.Name != name || meta.NamespaceOrDefault() != ns {
			return fmt.Errorf("%s %q: update renamed or moved it", lower(ref.Kind), display(ref.Namespace, ref.Name))
		}
		if err := validate(); err != nil {
			// kubectl's words: The Deployment "web" is invalid: …
			return fmt.Errorf("the %s %q is invalid: %w", ref.Kind, display(ref.Namespace, ref.Name), err)
		}
		in, err := prepare(b)
		if err != nil {
			return err
		}
		tx := &applyTx{s: s, now: storeNow()}
		results, err := tx.apply(in, ApplyOptions{Updater: updaterName(updater)})
		if err != nil {
			return err
		}
		if len(results) != 1 {
			return errors.New("update: unexpected apply results")
		}
		if act = results[0].Action; act == Unchanged {
			return nil
		}
		return tx.commit()
	})
	if err != nil {
		return "", err
	}
	return act, nil
}

// liveNamespace is the storedKind.liveCopy of a Namespace.
func liveNamespace(s *Store, name string) (*manifests.ObjectMeta, func() error, Bundle, error) {
	var b Bundle
	rec, err := s.LookupNamespace(name)
	if err == nil && rec.Deleted {
		err = fmt.Errorf("%s %q: %w (deleted)", lower(KindNamespace), name, ErrNotFound)
	}
	if err != nil {
		return nil, nil, b, err
	}
	var n manifests.Namespace
	if err := roundTrip(&rec.Namespace, &n); err != nil {
		return nil, nil, b, err
	}
	b.Namespaces = []*manifests.Namespace{&n}
	return &n.Metadata, func() error { return manifests.ValidateNamespace(&n) }, b, nil
}
