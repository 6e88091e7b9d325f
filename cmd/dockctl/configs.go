package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// ConfigMaps, Secrets and PersistentVolumeClaims in bundles: apply, diff
// and delete -f.

// diffConfig shows, for runDiff, the difference between the stored and
// the declared ConfigMaps, Secrets and claims. A Secret's values are
// masked as kubectl diff masks them: "***" where they are equal, "***
// (before)" and "*** (after)" where they differ, so that a diff shows
// which keys change and never what they hold; kubectl's
// last-applied-configuration annotation, a copy of the values, is masked
// the same way.
func diffConfig(st *store.Store, b *store.Bundle, show func(name string, live, next []byte) error) error {
	for _, c := range b.ConfigMaps {
		ns, name := c.Metadata.Namespace, c.Metadata.Name
		rec, err := st.LookupConfigMapRecord(ns, name)
		var live *manifests.ConfigMap
		if live, err = liveObject(rec, err); err != nil {
			return err
		}
		lb, nb, err := diffPair(live, c, func(c *manifests.ConfigMap) *manifests.ObjectMeta { return &c.Metadata })
		if err != nil {
			return err
		}
		if err := show("configmap/"+diffName(ns, name), lb, nb); err != nil {
			return err
		}
	}
	for _, s := range b.Secrets {
		ns, name := s.Metadata.Namespace, s.Metadata.Name
		rec, err := st.LookupSecretRecord(ns, name)
		var live *manifests.Secret
		if live, err = liveObject(rec, err); err != nil {
			return err
		}
		next := s.DeepCopy()
		manifests.SetSecretDefaults(next)
		lb, nb, err := diffSecrets(live, next)
		if err != nil {
			return err
		}
		if err := show("secret/"+diffName(ns, name), lb, nb); err != nil {
			return err
		}
	}
	for _, p := range b.Claims {
		ns, name := p.Metadata.Namespace, p.Metadata.Name
		rec, err := st.LookupClaimRecord(ns, name)
		var live *manifests.PersistentVolumeClaim
		if live, err = liveObject(rec, err); err != nil {
			return err
		}
		lb, nb, err := diffPair(live, p, func(p *manifests.PersistentVolumeClaim) *manifests.ObjectMeta { return &p.Metadata })
		if err != nil {
			return err
		}
		if err := show("persistentvolumeclaim/"+diffName(ns, name), lb, nb); err != nil {
			return err
		}
	}
	return nil
}

// liveObject is the object of a live record (nil: none, or a tombstone);
// a record that cannot be read is an error, as apply would refuse it.
func liveObject[T any](rec *store.ObjectRecord[T], err error) (*T, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case rec.Deleted:
		return nil, nil
	}
	return &rec.Object, nil
}

// diffPair renders the live object (nil: none) and the next one as YAML,
// without the server-set metadata and with the namespace as the store
// keeps it.
func diffPair[T any](live, next *T, meta func(*T) *manifests.ObjectMeta) (lb, nb []byte, err error) {
	render := func(o *T) ([]byte, error) {
		if o == nil {
			return nil, nil
		}
		c := *o
		m := meta(&c)
		mc := *m
		mc.Generation, mc.CreationTimestamp = 0, nil
		if mc.Namespace == manifests.DefaultNamespace {
			mc.Namespace = ""
		}
		*m = mc
		return yaml.Marshal(c)
	}
	if lb, err = render(live); err != nil {
		return nil, nil, err
	}
	nb, err = render(next)
	return lb, nb, err
}

// diffSecrets is diffPair for Secrets, their data masked.
func diffSecrets(live, next *manifests.Secret) (lb, nb []byte, err error) {
	lb, nb, err = diffPair(live, next, func(s *manifests.Secret) *manifests.ObjectMeta { return &s.Metadata })
	if err != nil {
		return nil, nil, err
	}
	return maskSecret(lb, live, nb, next)
}

// maskSecret replaces the data values of the rendered Secrets lb (of
// live) and nb (of next) by kubectl diff's masks.
func maskSecret(lb []byte, live *manifests.Secret, nb []byte, next *manifests.Secret) ([]byte, []byte, error) {
	mask := func(b []byte, own, other *manifests.Secret, side string) ([]byte, error) {
		if b == nil {
			return nil, nil
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("masking a secret: %w", err)
		}
		if len(own.Data) > 0 {
			data := map[string]string{}
			for k, v := range own.Data {
				word := "***"
				if other != nil {
					if ov, ok := other.Data[k]; ok && string(ov) != string(v) {
						word = "*** (" + side + ")"
					}
				}
				data[k] = word
			}
			m["data"] = data
		}
		// kubectl's last-applied-configuration holds the values too
		// (describe leaves it out): masked the same way.
		if md, ok := m["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				if v, ok := own.Metadata.Annotations[lastApplied]; ok && ann[lastApplied] != nil {
					word := "***"
					if other != nil {
						if ov, ok := other.Metadata.Annotations[lastApplied]; ok && ov != v {
							word = "*** (" + side + ")"
						}
					}
					ann[lastApplied] = word
				}
			}
		}
		j, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("masking a secret: %w", err)
		}
		return yaml.JSONToYAML(j)
	}
	l, err := mask(lb, live, next, "before")
	if err != nil {
		return nil, nil, err
	}
	n, err := mask(nb, next, live, "after")
	return l, n, err
}
