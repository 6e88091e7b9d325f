package dockerx

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
)

// VolumeRequest is one emptyDir volume of a pod with a holder: a named
// volume that the holder and the members mounting it share, and that
// outlives member restarts until the pod is gone.
type VolumeRequest struct {
	Instance, Deployment, TemplateHash string
	Namespace                          string // the deployment's ("": default)
	Pod                                PodRef
	Volume                             string // the template's volume name
	// Memory (emptyDir medium Memory) makes the volume a tmpfs of
	// SizeBytes: the caller's choice of sizeLimit, else the pod's memory
	// limits, else DefaultMemoryEmptyDirSize (also used when SizeBytes is
	// 0). A tmpfs volume keeps its files while a container has it mounted,
	// which the holder does for the pod's whole life.
	Memory    bool
	SizeBytes int64
	// Role is the volume's role label: RoleEmptyDir ("") or RoleFiles.
	Role string
}

// Volume is a volume dockctl made, as ListVolumes reports it.
type Volume struct {
	Name                                    string
	Labels                                  map[string]string
	Instance, Deployment, Role, Pod, PodUID string // parsed from Labels
	Namespace                               string // ParseNamespace(Labels, Name)
	Claim                                   string // LabelClaim, on a claim's volume (claims.go)
}

// VolumeLabels returns the labels of req's volume.
func VolumeLabels(req VolumeRequest) map[string]string {
	l := map[string]string{
		LabelInstance:     req.Instance,
		LabelDeployment:   req.Deployment,
		LabelNamespace:    orDefault(req.Namespace),
		LabelTemplateHash: req.TemplateHash,
		LabelRole:         cmpOr(req.Role, RoleEmptyDir),
		LabelPod:          req.Pod.Name,
		LabelPodUID:       req.Pod.UID,
	}
	return l
}

// volumeOptions is the create request for req: the local driver, with
// tmpfs options for a memory volume.
func volumeOptions(req VolumeRequest) (volume.CreateOptions, error) {
	if req.Instance == "" || req.Pod.Holder == "" || req.Pod.UID == "" || req.Volume == "" {
		return volume.CreateOptions{}, fmt.Errorf("create volume: instance, pod holder, pod uid and volume are required, have %q, %q, %q, %q",
			req.Instance, req.Pod.Holder, req.Pod.UID, req.Volume)
	}
	opts := volume.CreateOptions{
		Name:   VolumeName(req.Pod.Holder, req.Volume, req.Pod.UID),
		Driver: "local",
		Labels: VolumeLabels(req),
	}
	if req.Memory {
		opts.DriverOpts = tmpfsOptions(req.SizeBytes)
	}
	return opts, nil
}

// tmpfsOptions are the local driver's options of a memory volume of size
// bytes (DefaultMemoryEmptyDirSize when not positive).
func tmpfsOptions(size int64) map[string]string {
	if size <= 0 {
		size = DefaultMemoryEmptyDirSize
	}
	return map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=" + strconv.FormatInt(size, 10)}
}

// CreateVolume creates the named volume of req and returns its name,
// VolumeName(req.Pod.Holder, req.Volume, req.Pod.UID). Docker answers a
// create for a name that exists with the existing volume: it is accepted
// only when its labels say it is this instance's volume of this pod (a
// retried create), never adopted otherwise (an error wrapping ErrConflict).
func (c *Client) CreateVolume(ctx context.Context, req VolumeRequest) (string, error) {
	opts, err := volumeOptions(req)
	if err != nil {
		return "", err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	v, err := c.api.VolumeCreate(ctx, opts)
	if err != nil {
		return "", mapErr("create volume "+opts.Name, err)
	}
	switch {
	case v.Labels[LabelInstance] != req.Instance:
		return "", &mappedError{sentinel: ErrConflict,
			err: fmt.Errorf("create volume %s: a volume of that name exists and is not dockctl's instance %q (labels %v)", opts.Name, req.Instance, v.Labels)}
	case v.Labels[LabelPodUID] != req.Pod.UID:
		return "", &mappedError{sentinel: ErrConflict,
			err: fmt.Errorf("create volume %s: a volume of that name exists and belongs to pod uid %q, not this pod's %q", opts.Name, v.Labels[LabelPodUID], req.Pod.UID)}
	}
	return v.Name, nil
}

// ListVolumes returns every volume labelled with the instance (filtered by
// the daemon), sorted by name.
func (c *Client) ListVolumes(ctx context.Context, instance string) ([]Volume, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.api.VolumeList(ctx, volume.ListOptions{Filters: labelFilters(LabelInstance + "=" + instance)})
	if err != nil {
		return nil, mapErr("list volumes of instance "+instance, err)
	}
	out := make([]Volume, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		if v == nil {
			continue
		}
		out = append(out, Volume{
			Name: v.Name, Labels: v.Labels,
			Instance: v.Labels[LabelInstance], Deployment: v.Labels[LabelDeployment], Role: v.Labels[LabelRole],
			Pod: v.Labels[LabelPod], PodUID: v.Labels[LabelPodUID], Namespace: ParseNamespace(v.Labels, v.Name),
			Claim: v.Labels[LabelClaim],
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RemoveVolume removes a volume, never forcing: one a container (even a
// stopped one) still mounts stays, and the error wraps ErrConflict. A
// volume already gone is success.
func (c *Client) RemoveVolume(ctx context.Context, name string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	err := c.api.VolumeRemove(ctx, name, false)
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return mapErr("remove volume "+name, err)
}

// labelFilters is a daemon-side filter on every given label=value.
func labelFilters(labels ...string) filters.Args {
	args := filters.NewArgs()
	for _, l := range labels {
		args.Add("label", l)
	}
	return args
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
