package dockerx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/dockctl/dockctl/manifests"
)

// A PersistentVolumeClaim is, on one host, a named volume of the local
// driver owned by the instance (docs/design.md §12): created when the claim
// is bound, mounted by every container whose pod names the claim, never
// removed with a container, and removed by the controller only once the
// claim is deleted and no container uses it.
const (
	// LabelClaim names the claim a volume belongs to (with LabelNamespace).
	LabelClaim = "io.dockctl.claim"
	// RoleClaim is the LabelRole of a claim's volume.
	RoleClaim = "pvc"
)

// ClaimVolumeName returns the Docker name of the volume of claim name of
// namespace ns: "{instance}_pvc_{namespace}.{claim}". Instance names (the
// CLI's rule) and namespaces are DNS-1123 labels and claim names DNS-1123
// subdomains: none holds "_", and a namespace holds no ".", so the first
// "_" ends the instance and the first "." after "_pvc_" ends the
// namespace. No other volume of the instance has this form: every pod
// volume (VolumeName) starts "{instance}_{deployment}", and a deployment
// name holds no "_" (ClaimVolumePrefix). A name identifies one claim of
// one namespace of one instance.
//
// A name longer than maxClaimVolumeName-claimHashSuffix (the local driver
// keeps a volume in a directory of that name, and a file name has at most
// 255 bytes) is cut and ends in "-" and 16 hex digits of the full name's
// SHA-256, making it exactly maxClaimVolumeName bytes: longer than any
// name that is not cut, so that a cut name never equals another claim's
// full one; the volume's labels name the claim in full.
func ClaimVolumeName(instance, namespace, claim string) string {
	name := ClaimVolumePrefix(instance) + orDefault(namespace) + "." + claim
	if len(name) <= maxClaimVolumeName-claimHashSuffix {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:8])
	return name[:maxClaimVolumeName-len(suffix)] + suffix
}

// ClaimVolumePrefix is how every claim volume name of the instance starts,
// and no other volume name of it does (ClaimVolumeName).
func ClaimVolumePrefix(instance string) string { return instance + "_pvc_" }

// maxClaimVolumeName is the longest volume name the local driver can
// store: a file name.
const maxClaimVolumeName = 255

// claimHashSuffix is the length of a cut name's "-" and 16 hex digits.
const claimHashSuffix = 17

// ClaimVolumeRequest is the volume of one claim.
type ClaimVolumeRequest struct {
	Instance  string
	Namespace string // "" is default
	Claim     string
}

// Name is the request's volume name, ClaimVolumeName.
func (r ClaimVolumeRequest) Name() string { return ClaimVolumeName(r.Instance, r.Namespace, r.Claim) }

// ClaimVolumeLabels returns the labels of a claim's volume.
func ClaimVolumeLabels(r ClaimVolumeRequest) map[string]string {
	return map[string]string{
		LabelInstance:  r.Instance,
		LabelNamespace: orDefault(r.Namespace),
		LabelRole:      RoleClaim,
		LabelClaim:     r.Claim,
	}
}

// IsClaimVolumeOf reports whether labels are those of r's volume: its
// instance, role, namespace and claim. Anything else with that name — a
// volume made by hand, by `docker run -v`, by another tool or copy — is
// not the claim's and is never adopted.
func IsClaimVolumeOf(labels map[string]string, r ClaimVolumeRequest) bool {
	return labels[LabelInstance] == r.Instance && labels[LabelRole] == RoleClaim &&
		orDefault(labels[LabelNamespace]) == orDefault(r.Namespace) && labels[LabelClaim] == r.Claim
}

// ClaimAdoptionError is the error of a create that found a volume of the
// claim's name that is not the claim's: it wraps ErrConflict.
func ClaimAdoptionError(name string, labels map[string]string) error {
	owner := "it carries no dockctl labels"
	if labels[LabelInstance] != "" {
		owner = fmt.Sprintf("it is labelled instance %q, role %q, claim %q of namespace %q",
			labels[LabelInstance], labels[LabelRole], labels[LabelClaim], labels[LabelNamespace])
	}
	return &mappedError{sentinel: ErrConflict,
		err: fmt.Errorf("volume %s exists and was not made by dockctl for this claim (%s): dockctl never adopts a volume it did not create; remove or rename it", name, owner)}
}

// CreateClaimVolume creates the volume of a claim and returns its name. A
// volume of that name that exists is Docker's answer to the create: it is
// accepted only when its labels say it is this claim's (a second create,
// the claim applied again), never adopted otherwise (ClaimAdoptionError).
func (c *Client) CreateClaimVolume(ctx context.Context, r ClaimVolumeRequest) (string, error) {
	if r.Instance == "" || r.Claim == "" {
		return "", fmt.Errorf("create claim volume: instance and claim are required, have %q, %q", r.Instance, r.Claim)
	}
	name := r.Name()
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	v, err := c.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: ClaimVolumeLabels(r)})
	if err != nil {
		return "", mapErr("create volume "+name, err)
	}
	if !IsClaimVolumeOf(v.Labels, r) {
		return "", fmt.Errorf("create volume for persistentvolumeclaim %q: %w", r.Claim, ClaimAdoptionError(name, v.Labels))
	}
	return v.Name, nil
}

// VolumeUsers returns the names of every container, of any instance or
// none, running or not, that mounts the named volume, sorted. It is
// Docker's answer to "who uses it" (the volume filter of a container
// list), which is also what makes a non-forced remove fail.
func (c *Client) VolumeUsers(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	args := filters.NewArgs()
	args.Add("volume", name)
	list, err := c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return nil, mapErr("list containers using volume "+name, err)
	}
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, summaryName(s.Names))
	}
	sort.Strings(out)
	return out, nil
}

// mountedVolumes returns the named volumes a container of a list answer
// mounts, sorted.
func mountedVolumes(s container.Summary) []string {
	var out []string
	for _, m := range s.Mounts {
		if m.Type == mount.TypeVolume && m.Name != "" {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// claimMount mounts claim volume v at vm.MountPath. Read-only when either
// the mount or the volume source says so (as the kubelet does). Docker's
// copy-up is kept (no NoCopy): an empty claim volume takes, at its first
// mount, what the image holds at the mount path, with its ownership — so
// that an image running as a non-root user can write to its data
// directory, as it can on the world-writable directories Kubernetes' local
// provisioners hand out; a volume that holds data is never touched. The
// labels are the claim's, so that a volume removed by hand between the
// controller's create and this mount is made again as the claim's own,
// never an unlabelled stray. The controller creates the volume (checking
// it is the claim's) before any container that mounts it.
func claimMount(req CreateRequest, v *manifests.Volume, vm manifests.VolumeMount) (mount.Mount, error) {
	src := v.PersistentVolumeClaim
	if src.ClaimName == "" {
		return mount.Mount{}, errors.New("volume " + v.Name + ": persistentVolumeClaim.claimName is required")
	}
	r := ClaimVolumeRequest{Instance: req.Instance, Namespace: req.namespace(), Claim: src.ClaimName}
	return mount.Mount{
		Type: mount.TypeVolume, Source: r.Name(), Target: vm.MountPath, ReadOnly: vm.ReadOnly || src.ReadOnly,
		VolumeOptions: &mount.VolumeOptions{Labels: ClaimVolumeLabels(r)},
	}, nil
}
