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
		)
		notLive := func(deleted bool, err error) error {
			if err == nil && deleted {
				err = fmt.Errorf("%s %q: %w (deleted)", lower(ref.Kind), display(ref.Namespace, ref.Name), ErrNotFound)
			}
			return err
		}
		switch ref.Kind {
		case KindDeployment:
			rec, err := s.Get(ref.Namespace, ref.Name)
			if err != nil {
				return err
			}
			d, err := deepCopy(&rec.Deployment)
			if err != nil {
				return err
			}
			meta, validate = &d.Metadata, func() error { return manifests.Validate(&d) }
			b.Deployments = []*manifests.Deployment{&d}
		case KindService:
			rec, err := s.readService(ref.Namespace, ref.Name)
			if err := notLive(err == nil && rec.Deleted, err); err != nil {
				return err
			}
			var svc manifests.Service
			if err := roundTrip(&rec.Service, &svc); err != nil {
				return err
			}
			meta, validate = &svc.Metadata, func() error { return manifests.ValidateService(&svc) }
			b.Services = []*manifests.Service{&svc}
		case KindNamespace:
			rec, err := s.LookupNamespace(ref.Name)
			if err := notLive(err == nil && rec.Deleted, err); err != nil {
				return err
			}
			var n manifests.Namespace
			if err := roundTrip(&rec.Namespace, &n); err != nil {
				return err
			}
			meta, validate = &n.Metadata, func() error { return manifests.ValidateNamespace(&n) }
			b.Namespaces = []*manifests.Namespace{&n}
		case KindConfigMap:
			o, err := liveCopy(s, configMapKind, ref)
			if err != nil {
				return err
			}
			meta, validate = &o.Metadata, func() error { return manifests.ValidateConfigMap(o) }
			b.ConfigMaps = []*manifests.ConfigMap{o}
		case KindSecret:
			o, err := liveCopy(s, secretKind, ref)
			if err != nil {
				return err
			}
			meta, validate = &o.Metadata, func() error { return manifests.ValidateSecret(o) }
			b.Secrets = []*manifests.Secret{o}
		case KindPersistentVolumeClaim:
			o, err := liveCopy(s, claimKind, ref)
			if err != nil {
				return err
			}
			meta, validate = &o.Metadata, func() error { return manifests.ValidatePVC(o) }
			b.Claims = []*manifests.PersistentVolumeClaim{o}
		default:
			return fmt.Errorf("update: unknown kind %q", ref.Kind)
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

// liveCopy is a copy of the live object ref names of kind k.
func liveCopy[T any](s *Store, k *objectKind[T], ref ObjectRef) (*T, error) {
	rec, err := lookupLive(s, k, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	var o T
	if err := roundTrip(&rec.Object, &o); err != nil {
		return nil, err
	}
	return &o, nil
}
