package dockerx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// The controller as a container (docs/design.md §15): `dockctl install`
// runs the instance's controller from an image of dockctl's own running
// executable, loaded with ImageLoad as the helper images are, so nothing
// is pulled or built; `dockctl uninstall` removes what carries the
// instance label, and nothing else.

// Roles of what install makes.
const (
	RoleController      = "controller"       // the instance's controller container
	RoleControllerImage = "controller-image" // the image it runs
	RoleState           = "state"            // the named volume of its state directory
)

// LabelVersion is the dockctl version that installed a controller
// container (for people reading `docker inspect`; nothing reads it back).
const LabelVersion = "io.dockctl.version"

// ControllerRepository is the repository of the controller images; each
// instance has its own tags, named after the content, as the helpers'.
const ControllerRepository = "dockctl"

// ControllerName is the name of the instance's controller container.
// Replicas and helpers are named "<instance>_…", with an underscore,
// which an instance name never holds: no workload can take this name.
func ControllerName(instance string) string { return "dockctl-" + instance + "-controller" }

// StateVolumeName is the default name of the instance's state volume.
func StateVolumeName(instance string) string { return "dockctl-" + instance + "-state" }

// ControllerStateMount is where a state volume is mounted in the
// controller container. A state directory of the host is mounted at its
// own path instead, so that the controller's privilege gates protect the
// same path on the host as inside (docs/design.md §12).
const ControllerStateMount = "/state"

// BuildControllerImage returns the controller image of instance on
// linux/goarch: the helper image's layer (dockctl's executable bin at
// helperapi.Binary, which the daemon stores once for both), that
// executable as the entrypoint, labelled io.dockctl.instance=instance and
// io.dockctl.role=controller-image, tagged
// ControllerRepository:<instance>-<12 hex of the layer's digest>. It is
// pure; bin must pass CheckHelperBinary.
func BuildControllerImage(instance, goarch string, bin []byte) (ImageArchive, error) {
	if err := CheckHelperBinary(bin, goarch); err != nil {
		return ImageArchive{}, fmt.Errorf("controller image: %w", err)
	}
	return buildImage(controllerImageSpec(instance, goarch, executable{data: bin}))
}

// controllerImageSpec is BuildControllerImage's image of exe.
func controllerImageSpec(instance, goarch string, exe executable) imageSpec {
	return imageSpec{
		what: "controller image", repository: ControllerRepository, instance: instance, goarch: goarch,
		layer:      binaryLayer(exe),
		entrypoint: []string{helperapi.Binary},
		createdBy:  "dockctl: the controller (dockctl's own binary)",
		tagByLayer: true,
		role:       RoleControllerImage,
		stream:     exe.path != "",
	}
}

// EnsureControllerImage makes the instance's controller image present
// (loaded, never pulled) and returns its reference. The daemon must run
// linux containers of the executable's architecture, as for the helpers.
func (c *Client) EnsureControllerImage(ctx context.Context, instance string) (string, error) {
	p, err := c.lockPlatform(ctx, "controller image")
	if err != nil {
		return "", err
	}
	goos, goarch := p.os, p.goarch
	p.mu.Unlock()
	if goos != "linux" {
		return "", fmt.Errorf("controller image: the Docker daemon runs %s/%s containers; dockctl's controller image runs on linux only", goos, goarch)
	}
	exe, err := c.helperBinaryPath()
	if err != nil {
		return "", err
	}
	bin, err := openExecutable(exe, "controller image", goarch)
	if err != nil {
		return "", err
	}
	img, err := buildImage(controllerImageSpec(instance, goarch, bin)) // streamed from the file
	if err != nil {
		return "", fmt.Errorf("%w (executable %s)", err, exe)
	}
	if _, err := c.ensureLoaded(ctx, "controller image", instance, img, func() (ImageArchive, error) { return img, nil }); err != nil {
		return "", err
	}
	return img.Ref, nil
}

// ControllerSpec is the controller container install runs.
type ControllerSpec struct {
	Instance string
	Image    string
	// Version is dockctl's version, for LabelVersion.
	Version string
	// Args are the controller's flags (after "controller").
	Args []string
	// StateDir is a host directory mounted at its own path, or else
	// StateVolume a named volume mounted at ControllerStateMount.
	StateDir, StateVolume string
	// ReadOnly are host paths mounted read-only at their own paths (the
	// controller's --manifests).
	ReadOnly []string
	// Socket is the host path of the Docker socket, mounted at its own
	// path (named in DOCKER_HOST when it is not /var/run/docker.sock).
	Socket string
	// User is "uid:gid"; GroupAdd the extra groups (the socket's).
	User     string
	GroupAdd []string
	// UsernsHost runs the container in the host's user namespace (a
	// userns-remap daemon), so that User is the host's user.
	UsernsHost bool
	// Probe is the controller's /readyz (its --metrics-addr, as the
	// container reaches it), the health check's; nil: none.
	Probe *helperapi.ProbeSpec
}

// containerSocket is where the controller finds the Docker socket: the
// client's default, so that no DOCKER_HOST is needed.
const containerSocket = "/var/run/docker.sock"

// ControllerConfig returns the create call of spec's container. It is
// pure. The container is hardened as docs/user-guide.md's hand-written
// command was: no network (it reaches Docker through the socket, and its
// probes reach replicas from a helper), a read-only root, no capability,
// no-new-privileges; Docker restarts it (unless-stopped) after a crash or
// a daemon restart. Its LabelConfigHash is a digest of everything else in
// the configuration, so that an install with other flags or another
// image is seen as a change and one with the same is not.
func ControllerConfig(spec ControllerSpec) (*container.Config, *container.HostConfig, error) {
	if spec.Instance == "" || spec.Image == "" || spec.Socket == "" {
		return nil, nil, fmt.Errorf("controller container: instance, image and socket are required")
	}
	if (spec.StateDir == "") == (spec.StateVolume == "") {
		return nil, nil, fmt.Errorf("controller container: exactly one of a state directory and a state volume is required")
	}
	stateDir := spec.StateDir
	// The controller protects DOCKER_HOST's socket from hostPath mounts,
	// by its host path: a socket elsewhere than the default is mounted at
	// its own path and named, as the state directory is mounted at its own.
	sock := containerSocket
	var env []string
	if spec.Socket != containerSocket {
		sock = spec.Socket
		env = append(env, "DOCKER_HOST=unix://"+sock)
	}
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: spec.Socket, Target: sock}}
	if spec.StateDir != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: spec.StateDir, Target: spec.StateDir})
	} else {
		stateDir = ControllerStateMount
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: spec.StateVolume, Target: ControllerStateMount})
	}
	for _, p := range spec.ReadOnly {
		// Before API 1.44 read-only holds for the top mount only, and a
		// submount would be writable: none is mounted (API 1.40).
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p, Target: p, ReadOnly: true,
			BindOptions: &mount.BindOptions{NonRecursive: true}})
	}
	// Docker refuses two mounts at one path only at create, when a
	// re-install has already removed the running controller.
	at := map[string]bool{}
	for _, m := range mounts {
		if at[m.Target] {
			return nil, nil, fmt.Errorf("controller container: two mounts at %s (a --manifests path is the state directory, the Docker socket, %s or given twice)", m.Target, ControllerStateMount)
		}
		at[m.Target] = true
	}
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: []string{helperapi.Binary},
		Cmd:        append([]string{"controller"}, spec.Args...),
		Env:        append([]string{"DOCKCTL_INSTANCE=" + spec.Instance, "DOCKCTL_STATE_DIR=" + stateDir}, env...),
		User:       spec.User,
		Labels: map[string]string{
			LabelInstance: spec.Instance,
			LabelRole:     RoleController,
			LabelVersion:  spec.Version,
		},
	}
	if spec.Probe != nil {
		probe, err := helperapi.Marshal(spec.Probe)
		if err != nil {
			return nil, nil, err
		}
		// The controller's own executable probes its /readyz in its
		// network namespace: `docker ps` shows healthy once it acts.
		cfg.Healthcheck = &container.HealthConfig{
			Test:     []string{"CMD", helperapi.Binary, "helper", helperapi.ModeProbe, "--spec", probe},
			Interval: 30 * time.Second, Timeout: 5 * time.Second, Retries: 3,
		}
	}
	hc := &container.HostConfig{
		NetworkMode:    network.NetworkNone,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		GroupAdd:       spec.GroupAdd,
		Mounts:         mounts,
	}
	if spec.UsernsHost {
		hc.UsernsMode = "host"
	}
	b, err := json.Marshal(struct {
		C *container.Config
		H *container.HostConfig
	}{cfg, hc})
	if err != nil {
		return nil, nil, fmt.Errorf("controller container: hash its configuration: %w", err)
	}
	sum := sha256.Sum256(b)
	cfg.Labels[LabelConfigHash] = hex.EncodeToString(sum[:8])
	return cfg, hc, nil
}

// Install actions, as EnsureController reports them.
const (
	ControllerCreated   = "created"
	ControllerReplaced  = "replaced"
	ControllerStarted   = "started"
	ControllerUnchanged = "unchanged"
)

// EnsureController makes the instance's controller container
// (ControllerName) the one spec describes, running: it leaves one of the
// same configuration hash as it is (starting it if it is not running),
// and replaces one of another (the controller is restart-safe, and
// removing its container touches no workload). A container of that name
// that is not the instance's controller is never touched: an error
// wrapping ErrConflict. It returns the container's ID and what it did.
func (c *Client) EnsureController(ctx context.Context, spec ControllerSpec) (id, action string, err error) {
	cfg, hc, err := ControllerConfig(spec)
	if err != nil {
		return "", "", err
	}
	name := ControllerName(spec.Instance)
	ictx, cancel := c.callCtx(ctx)
	cur, err := c.api.ContainerInspect(ictx, name)
	cancel()
	action = ControllerCreated
	switch {
	case cerrdefs.IsNotFound(err):
	case err != nil:
		return "", "", mapErr("inspect container "+name, err)
	default:
		var labels map[string]string
		if cur.Config != nil {
			labels = cur.Config.Labels
		}
		if labels[LabelInstance] != spec.Instance || labels[LabelRole] != RoleController {
			return "", "", &mappedError{sentinel: ErrConflict, err: fmt.Errorf(
				"container %s exists and is not the controller of instance %q (labels %s=%q %s=%q): remove or rename it",
				name, spec.Instance, LabelInstance, labels[LabelInstance], LabelRole, labels[LabelRole])}
		}
		if labels[LabelConfigHash] == cfg.Labels[LabelConfigHash] {
			if cur.State != nil && cur.State.Running {
				return cur.ID, ControllerUnchanged, nil
			}
			return cur.ID, ControllerStarted, c.StartContainer(ctx, cur.ID)
		}
		if err := c.RemoveContainer(ctx, cur.ID); err != nil {
			return "", "", err
		}
		action = ControllerReplaced
	}
	cctx, cancel := c.callCtx(ctx)
	resp, err := c.api.ContainerCreate(cctx, cfg, hc, nil, nil, name)
	cancel()
	if err != nil {
		return "", "", mapErr("create container "+name, err)
	}
	if err := c.StartContainer(ctx, resp.ID); err != nil {
		return "", "", err
	}
	return resp.ID, action, nil
}

// UserNamespace is how the daemon maps a container's users onto the
// host's: Rootless (container root is the user running the daemon) or
// Remapped (userns-remap: every container user is shifted into a
// subordinate range), as its SecurityOptions say.
type UserNamespace struct{ Rootless, Remapped bool }

// UserNamespace asks the daemon how it maps container users.
func (c *Client) UserNamespace(ctx context.Context) (UserNamespace, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	info, err := c.api.Info(ctx)
	if err != nil {
		return UserNamespace{}, mapErr("daemon information", err)
	}
	var ns UserNamespace
	for _, o := range info.SecurityOptions {
		// "name=userns", "name=rootless", "name=seccomp,profile=default"
		name, _, _ := strings.Cut(strings.TrimPrefix(o, "name="), ",")
		switch name {
		case "rootless":
			ns.Rootless = true
		case "userns":
			ns.Remapped = true
		}
	}
	return ns, nil
}

// ControllerState is what install waits on: whether the container runs,
// and if it has stopped, its exit code. Docker reports a container its
// restart policy is about to restart as Running and Restarting, and counts
// the restarts: a controller that exited shows in Restarting or a grown
// RestartCount, never as stopped.
type ControllerState struct {
	Running, Restarting bool
	RestartCount        int
	ExitCode            int
	Status              string
}

// InspectController returns the state of the container id.
func (c *Client) InspectController(ctx context.Context, id string) (ControllerState, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	insp, err := c.api.ContainerInspect(ctx, id)
	if err != nil {
		return ControllerState{}, mapErr("inspect container "+id, err)
	}
	if insp.ContainerJSONBase == nil || insp.State == nil {
		return ControllerState{}, nil
	}
	return ControllerState{Running: insp.State.Running, Restarting: insp.State.Restarting, RestartCount: insp.RestartCount,
		ExitCode: insp.State.ExitCode, Status: insp.State.Status}, nil
}

// EnsureStateVolume creates the instance's state volume name (labelled
// with the instance and role state) unless it exists; an existing volume
// of that name that is not the instance's state volume is not used: an
// error wrapping ErrConflict.
func (c *Client) EnsureStateVolume(ctx context.Context, instance, name string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	v, err := c.api.VolumeInspect(ctx, name)
	switch {
	case cerrdefs.IsNotFound(err):
		_, err = c.api.VolumeCreate(ctx, volume.CreateOptions{Name: name,
			Labels: map[string]string{LabelInstance: instance, LabelRole: RoleState}})
		return mapErr("create volume "+name, err)
	case err != nil:
		return mapErr("inspect volume "+name, err)
	case v.Labels[LabelInstance] != instance || v.Labels[LabelRole] != RoleState:
		// Another of the instance's volumes (a claim's data) is not
		// written into either.
		return &mappedError{sentinel: ErrConflict, err: fmt.Errorf(
			"volume %s exists and is not instance %q's state volume (labels %v): choose another --state-volume", name, instance, v.Labels)}
	}
	return nil
}

// RemoveOtherControllerImages removes the instance's controller images
// other than keep (a reference), e.g. the previous binary's after an
// upgrade. It never forces: one a container still runs stays.
func (c *Client) RemoveOtherControllerImages(ctx context.Context, instance, keep string) ([]string, error) {
	lctx, cancel := c.callCtx(ctx)
	list, err := c.api.ImageList(lctx, image.ListOptions{Filters: labelFilters(
		LabelInstance+"="+instance, LabelRole+"="+RoleControllerImage)})
	cancel()
	if err != nil {
		return nil, mapErr("list controller images of instance "+instance, err)
	}
	var removed []string
	for _, img := range list {
		if !instanceImage(img, instance) || img.Labels[LabelRole] != RoleControllerImage || containsRef(img.RepoTags, keep) {
			continue
		}
		if err := c.RemoveImage(ctx, img.ID); err != nil {
			return removed, err
		}
		removed = append(removed, imageName(img.ID, img.RepoTags))
	}
	return removed, nil
}

// instanceImage tells whether img is one dockctl loaded for instance:
// labelled so, and tagged only in dockctl's repositories with the
// instance's tags (REPOSITORY:INSTANCE-DIGEST, docs/design.md §3), or not
// at all. Labels are inherited: an image built FROM a dockctl image
// carries them too, under its own tag, and is not dockctl's.
func instanceImage(img image.Summary, instance string) bool {
	if img.Labels[LabelInstance] != instance {
		return false
	}
	for _, t := range img.RepoTags {
		if t == "<none>:<none>" {
			continue
		}
		repo, tag, _ := strings.Cut(strings.TrimPrefix(t, dockerHubLibrary), ":")
		if repo != ControllerRepository && repo != HelperRepository && repo != HolderRepository ||
			!strings.HasPrefix(tag, instance+"-") {
			return false
		}
	}
	return true
}

// instanceContainer tells whether a container labelled with the instance
// is one dockctl made: a container run from a dockctl image (or one built
// FROM it) inherits the image's labels, its role an image's.
func instanceContainer(labels map[string]string, instance string) bool {
	role := labels[LabelRole]
	return labels[LabelInstance] == instance && role != RoleHelperImage && role != RoleControllerImage
}

// containsRef tells whether tags hold ref, in either store's spelling
// (the containerd store may report docker.io/library/…).
func containsRef(tags []string, ref string) bool {
	for _, t := range tags {
		if t == ref || strings.TrimPrefix(t, dockerHubLibrary) == ref {
			return true
		}
	}
	return false
}

// imageName is an image as uninstall names it: its first tag, else its
// short ID.
func imageName(id string, tags []string) string {
	for _, t := range tags {
		if t != "<none>:<none>" {
			return strings.TrimPrefix(t, dockerHubLibrary)
		}
	}
	return short12(strings.TrimPrefix(id, "sha256:"))
}

// InstanceObject is one Docker object carrying the instance label.
type InstanceObject struct {
	Kind string // "container", "network", "image" or "volume"
	// ID is what removes it (a volume's name); Name what a person reads.
	ID, Name string
	Role     string
}

// Kinds of InstanceObject, in the order uninstall removes them: a
// network after the containers attached to it, an image after the
// containers that ran it, a volume after the containers that mounted it.
const (
	KindContainer = "container"
	KindNetwork   = "network"
	KindImage     = "image"
	KindVolume    = "volume"
)

// ListInstanceObjects returns every container (running or not), network,
// image and volume labelled io.dockctl.instance=instance, as the daemon
// filters them and checked again here (an object without the label is
// never returned), less what only inherited the label from a dockctl
// image: instanceImage, instanceContainer. Containers come first, the controller's before the
// others (so that no controller re-creates what is being removed), then
// networks, images and volumes, each sorted by name.
func (c *Client) ListInstanceObjects(ctx context.Context, instance string) ([]InstanceObject, error) {
	if instance == "" {
		return nil, fmt.Errorf("list objects: no instance")
	}
	f := labelFilters(LabelInstance + "=" + instance)
	mine := func(labels map[string]string) bool { return labels[LabelInstance] == instance }
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	var cs, nets, imgs, vols []InstanceObject

	clist, err := c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, mapErr("list containers of instance "+instance, err)
	}
	for _, ct := range clist {
		if instanceContainer(ct.Labels, instance) {
			name := ct.ID
			if len(ct.Names) > 0 {
				name = strings.TrimPrefix(ct.Names[0], "/")
			}
			cs = append(cs, InstanceObject{Kind: KindContainer, ID: ct.ID, Name: name, Role: ct.Labels[LabelRole]})
		}
	}
	nlist, err := c.api.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, mapErr("list networks of instance "+instance, err)
	}
	for _, n := range nlist {
		if mine(n.Labels) {
			nets = append(nets, InstanceObject{Kind: KindNetwork, ID: n.ID, Name: n.Name, Role: n.Labels[LabelRole]})
		}
	}
	ilist, err := c.api.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, mapErr("list images of instance "+instance, err)
	}
	for _, img := range ilist {
		if instanceImage(img, instance) {
			imgs = append(imgs, InstanceObject{Kind: KindImage, ID: img.ID, Name: imageName(img.ID, img.RepoTags), Role: img.Labels[LabelRole]})
		}
	}
	vlist, err := c.api.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, mapErr("list volumes of instance "+instance, err)
	}
	for _, v := range vlist.Volumes {
		if v != nil && mine(v.Labels) {
			vols = append(vols, InstanceObject{Kind: KindVolume, ID: v.Name, Name: v.Name, Role: v.Labels[LabelRole]})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		ci, cj := cs[i].Role == RoleController, cs[j].Role == RoleController
		if ci != cj {
			return ci
		}
		return cs[i].Name < cs[j].Name
	})
	for _, l := range [][]InstanceObject{nets, imgs, vols} {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	out := append(cs, nets...)
	out = append(out, imgs...)
	return append(out, vols...), nil
}

// RemoveInstanceObject removes one object ListInstanceObjects returned:
// a container killed and removed with its anonymous volumes, the others
// never forced (an image or volume still used stays, with an error
// wrapping ErrConflict). One already gone is success.
func (c *Client) RemoveInstanceObject(ctx context.Context, o InstanceObject) error {
	switch o.Kind {
	case KindContainer:
		return c.RemoveContainer(ctx, o.ID)
	case KindImage:
		return c.RemoveImage(ctx, o.ID)
	case KindVolume:
		return c.RemoveVolume(ctx, o.ID)
	case KindNetwork:
		ctx, cancel := c.callCtx(ctx)
		defer cancel()
		err := c.api.NetworkRemove(ctx, o.ID)
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		return mapErr("remove network "+o.Name, err)
	}
	return fmt.Errorf("remove %s %s: unknown kind", o.Kind, o.Name)
}
