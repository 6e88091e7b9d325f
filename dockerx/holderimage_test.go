package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/dockctl/dockctl/internal/holder"
)

type tarFile struct {
	hdr  tar.Header
	data []byte
}

func readTar(t *testing.T, b []byte) []tarFile {
	t.Helper()
	var out []tarFile
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarFile{*h, data})
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The archive is the contract with `docker load`: its layout, its config
// (golden) and its layer, all fixed so that the image ID never changes.
func TestBuildHolderImageArchive(t *testing.T) {
	img, err := BuildHolderImage("default", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, img.Tar)
	var names []string
	byName := map[string][]byte{}
	for _, f := range files {
		names = append(names, f.hdr.Name)
		byName[f.hdr.Name] = f.data
		if !f.hdr.ModTime.Equal(time.Unix(0, 0)) || f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Uname != "" || f.hdr.Format != tar.FormatUSTAR {
			t.Errorf("%s: mtime %v uid %d gid %d uname %q format %v: want fixed, root-owned USTAR entries",
				f.hdr.Name, f.hdr.ModTime, f.hdr.Uid, f.hdr.Gid, f.hdr.Uname, f.hdr.Format)
		}
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(byName["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 || !reflect.DeepEqual(manifest[0].RepoTags, []string{img.Ref}) {
		t.Fatalf("manifest %+v", manifest)
	}
	config, layer := byName[manifest[0].Config], byName[manifest[0].Layers[0]]
	layerDir := strings.TrimSuffix(manifest[0].Layers[0], "layer.tar")
	if want := slices.Sorted(slices.Values([]string{manifest[0].Config, layerDir, manifest[0].Layers[0], "manifest.json"})); !reflect.DeepEqual(names, want) {
		t.Errorf("entries %v, want %v (sorted)", names, want)
	}
	if img.ID != "sha256:"+sha(config) || manifest[0].Config != sha(config)+".json" {
		t.Errorf("ID %s, config %s: want the config's digest", img.ID, manifest[0].Config)
	}
	if want := "dockctl-holder:default-" + sha(config)[:12]; img.Ref != want {
		t.Errorf("Ref %s, want %s", img.Ref, want)
	}

	golden := filepath.Join("testdata", "holderimage-config-amd64.golden.json")
	if *update {
		if err := os.WriteFile(golden, config, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(config, want) {
		t.Errorf("config differs from %s:\n%s", golden, config)
	}
	var cfg struct {
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:" + sha(layer)}; !reflect.DeepEqual(cfg.RootFS.DiffIDs, want) || layerDir != sha(layer)+"/" {
		t.Errorf("diff_ids %v, layer dir %s: want the layer's digest %v", cfg.RootFS.DiffIDs, layerDir, want)
	}

	bin, err := holder.Binary("amd64")
	if err != nil {
		t.Fatal(err)
	}
	entries := readTar(t, layer)
	if len(entries) != 1 {
		t.Fatalf("layer has %d entries, want only the holder", len(entries))
	}
	h := entries[0].hdr
	if h.Name != "holder" || h.Typeflag != tar.TypeReg || h.Mode != 0o555 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) ||
		!bytes.Equal(entries[0].data, bin) {
		t.Errorf("layer entry %+v: want the holder binary at /holder, 0555, root, epoch", h)
	}
}

func TestBuildHolderImageIsDeterministic(t *testing.T) {
	a, err := BuildHolderImage("default", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildHolderImage("default", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Tar, b.Tar) || a.ID != b.ID || a.Ref != b.Ref {
		t.Fatalf("two builds differ: %s %s", a.ID, b.ID)
	}
	// The content (labels, architecture) decides the ID and the tag.
	seen := map[string]string{a.ID: "default/amd64"}
	for _, tt := range []struct{ instance, goarch string }{{"other", "amd64"}, {"default", "arm64"}} {
		img, err := BuildHolderImage(tt.instance, tt.goarch)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[img.ID]; dup {
			t.Errorf("%s/%s has the ID of %s", tt.instance, tt.goarch, prev)
		}
		seen[img.ID] = tt.instance + "/" + tt.goarch
		if !strings.HasPrefix(img.Ref, "dockctl-holder:"+tt.instance+"-") {
			t.Errorf("ref %s", img.Ref)
		}
	}
}

func TestBuildHolderImageRefuses(t *testing.T) {
	for _, tt := range []struct{ instance, goarch, want string }{
		{"default", "s390x", "no holder binary for linux/s390x"},
		{"", "amd64", "is not a valid Docker tag"},
		{"a/b", "amd64", "is not a valid Docker tag"},
		{strings.Repeat("a", 120), "amd64", "is not a valid Docker tag"},
	} {
		_, err := BuildHolderImage(tt.instance, tt.goarch)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("BuildHolderImage(%q, %q) = %v, want an error containing %q", tt.instance, tt.goarch, err, tt.want)
		}
	}
	// The longest instance --instance accepts (63 characters) fits a tag.
	if _, err := BuildHolderImage(strings.Repeat("a", 63), "amd64"); err != nil {
		t.Errorf("63-character instance: %v", err)
	}
}

// objectsAPI is a daemon's images and volumes, for the unit tests of
// EnsureHolderImage, the image and the volume calls.
type objectsAPI struct {
	dockerAPI

	mu         sync.Mutex
	info       system.Info
	infoCalls  int
	images     map[string]string // reference → image ID
	loads      int
	loadStream string // the load's response; default a success message
	loadAs     string // the ID the daemon gives a loaded image; default its config digest
	imageList  []image.Summary
	removeErr  error
	removed    []string
	volumes    map[string]volume.Volume
	created    []volume.CreateOptions
	volRemErr  error
	filters    []filters.Args // of each list call
}

func (f *objectsAPI) Info(context.Context) (system.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.infoCalls++
	return f.info, nil
}

func (f *objectsAPI) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.images[ref]; ok {
		return image.InspectResponse{ID: id}, nil
	}
	return image.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

// ImageLoad tags the archive's image as docker load does: the ID is the
// digest of the config the manifest names.
func (f *objectsAPI) ImageLoad(_ context.Context, in io.Reader, _ ...client.ImageLoadOption) (image.LoadResponse, error) {
	b, err := io.ReadAll(in)
	if err != nil {
		return image.LoadResponse{}, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return image.LoadResponse{}, err
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var manifest []struct {
		Config   string
		RepoTags []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return image.LoadResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	stream := f.loadStream
	if stream == "" {
		stream = `{"stream":"Loaded image: x\n"}` + "\n"
	}
	if !strings.Contains(stream, "error") {
		for _, m := range manifest {
			id := f.loadAs
			if id == "" {
				id = "sha256:" + sha(files[m.Config])
			}
			for _, tag := range m.RepoTags {
				f.images[tag] = id
			}
		}
	}
	return image.LoadResponse{Body: io.NopCloser(strings.NewReader(stream)), JSON: true}, nil
}

func (f *objectsAPI) ImageList(_ context.Context, o image.ListOptions) ([]image.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filters = append(f.filters, o.Filters)
	return f.imageList, nil
}

func (f *objectsAPI) ImageRemove(_ context.Context, id string, o image.RemoveOptions) ([]image.DeleteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Force {
		return nil, errors.New("forced removal")
	}
	f.removed = append(f.removed, id)
	return nil, f.removeErr
}

func (f *objectsAPI) VolumeCreate(_ context.Context, o volume.CreateOptions) (volume.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, o)
	if v, ok := f.volumes[o.Name]; ok {
		return v, nil // as Docker: the existing volume, its own labels
	}
	v := volume.Volume{Name: o.Name, Driver: o.Driver, Labels: o.Labels, Options: o.DriverOpts}
	f.volumes[o.Name] = v
	return v, nil
}

func (f *objectsAPI) VolumeList(_ context.Context, o volume.ListOptions) (volume.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filters = append(f.filters, o.Filters)
	var out volume.ListResponse
	for _, v := range f.volumes {
		out.Volumes = append(out.Volumes, &v)
	}
	return out, nil
}

func (f *objectsAPI) VolumeRemove(_ context.Context, name string, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if force {
		return errors.New("forced removal")
	}
	if f.volRemErr != nil {
		return f.volRemErr
	}
	if _, ok := f.volumes[name]; !ok {
		return cerrdefs.ErrNotFound.WithMessage("no such volume")
	}
	delete(f.volumes, name)
	return nil
}

func newObjectsClient(f *objectsAPI) *Client {
	if f.images == nil {
		f.images = map[string]string{}
	}
	if f.volumes == nil {
		f.volumes = map[string]volume.Volume{}
	}
	return &Client{api: f, timeout: time.Second, log: newFakeClient(&fakeAPI{}).log}
}

func TestEnsureHolderImage(t *testing.T) {
	want, err := BuildHolderImage("inst", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	linux := system.Info{OSType: "linux", Architecture: "x86_64"}
	tests := []struct {
		name      string
		info      system.Info
		images    map[string]string
		stream    string
		loadAs    string
		wantLoads int
		wantIs    error
		wantErr   string
	}{
		{name: "absent: loaded", info: linux, wantLoads: 1},
		{name: "present: nothing loaded", info: linux, images: map[string]string{want.Ref: want.ID}},
		{name: "daemon reports a GOARCH", info: system.Info{OSType: "linux", Architecture: "amd64"}, wantLoads: 1},
		{name: "arm64 daemon", info: system.Info{OSType: "linux", Architecture: "aarch64"}, wantLoads: 1},
		{name: "windows daemon", info: system.Info{OSType: "windows", Architecture: "x86_64"},
			wantErr: "the Docker daemon runs windows/amd64 containers; dockctl's pod holder exists for linux/amd64, linux/arm64 only"},
		{name: "unsupported architecture", info: system.Info{OSType: "linux", Architecture: "s390x"},
			wantErr: "holder image for the daemon's linux/s390x: no holder binary for linux/s390x"},
		{name: "tag taken by another image", info: linux, images: map[string]string{want.Ref: "sha256:0123"},
			wantIs: ErrConflict, wantErr: "names image sha256:0123, not dockctl's"},
		{name: "load fails in the stream", info: linux, stream: `{"errorDetail":{"message":"no space left on device"},"error":"no space left on device"}`,
			wantLoads: 1, wantErr: "no space left on device"},
		{name: "loaded under another ID", info: linux, loadAs: "sha256:fff", wantLoads: 1, wantIs: ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &objectsAPI{info: tt.info, images: tt.images, loadStream: tt.stream, loadAs: tt.loadAs}
			c := newObjectsClient(f)
			ref, err := c.EnsureHolderImage(context.Background(), "inst")
			if f.loads != tt.wantLoads {
				t.Errorf("%d loads, want %d", f.loads, tt.wantLoads)
			}
			if tt.wantErr != "" || tt.wantIs != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
					t.Fatalf("EnsureHolderImage = %q, %v; want an error containing %q (is %v)", ref, err, tt.wantErr, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			goarch := goarchOf(tt.info.Architecture)
			img, _ := BuildHolderImage("inst", goarch)
			if ref != img.Ref || f.images[ref] != img.ID {
				t.Errorf("ref %s (daemon: %s), want %s with ID %s", ref, f.images[ref], img.Ref, img.ID)
			}
			// A second call finds the tag, and asks the daemon's platform
			// only once a minute.
			if again, err := c.EnsureHolderImage(context.Background(), "inst"); err != nil || again != ref {
				t.Errorf("second call = %s, %v", again, err)
			}
			if f.loads != tt.wantLoads || f.infoCalls != 1 {
				t.Errorf("after a second call: %d loads, %d Info calls; want %d, 1", f.loads, f.infoCalls, tt.wantLoads)
			}
		})
	}
}

func TestListHelperImagesAndRemoveImage(t *testing.T) {
	f := &objectsAPI{imageList: []image.Summary{
		{ID: "sha256:b", RepoTags: []string{"dockctl-holder:inst-b"}, Labels: map[string]string{LabelInstance: "inst", LabelRole: RoleHelperImage}},
		{ID: "sha256:a", RepoTags: []string{"dockctl-holder:inst-a"}, Labels: map[string]string{LabelInstance: "inst", LabelRole: RoleHelperImage}},
	}}
	c := newObjectsClient(f)
	got, err := c.ListHelperImages(context.Background(), "inst")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "sha256:a" || got[0].Tags[0] != "dockctl-holder:inst-a" || got[1].Labels[LabelRole] != RoleHelperImage {
		t.Errorf("ListHelperImages = %+v", got)
	}
	if fl := f.filters[0].Get("label"); !reflect.DeepEqual(slices.Sorted(slices.Values(fl)), []string{LabelInstance + "=inst", LabelRole + "=" + RoleHelperImage}) {
		t.Errorf("filter %v", fl)
	}

	for _, tt := range []struct {
		name   string
		err    error
		wantIs error
	}{
		{"removed", nil, nil},
		{"already gone", cerrdefs.ErrNotFound.WithMessage("No such image"), nil},
		{"in use", cerrdefs.ErrConflict.WithMessage("conflict: unable to delete a (must be forced) - image is being used by stopped container 1"), ErrConflict},
		{"daemon down", client.ErrorConnectionFailed("unix:///x"), ErrUnreachable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &objectsAPI{removeErr: tt.err}
			err := newObjectsClient(f).RemoveImage(context.Background(), "sha256:a")
			if (tt.wantIs == nil) != (err == nil) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Errorf("RemoveImage = %v, want %v", err, tt.wantIs)
			}
			if !reflect.DeepEqual(f.removed, []string{"sha256:a"}) {
				t.Errorf("removed %v (never forced)", f.removed)
			}
		})
	}
}

func volumeRequest(volume string, memory bool, size int64) VolumeRequest {
	return VolumeRequest{
		Instance: "inst", Deployment: "web", TemplateHash: "abc123",
		Pod:    PodRef{Name: "web-abc123-0", UID: "3f9a01bc", Holder: "inst_web-abc123-0"},
		Volume: volume, Memory: memory, SizeBytes: size,
	}
}

func TestCreateVolume(t *testing.T) {
	labels := map[string]string{
		LabelInstance: "inst", LabelDeployment: "web", LabelTemplateHash: "abc123", LabelRole: RoleEmptyDir,
		LabelPod: "web-abc123-0", LabelPodUID: "3f9a01bc",
	}
	tests := []struct {
		name     string
		req      VolumeRequest
		existing *volume.Volume
		wantOpts map[string]string
		wantIs   error
		wantErr  string
	}{
		{name: "disk", req: volumeRequest("cache", false, 0)},
		{name: "memory with a size", req: volumeRequest("cache", true, 1<<20),
			wantOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1048576"}},
		{name: "memory without a size", req: volumeRequest("cache", true, 0),
			wantOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": fmt.Sprintf("size=%d", DefaultMemoryEmptyDirSize)}},
		{name: "ours already (a retried create)", req: volumeRequest("cache", false, 0),
			existing: &volume.Volume{Name: "inst_web-abc123-0.cache.3f9a01bc", Labels: labels}},
		{name: "someone else's", req: volumeRequest("cache", false, 0),
			existing: &volume.Volume{Name: "inst_web-abc123-0.cache.3f9a01bc", Labels: map[string]string{"owner": "me"}},
			wantIs:   ErrConflict, wantErr: `exists and is not dockctl's instance "inst"`},
		{name: "another pod's", req: volumeRequest("cache", false, 0),
			existing: &volume.Volume{Name: "inst_web-abc123-0.cache.3f9a01bc",
				Labels: map[string]string{LabelInstance: "inst", LabelPodUID: "00000000"}},
			wantIs: ErrConflict, wantErr: `belongs to pod uid "00000000"`},
		{name: "no volume name", req: volumeRequest("", false, 0), wantErr: "are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &objectsAPI{volumes: map[string]volume.Volume{}}
			if tt.existing != nil {
				f.volumes[tt.existing.Name] = *tt.existing
			}
			name, err := newObjectsClient(f).CreateVolume(context.Background(), tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
					t.Fatalf("CreateVolume = %q, %v; want an error containing %q", name, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name != "inst_web-abc123-0.cache.3f9a01bc" {
				t.Errorf("name %s", name)
			}
			o := f.created[0]
			if o.Name != name || o.Driver != "local" || !reflect.DeepEqual(o.Labels, labels) || !reflect.DeepEqual(o.DriverOpts, tt.wantOpts) {
				t.Errorf("create options %+v", o)
			}
		})
	}
}

func TestListAndRemoveVolumes(t *testing.T) {
	f := &objectsAPI{volumes: map[string]volume.Volume{}}
	c := newObjectsClient(f)
	ctx := context.Background()
	for _, v := range []string{"b", "a"} {
		if _, err := c.CreateVolume(ctx, volumeRequest(v, false, 0)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.ListVolumes(ctx, "inst")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "inst_web-abc123-0.a.3f9a01bc" || got[0].Instance != "inst" || got[0].Deployment != "web" ||
		got[0].Role != RoleEmptyDir || got[0].Pod != "web-abc123-0" || got[0].PodUID != "3f9a01bc" || got[0].Labels[LabelTemplateHash] != "abc123" {
		t.Errorf("ListVolumes = %+v", got)
	}
	if fl := f.filters[0].Get("label"); !reflect.DeepEqual(fl, []string{LabelInstance + "=inst"}) {
		t.Errorf("filter %v", fl)
	}
	if err := c.RemoveVolume(ctx, got[0].Name); err != nil {
		t.Errorf("RemoveVolume: %v", err)
	}
	if err := c.RemoveVolume(ctx, got[0].Name); err != nil {
		t.Errorf("RemoveVolume(gone) = %v, want nil", err)
	}
	f.volRemErr = cerrdefs.ErrConflict.WithMessage("remove inst_web-abc123-0.b.3f9a01bc: volume is in use - [abc]")
	if err := c.RemoveVolume(ctx, got[1].Name); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume is in use") {
		t.Errorf("RemoveVolume(in use) = %v, want ErrConflict", err)
	}
}
