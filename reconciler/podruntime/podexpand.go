package podruntime

import (
	"fmt"
	"slices"
	"sort"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// ExpandInput is what ExpandPodOps needs of the owner's sync.
type ExpandInput struct {
	Instance string
	// Pods maps the unit ID of each holder pod to the pod.
	Pods     map[string]*Pod
	Stopping map[string]bool
	// Template returns the template of a hash (nil: unknown).
	Template func(hash string) *manifests.PodTemplateSpec
}

// ExpandPodOps turns the unit ops of holder pods into container ops, after
// the owner's planner has capped its creates (docs/design.md §17):
//   - the create of a pod becomes the creates of its emptyDir and file
//     volumes, of its holder (after the volumes), the write of its files
//     (after the holder) and of its first step (after the holder and the
//     write): its first init or sidecar container, or every app
//     container;
//   - the graceful removal of a pod stays one op, carried out by the
//     stopper in phases (app containers, sidecars in reverse order, the
//     holder); a removal without grace (a dead pod, or a grace of 0)
//     becomes the removal of each of its containers;
//   - a member create or start that awaits its pod's files needs their
//     write.
//
// Needs within a pod are set as IDs of the final order (the owner's
// planner numbers the ops by position).
func ExpandPodOps(ops []Op, in ExpandInput) []Op {
	if !slices.ContainsFunc(ops, in.expands) {
		return ops
	}
	e := &expansion{in: in, out: make([]Op, 0, len(ops)), writes: map[string]OpID{}}
	for _, op := range ops {
		switch {
		case op.Kind == OpCreate && op.Role == dockerx.RoleHolder:
			e.createPod(op)
		case op.Kind == OpWriteFiles && op.Pod != nil:
			e.writes[op.Pod.Holder] = e.next()
			e.out = append(e.out, op)
		case op.AwaitFiles != "":
			if w, ok := e.writes[op.AwaitFiles]; ok {
				op.Needs = append(slices.Clip(op.Needs), w)
			}
			e.out = append(e.out, op)
		case op.Kind == OpRemove && in.Pods[op.ContainerID] != nil:
			e.removePod(op)
		default:
			e.out = append(e.out, op)
		}
	}
	return e.out
}

// expands reports whether op is one ExpandPodOps changes.
func (in ExpandInput) expands(op Op) bool {
	return (op.Kind == OpCreate && op.Role == dockerx.RoleHolder) || (op.Kind == OpRemove && in.Pods[op.ContainerID] != nil) || op.AwaitFiles != ""
}

// expansion is ExpandPodOps' output so far.
type expansion struct {
	in     ExpandInput
	out    []Op
	writes map[string]OpID // holder name → its pod's OpWriteFiles
}

// next is the ID of the next op appended.
func (e *expansion) next() OpID { return OpID(len(e.out) + 1) }

// createPod expands the create of a pod.
func (e *expansion) createPod(op Op) {
	t := op.From.Template
	op.Needs = e.createVolumes(op)
	holder := e.next()
	e.out = append(e.out, op)
	needs := []OpID{holder}
	if manifests.NeedsWriter(&t.Spec) {
		// Its files before any of its containers (docs/design.md §11).
		needs = []OpID{holder, e.next()}
		e.out = append(e.out, Op{Kind: OpWriteFiles, Name: op.Pod.Holder, Hash: op.Hash, From: op.From, Pod: op.Pod,
			Reason: ReasonFilesUnwritten, Cause: fmt.Sprintf("pod %s: files of its volumes", op.Pod.Name), Needs: []OpID{holder}})
	}
	for _, c := range FirstStep(t) {
		e.out = append(e.out, Op{Kind: OpCreate, Name: dockerx.MemberName(op.Pod.Holder, c.Name), Hash: op.Hash, From: op.From, Pod: op.Pod,
			Container: c.Name, Reason: ReasonMissing, Cause: fmt.Sprintf("pod %s created", op.Pod.Name), Needs: needs})
	}
}

// createVolumes appends the creates of the emptyDir and file volumes of
// pod create op, and returns their IDs.
func (e *expansion) createVolumes(op Op) []OpID {
	t := op.From.Template
	var vols []OpID
	for i := range t.Spec.Volumes {
		v := &t.Spec.Volumes[i]
		if v.EmptyDir == nil && !v.IsFileVolume() {
			continue
		}
		kind := "emptyDir"
		if v.IsFileVolume() {
			kind = v.FileVolumeKind()
		}
		vr := dockerx.PodVolumeRequest(e.in.Instance, op.Hash, op.From, *op.Pod, v)
		vols = append(vols, e.next())
		e.out = append(e.out, Op{Kind: OpCreateVolume, Name: dockerx.VolumeName(op.Pod.Holder, v.Name, op.Pod.UID), Hash: op.Hash,
			Reason: ReasonMissing, Cause: fmt.Sprintf("pod %s: %s %s", op.Pod.Name, kind, v.Name), Volume: &vr})
	}
	return vols
}

// removePod expands the removal of a pod.
func (e *expansion) removePod(op Op) {
	p := e.in.Pods[op.ContainerID]
	if op.Grace > 0 {
		op.Phases = StopPhases(p, e.in.Template(p.Hash))
		e.out = append(e.out, op)
		return
	}
	for _, c := range p.Containers() {
		if e.in.Stopping[c.ID] || c.State == dockerx.StateRemoving {
			continue
		}
		e.out = append(e.out, Op{Kind: OpRemove, Name: c.Name, ContainerID: c.ID, Reason: op.Reason, Cause: op.Cause})
	}
}

// FirstStep returns the containers a new pod starts with: its first init
// container (sidecar or not), or, without any, every app container.
func FirstStep(t *manifests.PodTemplateSpec) []*manifests.Container {
	if len(t.Spec.InitContainers) > 0 {
		return []*manifests.Container{&t.Spec.InitContainers[0]}
	}
	out := make([]*manifests.Container, len(t.Spec.Containers))
	for i := range t.Spec.Containers {
		out[i] = &t.Spec.Containers[i]
	}
	return out
}

// StopPhases orders a pod's graceful stop (docs/design.md §8, Graceful
// stop): its app containers together, then its native sidecars one at a
// time in reverse order (Kubernetes stops sidecars after the app
// containers, last started first), then the holder; init containers that
// are not running and containers the template does not know go with the
// app containers.
func StopPhases(p *Pod, t *manifests.PodTemplateSpec) [][]StopTarget {
	var apps []StopTarget
	var sidecars [][]StopTarget
	isSidecar := map[string]bool{}
	if t != nil {
		for i := len(t.Spec.InitContainers) - 1; i >= 0; i-- {
			ic := &t.Spec.InitContainers[i]
			if !ic.IsSidecar() {
				continue
			}
			isSidecar[ic.Name] = true
			if m := p.Members[ic.Name]; m != nil {
				sidecars = append(sidecars, []StopTarget{{ID: m.ID, Name: m.Name}})
			}
		}
	}
	for _, c := range p.Containers() {
		if c == p.Holder || isSidecar[c.ContainerName] && p.Members[c.ContainerName] == c {
			continue
		}
		apps = append(apps, StopTarget{ID: c.ID, Name: c.Name})
	}
	var phases [][]StopTarget
	if len(apps) > 0 {
		phases = append(phases, apps)
	}
	phases = append(phases, sidecars...)
	if p.Holder != nil {
		phases = append(phases, []StopTarget{{ID: p.Holder.ID, Name: p.Holder.Name, Holder: true}})
	}
	return phases
}

// IsPodVolumeRole reports whether a volume of that role belongs to one pod
// and goes with it: an emptyDir or a file volume (never a claim's).
func IsPodVolumeRole(role string) bool {
	return role == dockerx.RoleEmptyDir || role == dockerx.RoleFiles
}

// CollectVolumes removes the pod volumes whose pod has no container left
// among containers (removed by dockctl, or by hand with docker rm -f). A
// volume still mounted somewhere fails to go and is tried again at the
// next sync.
func CollectVolumes(volumes []dockerx.Volume, containers []dockerx.Container) []Op {
	if len(volumes) == 0 {
		return nil
	}
	live := map[string]bool{}
	for _, c := range containers {
		if c.PodUID != "" {
			live[c.PodUID] = true
		}
	}
	var ops []Op
	for _, v := range volumes {
		if !IsPodVolumeRole(v.Role) || v.PodUID == "" || live[v.PodUID] {
			continue
		}
		ops = append(ops, Op{Kind: OpRemoveVolume, Name: v.Name, Reason: ReasonPodGone, Cause: fmt.Sprintf("pod %s is gone", v.Pod)})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops
}
