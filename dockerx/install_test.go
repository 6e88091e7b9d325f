package dockerx

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// controllerSpec is a full spec: a state directory, a manifests
// directory, the socket's group and a probe.
func controllerSpec() ControllerSpec {
	return ControllerSpec{
		Instance: "prod", Image: "dockctl:prod-0123456789ab", Version: "v1.2.3",
		Args:     []string{"--manifests=/srv/k8s", "--service-address=127.0.0.1"},
		StateDir: "/var/lib/dockctl", ReadOnly: []string{"/srv/k8s"},
		Socket: "/var/run/docker.sock", User: "0:0", GroupAdd: []string{"998"},
		Probe: &helperapi.ProbeSpec{Kind: "http", Address: "127.0.0.1", Port: 9477, Scheme: "HTTP", Path: "/readyz", TimeoutMillis: 2000},
	}
}

// The controller container's configuration, as the golden files show it:
// the hardening of the README's hand-written command, the state
// directory at its own path (a volume at /state), the manifests
// read-only, the probe of /readyz as the health check.
func TestControllerConfigGolden(t *testing.T) {
	vol := controllerSpec()
	vol.StateDir, vol.StateVolume, vol.ReadOnly, vol.Probe, vol.GroupAdd = "", "dockctl-prod-state", nil, nil, nil
	vol.Args = nil
	for name, spec := range map[string]ControllerSpec{"state-dir": controllerSpec(), "state-volume": vol} {
		t.Run(name, func(t *testing.T) {
			cfg, hc, err := ControllerConfig(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(struct {
				Config     *container.Config
				HostConfig *container.HostConfig
			}{cfg, hc}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, "ControllerConfig", filepath.Join("testdata", "controller-"+name+".golden.json"), append(got, '\n'))
			// The promises, one by one, so that -update cannot accept a
			// regression.
			if hc.RestartPolicy.Name != container.RestartPolicyUnlessStopped || !hc.ReadonlyRootfs ||
				!reflect.DeepEqual([]string(hc.CapDrop), []string{"ALL"}) || !reflect.DeepEqual(hc.SecurityOpt, []string{"no-new-privileges"}) ||
				hc.NetworkMode != network.NetworkNone || hc.Privileged {
				t.Errorf("not hardened: %+v", hc)
			}
			if cfg.Labels[LabelInstance] != "prod" || cfg.Labels[LabelRole] != RoleController || cfg.Labels[LabelConfigHash] == "" {
				t.Errorf("labels %v", cfg.Labels)
			}
			if cfg.Cmd[0] != "controller" || cfg.Entrypoint[0] != helperapi.Binary {
				t.Errorf("command %v %v", cfg.Entrypoint, cfg.Cmd)
			}
		})
	}
}

// The configuration hash changes with anything that changes the
// container, the image (a new binary) and the flags included, and only
// then: the same spec gives the same hash.
func TestControllerConfigHash(t *testing.T) {
	hash := func(mod func(*ControllerSpec)) string {
		s := controllerSpec()
		if mod != nil {
			mod(&s)
		}
		cfg, _, err := ControllerConfig(s)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Labels[LabelConfigHash]
	}
	base := hash(nil)
	if hash(nil) != base {
		t.Fatal("the same spec gave two hashes")
	}
	for name, mod := range map[string]func(*ControllerSpec){
		"image":     func(s *ControllerSpec) { s.Image = "dockctl:prod-ba9876543210" },
		"flags":     func(s *ControllerSpec) { s.Args = append(s.Args, "--prune-orphans=true") },
		"state":     func(s *ControllerSpec) { s.StateDir = "/srv/state" },
		"read-only": func(s *ControllerSpec) { s.ReadOnly = nil },
		"user":      func(s *ControllerSpec) { s.User = "1000:1000" },
		"probe":     func(s *ControllerSpec) { s.Probe = nil },
	} {
		if hash(mod) == base {
			t.Errorf("a change of %s keeps the hash", name)
		}
	}
}

func TestControllerConfigErrors(t *testing.T) {
	for name, mod := range map[string]func(*ControllerSpec){
		"no image":         func(s *ControllerSpec) { s.Image = "" },
		"no socket":        func(s *ControllerSpec) { s.Socket = "" },
		"two states":       func(s *ControllerSpec) { s.StateVolume = "v" },
		"no state at all":  func(s *ControllerSpec) { s.StateDir = "" },
		"no instance name": func(s *ControllerSpec) { s.Instance = "" },
	} {
		s := controllerSpec()
		mod(&s)
		if _, _, err := ControllerConfig(s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The controller image is the helper image's layer (stored once by the
// daemon) with dockctl as the entrypoint, its own role and repository.
func TestBuildControllerImage(t *testing.T) {
	static, dynamic, _, noCgo := helperBinaries(t)
	img, err := BuildControllerImage("inst", runtime.GOARCH, static)
	if err != nil {
		t.Fatal(err)
	}
	helper, err := BuildHelperImage("inst", runtime.GOARCH, static)
	if err != nil {
		t.Fatal(err)
	}
	a, h := readHolderArchive(t, img.Tar), readHolderArchive(t, helper.Tar)
	if a.docker[0].Layers[0] != h.docker[0].Layers[0] {
		t.Errorf("layer %s, the helper image's %s", a.docker[0].Layers[0], h.docker[0].Layers[0])
	}
	layer := a.files[a.docker[0].Layers[0]]
	if want := "dockctl:inst-" + sha(layer)[:12]; img.Ref != want {
		t.Errorf("Ref %s, want %s", img.Ref, want)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(a.files[a.docker[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{helperapi.Binary}) ||
		!reflect.DeepEqual(cfg.Config.Labels, map[string]string{LabelInstance: "inst", LabelRole: RoleControllerImage}) {
		t.Errorf("config %+v", cfg.Config)
	}
	again, _ := BuildControllerImage("inst", runtime.GOARCH, static)
	if again.ID != img.ID || string(again.Tar) != string(img.Tar) {
		t.Error("the same binary gave two images")
	}
	// As the helpers: another architecture, or a binary built with cgo,
	// is refused with what to build instead.
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	if _, err := BuildControllerImage("inst", other, static); err == nil || !strings.Contains(err.Error(), "GOARCH="+other) {
		t.Errorf("another architecture: %v", err)
	}
	if noCgo != "" {
		t.Log(noCgo)
		return
	}
	if _, err := BuildControllerImage("inst", runtime.GOARCH, dynamic); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a cgo binary: %v", err)
	}
}

// EnsureControllerImage loads the image of the executable's file, streamed
// (the same bytes as BuildControllerImage's), and refuses an executable
// that cannot run FROM scratch, saying so.
func TestEnsureControllerImage(t *testing.T) {
	static, _, staticPath, _ := helperBinaries(t)
	want, err := BuildControllerImage("inst", runtime.GOARCH, static)
	if err != nil {
		t.Fatal(err)
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	for _, tt := range []struct {
		name, binary, arch string
		wantLoads          int
		wantErr            string
	}{
		{name: "absent: loaded", binary: staticPath, arch: runtime.GOARCH, wantLoads: 1},
		{name: "daemon of another architecture", binary: staticPath, arch: other,
			wantErr: "controller image: helper image: dockctl's executable is for linux/" + runtime.GOARCH + ", the Docker daemon runs linux/" + other},
		{name: "no such executable", binary: filepath.Join(t.TempDir(), "missing"), arch: runtime.GOARCH,
			wantErr: "controller image: read dockctl's executable: open "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &objectsAPI{info: system.Info{OSType: "linux", Architecture: tt.arch}}
			c := newObjectsClient(f)
			WithHelperBinary(tt.binary)(c)
			ref, err := c.EnsureControllerImage(context.Background(), "inst")
			if f.loads != tt.wantLoads {
				t.Errorf("%d loads, want %d", f.loads, tt.wantLoads)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("EnsureControllerImage = %s, %v; want an error containing %q", ref, err, tt.wantErr)
				}
				return
			}
			if err != nil || ref != want.Ref || f.images[ref].id != want.ID ||
				!reflect.DeepEqual(f.images[ref].labels, map[string]string{LabelInstance: "inst", LabelRole: RoleControllerImage}) {
				t.Errorf("EnsureControllerImage = %s, %v (daemon: %+v); want %s with ID %s", ref, err, f.images[ref], want.Ref, want.ID)
			}
		})
	}
}

// instanceAPI is a daemon of several instances' objects that ignores list
// filters (records them instead): what ListInstanceObjects returns must
// hold only the instance's objects even then.
type instanceAPI struct {
	fakeAPI
	containers []container.Summary
	networks   []network.Summary
	images     []image.Summary
	volumes    []*volume.Volume
	filters    []filters.Args
	removed    []string
}

func (f *instanceAPI) ContainerList(_ context.Context, o container.ListOptions) ([]container.Summary, error) {
	f.filters = append(f.filters, o.Filters)
	if !o.All {
		return nil, errors.New("stopped containers left out")
	}
	return f.containers, nil
}

func (f *instanceAPI) NetworkList(_ context.Context, o network.ListOptions) ([]network.Summary, error) {
	f.filters = append(f.filters, o.Filters)
	return f.networks, nil
}

func (f *instanceAPI) ImageList(_ context.Context, o image.ListOptions) ([]image.Summary, error) {
	f.filters = append(f.filters, o.Filters)
	return f.images, nil
}

func (f *instanceAPI) VolumeList(_ context.Context, o volume.ListOptions) (volume.ListResponse, error) {
	f.filters = append(f.filters, o.Filters)
	return volume.ListResponse{Volumes: f.volumes}, nil
}

func (f *instanceAPI) NetworkRemove(_ context.Context, id string) error {
	f.removed = append(f.removed, "network "+id)
	return nil
}

func TestListInstanceObjectsSelectsByTheInstanceLabelOnly(t *testing.T) {
	of := func(instance, role string) map[string]string {
		l := map[string]string{LabelRole: role}
		if instance != "" {
			l[LabelInstance] = instance
		}
		return l
	}
	f := &instanceAPI{
		containers: []container.Summary{
			{ID: "c1", Names: []string{"/a_web-1"}, Labels: of("a", RoleReplica)},
			{ID: "c2", Names: []string{"/b_web-1"}, Labels: of("b", RoleReplica)},
			{ID: "c3", Names: []string{"/dockctl-a-controller"}, Labels: of("a", RoleController)},
			{ID: "c4", Names: []string{"/hand-made"}, Labels: of("", RoleReplica)},
			{ID: "c5", Names: []string{"/a_dns"}, Labels: of("a", RoleDNS)},
		},
		networks: []network.Summary{{ID: "n1", Name: "dockctl_a", Labels: of("a", RoleNetwork)}, {ID: "n2", Name: "dockctl_b", Labels: of("b", RoleNetwork)}, {ID: "n3", Name: "bridge"}},
		images: []image.Summary{
			{ID: "sha256:i1", RepoTags: []string{"dockctl-helper:a-1"}, Labels: of("a", RoleHelperImage)},
			{ID: "sha256:i2", RepoTags: []string{"docker.io/library/dockctl:a-2"}, Labels: of("a", RoleControllerImage)},
			{ID: "sha256:i3", RepoTags: []string{"nginx:1"}},
			{ID: "sha256:i4", RepoTags: []string{"dockctl:b-2"}, Labels: of("b", RoleControllerImage)},
		},
		volumes: []*volume.Volume{{Name: "a-claim", Labels: of("a", RoleClaim)}, {Name: "b-claim", Labels: of("b", RoleClaim)}, {Name: "other"}, nil},
	}
	c := newFakeClient(&f.fakeAPI)
	c.api = f
	got, err := c.ListInstanceObjects(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	want := []InstanceObject{
		{KindContainer, "c3", "dockctl-a-controller", RoleController},
		{KindContainer, "c5", "a_dns", RoleDNS},
		{KindContainer, "c1", "a_web-1", RoleReplica},
		{KindNetwork, "n1", "dockctl_a", RoleNetwork},
		{KindImage, "sha256:i1", "dockctl-helper:a-1", RoleHelperImage},
		{KindImage, "sha256:i2", "dockctl:a-2", RoleControllerImage},
		{KindVolume, "a-claim", "a-claim", RoleClaim},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if len(f.filters) != 4 {
		t.Fatalf("%d list calls, want 4", len(f.filters))
	}
	for _, args := range f.filters {
		if got := args.Get("label"); !reflect.DeepEqual(got, []string{LabelInstance + "=a"}) {
			t.Errorf("list filtered on %v, want the instance label", got)
		}
	}
	if _, err := c.ListInstanceObjects(context.Background(), ""); err == nil {
		t.Error("no instance: no error")
	}
	if err := c.RemoveInstanceObject(context.Background(), want[3]); err != nil || !reflect.DeepEqual(f.removed, []string{"network n1"}) {
		t.Errorf("remove network: %v, %v", err, f.removed)
	}
}

// controllerAPI is a daemon holding at most one container under the
// controller's name, and recording what EnsureController does to it.
type controllerAPI struct {
	fakeAPI
	current *container.InspectResponse // nil: no such container
	calls   []string
}

func (f *controllerAPI) ContainerInspect(_ context.Context, name string) (container.InspectResponse, error) {
	if f.current == nil {
		return container.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("No such container: " + name)
	}
	return *f.current, nil
}

func (f *controllerAPI) ContainerCreate(_ context.Context, cfg *container.Config, _ *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, name string) (container.CreateResponse, error) {
	f.calls = append(f.calls, "create "+name)
	return container.CreateResponse{ID: "new"}, nil
}

func (f *controllerAPI) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.calls = append(f.calls, "start "+id)
	return nil
}

func (f *controllerAPI) ContainerRemove(_ context.Context, id string, o container.RemoveOptions) error {
	f.calls = append(f.calls, "remove "+id)
	return nil
}

// An install of the same configuration leaves the controller container
// (starting it when stopped), one of another replaces it, and a container
// of that name that is not the instance's controller is never touched.
func TestEnsureController(t *testing.T) {
	spec := controllerSpec()
	cfg, _, err := ControllerConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	existing := func(labels map[string]string, running bool) *container.InspectResponse {
		return &container.InspectResponse{
			ContainerJSONBase: &container.ContainerJSONBase{ID: "old", State: &container.State{Running: running}},
			Config:            &container.Config{Labels: labels},
		}
	}
	name := ControllerName("prod")
	tests := []struct {
		name       string
		current    *container.InspectResponse
		wantAction string
		wantCalls  []string
		wantErr    error
	}{
		{"none", nil, ControllerCreated, []string{"create " + name, "start new"}, nil},
		{"same, running", existing(cfg.Labels, true), ControllerUnchanged, nil, nil},
		{"same, stopped", existing(cfg.Labels, false), ControllerStarted, []string{"start old"}, nil},
		{"another configuration", existing(map[string]string{LabelInstance: "prod", LabelRole: RoleController, LabelConfigHash: "0"}, true),
			ControllerReplaced, []string{"remove old", "create " + name, "start new"}, nil},
		{"another instance's", existing(map[string]string{LabelInstance: "staging", LabelRole: RoleController}, true), "", nil, ErrConflict},
		{"not dockctl's", existing(nil, true), "", nil, ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &controllerAPI{current: tt.current}
			c := newFakeClient(&f.fakeAPI)
			c.api = f
			_, action, err := c.EnsureController(context.Background(), spec)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if action != tt.wantAction || !reflect.DeepEqual(f.calls, tt.wantCalls) {
				t.Errorf("action %q calls %q, want %q %q", action, f.calls, tt.wantAction, tt.wantCalls)
			}
		})
	}
}

// Two mounts at one path (a --manifests path that is the state directory,
// or the socket) are Docker's "Duplicate mount point" error at create
// time, after a re-install removed the running controller: refused while
// the configuration is built, before anything is touched.
func TestControllerConfigRefusesTwoMountsAtOnePath(t *testing.T) {
	for name, mod := range map[string]func(*ControllerSpec){
		"manifests at the state directory": func(s *ControllerSpec) { s.ReadOnly = append(s.ReadOnly, s.StateDir) },
		"manifests at the socket":          func(s *ControllerSpec) { s.ReadOnly = append(s.ReadOnly, containerSocket) },
		"manifests twice":                  func(s *ControllerSpec) { s.ReadOnly = append(s.ReadOnly, s.ReadOnly[0]) },
		"volume and manifests at /state": func(s *ControllerSpec) {
			s.StateDir, s.StateVolume, s.ReadOnly = "", "v", []string{ControllerStateMount}
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := controllerSpec()
			mod(&spec)
			if _, _, err := ControllerConfig(spec); err == nil {
				t.Error("no error")
			}
			f := &controllerAPI{current: &container.InspectResponse{
				ContainerJSONBase: &container.ContainerJSONBase{ID: "old", State: &container.State{Running: true}},
				Config:            &container.Config{Labels: map[string]string{LabelInstance: "prod", LabelRole: RoleController, LabelConfigHash: "0"}},
			}}
			c := newFakeClient(&f.fakeAPI)
			c.api = f
			if _, _, err := c.EnsureController(context.Background(), spec); err == nil || len(f.calls) != 0 {
				t.Errorf("EnsureController: %v, calls %q; want an error and the running controller untouched", err, f.calls)
			}
		})
	}
}

func (f *instanceAPI) ImageRemove(_ context.Context, id string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.removed = append(f.removed, "image "+id)
	return nil, nil
}

// Labels are inherited: an image built FROM a dockctl image, and a
// container run from one, carry its io.dockctl.instance and role. Neither
// is dockctl's: uninstall lists, and a re-install removes, only images
// tagged in dockctl's repositories for the instance (or untagged) and
// containers whose role is not an image's.
func TestInstanceObjectsLeaveWhatInheritedTheLabels(t *testing.T) {
	of := func(role string) map[string]string { return map[string]string{LabelInstance: "a", LabelRole: role} }
	f := &instanceAPI{
		containers: []container.Summary{
			{ID: "c1", Names: []string{"/a_web-1"}, Labels: of(RoleReplica)},
			{ID: "c2", Names: []string{"/debug"}, Labels: of(RoleControllerImage)},
			{ID: "c3", Names: []string{"/shell"}, Labels: of(RoleHelperImage)},
		},
		images: []image.Summary{
			{ID: "sha256:keep", RepoTags: []string{"dockctl:a-new"}, Labels: of(RoleControllerImage)},
			{ID: "sha256:old", RepoTags: []string{"docker.io/library/dockctl:a-old"}, Labels: of(RoleControllerImage)},
			{ID: "sha256:untagged", RepoTags: []string{"<none>:<none>"}, Labels: of(RoleControllerImage)},
			{ID: "sha256:mine", RepoTags: []string{"registry.example/me/dockctl-with-ca:1"}, Labels: of(RoleControllerImage)},
			{ID: "sha256:retagged", RepoTags: []string{"dockctl:a-older", "dockctl:pinned"}, Labels: of(RoleControllerImage)},
			{ID: "sha256:other", RepoTags: []string{"dockctl:b-old"}, Labels: of(RoleControllerImage)},
			{ID: "sha256:helper", RepoTags: []string{"dockctl-helper:a-1"}, Labels: of(RoleHelperImage)},
			{ID: "sha256:myhelper", RepoTags: []string{"myproxy:1"}, Labels: of(RoleHelperImage)},
		},
	}
	c := newFakeClient(&f.fakeAPI)
	c.api = f
	got, err := c.ListInstanceObjects(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got {
		names = append(names, o.Kind+" "+o.Name)
	}
	want := []string{"container a_web-1", "image dockctl-helper:a-1", "image dockctl:a-new", "image dockctl:a-old", "image untagged"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("listed %q\nwant   %q", names, want)
	}
	removed, err := c.RemoveOtherControllerImages(context.Background(), "a", "dockctl:a-new")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"image sha256:old", "image sha256:untagged"}; !reflect.DeepEqual(f.removed, want) {
		t.Errorf("re-install removed %q (%q), want %q", f.removed, removed, want)
	}
}

// A read-only bind mount is read-only only at its top before Engine API
// 1.44 (Docker 25 on Linux 5.12 makes it recursively read-only): a
// submount under a --manifests directory would be writable in the
// controller container. The manifests are mounted non-recursively, so no
// submount shows there at all; the state directory, which the
// controller writes, keeps Docker's default.
func TestControllerManifestsMountHasNoWritableSubmount(t *testing.T) {
	_, hc, err := ControllerConfig(controllerSpec())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, m := range hc.Mounts {
		if !m.ReadOnly {
			continue
		}
		n++
		if m.BindOptions == nil || !m.BindOptions.NonRecursive {
			t.Errorf("read-only mount %s: bind options %+v, want non-recursive", m.Target, m.BindOptions)
		}
	}
	if n != 1 {
		t.Errorf("%d read-only mounts, want the manifests' one", n)
	}
}

// userAPI is a daemon whose Info reports security options.
type userAPI struct {
	fakeAPI
	options []string
}

func (f *userAPI) Info(context.Context) (system.Info, error) {
	return system.Info{SecurityOptions: f.options}, nil
}

// The daemon's user namespace is read from its security options, and a
// controller that needs the host's runs in it (UsernsMode host), only
// then (the golden configurations keep theirs).
func TestControllerUserNamespace(t *testing.T) {
	for _, tt := range []struct {
		options []string
		want    UserNamespace
	}{
		{[]string{"name=seccomp,profile=default"}, UserNamespace{}},
		{[]string{"name=seccomp,profile=default", "name=rootless", "name=cgroupns"}, UserNamespace{Rootless: true}},
		{[]string{"name=apparmor", "name=userns"}, UserNamespace{Remapped: true}},
	} {
		f := &userAPI{options: tt.options}
		c := newFakeClient(&f.fakeAPI)
		c.api = f
		got, err := c.UserNamespace(context.Background())
		if err != nil || got != tt.want {
			t.Errorf("%q: %+v, %v; want %+v", tt.options, got, err, tt.want)
		}
	}
	spec := controllerSpec()
	spec.UsernsHost = true
	_, hc, err := ControllerConfig(spec)
	if err != nil || hc.UsernsMode != "host" {
		t.Errorf("UsernsHost: mode %q, %v", hc.UsernsMode, err)
	}
}

// The controller protects the Docker socket DOCKER_HOST names from
// hostPath mounts (docs/design.md §13), judged on the host's paths. A
// socket elsewhere than Docker's default is therefore mounted at its own
// path and named in DOCKER_HOST, as the state directory is mounted at its
// own: otherwise the installed controller protects only
// /var/run/docker.sock and lets a pod mount the real socket.
func TestControllerSeesTheSocketAtItsHostPath(t *testing.T) {
	spec := controllerSpec()
	spec.Socket = "/srv/docker/docker.sock"
	cfg, hc, err := ControllerConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	var mounted bool
	for _, m := range hc.Mounts {
		if m.Source == spec.Socket {
			mounted = m.Target == spec.Socket
		}
	}
	if !mounted || !slices.Contains(cfg.Env, "DOCKER_HOST=unix:///srv/docker/docker.sock") {
		t.Errorf("mounts %+v env %q: want the socket at %s and DOCKER_HOST naming it", hc.Mounts, cfg.Env, spec.Socket)
	}
}

// volumeAPI is a daemon holding one volume.
type volumeAPI struct {
	fakeAPI
	vol     *volume.Volume
	created []string
}

func (f *volumeAPI) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	if f.vol == nil || f.vol.Name != name {
		return volume.Volume{}, cerrdefs.ErrNotFound.WithMessage("no such volume")
	}
	return *f.vol, nil
}

func (f *volumeAPI) VolumeCreate(_ context.Context, o volume.CreateOptions) (volume.Volume, error) {
	f.created = append(f.created, o.Name)
	return volume.Volume{Name: o.Name, Labels: o.Labels}, nil
}

// The state volume is the instance's volume of role state, or a new one:
// another of the instance's volumes (a claim's data, a pod's volume) is
// not taken for the controller's state, which would write into it.
func TestEnsureStateVolumeTakesOnlyTheInstancesStateVolume(t *testing.T) {
	for _, tt := range []struct {
		name    string
		vol     *volume.Volume
		wantErr bool
	}{
		{"none: created", nil, false},
		{"the state volume", &volume.Volume{Name: "v", Labels: map[string]string{LabelInstance: "a", LabelRole: RoleState}}, false},
		{"a claim's", &volume.Volume{Name: "v", Labels: map[string]string{LabelInstance: "a", LabelRole: RoleClaim}}, true},
		{"another instance's", &volume.Volume{Name: "v", Labels: map[string]string{LabelInstance: "b", LabelRole: RoleState}}, true},
		{"nobody's", &volume.Volume{Name: "v"}, true},
	} {
		f := &volumeAPI{vol: tt.vol}
		c := newFakeClient(&f.fakeAPI)
		c.api = f
		err := c.EnsureStateVolume(context.Background(), "a", "v")
		if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrConflict)) {
			t.Errorf("%s: error %v, want one wrapping ErrConflict: %v", tt.name, err, tt.wantErr)
		}
	}
}
