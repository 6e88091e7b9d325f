package podruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// File volumes of an owner's holder pods, as its sync sees them
// (docs/design.md §11; dockerx/convert_files.go for the containers,
// filesplan.go for the payload, podfiles.go for the write).
//
//   - Every sync of an owner (and so every resync) plans the payload of
//     each running holder pod and compares its hash with the one last
//     written (FilesMemory): a change of a ConfigMap or Secret, or a
//     controller that does not know what it wrote (just started), plans
//     one write, which the writer makes atomic and a no-op when nothing
//     changed. A converged pod plans nothing.
//   - A reference that does not resolve (a missing non-optional
//     ConfigMap, Secret or key) keeps a pod that never got its files from
//     starting. In a pod that has them, each volume is planned on its own,
//     as the kubelet sets up each volume on its own: the volume keeps its
//     last written files and is reported on the pod (FailedMount), and the
//     pod's other volumes keep being updated.
//   - The payload and its hash never reach a log, an error, an event or a
//     status: the hash is kept in memory only.

// FilesDocker is what the writer of file volumes needs from Docker: the
// helper image holders and writers run, and a run of the writer in a
// container of its own (never in a namespace of the pod: a pod's
// container could reach a process that holds its volumes writable).
type FilesDocker interface {
	EnsureHelperImage(ctx context.Context, instance string) (string, error)
	FilesWriter
}

// FileVolumes plans and writes the file volumes of one controller's holder
// pods. Its fields are set once, before first use.
type FileVolumes struct {
	Instance string
	// Config is where the volumes' ConfigMaps and Secrets are read (nil:
	// none exists).
	Config ConfigStore
	// Docker runs the writers (nil: this controller has no writer, and a
	// pod with file volumes cannot be made).
	Docker FilesDocker
	// Memory is what was written into each pod.
	Memory *FilesMemory
	// Host is what a downward API file reports for a limit its container
	// does not set: the host's capacity. ctx is nil for a sweep's
	// assessment, which knows only a capacity already known.
	Host func(ctx context.Context) HostResources
	// ImageUsed is told whenever the helper image is asked for, so that a
	// collector of helper images keeps it (nil: nobody to tell).
	ImageUsed func()
}

// FileObjectCache caches one sync's ConfigStore lookups of file volumes'
// sources. The zero value is ready.
type FileObjectCache struct {
	cms     map[string]*manifests.ConfigMap
	secrets map[string]*manifests.Secret
}

// Objects looks up what t's file volumes refer to in namespace ns. An
// object that does not exist maps to nil; any other failure (an
// unreadable record) is an error.
func (v *FileVolumes) Objects(ns string, t *manifests.PodTemplateSpec, cache *FileObjectCache) (FileObjects, error) {
	objs := FileObjects{ConfigMaps: map[string]*manifests.ConfigMap{}, Secrets: map[string]*manifests.Secret{}}
	cms, ss := FileRefs(&t.Spec)
	if cache.cms == nil {
		cache.cms, cache.secrets = map[string]*manifests.ConfigMap{}, map[string]*manifests.Secret{}
	}
	for _, name := range cms {
		cm, err := cachedLookup(cache.cms, ns, name, v.configMap)
		if err != nil {
			return FileObjects{}, fmt.Errorf("configmap %s/%s: %w", ns, name, err)
		}
		objs.ConfigMaps[name] = cm
	}
	for _, name := range ss {
		s, err := cachedLookup(cache.secrets, ns, name, v.secret)
		if err != nil {
			// The store's error names the record, never its values.
			return FileObjects{}, fmt.Errorf("secret %s/%s: %w", ns, name, err)
		}
		objs.Secrets[name] = s
	}
	return objs, nil
}

// cachedLookup returns object name of namespace ns from cache, else
// looks it up and caches it: nil when it does not exist.
func cachedLookup[T any](cache map[string]*T, ns, name string, lookup func(ns, name string) (*T, error)) (*T, error) {
	if o, ok := cache[name]; ok {
		return o, nil
	}
	o, err := lookup(ns, name)
	if errors.Is(err, store.ErrNotFound) {
		o = nil
	} else if err != nil {
		return nil, err
	}
	cache[name] = o
	return o, nil
}

func (v *FileVolumes) configMap(ns, name string) (*manifests.ConfigMap, error) {
	if v.Config == nil {
		return nil, nil
	}
	return v.Config.LookupConfigMap(ns, name)
}

func (v *FileVolumes) secret(ns, name string) (*manifests.Secret, error) {
	if v.Config == nil {
		return nil, nil
	}
	return v.Config.LookupSecret(ns, name)
}

// Plan says where each running holder pod of owner with file volumes
// stands (by unit key, as pods; nil when none has file volumes): ns is
// the owner's namespace, templates gives a pod's template by hash, from
// the kind-free template a writer mounts the volumes of. ctx is nil for
// the sweep's assessment, which must not act.
func (v *FileVolumes) Plan(ctx context.Context, cache *FileObjectCache, ns, owner string, pods map[string]*Pod,
	templates func(string) *manifests.PodTemplateSpec, from func(*manifests.PodTemplateSpec) *dockerx.PodTemplate) map[string]PodFiles {
	var out map[string]PodFiles
	for key, p := range pods {
		t := templates(p.Hash)
		if t == nil || p.Holder == nil || !manifests.NeedsWriter(&t.Spec) {
			continue
		}
		if out == nil {
			out = map[string]PodFiles{}
		}
		pf := PodFiles{Have: v.Memory.Get(owner, key), Pod: p.Name}
		objs, err := v.Objects(ns, t, cache)
		if err == nil {
			payload, missing := PlanVolumes(&t.Spec, PodDownwardIdentity(ns, p.Name, p.UID, p.Hash, t), objs, v.Host(ctx))
			if len(payload.Volumes) > 0 || len(missing) == 0 {
				pf.Want = PayloadHash(payload)
			}
			if len(missing) > 0 {
				err = MissingVolumesError(missing)
				for _, m := range missing {
					pf.FailedMount = append(pf.FailedMount, m.Message())
				}
			}
		}
		if err != nil {
			pf.Missing = fmt.Sprintf("pod %s: %v", p.Name, err)
			if pf.Have == "" && p.Holder.State == dockerx.StateRunning && v.writtenBefore(ctx, from(t), p.Hash, dockerx.PodRef{Name: p.Name, UID: p.UID, Holder: p.Base}) {
				pf.Have = filesWrittenEarlier
				v.Memory.Set(owner, key, pf.Have)
			}
		}
		out[key] = pf
	}
	if ctx != nil {
		// Only a sync forgets: its list follows every write its earlier
		// syncs made. The sweep's assessment (no ctx) works from a list
		// that may predate a pod a sync just created and wrote.
		v.Memory.Forget(owner, pods)
	}
	return out
}

// filesWrittenEarlier is the memory of a pod whose files an earlier
// controller wrote (writtenBefore), their hash unknown: a pod that has
// files, which a change of its objects rewrites.
const filesWrittenEarlier = "written-earlier"

// writtenBefore asks a writer whether the pod's volumes hold files
// (`helper files --check`): after a restart this controller knows nothing
// it wrote, and a pod whose ConfigMap or Secret is gone since must keep
// its last files and keep being repaired, as the kubelet keeps a mounted
// volume — not be taken for a pod that never got its files. Asked only
// then, and only by a sync (ctx): once per pod, as the answer is kept.
func (v *FileVolumes) writtenBefore(ctx context.Context, d *dockerx.PodTemplate, hash string, ref dockerx.PodRef) bool {
	if v.Docker == nil || ctx == nil {
		return false
	}
	var names []string
	for _, vol := range d.Template.Spec.Volumes {
		if vol.IsFileVolume() {
			names = append(names, vol.Name)
		}
	}
	img, err := v.Image(ctx)
	if err != nil {
		return false
	}
	code, _, err := RunFilesWriter(ctx, v.Docker, FilesRun{Instance: v.Instance, Image: img, From: d, Hash: hash, Pod: ref},
		[]string{"--check", strings.Join(names, ",")}, true, nil)
	return err == nil && code == helperapi.ExitOK
}

// Write carries out an OpWriteFiles: the payload is planned again from
// the objects as they are now, written through the holder, and its hash
// remembered.
func (v *FileVolumes) Write(ctx context.Context, op Op) error {
	if op.From == nil || op.Pod == nil {
		return fmt.Errorf("write files %s: the plan names no pod", op.Name)
	}
	if v.Docker == nil {
		return fmt.Errorf("write files of pod %s: this controller has no writer (Options.FilesDocker)", op.Pod.Name)
	}
	ns := op.From.NamespaceOrDefault()
	t := op.From.Template
	objs, err := v.Objects(ns, t, &FileObjectCache{})
	if err != nil {
		return fmt.Errorf("write files of pod %s: %w", op.Pod.Name, err)
	}
	payload, missing := PlanVolumes(&t.Spec, PodDownwardIdentity(ns, op.Pod.Name, op.Pod.UID, op.Hash, t), objs, v.Host(ctx))
	run := FilesRun{Instance: v.Instance, From: op.From, Hash: op.Hash, Pod: *op.Pod}
	hash, err := WritePodFiles(ctx, v.Docker, run, v.Image, op.Reason, payload, missing)
	if hash != "" {
		v.Memory.Set(store.Key(ns, op.From.Owner), PodKeyPrefix+op.Pod.Holder+"/"+op.Pod.UID, hash)
	}
	return err
}

// Image is the image of the holder of a pod with file volumes and of its
// writers: the helper image.
func (v *FileVolumes) Image(ctx context.Context) (string, error) {
	if v.Docker == nil {
		return "", errors.New("a pod with file volumes needs the helper image, and this controller has none (Options.FilesDocker)")
	}
	v.imageUsed()
	ref, err := v.Docker.EnsureHelperImage(ctx, v.Instance)
	v.imageUsed()
	if err != nil {
		return "", fmt.Errorf("helper image: %w", err)
	}
	return ref, nil
}

func (v *FileVolumes) imageUsed() {
	if v.ImageUsed != nil {
		v.ImageUsed()
	}
}

// CheckSubPaths resolves the subPaths of file volumes that container name
// of pod ref binds (the package's CheckSubPaths), in a writer of the
// helper image.
func (v *FileVolumes) CheckSubPaths(ctx context.Context, d *dockerx.PodTemplate, hash string, ref dockerx.PodRef, name string) error {
	var w FilesWriter
	if v.Docker != nil {
		w = v.Docker
	}
	return CheckSubPaths(ctx, w, FilesRun{Instance: v.Instance, From: d, Hash: hash, Pod: ref}, v.Image, name)
}
