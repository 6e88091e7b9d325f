package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/dockctl/dockctl/internal/holder"
)

// HolderRepository is the repository of the holder images; each instance
// has its own tag (its image carries the instance's label).
const HolderRepository = "dockctl-holder"

// holderPath is where the holder executable lives in its image.
const holderPath = "/holder"

// epoch is every timestamp of the holder image: fixed, so that its bytes,
// and so its ID, never change.
var epoch = time.Unix(0, 0).UTC()

// ImageArchive is a helper image of one instance for one architecture
// (the pod holder's, BuildHolderImage, or the Service helpers',
// BuildHelperImage), as `docker save` of Docker 25 and newer writes it:
// one tar that both image stores load. It holds the docker-save files
// (manifest.json naming the config and the layer), read by Docker's
// classic image store, and an OCI image layout (oci-layout, index.json, an
// OCI image manifest), read by the containerd image store (the default of
// fresh installs since Docker Engine 29, and of Docker Desktop). The
// config and the layer are stored once, as blobs/sha256/<digest>, and
// named by both.
type ImageArchive struct {
	// ID is the image ID the classic image store gives it: "sha256:" and
	// the digest of its config JSON.
	ID string
	// ManifestDigest is the image ID the containerd image store gives it:
	// "sha256:" and the digest of its OCI image manifest, which names the
	// config by its digest, so it too is fixed by the content.
	ManifestDigest string
	// Ref is its tag: <repository>:<instance>-<12 hex of a digest of its
	// content>. A tag names one content forever, so loading never moves a
	// tag and never leaves an image dangling. It is derived from a digest
	// that either store yields the same.
	Ref string
	// Tar is the archive: blobs/sha256/{config, layer, manifest},
	// index.json, manifest.json, oci-layout. It is nil for an image of
	// dockctl's executable file (EnsureHelperImage,
	// EnsureControllerImage): that archive is tens of megabytes, so it is
	// never held in memory but written by write, reading the file again,
	// each time it is loaded (docs/design.md §10).
	Tar []byte
	// write writes the archive, the same bytes Tar holds when it is set.
	write func(io.Writer) error
	// role is its LabelRole value: RoleHelperImage, or
	// RoleControllerImage for the controller's image (install.go).
	role string
}

// hasArchive reports whether img can be loaded: it holds its archive, or
// the means to write it.
func (img ImageArchive) hasArchive() bool { return img.Tar != nil || img.write != nil }

// withoutArchive is img without its archive, to keep: what is kept does
// not hold the executable's bytes, nor a way to read a file that may have
// changed since.
func (img ImageArchive) withoutArchive() ImageArchive {
	img.Tar, img.write = nil, nil
	return img
}

// archive returns a reader of img's archive. A streamed archive is
// written into a pipe by a goroutine as the reader is read; Close stops
// it and waits for it, so nothing outlives the load, and an error writing
// it (the executable unreadable, or changed since it was hashed) is the
// reader's error, which fails the load.
func (img ImageArchive) archive() io.ReadCloser {
	if img.Tar != nil {
		return io.NopCloser(bytes.NewReader(img.Tar))
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(img.write(pw)) // nil: io.EOF for the reader
	}()
	return &pipeArchive{PipeReader: pr, done: done}
}

// pipeArchive is the reader of a streamed archive.
type pipeArchive struct {
	*io.PipeReader
	done chan struct{}
}

// Close stops the writer (its next write fails) and waits for it.
func (a *pipeArchive) Close() error {
	err := a.PipeReader.Close()
	<-a.done
	return err
}

// annotationImageName is the annotation of an index.json manifest that the
// containerd importer (and so `docker load` on the containerd image store)
// takes as the image's full name, e.g.
// docker.io/library/dockctl-holder:<tag>; `docker save` writes it with
// org.opencontainers.image.ref.name (the tag alone), as this archive does.
// Without it the importer would name the image after the ref name alone.
const annotationImageName = "io.containerd.image.name"

// dockerHubLibrary is the prefix a one-component repository name takes
// once normalized ("dockctl-holder" is docker.io/library/dockctl-holder).
const dockerHubLibrary = "docker.io/library/"

// dockerTag is the grammar of a Docker tag.
var dockerTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// BuildHolderImage returns the holder image for instance on linux/goarch.
// It is pure: the same arguments always give the same bytes. Its only layer
// holds holder.Binary(goarch) at /holder (mode 0555, owned by root); its
// config runs it as the entrypoint and carries the labels
// io.dockctl.instance=instance and io.dockctl.role=helper-image. Its tag
// is named after its config's digest.
func BuildHolderImage(instance, goarch string) (ImageArchive, error) {
	bin, err := holder.Binary(goarch)
	if err != nil {
		return ImageArchive{}, err
	}
	return buildImage(imageSpec{
		what: "holder image", repository: HolderRepository, instance: instance, goarch: goarch,
		layer:      []tarEntry{{name: strings.TrimPrefix(holderPath, "/"), mode: 0o555, data: bin}},
		entrypoint: []string{holderPath},
		createdBy:  "dockctl: pod holder (internal/holder)",
	})
}

// imageSpec is the content of a one-layer image of dockctl's own.
type imageSpec struct {
	what       string // for messages: "holder image"
	repository string
	instance   string
	goarch     string
	layer      []tarEntry
	entrypoint []string
	createdBy  string
	// tagByLayer names the tag after the layer's digest rather than the
	// config's.
	tagByLayer bool
	// role is the image's LabelRole; "" is RoleHelperImage.
	role string
	// stream leaves the archive unwritten (Tar nil): ImageArchive.write
	// writes it, reading the layer's files again, when it is loaded.
	stream bool
}

// buildImage assembles the archive of spec's image: its layer
// uncompressed, its config dated epoch and labelled with the instance and
// role helper-image. The same spec always gives the same bytes, streamed
// or not. The layer is written twice, never held whole: once into its
// digest, which names it, and again into the archive.
func buildImage(spec imageSpec) (ImageArchive, error) {
	fail := func(part string, err error) (ImageArchive, error) {
		return ImageArchive{}, fmt.Errorf("%s %s: %w", spec.what, part, err)
	}
	digester := digest.SHA256.Digester()
	counted := &countingWriter{w: digester.Hash()}
	if err := writeTar(counted, spec.layer); err != nil {
		return fail("layer", err)
	}
	// The layer is stored uncompressed: its digest is its diff ID.
	layerDigest, layerSize := digester.Digest(), counted.n
	role := spec.role
	if role == "" {
		role = RoleHelperImage
	}
	created := epoch
	config, err := json.Marshal(ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: spec.goarch, OS: "linux"},
		Config: ocispec.ImageConfig{
			Entrypoint: spec.entrypoint,
			Labels:     map[string]string{LabelInstance: spec.instance, LabelRole: role},
		},
		RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDigest}},
		History: []ocispec.History{{Created: &created, CreatedBy: spec.createdBy}},
	})
	if err != nil {
		return fail("config", err)
	}
	configDigest := digest.FromBytes(config)
	named := configDigest
	if spec.tagByLayer {
		named = layerDigest
	}
	tag := spec.instance + "-" + named.Encoded()[:12]
	if !dockerTag.MatchString(tag) {
		return ImageArchive{}, fmt.Errorf("%s for instance %q: %q is not a valid Docker tag", spec.what, spec.instance, tag)
	}
	ref := spec.repository + ":" + tag

	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: configDigest, Size: int64(len(config))},
		Layers:    []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageLayer, Digest: layerDigest, Size: layerSize}},
	})
	if err != nil {
		return fail("manifest", err)
	}
	manifestDigest := digest.FromBytes(manifest)
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{{
			MediaType: ocispec.MediaTypeImageManifest, Digest: manifestDigest, Size: int64(len(manifest)),
			Annotations: map[string]string{annotationImageName: dockerHubLibrary + ref, ocispec.AnnotationRefName: tag},
		}},
	})
	if err != nil {
		return fail("index", err)
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return fail("layout", err)
	}
	// The docker-save manifest names the OCI layout's blobs, as Docker 25's
	// `docker save` does: the classic store reads any path it is given.
	dockerManifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blobPath(configDigest), RepoTags: []string{ref}, Layers: []string{blobPath(layerDigest)}}})
	if err != nil {
		return fail("docker manifest", err)
	}
	// The layer's blob is the layer written again, checked against the
	// digest that names it: a file changed in between fails the load
	// rather than load content under another content's name.
	writeLayer := func(w io.Writer) error {
		again := digest.SHA256.Digester()
		if err := writeTar(io.MultiWriter(w, again.Hash()), spec.layer); err != nil {
			return fmt.Errorf("%s layer: %w", spec.what, err)
		}
		if got := again.Digest(); got != layerDigest {
			return fmt.Errorf("%s layer: its content changed since it was read (digest %s, was %s)", spec.what, got, layerDigest)
		}
		return nil
	}
	entries := []tarEntry{
		{name: ocispec.ImageBlobsDir + "/", mode: 0o755, dir: true},
		{name: ocispec.ImageBlobsDir + "/" + string(digest.SHA256) + "/", mode: 0o755, dir: true},
		{name: blobPath(configDigest), mode: 0o644, data: config},
		{name: blobPath(layerDigest), mode: 0o644, size: layerSize, write: writeLayer},
		{name: blobPath(manifestDigest), mode: 0o644, data: manifest},
		{name: ocispec.ImageIndexFile, mode: 0o644, data: index},
		{name: ocispec.ImageLayoutFile, mode: 0o644, data: layout},
		{name: "manifest.json", mode: 0o644, data: dockerManifest},
	}
	img := ImageArchive{ID: configDigest.String(), ManifestDigest: manifestDigest.String(), Ref: ref, role: role,
		write: func(w io.Writer) error { return writeTar(w, entries) }}
	if spec.stream {
		return img, nil
	}
	var archive bytes.Buffer
	if err := img.write(&archive); err != nil {
		return fail("archive", err)
	}
	img.Tar, img.write = archive.Bytes(), nil
	return img, nil
}

// blobPath is where an OCI image layout keeps the blob of digest d.
func blobPath(d digest.Digest) string {
	return ocispec.ImageBlobsDir + "/" + d.Algorithm().String() + "/" + d.Encoded()
}

type tarEntry struct {
	name string
	mode int64
	dir  bool
	data []byte
	// write, when set, writes the content instead of data: size bytes,
	// made or read only as the entry is written.
	write func(io.Writer) error
	size  int64
}

// writeTar writes entries sorted by name, owned by root, dated epoch, in
// the USTAR format: nothing in the output depends on the machine or the
// clock, nor on whether a content is given as bytes or written. An entry
// written short or long is an error (archive/tar checks it against its
// header).
func writeTar(w io.Writer, entries []tarEntry) error {
	entries = slices.Clone(entries) // sorted here, and so never shared
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	tw := tar.NewWriter(w)
	for _, e := range entries {
		size := int64(len(e.data))
		if e.write != nil {
			size = e.size
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: size}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		var err error
		if e.write != nil {
			err = e.write(tw)
		} else {
			_, err = tw.Write(e.data)
		}
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// countingWriter counts what it passes to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// daemonPlatform caches the daemon's OS and architecture, which decide
// the helper images' content and so their tags. It also serializes
// EnsureHolderImage and EnsureHelperImage, so that concurrent syncs load
// an image once.
type daemonPlatform struct {
	mu     sync.Mutex
	os     string // Info.OSType, e.g. "linux"
	goarch string // Info.Architecture as a GOARCH, e.g. "amd64"
	at     time.Time
	helper ImageArchive // EnsureHelperImage's last image, without its archive
	from   string       // the binary and instance it was built for
}

// platformTTL bounds how long the daemon's platform is trusted: a daemon
// replaced behind the same socket is noticed within it.
const platformTTL = time.Minute

// goarchOf maps the daemon's Info.Architecture (uname -m, or already a
// GOARCH) to a GOARCH name.
func goarchOf(arch string) string {
	switch arch {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64", "armv8", "armv8l":
		return "arm64"
	case "armv7l", "armv6l", "armhf":
		return "arm"
	case "i386", "i686":
		return "386"
	case "loongarch64":
		return "loong64"
	}
	return arch
}

// lockPlatform locks the daemon's platform, read again when it is older
// than platformTTL; the caller unlocks p.mu. what names the image it is
// read for.
func (c *Client) lockPlatform(ctx context.Context, what string) (*daemonPlatform, error) {
	p := &c.platform
	p.mu.Lock()
	if p.at.IsZero() || time.Since(p.at) > platformTTL {
		cctx, cancel := c.callCtx(ctx)
		info, err := c.api.Info(cctx)
		cancel()
		if err != nil {
			p.mu.Unlock()
			return nil, mapErr("read the daemon's platform for the "+what, err)
		}
		p.os, p.goarch, p.at = info.OSType, goarchOf(info.Architecture), time.Now()
	}
	return p, nil
}

// EnsureHolderImage makes the instance's holder image present and returns
// its reference (HolderRepository:<instance>-<12 hex>), to run as
// CreateRequest.Image. It reads the daemon's OS and architecture (Info,
// cached for a minute: they decide the image's content and so its tag),
// refuses a daemon it has no holder binary for, and makes the image
// present as ensureLoaded does.
func (c *Client) EnsureHolderImage(ctx context.Context, instance string) (string, error) {
	p, err := c.lockPlatform(ctx, "holder image")
	if err != nil {
		return "", err
	}
	defer p.mu.Unlock()
	if p.os != "linux" {
		return "", fmt.Errorf("holder image: the Docker daemon runs %s/%s containers; dockctl's pod holder exists for linux/%s only",
			p.os, p.goarch, strings.Join(holder.Arches(), ", linux/"))
	}
	img, err := BuildHolderImage(instance, p.goarch)
	if err != nil {
		return "", fmt.Errorf("holder image for the daemon's linux/%s: %w", p.goarch, err)
	}
	if _, err := c.ensureLoaded(ctx, "holder image", instance, img, func() (ImageArchive, error) { return img, nil }); err != nil {
		return "", err
	}
	return img.Ref, nil
}

// ensureLoaded makes img's tag name img's image: it returns at once when
// the tag names dockctl's image, and otherwise loads the archive archive
// returns (ImageLoad: nothing is pulled or built, nothing left dangling)
// and checks that the tag then names dockctl's image. The tag names
// dockctl's image when its ID is the config digest (classic image store)
// or the manifest digest (containerd image store) of the archive, and its
// labels are the instance's and role=helper-image. A tag that names
// anything else is not dockctl's: an error wrapping ErrConflict. img
// needs no archive: archive makes it only when a load is needed, and the
// image it returns is the one checked and returned.
func (c *Client) ensureLoaded(ctx context.Context, what, instance string, img ImageArchive, archive func() (ImageArchive, error)) (ImageArchive, error) {
	got, found, err := c.inspectTag(ctx, img.Ref)
	switch {
	case err != nil:
		return ImageArchive{}, err
	case found:
		return img, img.check(what, instance, got)
	}
	if img, err = archive(); err != nil {
		return ImageArchive{}, err
	}
	lctx, cancel := c.callCtx(ctx)
	defer cancel()
	body := img.archive()
	defer body.Close()
	sent := &countingReader{r: body}
	resp, err := c.api.ImageLoad(lctx, sent, client.ImageLoadWithQuiet(true))
	if err != nil {
		return ImageArchive{}, mapErr("load "+what+" "+img.Ref, err)
	}
	streamErr := readPullStream(resp.Body) // same JSON message stream as a pull
	resp.Body.Close()
	if streamErr != nil {
		return ImageArchive{}, fmt.Errorf("load %s %s: %w", what, img.Ref, streamErr)
	}
	got, found, err = c.inspectTag(ctx, img.Ref)
	switch {
	case err != nil:
		return ImageArchive{}, err
	case !found:
		return ImageArchive{}, fmt.Errorf("load %s %s: the daemon reported success but has no such tag", what, img.Ref)
	}
	if err := img.check(what, instance, got); err != nil {
		return ImageArchive{}, err
	}
	c.log.Info("loaded a helper image", "what", what, "image", img.Ref, "id", got.ID, "bytes", sent.n.Load())
	return img, nil
}

// countingReader counts what is read from r; atomically, since the HTTP
// client reads a request's body on a goroutine of its own.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// taggedImage is what ensureLoaded reads of the image a tag names.
type taggedImage struct {
	ID     string
	Labels map[string]string
}

// check returns nil when the image the tag names is this archive's image,
// as either image store identifies it, else an error wrapping ErrConflict.
// The labels are checked too, so that the answer does not rest on the ID
// alone.
func (img ImageArchive) check(what, instance string, got taggedImage) error {
	if got.ID != img.ID && got.ID != img.ManifestDigest {
		return &mappedError{sentinel: ErrConflict, err: fmt.Errorf(
			"%s: tag %s names image %s, not dockctl's %s (or, on the containerd image store, %s); remove that tag",
			what, img.Ref, got.ID, img.ID, img.ManifestDigest)}
	}
	role := img.role
	if role == "" {
		role = RoleHelperImage
	}
	if got.Labels[LabelInstance] != instance || got.Labels[LabelRole] != role {
		return &mappedError{sentinel: ErrConflict, err: fmt.Errorf(
			"%s: tag %s names image %s with labels %s=%q %s=%q, not dockctl's instance %q %s; remove that tag",
			what, img.Ref, got.ID, LabelInstance, got.Labels[LabelInstance], LabelRole, got.Labels[LabelRole], instance, role)}
	}
	return nil
}

// inspectTag returns the ID and labels of the image ref names; found is
// false when there is none.
func (c *Client) inspectTag(ctx context.Context, ref string) (img taggedImage, found bool, err error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	insp, err := c.api.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		img.ID = insp.ID
		if insp.Config != nil {
			img.Labels = insp.Config.Labels
		}
		return img, true, nil
	case cerrdefs.IsNotFound(err):
		return taggedImage{}, false, nil
	}
	return taggedImage{}, false, mapErr("inspect image "+ref, err)
}

// Image is a helper image dockctl made, as ListHelperImages reports it.
type Image struct {
	ID     string
	Tags   []string
	Labels map[string]string
}

// ListHelperImages returns the helper images of the instance, the pod
// holder's and the Service helpers' alike (labels
// io.dockctl.instance=instance and io.dockctl.role=helper-image, filtered
// by the daemon), sorted by ID.
func (c *Client) ListHelperImages(ctx context.Context, instance string) ([]Image, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	list, err := c.api.ImageList(ctx, image.ListOptions{Filters: labelFilters(
		LabelInstance+"="+instance, LabelRole+"="+RoleHelperImage)})
	if err != nil {
		return nil, mapErr("list helper images of instance "+instance, err)
	}
	out := make([]Image, 0, len(list))
	for _, s := range list {
		out = append(out, Image{ID: s.ID, Tags: s.RepoTags, Labels: s.Labels})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RemoveImage removes an image by ID, with its tags, and never forces: an
// image a container (even a stopped one) uses stays, and the error wraps
// ErrConflict. An image already gone is success.
func (c *Client) RemoveImage(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.api.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return mapErr("remove image "+id, err)
}
