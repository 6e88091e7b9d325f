package dockerx

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// File volumes and subPath (docs: the README's file volumes).
//
// A pod with a configMap, secret, projected or downwardAPI volume has a
// holder that runs dockctl's helper image (`dockctl helper hold`): it
// mounts each such volume — a tmpfs named volume of the local driver,
// labelled role "files" — read-only at helperapi.VolumesDir/NAME, which
// keeps the tmpfs mounted for the pod's life. The files are written by
// `dockctl helper files` in a writer container of its own for each write
// (fileswriter.go), never in a namespace of the pod, with the payload on
// stdin. No host path is shared with the controller, so this works with
// the controller in a container and against a remote DOCKER_HOST; the
// files live in a tmpfs, never in any container's writable layer. Members
// mount those volumes read-only, as the kubelet mounts them.
//
// subPath: Engine API 1.41 has no subpath mount of a volume
// (VolumeOptions.Subpath arrives with API 1.45). On every engine, a subPath
// mount is a bind mount of the path inside the volume's mountpoint on the
// daemon's host (the volume's Mountpoint, which the daemon reports and
// resolves itself, so it works against a remote daemon too), given in the
// legacy Binds form, which creates a missing path as a directory as the
// kubelet does. The bind is resolved when the container starts: like a
// Kubernetes subPath it does not follow later updates of a file volume,
// and a restarted container sees the content current at its start. Only
// file volumes take a subPath: the daemon follows links in the bind's
// source, and only a file volume's content is dockctl's alone (only its
// writer container ever has it writable). Even so the controller resolves
// every subPath inside its volume before each create and start of a
// container that binds it (`helper files --subpath`, the kubelet's answer
// to CVE-2017-1002101) and refuses one that leads out of it.

// HolderWriterCommand is what the holder of a pod with file volumes runs.
var HolderWriterCommand = []string{helperapi.Binary, "helper", helperapi.ModeHold}

// FilesCommand is what a files writer runs (RunFilesWriter), with a
// helperapi.FilesPayload on stdin.
var FilesCommand = []string{helperapi.Binary, "helper", helperapi.ModeFiles}

// holderFiles sets up the holder of a pod with file volumes: it runs
// `helper hold` from req.Image (the helper image, the caller's choice),
// with a read-only root filesystem, and mounts every file volume
// read-only under helperapi.VolumesDir, to keep it mounted: it writes
// nothing, so that no process in the pod's namespaces holds them writable.
func holderFiles(req CreateRequest, ps *manifests.PodSpec, cfg *container.Config, hc *container.HostConfig) {
	if !manifests.NeedsWriter(ps) {
		return
	}
	cfg.Entrypoint = HolderWriterCommand
	hc.ReadonlyRootfs = true
	for i := range ps.Volumes {
		v := &ps.Volumes[i]
		if v.IsFileVolume() {
			hc.Mounts = append(hc.Mounts, podVolumeMount(req, v, path.Join(helperapi.VolumesDir, v.Name), true))
		}
	}
}

// isPodVolume reports whether a volume of a pod with a holder is one of
// the pod's named volumes (an emptyDir or a file volume).
func isPodVolume(v *manifests.Volume) bool { return v.EmptyDir != nil || v.IsFileVolume() }

// subPathBind turns a mount of a volume into the bind mount of its subPath
// (see above): the Binds entry to add. m is the mount the whole named
// volume would have; its source is its mountpoint in req.VolumeMountpoints.
func subPathBind(req CreateRequest, m mount.Mount, vm manifests.VolumeMount) (string, error) {
	if m.Type != mount.TypeVolume {
		return "", fmt.Errorf("volumeMount %q: subPath %q: not supported on a %s mount", vm.Name, vm.SubPath, m.Type)
	}
	base := req.VolumeMountpoints[m.Source]
	if base == "" {
		return "", fmt.Errorf("volumeMount %q: subPath %q: the mountpoint of volume %s is unknown", vm.Name, vm.SubPath, m.Source)
	}
	src := path.Join(base, vm.SubPath)
	if !strings.HasPrefix(src, path.Clean(base)+"/") {
		return "", fmt.Errorf("volumeMount %q: subPath %q leaves its volume", vm.Name, vm.SubPath)
	}
	// Docker splits the Binds form at colons.
	if strings.Contains(src, ":") || strings.Contains(vm.MountPath, ":") || !path.IsAbs(vm.MountPath) {
		return "", fmt.Errorf("volumeMount %q: subPath %q at %q: a colon in either path, or a relative mount path, cannot be passed to Docker unambiguously",
			vm.Name, vm.SubPath, vm.MountPath)
	}
	b := src + ":" + vm.MountPath
	if m.ReadOnly {
		b += ":ro"
	}
	return b, nil
}

// SubPathVolumes returns the named volumes whose mountpoint a create of
// req needs (its subPath mounts of file volumes), for
// CreateRequest.VolumeMountpoints.
func SubPathVolumes(req CreateRequest) []string {
	d := req.From
	if d == nil || req.Pod == nil || req.Role == RoleHolder {
		return nil
	}
	ps := &d.Template.Spec
	c := findContainer(ps, req.Container)
	if c == nil {
		return nil
	}
	var out []string
	for _, vm := range c.VolumeMounts {
		if vm.SubPath == "" {
			continue
		}
		for i := range ps.Volumes {
			if v := &ps.Volumes[i]; v.Name == vm.Name && v.IsFileVolume() {
				out = append(out, VolumeName(req.Pod.Holder, v.Name, req.Pod.UID))
			}
		}
	}
	return out
}

// volumeMountpoints fills req.VolumeMountpoints for its subPath mounts.
func (c *Client) volumeMountpoints(ctx context.Context, req *CreateRequest) error {
	names := SubPathVolumes(*req)
	if len(names) == 0 {
		return nil
	}
	req.VolumeMountpoints = map[string]string{}
	for _, name := range names {
		if _, ok := req.VolumeMountpoints[name]; ok {
			continue
		}
		ictx, cancel := c.callCtx(ctx)
		v, err := c.api.VolumeInspect(ictx, name)
		cancel()
		if err != nil {
			return mapErr("inspect volume "+name, err)
		}
		if v.Labels[LabelInstance] != req.Instance {
			return &mappedError{sentinel: ErrConflict, err: fmt.Errorf("volume %s is not dockctl's instance %q", name, req.Instance)}
		}
		req.VolumeMountpoints[name] = v.Mountpoint
	}
	return nil
}

// setSubPathMount mounts a subPath of file volume v (see above). Apply
// refuses a subPath of any other volume (manifests: a bind follows links,
// and only a file volume's content is dockctl's alone); this refuses it
// again, trusting no record.
func setSubPathMount(req CreateRequest, v *manifests.Volume, vm manifests.VolumeMount, hc *container.HostConfig,
	podVolume func(v *manifests.Volume, vm manifests.VolumeMount) mount.Mount) error {
	switch {
	case v.PersistentVolumeClaim != nil:
		return fmt.Errorf("volumeMount %q: subPath of a persistentVolumeClaim volume is not supported", vm.Name)
	case !v.IsFileVolume():
		return fmt.Errorf("volumeMount %q: subPath %q: supported on configMap, secret, projected and downwardAPI volumes only", vm.Name, vm.SubPath)
	case req.Pod == nil:
		return fmt.Errorf("volumeMount %q: subPath %q: only a pod with a holder has a named volume for it", vm.Name, vm.SubPath)
	}
	b, err := subPathBind(req, podVolume(v, vm), vm)
	if err != nil {
		return err
	}
	hc.Binds = append(hc.Binds, b)
	return nil
}
