package podruntime

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The kubelet's side of configuration references (docs/design.md §17): a
// pod whose environment refers to a ConfigMap or Secret (or a key of one)
// that does not exist, and is not optional, gets no container, as a
// cluster leaves such a pod in CreateContainerConfigError; and a change to
// a referenced ConfigMap or Secret must reach the owners whose templates
// refer to it, so that a waiting pod proceeds at once (an index, as
// controller-runtime maps a child's event to its owner). Owners are keys
// their controller queues; no kind is known here.

// EnvMissingRefs says which non-optional references of the pod's
// environments cannot be resolved ("" when all can), or why the store
// could not tell.
func EnvMissingRefs(ns string, ps *manifests.PodSpec, cs ConfigStore) string {
	var refs []string
	for _, ctr := range ps.AllContainers() {
		if !dockerx.NeedsEnvResolution(ctr) {
			continue
		}
		_, err := ResolveEnv(ps, ctr, PodIdentity{Namespace: ns}, cs)
		var me *MissingRefsError
		switch {
		case errors.As(err, &me):
			for _, r := range me.Refs {
				refs = append(refs, r.String())
			}
		case err != nil:
			refs = append(refs, err.Error())
		}
	}
	if len(refs) == 0 {
		return ""
	}
	return "waiting for " + strings.Join(refs, "; ")
}

// ConfigRefs indexes which owners refer to which ConfigMaps and Secrets,
// by watch key (store.ConfigMapKey, store.SecretKey), from every template
// each owner's last sync saw. The zero value is empty and ready; it is
// safe for concurrent use.
type ConfigRefs struct {
	mu      sync.Mutex
	byKey   map[string]map[string]bool // watch key → owner keys
	byOwner map[string][]string        // owner key → watch keys
}

// Set records the watch keys owner key refers to, in place of those it
// referred to before; none forgets the owner.
func (r *ConfigRefs) Set(key string, watchKeys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, wk := range r.byOwner[key] {
		delete(r.byKey[wk], key)
		if len(r.byKey[wk]) == 0 {
			delete(r.byKey, wk)
		}
	}
	if len(watchKeys) == 0 {
		delete(r.byOwner, key)
		return
	}
	if r.byKey == nil {
		r.byKey, r.byOwner = map[string]map[string]bool{}, map[string][]string{}
	}
	r.byOwner[key] = watchKeys
	for _, wk := range watchKeys {
		if r.byKey[wk] == nil {
			r.byKey[wk] = map[string]bool{}
		}
		r.byKey[wk][key] = true
	}
}

// Referrers returns the owners that refer to watch key wk, sorted.
func (r *ConfigRefs) Referrers(wk string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Keys(r.byKey[wk]))
	sort.Strings(out)
	return out
}

// ConfigWatchKeys lists the watch keys of the ConfigMaps and Secrets the
// templates refer to, sorted and once each: their environments, their
// configMap, secret and projected volumes and their imagePullSecrets, so
// that a change to any of them reaches the owner.
func ConfigWatchKeys(ns string, templates ...*manifests.PodTemplateSpec) []string {
	set := map[string]bool{}
	cm := func(name string) {
		if name != "" {
			set[store.ConfigMapKey(ns, name)] = true
		}
	}
	sec := func(name string) {
		if name != "" {
			set[store.SecretKey(ns, name)] = true
		}
	}
	for _, t := range templates {
		if t == nil {
			continue
		}
		for _, ctr := range t.Spec.AllContainers() {
			for _, e := range ctr.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					cm(r.Name)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					sec(r.Name)
				}
			}
			for _, ef := range ctr.EnvFrom {
				if r := ef.ConfigMapRef; r != nil {
					cm(r.Name)
				}
				if r := ef.SecretRef; r != nil {
					sec(r.Name)
				}
			}
		}
		for _, ps := range t.Spec.ImagePullSecrets {
			sec(ps.Name)
		}
		for _, v := range t.Spec.Volumes {
			if v.ConfigMap != nil {
				cm(v.ConfigMap.Name)
			}
			if v.Secret != nil {
				sec(v.Secret.SecretName)
			}
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ConfigMap != nil {
						cm(s.ConfigMap.Name)
					}
					if s.Secret != nil {
						sec(s.Secret.Name)
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
