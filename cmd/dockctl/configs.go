package main

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
)

// ConfigMaps, Secrets and PersistentVolumeClaims in bundles: apply, diff
// and delete -f.

// diffSecret renders Secrets for diff, their values masked as kubectl
// diff masks them: "***" where they are equal, "*** (before)" and "***
// (after)" where they differ, so that a diff shows which keys change and
// never what they hold; kubectl's last-applied-configuration annotation, a
// copy of the values, is masked the same way.
func diffSecret(live, next any) (lb, nb []byte, err error) {
	l, _ := live.(*manifests.Secret)
	n := next.(*manifests.Secret).DeepCopy()
	manifests.SetSecretDefaults(n)
	if lb, nb, err = diffYAML(live, n); err != nil {
		return nil, nil, err
	}
	return maskSecret(lb, l, nb, n)
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
