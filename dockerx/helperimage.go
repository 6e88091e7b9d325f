package dockerx

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// HelperRepository is the repository of the Service helpers' image; each
// instance has its own tag (its image carries the instance's label).
const HelperRepository = "dockctl-helper"

// WithHelperBinary makes EnsureHelperImage package the executable at path
// instead of the running one, e.g. a dockctl built for the daemon's
// architecture, or, in tests, one built with CGO_ENABLED=0 (the test
// binary itself is not dockctl).
func WithHelperBinary(path string) Option { return func(c *Client) { c.helperBinary = path } }

// selfExe is the running executable on Linux: what the process runs even
// if its file has since been replaced (an upgrade in place), which
// os.Executable's path would name instead.
const selfExe = "/proc/self/exe"

// helperBinaryPath is the executable EnsureHelperImage packages.
func (c *Client) helperBinaryPath() (string, error) {
	if c.helperBinary != "" {
		return c.helperBinary, nil
	}
	if _, err := os.Stat(selfExe); err == nil {
		return selfExe, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("helper image: find dockctl's own executable: %w", err)
	}
	return p, nil
}

// BuildHelperImage returns the helper image of instance on linux/goarch:
// one layer holding bin, dockctl's executable, at helperapi.Binary (mode
// 0755, owned by root) and the empty directory of helperapi.StateFile
// (0755), a config without entrypoint (each helper names its command),
// labelled io.dockctl.instance=instance and io.dockctl.role=helper-image,
// tagged HelperRepository:<instance>-<first 12 hex of the layer's
// digest>. bin must be a static ELF executable of linux/goarch
// (CheckHelperBinary): the image is FROM scratch. It is pure: the same
// arguments always give the same bytes.
func BuildHelperImage(instance, goarch string, bin []byte) (ImageArchive, error) {
	if err := CheckHelperBinary(bin, goarch); err != nil {
		return ImageArchive{}, err
	}
	return buildImage(helperImageSpec(instance, goarch, executable{data: bin}))
}

// helperImageSpec is BuildHelperImage's image of exe.
func helperImageSpec(instance, goarch string, exe executable) imageSpec {
	return imageSpec{
		what: "helper image", repository: HelperRepository, instance: instance, goarch: goarch,
		layer:      binaryLayer(exe),
		createdBy:  "dockctl: Service helpers (dockctl's own binary)",
		tagByLayer: true,
		stream:     exe.path != "",
	}
}

// executable is dockctl's executable as a layer holds it: its bytes, or
// the file at path, of size bytes, read each time the layer is written
// (docs/design.md §10: the image of the running executable is streamed
// from its file, never held in memory).
type executable struct {
	data []byte
	path string
	size int64
}

// openExecutable checks the executable file at path as CheckHelperBinary
// checks bytes, reading only its ELF headers, and returns it as a layer's
// content. what names the image, for messages: CheckHelperBinary's name
// the helper image, and another image's name comes first, as in
// BuildControllerImage's.
func openExecutable(path, what, goarch string) (executable, error) {
	f, err := os.Open(path)
	if err != nil {
		return executable{}, fmt.Errorf("%s: read dockctl's executable: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return executable{}, fmt.Errorf("%s: read dockctl's executable: %w", what, err)
	}
	if err := checkHelperExecutable(f, goarch); err != nil {
		if what != "helper image" {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return executable{}, fmt.Errorf("%w (executable %s)", err, path)
	}
	return executable{path: path, size: st.Size()}, nil
}

// writeTo copies the executable to w: a file must still have the size it
// had when it was opened.
func (e executable) writeTo(w io.Writer) error {
	f, err := os.Open(e.path)
	if err != nil {
		return fmt.Errorf("read dockctl's executable: %w", err)
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, e.size))
	if err != nil {
		return fmt.Errorf("read dockctl's executable %s: %w", e.path, err)
	}
	if n != e.size {
		return fmt.Errorf("read dockctl's executable %s: %d bytes, it had %d when it was hashed", e.path, n, e.size)
	}
	return nil
}

// binaryLayer is the one layer of the images that run dockctl's own
// executable exe (the helpers' and the controller's, which so share it in
// the daemon's store): exe at helperapi.Binary and the directory of
// helperapi.StateFile.
func binaryLayer(exe executable) []tarEntry {
	runDir := strings.TrimPrefix(path.Dir(helperapi.StateFile), "/")
	bin := tarEntry{name: strings.TrimPrefix(helperapi.Binary, "/"), mode: 0o755, data: exe.data}
	if exe.path != "" {
		bin.write, bin.size = exe.writeTo, exe.size
	}
	return []tarEntry{
		bin,
		{name: path.Dir(runDir) + "/", mode: 0o755, dir: true},
		{name: runDir + "/", mode: 0o755, dir: true},
	}
}

// elfArch maps an ELF machine (with its class and byte order) to a GOARCH.
func elfArch(f *elf.File) string {
	le := f.ByteOrder == binary.LittleEndian
	is64 := f.Class == elf.ELFCLASS64
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_386:
		return "386"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_S390:
		return "s390x"
	case elf.EM_RISCV:
		if is64 {
			return "riscv64"
		}
	case elf.EM_LOONGARCH:
		return "loong64"
	case elf.EM_PPC64:
		if le {
			return "ppc64le"
		}
		return "ppc64"
	case elf.EM_MIPS:
		switch {
		case is64 && le:
			return "mips64le"
		case is64:
			return "mips64"
		case le:
			return "mipsle"
		}
		return "mips"
	}
	return fmt.Sprintf("unknown (ELF machine %v, %v)", f.Machine, f.Class)
}

// CheckHelperBinary returns nil when bin can run as a helper in an image
// FROM scratch on a linux/goarch daemon: a Linux ELF executable of that
// architecture, statically linked (no program interpreter: there is no C
// library in the image, so a binary built with cgo cannot start there).
func CheckHelperBinary(bin []byte, goarch string) error {
	return checkHelperExecutable(bytes.NewReader(bin), goarch)
}

// checkHelperExecutable is CheckHelperBinary of an executable read at
// will: only its ELF headers (and a program interpreter's name) are read.
func checkHelperExecutable(r io.ReaderAt, goarch string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("helper image: dockctl's executable is not an ELF file (%v): helpers run on linux only", err)
	}
	defer f.Close()
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return fmt.Errorf("helper image: dockctl's executable is built for %v, not linux", f.OSABI)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("helper image: dockctl's executable is an ELF %v, not an executable", f.Type)
	}
	if arch := elfArch(f); arch != goarch {
		return fmt.Errorf("helper image: dockctl's executable is for linux/%s, the Docker daemon runs linux/%s containers: use a dockctl built for linux/%s (GOOS=linux GOARCH=%s CGO_ENABLED=0)",
			arch, goarch, goarch, goarch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp := ""
			if b, err := readAll(p); err == nil {
				interp = " " + strings.TrimRight(string(b), "\x00")
			}
			return fmt.Errorf("helper image: dockctl's executable is dynamically linked (it needs the program interpreter%s, built with cgo): helpers run it in an image without a C library; build dockctl with CGO_ENABLED=0", interp)
		}
	}
	return nil
}

// readAll reads a program segment's file contents.
func readAll(p *elf.Prog) ([]byte, error) {
	if p.Filesz > 4096 {
		return nil, errors.New("segment too large")
	}
	b := make([]byte, p.Filesz)
	_, err := p.ReadAt(b, 0)
	return b, err
}

// EnsureHelperImage makes the instance's helper image present and returns
// its reference (HelperRepository:<instance>-<12 hex>), for
// HelperRequest.Image. The image packages dockctl's own executable (the
// running one, or WithHelperBinary's), which must be a static ELF of the
// daemon's linux/GOARCH, else a clear error says how to build one. The
// daemon's platform is read as EnsureHolderImage reads it; the executable
// is read and hashed once per client, and read again only when the image
// must be loaded, as the archive streams to the daemon: it is never held
// in memory. A tag that names another image is not adopted: an error
// wrapping ErrConflict.
func (c *Client) EnsureHelperImage(ctx context.Context, instance string) (string, error) {
	p, err := c.lockPlatform(ctx, "helper image")
	if err != nil {
		return "", err
	}
	defer p.mu.Unlock()
	if p.os != "linux" {
		return "", fmt.Errorf("helper image: the Docker daemon runs %s/%s containers; dockctl's helpers run on linux only", p.os, p.goarch)
	}
	exe, err := c.helperBinaryPath()
	if err != nil {
		return "", err
	}
	build := func() (ImageArchive, error) {
		bin, err := openExecutable(exe, "helper image", p.goarch)
		if err != nil {
			return ImageArchive{}, err
		}
		img, err := buildImage(helperImageSpec(instance, p.goarch, bin))
		if err != nil {
			return ImageArchive{}, fmt.Errorf("%w (executable %s)", err, exe)
		}
		return img, nil
	}
	key := instance + "\x00" + p.goarch + "\x00" + exe
	img := p.helper
	if p.from != key {
		if img, err = build(); err != nil {
			return "", err
		}
	}
	img, err = c.ensureLoaded(ctx, "helper image", instance, img, func() (ImageArchive, error) {
		if img.hasArchive() {
			return img, nil // just hashed: streamed from the file again
		}
		return build()
	})
	if err != nil {
		p.from = "" // the executable may have changed: read it again next time
		return "", err
	}
	p.helper, p.from = img.withoutArchive(), key // the file is read again for a load
	return img.Ref, nil
}
