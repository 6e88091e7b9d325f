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
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

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

// holderArchive is a holder image archive read back: its entries, and
// the documents of both of its layouts.
type holderArchive struct {
	names  []string // in archive order
	files  map[string][]byte
	docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	layout   ocispec.ImageLayout
	index    ocispec.Index
	manifest ocispec.Manifest // the blob the index names
}

func readHolderArchive(t *testing.T, b []byte) holderArchive {
	t.Helper()
	a := holderArchive{files: map[string][]byte{}}
	for _, f := range readTar(t, b) {
		a.names = append(a.names, f.hdr.Name)
		a.files[f.hdr.Name] = f.data
		if !f.hdr.ModTime.Equal(time.Unix(0, 0)) || f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Uname != "" || f.hdr.Format != tar.FormatUSTAR {
			t.Errorf("%s: mtime %v uid %d gid %d uname %q format %v: want fixed, root-owned USTAR entries",
				f.hdr.Name, f.hdr.ModTime, f.hdr.Uid, f.hdr.Gid, f.hdr.Uname, f.hdr.Format)
		}
	}
	for name, v := range map[string]any{"manifest.json": &a.docker, "oci-layout": &a.layout, "index.json": &a.index} {
		if err := json.Unmarshal(a.files[name], v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(a.index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(a.index.Manifests))
	}
	if err := json.Unmarshal(a.files["blobs/sha256/"+a.index.Manifests[0].Digest.Encoded()], &a.manifest); err != nil {
		t.Fatalf("the manifest index.json names: %v", err)
	}
	return a
}

// The archive is the contract with `docker load` of both image stores:
// the docker-save files for the classic store, an OCI image layout for the
// containerd store, sharing the config and the layer blobs; its config
// (golden) and its layer are fixed so that both image IDs never change.
func TestBuildHolderImageArchive(t *testing.T) {
	img, err := BuildHolderImage("default", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	a := readHolderArchive(t, img.Tar)

	// The docker-save half: manifest.json names the config and the layer
	// where the OCI layout keeps them.
	if len(a.docker) != 1 || len(a.docker[0].Layers) != 1 || !reflect.DeepEqual(a.docker[0].RepoTags, []string{img.Ref}) {
		t.Fatalf("manifest.json %+v", a.docker)
	}
	config, layer := a.files[a.docker[0].Config], a.files[a.docker[0].Layers[0]]
	if img.ID != "sha256:"+sha(config) || a.docker[0].Config != "blobs/sha256/"+sha(config) {
		t.Errorf("ID %s, config %s: want the config's digest", img.ID, a.docker[0].Config)
	}
	if want := "dockctl-holder:default-" + sha(config)[:12]; img.Ref != want {
		t.Errorf("Ref %s, want %s", img.Ref, want)
	}
	if a.docker[0].Layers[0] != "blobs/sha256/"+sha(layer) {
		t.Errorf("layer %s, want blobs/sha256/ and its digest", a.docker[0].Layers[0])
	}

	// The OCI half: oci-layout, and index.json naming the manifest with the
	// annotations `docker save` writes; the manifest names the same config
	// and layer blobs.
	if a.layout.Version != "1.0.0" {
		t.Errorf("oci-layout %s", a.files["oci-layout"])
	}
	if a.index.SchemaVersion != 2 || a.index.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index.json %s", a.files["index.json"])
	}
	desc := a.index.Manifests[0]
	manifest := a.files["blobs/sha256/"+desc.Digest.Encoded()]
	tag := strings.TrimPrefix(img.Ref, "dockctl-holder:")
	if desc.MediaType != "application/vnd.oci.image.manifest.v1+json" || desc.Digest.String() != img.ManifestDigest ||
		img.ManifestDigest != "sha256:"+sha(manifest) || desc.Size != int64(len(manifest)) || desc.Platform != nil ||
		!reflect.DeepEqual(desc.Annotations, map[string]string{
			"io.containerd.image.name":          "docker.io/library/" + img.Ref,
			"org.opencontainers.image.ref.name": tag,
		}) {
		t.Errorf("index.json's manifest %+v; want the manifest blob %s with its name annotations", desc, img.ManifestDigest)
	}
	m := a.manifest
	if m.SchemaVersion != 2 || m.MediaType != "application/vnd.oci.image.manifest.v1+json" ||
		m.Config.MediaType != "application/vnd.oci.image.config.v1+json" || m.Config.Digest.String() != img.ID || m.Config.Size != int64(len(config)) ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar" ||
		m.Layers[0].Digest.String() != "sha256:"+sha(layer) || m.Layers[0].Size != int64(len(layer)) {
		t.Errorf("manifest %s; want the config and the uncompressed layer blobs", manifest)
	}

	// Nothing else, each blob once, under its own digest.
	blobs := []string{"blobs/sha256/" + sha(config), "blobs/sha256/" + sha(layer), "blobs/sha256/" + sha(manifest)}
	want := slices.Sorted(slices.Values(append([]string{"blobs/", "blobs/sha256/", "index.json", "manifest.json", "oci-layout"}, blobs...)))
	if !reflect.DeepEqual(a.names, want) {
		t.Errorf("entries %v, want %v (sorted)", a.names, want)
	}
	for _, name := range a.names {
		if hex, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && hex != "" && sha(a.files[name]) != hex {
			t.Errorf("blob %s has digest %s", name, sha(a.files[name]))
		}
	}

	golden := filepath.Join("testdata", "holderimage-config-amd64.golden.json")
	if *update {
		if err := os.WriteFile(golden, config, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantConfig, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(config, wantConfig) {
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
	if want := []string{"sha256:" + sha(layer)}; !reflect.DeepEqual(cfg.RootFS.DiffIDs, want) {
		t.Errorf("diff_ids %v: want the (uncompressed) layer's digest %v", cfg.RootFS.DiffIDs, want)
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

// The whole archive, byte for byte, is golden: its listing, its small
// documents and the digest of its bytes.
func TestBuildHolderImageArchiveGolden(t *testing.T) {
	img, err := BuildHolderImage("default", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# BuildHolderImage(\"default\", \"amd64\")\nID %s\nManifestDigest %s\nRef %s\narchive %d bytes, sha256:%s\n",
		img.ID, img.ManifestDigest, img.Ref, len(img.Tar), sha(img.Tar))
	fmt.Fprintf(&out, "\n# entries: type mode size sha256 name\n")
	files := readTar(t, img.Tar)
	for _, f := range files {
		kind := "file"
		if f.hdr.Typeflag == tar.TypeDir {
			kind = "dir "
		}
		fmt.Fprintf(&out, "%s %04o %6d %s %s\n", kind, f.hdr.Mode, f.hdr.Size, sha(f.data), f.hdr.Name)
	}
	a := readHolderArchive(t, img.Tar)
	for _, name := range []string{"oci-layout", "index.json", "blobs/sha256/" + a.index.Manifests[0].Digest.Encoded(), "manifest.json"} {
		fmt.Fprintf(&out, "\n# %s\n%s\n", name, a.files[name])
	}
	golden := filepath.Join("testdata", "holderimage-archive-amd64.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("archive differs from %s:\n%s", golden, out.String())
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
	if !bytes.Equal(a.Tar, b.Tar) || a.ID != b.ID || a.ManifestDigest != b.ManifestDigest || a.Ref != b.Ref {
		t.Fatalf("two builds differ: %s %s", a.ID, b.ID)
	}
	// The content (labels, architecture) decides the IDs and the tag.
	seen := map[string]string{a.ID: "default/amd64", a.ManifestDigest: "default/amd64"}
	for _, tt := range []struct{ instance, goarch string }{{"other", "amd64"}, {"default", "arm64"}} {
		img, err := BuildHolderImage(tt.instance, tt.goarch)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{img.ID, img.ManifestDigest} {
			if prev, dup := seen[id]; dup {
				t.Errorf("%s/%s has the ID %s of %s", tt.instance, tt.goarch, id, prev)
			}
			seen[id] = tt.instance + "/" + tt.goarch
		}
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
	images     map[string]fakeImage // reference → image
	containerd bool                 // load as the containerd image store does
	loads      int
	loadStream string // the load's response; default a success message
	loadAs     string // the ID the daemon gives a loaded image; default as its image store does
	imageList  []image.Summary
	removeErr  error
	removed    []string
	volumes    map[string]volume.Volume
	created    []volume.CreateOptions
	volRemErr  error
	filters    []filters.Args // of each list call
}

// fakeImage is what the fake daemon keeps of an image a tag names.
type fakeImage struct {
	id     string
	labels map[string]string
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
	if img, ok := f.images[ref]; ok {
		// Decoded from the JSON the daemon would send, as the SDK does.
		var resp image.InspectResponse
		raw, err := json.Marshal(map[string]any{"Id": img.id, "Config": map[string]any{"Labels": img.labels}})
		if err == nil {
			err = json.Unmarshal(raw, &resp)
		}
		return resp, err
	}
	return image.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

// ImageLoad tags the archive's images as docker load does. The classic
// image store reads manifest.json: an image's ID is the digest of the
// config it names. The containerd image store reads the OCI image layout
// (oci-layout, index.json): an image's ID is the digest of the manifest
// index.json names, and its name is that descriptor's
// io.containerd.image.name annotation. Either refuses a blob it cannot find
// or whose digest differs from its name.
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
	f.mu.Lock()
	defer f.mu.Unlock()
	loaded, err := loadClassic(files)
	if f.containerd {
		loaded, err = loadOCILayout(files)
	}
	if err != nil {
		return image.LoadResponse{}, err
	}
	f.loads++
	stream := f.loadStream
	if stream == "" {
		stream = `{"stream":"Loaded image: x\n"}` + "\n"
	}
	if !strings.Contains(stream, "error") {
		for tag, img := range loaded {
			if f.loadAs != "" {
				img.id = f.loadAs
			}
			f.images[tag] = img
		}
	}
	return image.LoadResponse{Body: io.NopCloser(strings.NewReader(stream)), JSON: true}, nil
}

// blob returns the file at path after checking that its digest is the
// one named.
func blob(files map[string][]byte, path, dgst string) ([]byte, error) {
	data, ok := files[path]
	if !ok {
		return nil, fmt.Errorf("no %s in the archive", path)
	}
	if got := "sha256:" + sha(data); got != dgst {
		return nil, fmt.Errorf("%s has digest %s, not %s", path, got, dgst)
	}
	return data, nil
}

func labelsOf(config []byte) (map[string]string, error) {
	var cfg ocispec.Image
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cfg.Config.Labels, nil
}

func loadClassic(files map[string][]byte) (map[string]fakeImage, error) {
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	out := map[string]fakeImage{}
	for _, m := range manifest {
		config, ok := files[m.Config]
		if !ok {
			return nil, fmt.Errorf("no config %s", m.Config)
		}
		for _, l := range m.Layers {
			if _, ok := files[l]; !ok {
				return nil, fmt.Errorf("no layer %s", l)
			}
		}
		labels, err := labelsOf(config)
		if err != nil {
			return nil, err
		}
		for _, tag := range m.RepoTags {
			out[tag] = fakeImage{id: "sha256:" + sha(config), labels: labels}
		}
	}
	return out, nil
}

func loadOCILayout(files map[string][]byte) (map[string]fakeImage, error) {
	var layout ocispec.ImageLayout
	if err := json.Unmarshal(files["oci-layout"], &layout); err != nil || layout.Version != ocispec.ImageLayoutVersion {
		return nil, fmt.Errorf("oci-layout %q: %v", files["oci-layout"], err)
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	out := map[string]fakeImage{}
	for _, desc := range index.Manifests {
		data, err := blob(files, "blobs/sha256/"+desc.Digest.Encoded(), desc.Digest.String())
		if err != nil {
			return nil, err
		}
		var m ocispec.Manifest
		if err := json.Unmarshal(data, &m); err != nil || desc.MediaType != ocispec.MediaTypeImageManifest || m.MediaType != desc.MediaType {
			return nil, fmt.Errorf("manifest %s (%s): %v", desc.Digest, desc.MediaType, err)
		}
		config, err := blob(files, "blobs/sha256/"+m.Config.Digest.Encoded(), m.Config.Digest.String())
		if err != nil {
			return nil, err
		}
		for _, l := range m.Layers {
			if _, err := blob(files, "blobs/sha256/"+l.Digest.Encoded(), l.Digest.String()); err != nil {
				return nil, err
			}
		}
		labels, err := labelsOf(config)
		if err != nil {
			return nil, err
		}
		name, ok := strings.CutPrefix(desc.Annotations["io.containerd.image.name"], "docker.io/library/")
		if !ok {
			return nil, fmt.Errorf("manifest %s: no docker.io/library/ name in %v", desc.Digest, desc.Annotations)
		}
		out[name] = fakeImage{id: desc.Digest.String(), labels: labels}
	}
	return out, nil
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
		f.images = map[string]fakeImage{}
	}
	if f.volumes == nil {
		f.volumes = map[string]volume.Volume{}
	}
	return &Client{api: f, timeout: time.Second, log: newFakeClient(&fakeAPI{}).log, leaves: leaveGate{decided: true}}
}

func TestEnsureHolderImage(t *testing.T) {
	want, err := BuildHolderImage("inst", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{LabelInstance: "inst", LabelRole: RoleHelperImage}
	linux := system.Info{OSType: "linux", Architecture: "x86_64"}
	tests := []struct {
		name       string
		info       system.Info
		containerd bool // the daemon's image store
		images     map[string]fakeImage
		stream     string
		loadAs     string
		wantLoads  int
		wantIs     error
		wantErr    string
	}{
		{name: "absent: loaded", info: linux, wantLoads: 1},
		{name: "present: nothing loaded", info: linux, images: map[string]fakeImage{want.Ref: {want.ID, ours}}},
		{name: "containerd store, absent: loaded under the manifest digest", info: linux, containerd: true, wantLoads: 1},
		{name: "containerd store, present: nothing loaded", info: linux, containerd: true,
			images: map[string]fakeImage{want.Ref: {want.ManifestDigest, ours}}},
		{name: "daemon reports a GOARCH", info: system.Info{OSType: "linux", Architecture: "amd64"}, wantLoads: 1},
		{name: "arm64 daemon", info: system.Info{OSType: "linux", Architecture: "aarch64"}, wantLoads: 1},
		{name: "arm64 daemon, containerd store", info: system.Info{OSType: "linux", Architecture: "aarch64"}, containerd: true, wantLoads: 1},
		{name: "windows daemon", info: system.Info{OSType: "windows", Architecture: "x86_64"},
			wantErr: "the Docker daemon runs windows/amd64 containers; dockctl's pod holder exists for linux/amd64, linux/arm64 only"},
		{name: "unsupported architecture", info: system.Info{OSType: "linux", Architecture: "s390x"},
			wantErr: "holder image for the daemon's linux/s390x: no holder binary for linux/s390x"},
		{name: "tag taken by another image", info: linux, images: map[string]fakeImage{want.Ref: {"sha256:0123", ours}},
			wantIs: ErrConflict, wantErr: "names image sha256:0123, not dockctl's " + want.ID + " (or, on the containerd image store, " + want.ManifestDigest + ")"},
		{name: "tag names our ID with other labels", info: linux,
			images: map[string]fakeImage{want.Ref: {want.ID, map[string]string{LabelInstance: "other", LabelRole: RoleHelperImage}}},
			wantIs: ErrConflict, wantErr: `with labels io.dockctl.instance="other" io.dockctl.role="helper-image", not dockctl's instance "inst"`},
		{name: "tag names our manifest digest without labels", info: linux, containerd: true,
			images: map[string]fakeImage{want.Ref: {want.ManifestDigest, nil}},
			wantIs: ErrConflict, wantErr: `with labels io.dockctl.instance="" io.dockctl.role=""`},
		{name: "load fails in the stream", info: linux, stream: `{"errorDetail":{"message":"no space left on device"},"error":"no space left on device"}`,
			wantLoads: 1, wantErr: "no space left on device"},
		{name: "loaded under another ID", info: linux, loadAs: "sha256:fff", wantLoads: 1, wantIs: ErrConflict,
			wantErr: "names image sha256:fff, not dockctl's"},
		{name: "containerd store, loaded under another ID", info: linux, containerd: true, loadAs: "sha256:fff", wantLoads: 1,
			wantIs: ErrConflict, wantErr: "names image sha256:fff, not dockctl's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &objectsAPI{info: tt.info, images: tt.images, containerd: tt.containerd, loadStream: tt.stream, loadAs: tt.loadAs}
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
			img, _ := BuildHolderImage("inst", goarchOf(tt.info.Architecture))
			wantID := img.ID
			if tt.containerd {
				wantID = img.ManifestDigest
			}
			if ref != img.Ref || f.images[ref].id != wantID || !reflect.DeepEqual(f.images[ref].labels, ours) {
				t.Errorf("ref %s (daemon: %+v), want %s with ID %s and labels %v", ref, f.images[ref], img.Ref, wantID, ours)
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
		LabelInstance: "inst", LabelDeployment: "web", LabelNamespace: "default", LabelTemplateHash: "abc123", LabelRole: RoleEmptyDir,
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
