package dockerfake

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
)

// podObjects holds the engine's named volumes and helper images, under
// Engine.mu. Its maps are made on first use, so that New needs no change.
type podObjects struct {
	volumes map[string]*fakeVolume   // by name
	mounts  map[string][]string      // container ID → the named volumes it mounts
	helpers map[string]dockerx.Image // helper images, by ID

	// OnHolderImage, when set, runs (with the lock released) at each
	// EnsureHolderImage; an error it returns is EnsureHolderImage's.
	OnHolderImage func(instance string) error
}

type fakeVolume struct {
	v   dockerx.Volume
	req dockerx.VolumeRequest // zero for a volume Docker made on its own
}

// mountedVolume is a named volume a container mounts, with the labels its
// mount asks a volume made on the fly to get (mount.VolumeOptions.Labels).
type mountedVolume struct {
	name   string
	labels map[string]string
}

// mountVolumesLocked records that container id mounts the named volumes.
// As Docker does, a name that does not exist yet becomes a new volume of
// the local driver with the mount's labels (none unless the mount gives
// some), which CreateVolume will then refuse to adopt unless they are the
// pod's.
func (e *Engine) mountVolumesLocked(id string, vols []mountedVolume) {
	if len(vols) == 0 {
		return
	}
	if e.volumes == nil {
		e.volumes = map[string]*fakeVolume{}
	}
	if e.mounts == nil {
		e.mounts = map[string][]string{}
	}
	names := make([]string, 0, len(vols))
	for _, mv := range vols {
		if e.volumes[mv.name] == nil {
			l := copyMap(mv.labels)
			e.volumes[mv.name] = &fakeVolume{v: volumeOf(mv.name, l)}
		}
		names = append(names, mv.name)
	}
	e.mounts[id] = names
}

// AddWithVolumes is Add for a container that mounts the given named
// volumes (a hand-made container using a pod's volume, or a member made
// before BuildConfig can describe one).
func (e *Engine) AddWithVolumes(c dockerx.Container, op string, volumes ...string) (string, error) {
	vols := make([]mountedVolume, len(volumes))
	for i, n := range volumes {
		vols[i] = mountedVolume{name: n}
	}
	return e.add(c, op, &namespaces{network: "bridge", endpoints: defaultEndpoints("bridge")}, vols)
}

// CreateVolume creates a pod's emptyDir volume as dockerx.Client does:
// named dockerx.VolumeName(…), labelled dockerx.VolumeLabels(req). A volume
// of that name that exists is accepted only if its labels say it is the
// instance's volume of this pod (its pod uid); otherwise, as the real
// client, an error wrapping ErrConflict. Counted as "volume:create".
func (e *Engine) CreateVolume(ctx context.Context, req dockerx.VolumeRequest) (string, error) {
	if req.Instance == "" || req.Pod.Holder == "" || req.Pod.UID == "" || req.Volume == "" {
		return "", fmt.Errorf("create volume: instance, pod holder, pod uid and volume are required, have %q, %q, %q, %q",
			req.Instance, req.Pod.Holder, req.Pod.UID, req.Volume)
	}
	name := dockerx.VolumeName(req.Pod.Holder, req.Volume, req.Pod.UID)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["volume:create"]++
	if e.down {
		return "", fmt.Errorf("create volume %s: %w", name, dockerx.ErrUnreachable)
	}
	if e.volumes == nil {
		e.volumes = map[string]*fakeVolume{}
	}
	if fv := e.volumes[name]; fv != nil {
		switch {
		case fv.v.Labels[dockerx.LabelInstance] != req.Instance:
			return "", fmt.Errorf("create volume %s: a volume of that name exists and is not dockctl's instance %q: %w", name, req.Instance, dockerx.ErrConflict)
		case fv.v.Labels[dockerx.LabelPodUID] != req.Pod.UID:
			return "", fmt.Errorf("create volume %s: a volume of that name exists and belongs to pod uid %q: %w", name, fv.v.Labels[dockerx.LabelPodUID], dockerx.ErrConflict)
		}
		return name, nil
	}
	labels := dockerx.VolumeLabels(req)
	e.volumes[name] = &fakeVolume{v: volumeOf(name, labels), req: req}
	return name, nil
}

func volumeOf(name string, labels map[string]string) dockerx.Volume {
	return dockerx.Volume{
		Name: name, Labels: labels,
		Instance: labels[dockerx.LabelInstance], Deployment: labels[dockerx.LabelDeployment], Role: labels[dockerx.LabelRole],
		Pod: labels[dockerx.LabelPod], PodUID: labels[dockerx.LabelPodUID], Namespace: dockerx.ParseNamespace(labels, name),
		Claim: labels[dockerx.LabelClaim],
	}
}

// AddVolume adds a volume with the given name and labels, as another
// release (or a user) made it.
func (e *Engine) AddVolume(name string, labels map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.volumes == nil {
		e.volumes = map[string]*fakeVolume{}
	}
	if e.volumes[name] == nil {
		e.volumes[name] = &fakeVolume{v: volumeOf(name, copyMap(labels))}
	}
}

// ListVolumes lists the instance's volumes, sorted by name. Counted as
// "volume:list".
func (e *Engine) ListVolumes(ctx context.Context, instance string) ([]dockerx.Volume, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["volume:list"]++
	if e.down {
		return nil, fmt.Errorf("list volumes: %w", dockerx.ErrUnreachable)
	}
	var out []dockerx.Volume
	for _, fv := range e.volumes {
		if fv.v.Labels[dockerx.LabelInstance] == instance {
			out = append(out, copyVolume(fv.v))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RemoveVolume removes a volume, never forcing: while a container that
// still exists (in any state, removing included: Docker releases the
// volume when the container is destroyed) mounts it, the error wraps
// ErrConflict, as Docker's 409 "volume is in use". A missing volume is
// success. Counted as "volume:remove".
func (e *Engine) RemoveVolume(ctx context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["volume:remove"]++
	if e.down {
		return fmt.Errorf("remove volume %s: %w", name, dockerx.ErrUnreachable)
	}
	if e.volumes[name] == nil {
		return nil
	}
	if users := e.volumeUsersLocked(name); len(users) > 0 {
		return fmt.Errorf("remove volume %s: volume is in use - [%s]: %w", name, strings.Join(users, ", "), dockerx.ErrConflict)
	}
	delete(e.volumes, name)
	return nil
}

// volumeUsersLocked returns the IDs of the existing containers that mount
// the volume, sorted.
func (e *Engine) volumeUsersLocked(name string) []string {
	var users []string
	for id, names := range e.mounts {
		if _, exists := e.containers[id]; !exists {
			delete(e.mounts, id) // destroyed: its mounts are released
			continue
		}
		for _, n := range names {
			if n == name {
				users = append(users, id)
				break
			}
		}
	}
	sort.Strings(users)
	return users
}

// Volumes returns every volume regardless of instance, sorted by name.
func (e *Engine) Volumes() []dockerx.Volume {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []dockerx.Volume
	for _, fv := range e.volumes {
		out = append(out, copyVolume(fv.v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// VolumeRequest returns the request CreateVolume made the volume from
// (whether it is a tmpfs, its size), false if there is no such volume or
// Docker made it on its own for a container that mounted a missing name.
func (e *Engine) VolumeRequest(name string) (dockerx.VolumeRequest, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fv := e.volumes[name]
	if fv == nil || fv.req.Instance == "" {
		return dockerx.VolumeRequest{}, false
	}
	return fv.req, true
}

func copyVolume(v dockerx.Volume) dockerx.Volume {
	v.Labels = copyMap(v.Labels)
	return v
}
