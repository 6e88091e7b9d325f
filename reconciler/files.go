package reconciler

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// File volumes of holder pods (docs/design.md §11; dockerx/convert_files.go
// for the containers). The pod runtime plans and writes them
// (podruntime.FileVolumes: where each running pod's files stand against
// what was last written, the write through a writer container of its
// own, the helper image, the subPath checks); the Deployment controller
// hands it its pods and revisions' templates at each sync
// (PlanInput.Files), and its planner makes a new pod's create its volumes
// (tmpfs), its holder, the write of its files (OpWriteFiles), then its
// first containers, which need the write, as the kubelet mounts volumes
// before it starts containers. A member create or start in the same plan
// waits for the write; a reference that does not resolve keeps a pod that
// never got its files from starting (ReplicaFailure names it).

// FilesDocker is what the writer of file volumes needs from Docker
// (podruntime.FilesDocker).
type FilesDocker = podruntime.FilesDocker

// PodFiles is where one holder pod's files stand, for the planner.
type PodFiles = podruntime.PodFiles

// filesMemory holds, per deployment (its key) and pod (its unit key), the
// hash of the payload last written into the pod (podruntime.FilesMemory).
type filesMemory = podruntime.FilesMemory

// lookupCache caches one sync's ConfigStore lookups
// (podruntime.FileObjectCache).
type lookupCache = podruntime.FileObjectCache

// isPodVolumeRole reports whether a volume of that role belongs to one pod
// and goes with it (podruntime.IsPodVolumeRole).
func isPodVolumeRole(role string) bool { return podruntime.IsPodVolumeRole(role) }

func identityOf(ns, name, uid, hash string, t *manifests.PodTemplateSpec) podruntime.DownwardIdentity {
	return podruntime.PodDownwardIdentity(ns, name, uid, hash, t)
}

// newFileVolumes is the controller's writer of file volumes
// (podruntime.FileVolumes): its memory is c.files, and asking for the
// helper image keeps it from the collector (helperImages).
func newFileVolumes(c *Controller) *podruntime.FileVolumes {
	return &podruntime.FileVolumes{Instance: c.opts.Instance, Config: c.opts.Config, Docker: c.opts.FilesDocker, Memory: &c.files,
		Host: c.hostResources, ImageUsed: func() { c.helperImages.Store(true) }}
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

// fileObjectsFor looks up what t's file volumes refer to in namespace ns
// (podruntime.FileVolumes.Objects).
func (c *Controller) fileObjectsFor(ns string, t *manifests.PodTemplateSpec, cache *lookupCache) (podruntime.FileObjects, error) {
	return c.fileVolumes.Objects(ns, t, cache)
}

// podFiles plans where each running holder pod of d with file volumes
// stands (PlanInput.Files; podruntime.FileVolumes.Plan); nil when the
// deployment has none. ctx is nil for the sweep's assessment, which must
// not act.
func (c *Controller) podFiles(ctx context.Context, cache *lookupCache, d *manifests.Deployment, depKey string, pods map[string]*podruntime.Pod, templates func(string) *manifests.PodTemplateSpec) map[string]PodFiles {
	return c.fileVolumes.Plan(ctx, cache, d.Metadata.NamespaceOrDefault(), depKey, pods, templates, func(t *manifests.PodTemplateSpec) *dockerx.PodTemplate {
		return podOfTemplate(d, t)
	})
}

// podOfTemplate is the pod template t of one of d's revisions, owned by
// d: what a writer mounts the volumes of.
func podOfTemplate(d *manifests.Deployment, t *manifests.PodTemplateSpec) *dockerx.PodTemplate {
	out := dockerx.TemplateOf(d)
	out.Template = t
	return out
}

// subPathError is a container whose subPath bind would lead out of its
// volume: refused, and named in the deployment's ReplicaFailure.
type subPathError = podruntime.SubPathError

// checkStartSubPaths is the runtime's subPath check
// (podruntime.FileVolumes.CheckSubPaths) for the start of container id,
// when it is a member of a holder pod of in.
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
			return c.fileVolumes.CheckSubPaths(ctx, podOfTemplate(in.Desired, t), m.TemplateHash, dockerx.PodRef{Name: p.Name, UID: p.UID, Holder: p.Base}, name)
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
