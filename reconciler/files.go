package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// File volumes of holder pods (docs/design.md §11; dockerx/convert_files.go
// for the containers, filesplan.go for the payload).
//
//   - A new pod's create becomes: its volumes (file volumes are tmpfs
//     volumes), its holder (`dockctl helper hold` from the helper image,
//     the volumes mounted read-only to keep them), the write of its files
//     (OpWriteFiles: `dockctl helper files` in a writer container of its
//     own, dockerx.RunFilesWriter, with the payload on stdin), then its
//     first containers, which need the write: nothing of the pod runs
//     before its files are there, as the kubelet mounts volumes before it
//     starts containers.
//   - Every sync of a deployment (and so every resync) plans the payload
//     of each running holder pod and compares its hash with the one last
//     written (memory): a change of a ConfigMap or Secret, or a controller
//     that does not know what it wrote (just started), plans one write,
//     which the writer makes atomic and a no-op when nothing changed. A
//     converged pod plans nothing. A member create or start in the same
//     plan waits for the write.
//   - A reference that does not resolve (a missing non-optional ConfigMap,
//     Secret or key) keeps a pod that never got its files from starting
//     (ReplicaFailure names it). In a pod that has them, each volume is
//     planned on its own, as the kubelet sets up each volume on its own:
//     the volume keeps its last written files and is reported on the pod
//     (a Warning FailedMount at each sync, as the kubelet's remount
//     retries report it), and the pod's other volumes keep being updated.
//   - The payload and its hash never reach a log, an error, an event or a
//     status: the hash is kept in memory only.

// FilesDocker is what the writer of file volumes needs from Docker: the
// helper image holders and writers run, and a run of the writer in a
// container of its own (never in a namespace of the pod: a pod's
// container could reach a process that holds its volumes writable).
type FilesDocker interface {
	EnsureHelperImage(ctx context.Context, instance string) (string, error)
	RunFilesWriter(ctx context.Context, req dockerx.FilesWriterRequest, stdin []byte, timeout time.Duration) (exit int, stdout []byte, err error)
}

// PodFiles is where one holder pod's files stand, for the planner.
type PodFiles = podruntime.PodFiles

// filesMemory holds, per deployment (its key) and pod (its unit key), the
// hash of the payload last written into the pod (podruntime.FilesMemory).
type filesMemory = podruntime.FilesMemory

// podUnitKey is a pod's unit key (podruntime.GroupPods) from its reference.
func podUnitKey(p *dockerx.PodRef) string { return podruntime.PodKeyPrefix + p.Holder + "/" + p.UID }

// isPodVolumeRole reports whether a volume of that role belongs to one pod
// and goes with it (podruntime.IsPodVolumeRole).
func isPodVolumeRole(role string) bool { return podruntime.IsPodVolumeRole(role) }

func identityOf(ns, name, uid, hash string, t *manifests.PodTemplateSpec) podruntime.DownwardIdentity {
	return podruntime.PodDownwardIdentity(ns, name, uid, hash, t)
}

// hostResources is what a downward API file reports for a limit its
// container does not set: the host's capacity (hostInfo). Without ctx (a
// sweep's assessment) only a capacity already known; a sync knows it.
func (c *Controller) hostResources(ctx context.Context) podruntime.HostResources {
	var h dockerx.HostInfo
	if ctx != nil {
		h = c.hostInfo(ctx)
	} else {
		h = c.refs.host.Known()
	}
	return podruntime.HostResources{MilliCPU: int64(h.CPUs) * 1000, MemoryBytes: h.Memory}
}

// lookupCache caches one sync's ConfigStore lookups.
type lookupCache struct {
	cms     map[string]*manifests.ConfigMap
	secrets map[string]*manifests.Secret
}

// fileObjectsFor looks up what t's file volumes refer to in namespace ns.
// An object that does not exist maps to nil; any other failure (an
// unreadable record) is an error.
func (c *Controller) fileObjectsFor(ns string, t *manifests.PodTemplateSpec, cache *lookupCache) (podruntime.FileObjects, error) {
	objs := podruntime.FileObjects{ConfigMaps: map[string]*manifests.ConfigMap{}, Secrets: map[string]*manifests.Secret{}}
	cms, ss := podruntime.FileRefs(&t.Spec)
	if cache.cms == nil {
		cache.cms, cache.secrets = map[string]*manifests.ConfigMap{}, map[string]*manifests.Secret{}
	}
	for _, name := range cms {
		if cm, ok := cache.cms[name]; ok {
			objs.ConfigMaps[name] = cm
			continue
		}
		var cm *manifests.ConfigMap
		if c.opts.Config != nil {
			var err error
			cm, err = c.opts.Config.LookupConfigMap(ns, name)
			if errors.Is(err, store.ErrNotFound) {
				cm = nil
			} else if err != nil {
				return podruntime.FileObjects{}, fmt.Errorf("configmap %s/%s: %w", ns, name, err)
			}
		}
		cache.cms[name], objs.ConfigMaps[name] = cm, cm
	}
	for _, name := range ss {
		if s, ok := cache.secrets[name]; ok {
			objs.Secrets[name] = s
			continue
		}
		var s *manifests.Secret
		if c.opts.Config != nil {
			var err error
			s, err = c.opts.Config.LookupSecret(ns, name)
			if errors.Is(err, store.ErrNotFound) {
				s = nil
			} else if err != nil {
				// The store's error names the record, never its values.
				return podruntime.FileObjects{}, fmt.Errorf("secret %s/%s: %w", ns, name, err)
			}
		}
		cache.secrets[name], objs.Secrets[name] = s, s
	}
	return objs, nil
}

// podFiles plans where each running holder pod with file volumes stands
// (PlanInput.Files); nil when the deployment has none. ctx is nil for the
// sweep's assessment, which must not act.
func (c *Controller) podFiles(ctx context.Context, cache *lookupCache, d *manifests.Deployment, depKey string, pods map[string]*podruntime.Pod, templates func(string) *manifests.PodTemplateSpec) map[string]PodFiles {
	ns := d.Metadata.NamespaceOrDefault()
	var out map[string]PodFiles
	for key, p := range pods {
		t := templates(p.Hash)
		if t == nil || p.Holder == nil || !manifests.NeedsWriter(&t.Spec) {
			continue
		}
		if out == nil {
			out = map[string]PodFiles{}
		}
		pf := PodFiles{Have: c.files.Get(depKey, key), Pod: p.Name}
		objs, err := c.fileObjectsFor(ns, t, cache)
		if err == nil {
			payload, missing := podruntime.PlanVolumes(&t.Spec, identityOf(ns, p.Name, p.UID, p.Hash, t), objs, c.hostResources(ctx))
			if len(payload.Volumes) > 0 || len(missing) == 0 {
				pf.Want = podruntime.PayloadHash(payload)
			}
			if len(missing) > 0 {
				err = podruntime.MissingVolumesError(missing)
				for _, m := range missing {
					pf.FailedMount = append(pf.FailedMount, m.Message())
				}
			}
		}
		if err != nil {
			pf.Missing = fmt.Sprintf("pod %s: %v", p.Name, err)
			if pf.Have == "" && p.Holder.State == dockerx.StateRunning && c.filesWrittenBefore(ctx, podOfTemplate(d, t), p.Hash, dockerx.PodRef{Name: p.Name, UID: p.UID, Holder: p.Base}) {
				pf.Have = filesWrittenEarlier
				c.files.Set(depKey, key, pf.Have)
			}
		}
		out[key] = pf
	}
	if ctx != nil {
		// Only a sync forgets: its list follows every write its earlier
		// syncs made. The sweep's assessment (no ctx) works from a list
		// that may predate a pod a sync just created and wrote.
		c.files.Forget(depKey, pods)
	}
	return out
}

// filesWrittenEarlier is the memory of a pod whose files an earlier
// controller wrote (filesWrittenBefore), their hash unknown: a pod that
// has files, which a change of its objects rewrites.
const filesWrittenEarlier = "written-earlier"

// filesWrittenBefore asks a writer whether the pod's volumes hold files
// (`helper files --check`): after a restart this controller knows nothing
// it wrote, and a pod whose ConfigMap or Secret is gone since must keep
// its last files and keep being repaired, as the kubelet keeps a mounted
// volume — not be taken for a pod that never got its files. Asked only
// then, and only by a sync (ctx): once per pod, as the answer is kept.
func (c *Controller) filesWrittenBefore(ctx context.Context, d *dockerx.PodTemplate, hash string, ref dockerx.PodRef) bool {
	if c.opts.FilesDocker == nil || ctx == nil {
		return false
	}
	var names []string
	for _, v := range d.Template.Spec.Volumes {
		if v.IsFileVolume() {
			names = append(names, v.Name)
		}
	}
	code, _, err := c.runFilesWriter(ctx, d, hash, ref, []string{"--check", strings.Join(names, ",")}, true, nil)
	return err == nil && code == helperapi.ExitOK
}

// podOfTemplate is the pod template t of one of d's revisions, owned by
// d: what a writer mounts the volumes of.
func podOfTemplate(d *manifests.Deployment, t *manifests.PodTemplateSpec) *dockerx.PodTemplate {
	out := dockerx.TemplateOf(d)
	out.Template = t
	return out
}

// runFilesWriter runs `helper files ARGS` for the pod ref of d's template
// in a writer container of its own (dockerx.RunFilesWriter).
func (c *Controller) runFilesWriter(ctx context.Context, d *dockerx.PodTemplate, hash string, ref dockerx.PodRef, args []string, readOnly bool, stdin []byte) (int, []byte, error) {
	img, err := c.writerHolderImage(ctx)
	if err != nil {
		return 0, nil, err
	}
	return podruntime.RunFilesWriter(ctx, c.opts.FilesDocker, podruntime.FilesRun{Instance: c.opts.Instance, Image: img, From: d, Hash: hash, Pod: ref}, args, readOnly, stdin)
}

// writePodFiles carries out an OpWriteFiles: the payload is planned again
// from the objects as they are now, written through the holder, and its
// hash remembered.
func (c *Controller) writePodFiles(ctx context.Context, op Op) error {
	if op.From == nil || op.Pod == nil {
		return fmt.Errorf("write files %s: the plan names no pod", op.Name)
	}
	if c.opts.FilesDocker == nil {
		return fmt.Errorf("write files of pod %s: this controller has no writer (Options.FilesDocker)", op.Pod.Name)
	}
	ns := op.From.NamespaceOrDefault()
	t := op.From.Template
	objs, err := c.fileObjectsFor(ns, t, &lookupCache{})
	if err != nil {
		return fmt.Errorf("write files of pod %s: %w", op.Pod.Name, err)
	}
	payload, missing := podruntime.PlanVolumes(&t.Spec, identityOf(ns, op.Pod.Name, op.Pod.UID, op.Hash, t), objs, c.hostResources(ctx))
	run := podruntime.FilesRun{Instance: c.opts.Instance, From: op.From, Hash: op.Hash, Pod: *op.Pod}
	hash, err := podruntime.WritePodFiles(ctx, c.opts.FilesDocker, run, c.writerHolderImage, op.Reason, payload, missing)
	if hash != "" {
		c.files.Set(store.Key(ns, op.From.Owner), podUnitKey(op.Pod), hash)
	}
	return err
}

// writerHolderImage is the image of the holder of a pod with file volumes
// and of its writers: the helper image.
func (c *Controller) writerHolderImage(ctx context.Context) (string, error) {
	fd := c.opts.FilesDocker
	if fd == nil {
		return "", errors.New("a pod with file volumes needs the helper image, and this controller has none (Options.FilesDocker)")
	}
	c.helperImages.Store(true)
	ref, err := fd.EnsureHelperImage(ctx, c.opts.Instance)
	c.helperImages.Store(true)
	if err != nil {
		return "", fmt.Errorf("helper image: %w", err)
	}
	return ref, nil
}

// subPathError is a container whose subPath bind would lead out of its
// volume: refused, and named in the deployment's ReplicaFailure.
type subPathError = podruntime.SubPathError

// checkSubPaths resolves the subPaths of file volumes that container name
// of pod ref binds (podruntime.CheckSubPaths), in a writer of the helper
// image.
func (c *Controller) checkSubPaths(ctx context.Context, d *dockerx.PodTemplate, hash string, ref dockerx.PodRef, name string) error {
	var w podruntime.FilesWriter
	if c.opts.FilesDocker != nil {
		w = c.opts.FilesDocker
	}
	return podruntime.CheckSubPaths(ctx, w, podruntime.FilesRun{Instance: c.opts.Instance, From: d, Hash: hash, Pod: ref}, c.writerHolderImage, name)
}

// checkStartSubPaths is checkSubPaths for the start of container id, when
// it is a member of a holder pod of in.
func (c *Controller) checkStartSubPaths(ctx context.Context, in PlanInput, id string) error {
	if in.Desired == nil {
		return nil
	}
	for _, p := range in.Pods {
		for name, m := range p.Members {
			if m.ID != id {
				continue
			}
			t := in.templateOf(m.TemplateHash)
			if t == nil {
				return nil
			}
			return c.checkSubPaths(ctx, podOfTemplate(in.Desired, t), m.TemplateHash, dockerx.PodRef{Name: p.Name, UID: p.UID, Holder: p.Base}, name)
		}
	}
	return nil
}

// subPathFailure is the ReplicaFailure of a sync whose errors refused a
// subPath (subPathError); none: the zero failure.
func subPathFailure(errs []error) failure {
	var msgs []string
	for _, err := range errs {
		var se *subPathError
		if errors.As(err, &se) {
			msgs = append(msgs, se.Error())
		}
	}
	if len(msgs) == 0 {
		return failure{}
	}
	slices.Sort(msgs)
	return failure{ReasonFailedCreate, strings.Join(msgs, "; ")}
}
