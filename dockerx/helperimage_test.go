package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// helperBinaries builds testdata/helperbin into the test's directory:
// static (CGO_ENABLED=0) and, when a C compiler exists, with cgo (else
// noCgo says why not). Go's build cache makes every build after the
// first a link.
func helperBinaries(t *testing.T) (static, dynamic []byte, staticPath, noCgo string) {
	t.Helper()
	dir := t.TempDir()
	build := func(cgo string) ([]byte, string) {
		out := filepath.Join(dir, "helperbin-cgo"+cgo)
		cmd := exec.Command("go", "build", "-o", out, "./testdata/helperbin")
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build testdata/helperbin with CGO_ENABLED=%s: %v\n%s", cgo, err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return data, out
	}
	static, staticPath = build("0")
	cc, err := exec.Command("go", "env", "CC").Output()
	if _, lerr := exec.LookPath(strings.TrimSpace(string(cc))); err != nil || lerr != nil {
		return static, nil, staticPath, "no C compiler (go env CC = " + strings.TrimSpace(string(cc)) + "): no cgo binary to check"
	}
	dynamic, _ = build("1")
	return static, dynamic, staticPath, ""
}

// patched returns a copy of bin with its bytes at off replaced.
func patched(bin []byte, off int, b ...byte) []byte {
	out := bytes.Clone(bin)
	copy(out[off:], b)
	return out
}

// Offsets in the ELF header (ELF64, little endian).
const (
	elfOSABI   = 7
	elfType    = 16
	elfMachine = 18
)

func TestCheckHelperBinary(t *testing.T) {
	static, dynamic, _, noCgo := helperBinaries(t)
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the patched rows assume an x86-64 or arm64 host, this is %s", runtime.GOARCH)
	}
	other, otherMachine := "arm64", []byte{0xb7, 0} // EM_AARCH64
	if runtime.GOARCH == "arm64" {
		other, otherMachine = "amd64", []byte{0x3e, 0} // EM_X86_64
	}
	for _, tt := range []struct {
		name   string
		bin    []byte
		goarch string
		skip   string
		want   string // "" accepted
	}{
		{name: "static, the daemon's architecture", bin: static, goarch: runtime.GOARCH},
		{name: "static, another architecture than the daemon's", bin: static, goarch: other,
			want: "dockctl's executable is for linux/" + runtime.GOARCH + ", the Docker daemon runs linux/" + other + " containers: use a dockctl built for linux/" + other + " (GOOS=linux GOARCH=" + other + " CGO_ENABLED=0)"},
		{name: "built for another architecture", bin: patched(static, elfMachine, otherMachine...), goarch: runtime.GOARCH,
			want: "is for linux/" + other + ", the Docker daemon runs linux/" + runtime.GOARCH},
		{name: "built with cgo: dynamically linked", bin: dynamic, goarch: runtime.GOARCH, skip: noCgo,
			want: "dockctl's executable is dynamically linked (it needs the program interpreter /lib"},
		{name: "not an ELF file", bin: []byte("#!/bin/sh\necho dockctl\n"), goarch: runtime.GOARCH, want: "is not an ELF file"},
		{name: "an object file", bin: patched(static, elfType, 1, 0), goarch: runtime.GOARCH, want: "is an ELF ET_REL, not an executable"},
		{name: "a FreeBSD executable", bin: patched(static, elfOSABI, 9), goarch: runtime.GOARCH, want: "is built for ELFOSABI_FREEBSD, not linux"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			err := CheckHelperBinary(tt.bin, tt.goarch)
			if tt.want == "" {
				if err != nil {
					t.Errorf("CheckHelperBinary = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckHelperBinary = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The helper image: one layer with the executable at /dockctl and the
// state directory, no entrypoint, the instance's and role labels, a tag
// named after the layer; the same executable always gives the same bytes.
func TestBuildHelperImage(t *testing.T) {
	static, dynamic, _, noCgo := helperBinaries(t)
	img, err := BuildHelperImage("inst", runtime.GOARCH, static)
	if err != nil {
		t.Fatal(err)
	}
	a := readHolderArchive(t, img.Tar)
	config, layer := a.files[a.docker[0].Config], a.files[a.docker[0].Layers[0]]
	if want := "dockctl-helper:inst-" + sha(layer)[:12]; img.Ref != want || !reflect.DeepEqual(a.docker[0].RepoTags, []string{want}) {
		t.Errorf("Ref %s, tags %v; want %s (the layer's digest)", img.Ref, a.docker[0].RepoTags, want)
	}
	if img.ID != "sha256:"+sha(config) || img.ManifestDigest != a.index.Manifests[0].Digest.String() {
		t.Errorf("ID %s manifest %s", img.ID, img.ManifestDigest)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Entrypoint != nil || cfg.Config.Cmd != nil || cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH ||
		!reflect.DeepEqual(cfg.Config.Labels, map[string]string{LabelInstance: "inst", LabelRole: RoleHelperImage}) ||
		!cfg.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("config %s", config)
	}
	type entry struct {
		name string
		kind byte
		mode int64
	}
	var got []entry
	for _, f := range readTar(t, layer) {
		got = append(got, entry{f.hdr.Name, f.hdr.Typeflag, f.hdr.Mode})
		if f.hdr.Uid != 0 || f.hdr.Gid != 0 || !f.hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: uid %d gid %d mtime %v, want root and epoch", f.hdr.Name, f.hdr.Uid, f.hdr.Gid, f.hdr.ModTime)
		}
		if f.hdr.Name == "dockctl" && !bytes.Equal(f.data, static) {
			t.Error("/dockctl is not the executable given")
		}
	}
	want := []entry{{"dockctl", tar.TypeReg, 0o755}, {"run/", tar.TypeDir, 0o755}, {"run/dockctl/", tar.TypeDir, 0o755}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer %v, want %v", got, want)
	}

	// Deterministic; the executable and the instance decide the tag.
	again, err := BuildHelperImage("inst", runtime.GOARCH, static)
	if err != nil || !bytes.Equal(again.Tar, img.Tar) || again.Ref != img.Ref || again.ID != img.ID {
		t.Errorf("a second build differs: %s %s, %v", again.Ref, again.ID, err)
	}
	other, err := BuildHelperImage("other", runtime.GOARCH, static)
	if err != nil || other.Ref != "dockctl-helper:other-"+sha(layer)[:12] || other.ID == img.ID {
		t.Errorf("another instance: %s %s, %v", other.Ref, other.ID, err)
	}
	changed := append(bytes.Clone(static), 0) // trailing bytes: still a valid ELF
	if c, err := BuildHelperImage("inst", runtime.GOARCH, changed); err != nil || c.Ref == img.Ref || c.ID == img.ID {
		t.Errorf("another executable: %s, %v; want another tag than %s", c.Ref, err, img.Ref)
	}

	// Refused: what cannot run FROM scratch on the daemon.
	if noCgo == "" {
		if _, err := BuildHelperImage("inst", runtime.GOARCH, dynamic); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
			t.Errorf("cgo executable: %v", err)
		}
	}
	if _, err := BuildHelperImage("a/b", runtime.GOARCH, static); err == nil || !strings.Contains(err.Error(), "is not a valid Docker tag") {
		t.Errorf("instance a/b: %v", err)
	}
}

func TestEnsureHelperImage(t *testing.T) {
	static, _, staticPath, _ := helperBinaries(t)
	want, err := BuildHelperImage("inst", runtime.GOARCH, static)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{LabelInstance: "inst", LabelRole: RoleHelperImage}
	linux := system.Info{OSType: "linux", Architecture: runtime.GOARCH}
	otherArch := "arm64"
	if runtime.GOARCH == "arm64" {
		otherArch = "amd64"
	}
	for _, tt := range []struct {
		name       string
		info       system.Info
		binary     string // WithHelperBinary; "" the test's static helperbin
		containerd bool
		images     map[string]fakeImage
		wantLoads  int
		wantIs     error
		wantErr    string
	}{
		{name: "absent: loaded", info: linux, wantLoads: 1},
		{name: "containerd store, absent: loaded", info: linux, containerd: true, wantLoads: 1},
		{name: "present: nothing loaded", info: linux, images: map[string]fakeImage{want.Ref: {want.ID, ours}}},
		{name: "tag taken by another image", info: linux, images: map[string]fakeImage{want.Ref: {"sha256:0123", ours}},
			wantIs: ErrConflict, wantErr: "helper image: tag " + want.Ref + " names image sha256:0123, not dockctl's"},
		{name: "windows daemon", info: system.Info{OSType: "windows", Architecture: "x86_64"},
			wantErr: "the Docker daemon runs windows/amd64 containers; dockctl's helpers run on linux only"},
		{name: "daemon of another architecture", info: system.Info{OSType: "linux", Architecture: otherArch},
			wantErr: "the Docker daemon runs linux/" + otherArch + " containers"},
		{name: "no such executable", info: linux, binary: filepath.Join(t.TempDir(), "missing"), wantErr: "helper image: read dockctl's executable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &objectsAPI{info: tt.info, images: tt.images, containerd: tt.containerd}
			c := newObjectsClient(f)
			bin := tt.binary
			if bin == "" {
				bin = staticPath
			}
			WithHelperBinary(bin)(c)
			ref, err := c.EnsureHelperImage(context.Background(), "inst")
			if f.loads != tt.wantLoads {
				t.Errorf("%d loads, want %d", f.loads, tt.wantLoads)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
					t.Fatalf("EnsureHelperImage = %q, %v; want an error containing %q (is %v)", ref, err, tt.wantErr, tt.wantIs)
				}
				return
			}
			wantID := want.ID
			if tt.containerd {
				wantID = want.ManifestDigest
			}
			if err != nil || ref != want.Ref || f.images[ref].id != wantID || !reflect.DeepEqual(f.images[ref].labels, ours) {
				t.Fatalf("EnsureHelperImage = %s, %v (daemon: %+v); want %s with ID %s", ref, err, f.images[ref], want.Ref, wantID)
			}
			// A second call asks the daemon only whether the tag is
			// there: the executable is not read again (it is gone).
			moved := filepath.Join(t.TempDir(), "gone")
			if err := os.Link(bin, moved); err != nil {
				t.Fatal(err)
			}
			WithHelperBinary(moved)(c)
			if again, err := c.EnsureHelperImage(context.Background(), "inst"); err != nil || again != ref {
				t.Fatalf("second call = %s, %v", again, err)
			}
			if err := os.Remove(moved); err != nil {
				t.Fatal(err)
			}
			if again, err := c.EnsureHelperImage(context.Background(), "inst"); err != nil || again != ref || f.loads != tt.wantLoads || f.infoCalls != 1 {
				t.Errorf("third call, executable gone = %s, %v; %d loads, %d Info calls; want %s, %d loads, 1 Info call",
					again, err, f.loads, f.infoCalls, ref, tt.wantLoads)
			}
		})
	}
}

// tinyELF is a made-up static executable of linux/amd64: an ELF64 header
// (no program or section headers) and n bytes after it. Unlike a built
// binary it does not change with the Go toolchain, so the archives made
// of it can be pinned.
func tinyELF(n int) []byte {
	b := make([]byte, 64+n)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.LittleEndian.PutUint16(b[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(b[18:], uint16(elf.EM_X86_64))
	binary.LittleEndian.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	binary.LittleEndian.PutUint16(b[52:], 64)
	for i := range n {
		b[64+i] = byte(i * 7)
	}
	return b
}

// The images of dockctl's own executable keep their bytes, and so their
// IDs and tags, from one dockctl version to the next: a changed byte
// would replace every running helper on upgrade. The figures are those of
// the archives dockctl made before it streamed them (buildImage's
// in-memory archive).
func TestBinaryImagesKeepTheirBytes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		build func(instance, goarch string, bin []byte) (ImageArchive, error)
		size  int // of the executable after its header
		want  string
	}{
		{name: "helper image", build: BuildHelperImage, size: 1000, want: "ID sha256:25e3dfeec32ae22c86058e242f629781d79502704d6d2c46589e2033ebadb1e1 ManifestDigest sha256:eeb5b6ad8b03be376c76ac09452346cc2b0fe10549ca256d4ce7aa9203875917 Ref dockctl-helper:default-daa160bc94be archive 11776 bytes sha256:a94ec5b2b68c0cd27112ebf6b93e1143be0f3856aee457afe2dacc60a2ec44c9"},
		{name: "helper image, executable of whole tar blocks", build: BuildHelperImage, size: 1024 - 64, want: "ID sha256:580c3173fac3c8b0c59773f18e7d3bc6d2f39886417fc40921b59b8a55610cb3 ManifestDigest sha256:1edfcc747d26aeb65dc4d654a2b8a502dfa3a8736a3d86005ddf83ec37e1fc5a Ref dockctl-helper:default-6648aff43863 archive 11264 bytes sha256:5d5276c5a81d999dd46890234b0078b1ae6999d05e54a13c196d960f2afd2e9c"},
		{name: "controller image", build: BuildControllerImage, size: 1000, want: "ID sha256:6b87f2fd6d207908043c0223e557cf849b0f721cd4b351ed0b571309b58c91c7 ManifestDigest sha256:bbb794b2da4afcdece444dc681e25f2a1ceb4bd068ee151398aef512df2bc413 Ref dockctl:default-daa160bc94be archive 11776 bytes sha256:2f0c11da4bdf38f113422929d474b5cd06c1dd98635c7445f17fc1fbe2311f52"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			img, err := tt.build("default", "amd64", tinyELF(tt.size))
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("ID %s ManifestDigest %s Ref %s archive %d bytes sha256:%s", img.ID, img.ManifestDigest, img.Ref, len(img.Tar), sha(img.Tar))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// loadDiscarding is a daemon whose ImageLoad reads the archive to its end
// and keeps nothing of it: it tags ref as image, as a load of the archive
// would. The benchmarks so count dockctl's memory only.
type loadDiscarding struct {
	*objectsAPI
	ref   string
	image fakeImage
	bytes int64 // of the last archive
}

func (f *loadDiscarding) ImageLoad(_ context.Context, in io.Reader, _ ...client.ImageLoadOption) (image.LoadResponse, error) {
	n, err := io.Copy(io.Discard, in)
	if err != nil {
		return image.LoadResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bytes = n
	f.loads++
	f.images[f.ref] = f.image
	return image.LoadResponse{Body: io.NopCloser(strings.NewReader(`{"stream":"Loaded image: x\n"}` + "\n")), JSON: true}, nil
}

// BenchmarkEnsureHelperImage: what EnsureHelperImage allocates to package
// dockctl's real executable (built static into the benchmark's directory)
// and load it into a daemon that has no helper image yet.
func BenchmarkEnsureHelperImage(b *testing.B) {
	exe := filepath.Join(b.TempDir(), "dockctl")
	cmd := exec.Command("go", "build", "-o", exe, "../cmd/dockctl")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build dockctl: %v\n%s", err, msg)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		b.Fatal(err)
	}
	want, err := BuildHelperImage("inst", runtime.GOARCH, bin)
	if err != nil {
		b.Fatal(err)
	}
	bin, want.Tar = nil, nil
	runtime.GC()
	b.ReportAllocs()
	var f *loadDiscarding
	for b.Loop() {
		f = &loadDiscarding{objectsAPI: &objectsAPI{info: system.Info{OSType: "linux", Architecture: runtime.GOARCH}},
			ref: want.Ref, image: fakeImage{want.ID, map[string]string{LabelInstance: "inst", LabelRole: RoleHelperImage}}}
		c := newObjectsClient(f.objectsAPI)
		c.api = f
		WithHelperBinary(exe)(c)
		if ref, err := c.EnsureHelperImage(context.Background(), "inst"); err != nil || ref != want.Ref || f.loads != 1 {
			b.Fatalf("EnsureHelperImage = %s, %v after %d loads; want %s loaded once", ref, err, f.loads, want.Ref)
		}
	}
	b.ReportMetric(float64(f.bytes)/(1<<20), "archive-MiB")
}

// readArchive reads img's archive as a load would.
func readArchive(img ImageArchive) ([]byte, error) {
	r := img.archive()
	b, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// An image streamed from the executable's file is, byte for byte, the
// image built in memory of its bytes: the same IDs, the same tag, the same
// archive each time it is loaded. Streaming so replaces no running helper.
func TestStreamedImageIsTheInMemoryImage(t *testing.T) {
	_, _, staticPath, _ := helperBinaries(t)
	tiny := filepath.Join(t.TempDir(), "tiny")
	if err := os.WriteFile(tiny, tinyELF(1000), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		path     string
		goarch   string
		inMemory func(instance, goarch string, bin []byte) (ImageArchive, error)
		streamed func(instance, goarch string, exe executable) imageSpec
	}{
		{name: "helper image of a built executable", path: staticPath, goarch: runtime.GOARCH, inMemory: BuildHelperImage, streamed: helperImageSpec},
		{name: "controller image of a built executable", path: staticPath, goarch: runtime.GOARCH, inMemory: BuildControllerImage, streamed: controllerImageSpec},
		{name: "helper image of a made-up executable", path: tiny, goarch: "amd64", inMemory: BuildHelperImage, streamed: helperImageSpec},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tt.inMemory("inst", tt.goarch, bin)
			if err != nil {
				t.Fatal(err)
			}
			exe, err := openExecutable(tt.path, "helper image", tt.goarch)
			if err != nil {
				t.Fatal(err)
			}
			img, err := buildImage(tt.streamed("inst", tt.goarch, exe))
			if err != nil {
				t.Fatal(err)
			}
			if img.Tar != nil || img.ID != want.ID || img.ManifestDigest != want.ManifestDigest || img.Ref != want.Ref || img.role != want.role {
				t.Fatalf("streamed %s %s %s (Tar %d bytes), in memory %s %s %s", img.Ref, img.ID, img.ManifestDigest, len(img.Tar), want.Ref, want.ID, want.ManifestDigest)
			}
			for load := 1; load <= 2; load++ { // each load reads the file again
				got, err := readArchive(img)
				if err != nil || !bytes.Equal(got, want.Tar) {
					t.Errorf("load %d: %d bytes (sha256:%s), %v; want the in-memory archive, %d bytes (sha256:%s)",
						load, len(got), sha(got), err, len(want.Tar), sha(want.Tar))
				}
			}
		})
	}
}

// A streamed archive is written from the file as it is when loaded: a
// file changed since it was hashed fails the load, rather than load other
// content under the tag of the hashed one.
func TestStreamedImageRefusesAChangedExecutable(t *testing.T) {
	bin := tinyELF(3000)
	for _, tt := range []struct {
		name   string
		change func(path string) error
		want   string // "" the archive is the one hashed
	}{
		{name: "unchanged", change: func(string) error { return nil }},
		{name: "other bytes of the same size", change: func(p string) error { return os.WriteFile(p, patched(bin, 2000, 1, 2, 3), 0o755) },
			want: "helper image layer: its content changed since it was read (digest sha256:"},
		{name: "shorter", change: func(p string) error { return os.Truncate(p, 1000) },
			want: "helper image layer: read dockctl's executable " /* path */},
		{name: "longer: the bytes hashed are loaded", change: func(p string) error { return os.WriteFile(p, append(bytes.Clone(bin), 9, 9), 0o755) }},
		{name: "removed", change: os.Remove, want: "helper image layer: read dockctl's executable: open "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dockctl")
			if err := os.WriteFile(path, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			want, err := BuildHelperImage("inst", "amd64", bin)
			if err != nil {
				t.Fatal(err)
			}
			exe, err := openExecutable(path, "helper image", "amd64")
			if err != nil {
				t.Fatal(err)
			}
			img, err := buildImage(helperImageSpec("inst", "amd64", exe))
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.change(path); err != nil {
				t.Fatal(err)
			}
			got, err := readArchive(img)
			if tt.want == "" {
				if err != nil || !bytes.Equal(got, want.Tar) {
					t.Errorf("archive of %d bytes, %v; want the hashed one", len(got), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("archive of %d bytes, %v; want an error containing %q", len(got), err, tt.want)
			}
		})
	}
}

// A load that stops reading (the daemon refused the archive) stops the
// writer too: closing the reader returns once the writer has stopped.
func TestStreamedArchiveStopsWithItsReader(t *testing.T) {
	_, _, staticPath, _ := helperBinaries(t)
	exe, err := openExecutable(staticPath, "helper image", runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	img, err := buildImage(helperImageSpec("inst", runtime.GOARCH, exe))
	if err != nil {
		t.Fatal(err)
	}
	r := img.archive()
	if _, err := io.ReadFull(r, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// The executable's file is checked as CheckHelperBinary checks its bytes,
// with the same messages.
func TestOpenExecutable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tiny, arm := write("tiny", tinyELF(10)), write("arm", patched(tinyELF(10), elfMachine, 0xb7, 0))
	script := write("script", []byte("#!/bin/sh\n"))
	for _, tt := range []struct {
		name, path, what, want string
	}{
		{name: "a static executable of the daemon's architecture", path: tiny, what: "helper image"},
		{name: "another architecture", path: arm, what: "helper image",
			want: "helper image: dockctl's executable is for linux/arm64, the Docker daemon runs linux/amd64 containers: use a dockctl built for linux/amd64 (GOOS=linux GOARCH=amd64 CGO_ENABLED=0) (executable " + arm + ")"},
		{name: "another architecture, for the controller image", path: arm, what: "controller image",
			want: "controller image: helper image: dockctl's executable is for linux/arm64"},
		{name: "not an ELF file", path: script, what: "helper image", want: "helper image: dockctl's executable is not an ELF file"},
		{name: "no such file", path: filepath.Join(dir, "missing"), what: "controller image", want: "controller image: read dockctl's executable: open "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exe, err := openExecutable(tt.path, tt.what, "amd64")
			if tt.want == "" {
				if err != nil || exe.path != tt.path || exe.size != 64+10 || exe.data != nil {
					t.Errorf("openExecutable = %+v, %v; want %s of 74 bytes", exe, err, tt.path)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("openExecutable = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
