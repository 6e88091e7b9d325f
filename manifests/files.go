package manifests

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// File volumes (docs/design.md §11): configMap, secret, projected and
// downwardAPI volumes, whose files the controller writes into a tmpfs
// volume that the pod's holder keeps mounted.

// IsFileVolume reports whether v's files are written by the controller.
func (v *Volume) IsFileVolume() bool {
	return v.ConfigMap != nil || v.Secret != nil || v.Projected != nil || v.DownwardAPI != nil
}

// HasFileVolumes reports whether the pod has a file volume: its pods need
// a holder that can run the writer (NeedsWriter).
func (ps *PodSpec) HasFileVolumes() bool {
	return slices.ContainsFunc(ps.Volumes, func(v Volume) bool { return v.IsFileVolume() })
}

// NeedsWriter reports whether a pod of this spec runs with a holder
// running dockctl's own helper (`dockctl helper hold`), into which the
// controller execs the writer of its file volumes. Every other holder is
// the assembled one.
func NeedsWriter(ps *PodSpec) bool { return ps.HasFileVolumes() }

// subPathSource refuses a subPath of any volume but a file volume. Engine
// API 1.41 has no mount of a path inside a volume (it arrives with 1.45):
// dockctl binds the path inside the volume's mountpoint, which the daemon
// resolves on its host, following links. Only a file volume's content is
// dockctl's alone (its writer holder writes it; the pod's containers mount
// it read-only); in an emptyDir, a claim or a hostPath, a container of the
// pod could make the path a link to anywhere on the host — the escape of
// Kubernetes' CVE-2017-1002101 — and a bind is no use of a claim's volume
// that pvc-protection would see.
func (v *validator) subPathSource(p string, ps *PodSpec, volume string) {
	for i := range ps.Volumes {
		vol := &ps.Volumes[i]
		if vol.Name != volume || vol.IsFileVolume() {
			continue
		}
		kind := "emptyDir"
		switch {
		case vol.PersistentVolumeClaim != nil:
			kind = "persistentVolumeClaim"
		case vol.HostPath != nil:
			kind = "hostPath"
		}
		v.add(p, "unsupported by dockctl on a %s volume (only on configMap, secret, projected and downwardAPI volumes: on Engine API 1.41 a subPath is a bind that follows links, which a container could point anywhere on the host): mount the whole volume", kind)
		return
	}
}

// Modes and fieldPaths as Kubernetes' validation.
const (
	// DefaultFileMode is the mode of a file volume's files when neither
	// the item nor the volume gives one (Kubernetes' 0644).
	DefaultFileMode int32 = 0o644
	maxFileMode     int32 = 0o777
)

// downwardAPIVolumeFieldPaths are the fieldRef paths a downwardAPI volume
// file may name (Kubernetes' validDownwardAPIFieldPathExpressions);
// metadata.labels['k'] and metadata.annotations['k'] are also accepted.
var downwardAPIVolumeFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid"}

// fileVolume validates a configMap, secret, projected or downwardAPI
// volume source as Kubernetes' validateVolumeSource does.
func (v *validator) fileVolume(vp string, vol *Volume, ps *PodSpec) {
	mode := func(p string, m *int32) {
		if m != nil && (*m < 0 || *m > maxFileMode) {
			v.add(p, "invalid value %d: must be a number between 0 and 0777 (octal), both inclusive", *m)
		}
	}
	paths := map[string]bool{}
	item := func(p, key string, kp KeyToPath) {
		if kp.Key == "" {
			v.add(child(p, "key"), "required")
		} else if msgs := validation.IsConfigMapKey(kp.Key); len(msgs) > 0 {
			v.add(child(p, "key"), "invalid value %q: %s", kp.Key, strings.Join(msgs, "; "))
		}
		v.itemPath(child(p, "path"), kp.Path, paths)
		mode(child(p, "mode"), kp.Mode)
	}
	name := func(p, n string) {
		v.requiredName(p, n, func(s string) []string { return validation.IsDNS1123Subdomain(s) })
	}
	if cm := vol.ConfigMap; cm != nil {
		p := child(vp, "configMap")
		name(child(p, "name"), cm.Name)
		mode(child(p, "defaultMode"), cm.DefaultMode)
		for i, kp := range cm.Items {
			item(index(child(p, "items"), i), "key", kp)
		}
	}
	if s := vol.Secret; s != nil {
		p := child(vp, "secret")
		name(child(p, "secretName"), s.SecretName)
		mode(child(p, "defaultMode"), s.DefaultMode)
		for i, kp := range s.Items {
			item(index(child(p, "items"), i), "key", kp)
		}
	}
	if d := vol.DownwardAPI; d != nil {
		p := child(vp, "downwardAPI")
		mode(child(p, "defaultMode"), d.DefaultMode)
		for i := range d.Items {
			v.downwardAPIFile(index(child(p, "items"), i), &d.Items[i], paths, ps)
			mode(child(index(child(p, "items"), i), "mode"), d.Items[i].Mode)
		}
	}
	if pr := vol.Projected; pr != nil {
		p := child(vp, "projected")
		mode(child(p, "defaultMode"), pr.DefaultMode)
		for i, src := range pr.Sources {
			sp := index(child(p, "sources"), i)
			n := btoi(src.ConfigMap != nil) + btoi(src.Secret != nil) + btoi(src.DownwardAPI != nil)
			if n != 1 {
				v.add(sp, "exactly one of configMap, secret or downwardAPI is required")
			}
			if cm := src.ConfigMap; cm != nil {
				name(child(sp, "configMap.name"), cm.Name)
				for j, kp := range cm.Items {
					item(index(child(sp, "configMap.items"), j), "key", kp)
				}
			}
			if s := src.Secret; s != nil {
				name(child(sp, "secret.name"), s.Name)
				for j, kp := range s.Items {
					item(index(child(sp, "secret.items"), j), "key", kp)
				}
			}
			if d := src.DownwardAPI; d != nil {
				for j := range d.Items {
					ip := index(child(sp, "downwardAPI.items"), j)
					v.downwardAPIFile(ip, &d.Items[j], paths, ps)
					mode(child(ip, "mode"), d.Items[j].Mode)
				}
			}
		}
	}
}

// btoi counts a set field.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// itemPath checks a file's path in a volume (Kubernetes'
// validateLocalDescendingPath, plus its projected "conflicting duplicate
// paths" for every kind).
func (v *validator) itemPath(p, s string, seen map[string]bool) {
	if s == "" {
		v.add(p, "required")
		return
	}
	if !v.descendingPath(p, s) {
		return
	}
	if strings.HasPrefix(s, "..") {
		v.add(p, "invalid value %q: must not start with '..'", s)
		return
	}
	c := path.Clean(s)
	if seen[c] {
		v.add(p, "conflicting duplicate paths %q", s)
	}
	seen[c] = true
}

// descendingPath checks a relative path without ".." elements.
func (v *validator) descendingPath(p, s string) bool {
	if path.IsAbs(s) {
		v.add(p, "invalid value %q: must be a relative path", s)
		return false
	}
	if slices.Contains(strings.Split(s, "/"), "..") {
		v.add(p, "invalid value %q: must not contain '..'", s)
		return false
	}
	return true
}

func (v *validator) downwardAPIFile(p string, f *DownwardAPIVolumeFile, paths map[string]bool, ps *PodSpec) {
	v.itemPath(child(p, "path"), f.Path, paths)
	switch {
	case f.FieldRef != nil && f.ResourceFieldRef != nil:
		v.add(p, "fieldRef and resourceFieldRef can not be specified simultaneously")
	case f.FieldRef != nil:
		fp := f.FieldRef.FieldPath
		if av := f.FieldRef.APIVersion; av != "" && av != "v1" {
			v.add(child(p, "fieldRef.apiVersion"), "unsupported value %q: only \"v1\"", av)
		}
		if field, key, ok := SplitFieldPath(fp); ok && (field == FieldMetadataLabels || field == FieldMetadataAnnotations) {
			if field == FieldMetadataAnnotations {
				// As Kubernetes' validateObjectFieldSelector: annotation
				// keys are checked lower-cased, label keys as written.
				key = strings.ToLower(key)
			}
			if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
				v.add(child(p, "fieldRef.fieldPath"), "invalid value %q: %s", fp, strings.Join(msgs, "; "))
			}
			break
		}
		if !slices.Contains(downwardAPIVolumeFieldPaths, fp) {
			if fp == "" {
				v.add(child(p, "fieldRef.fieldPath"), "required")
			} else {
				v.add(child(p, "fieldRef.fieldPath"), "unsupported value %q: supported values: %s", fp, strings.Join(downwardAPIVolumeFieldPaths, ", "))
			}
		}
	case f.ResourceFieldRef != nil:
		r := f.ResourceFieldRef
		if r.ContainerName == "" {
			v.add(child(p, "resourceFieldRef.containerName"), "required")
		} else if ps.FindContainer(r.ContainerName) == nil {
			v.add(child(p, "resourceFieldRef.containerName"), "no container named %q in the pod", r.ContainerName)
		}
		// The resources and divisors of an environment variable's
		// (validateContainerResourceDivisor): ephemeral-storage, which
		// Kubernetes also takes here, has no limit on one host.
		v.resourceFieldRef(child(p, "resourceFieldRef"), r, ps)
	default:
		v.add(p, "one of fieldRef or resourceFieldRef is required")
	}
}

// subPath validates a volumeMount's subPath (Kubernetes'
// validateLocalDescendingPath).
func (v *validator) subPath(p, s string) {
	if s != "" {
		v.descendingPath(p, s)
	}
}

// FileMode returns the mode of a projected item: its own, else the
// volume's default, else DefaultFileMode.
func FileMode(item, volumeDefault *int32) int32 {
	switch {
	case item != nil:
		return *item
	case volumeDefault != nil:
		return *volumeDefault
	}
	return DefaultFileMode
}

// String names a file volume's kind for messages.
func (v *Volume) FileVolumeKind() string {
	switch {
	case v.ConfigMap != nil:
		return "configMap"
	case v.Secret != nil:
		return "secret"
	case v.Projected != nil:
		return "projected"
	case v.DownwardAPI != nil:
		return "downwardAPI"
	}
	return fmt.Sprintf("volume %s", v.Name)
}

// FileVolumeSize is the size of a file volume's tmpfs: room for two
// versions (the writer makes the new one before it removes the old) of
// every source, each version 1 MiB of data (the API server's limit on an
// object) plus a page for each of up to 3840 files (a tmpfs charges at
// least one page per non-empty file), plus 1 MiB. A tmpfs takes memory
// only for what it holds, so the room costs nothing until it is used.
func FileVolumeSize(v *Volume) int64 {
	sources := int64(1)
	if v.Projected != nil {
		sources = int64(max(len(v.Projected.Sources), 1))
	}
	return sources*2*fileVersionRoom + 1<<20
}

// fileVersionRoom is the room of one version of one source's files.
const fileVersionRoom = 1<<20 + 3840*4096
