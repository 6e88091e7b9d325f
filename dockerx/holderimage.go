package dockerx

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	digest "github.com/opencontainers/go-digest"
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

// HolderImageArchive is the holder image of one instance for one
// architecture, as `docker save` would write it.
type HolderImageArchive struct {
	// ID is the image ID Docker gives it: "sha256:" and the digest of its
	// config JSON.
	ID string
	// Ref is its tag: HolderRepository:<instance>-<first 12 hex of ID>. A
	// tag names one content forever, so loading never moves a tag and never
	// leaves an image dangling.
	Ref string
	Tar []byte // manifest.json, <config digest>.json, <layer diff ID>/layer.tar
}

// dockerTag is the grammar of a Docker tag.
var dockerTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// BuildHolderImage returns the holder image for instance on linux/goarch.
// It is pure: the same arguments always give the same bytes. Its only layer
// holds holder.Binary(goarch) at /holder (mode 0555, owned by root); its
// config runs it as the entrypoint and carries the labels
// io.dockctl.instance=instance and io.dockctl.role=helper-image.
func BuildHolderImage(instance, goarch string) (HolderImageArchive, error) {
	bin, err := holder.Binary(goarch)
	if err != nil {
		return HolderImageArchive{}, err
	}
	layer, err := tarOf([]tarEntry{{name: strings.TrimPrefix(holderPath, "/"), mode: 0o555, data: bin}})
	if err != nil {
		return HolderImageArchive{}, fmt.Errorf("holder image layer: %w", err)
	}
	diffID := digest.FromBytes(layer)
	created := epoch
	config, err := json.Marshal(ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{Architecture: goarch, OS: "linux"},
		Config: ocispec.ImageConfig{
			Entrypoint: []string{holderPath},
			Labels:     map[string]string{LabelInstance: instance, LabelRole: RoleHelperImage},
		},
		RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{Created: &created, CreatedBy: "dockctl: pod holder (internal/holder)"}},
	})
	if err != nil {
		return HolderImageArchive{}, fmt.Errorf("holder image config: %w", err)
	}
	sum := sha256.Sum256(config)
	id := hex.EncodeToString(sum[:])
	tag := instance + "-" + id[:12]
	if !dockerTag.MatchString(tag) {
		return HolderImageArchive{}, fmt.Errorf("holder image for instance %q: %q is not a valid Docker tag", instance, tag)
	}
	ref := HolderRepository + ":" + tag
	layerDir := diffID.Encoded()
	manifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: id + ".json", RepoTags: []string{ref}, Layers: []string{layerDir + "/layer.tar"}}})
	if err != nil {
		return HolderImageArchive{}, fmt.Errorf("holder image manifest: %w", err)
	}
	archive, err := tarOf([]tarEntry{
		{name: id + ".json", mode: 0o644, data: config},
		{name: layerDir + "/", mode: 0o755, dir: true},
		{name: layerDir + "/layer.tar", mode: 0o644, data: layer},
		{name: "manifest.json", mode: 0o644, data: manifest},
	})
	if err != nil {
		return HolderImageArchive{}, fmt.Errorf("holder image archive: %w", err)
	}
	return HolderImageArchive{ID: "sha256:" + id, Ref: ref, Tar: archive}, nil
}

type tarEntry struct {
	name string
	mode int64
	dir  bool
	data []byte
}

// tarOf writes entries sorted by name, owned by root, dated epoch, in the
// USTAR format: nothing in the output depends on the machine or the clock.
func tarOf(entries []tarEntry) ([]byte, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// daemonPlatform caches the daemon's OS and architecture, which decide
// the holder image's content and so its tag. It also serializes
// EnsureHolderImage, so that concurrent syncs load the image once.
type daemonPlatform struct {
	mu     sync.Mutex
	os     string // Info.OSType, e.g. "linux"
	goarch string // Info.Architecture as a GOARCH, e.g. "amd64"
	at     time.Time
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
	}
	return arch
}

// EnsureHolderImage makes the instance's holder image present and returns
// its reference (HolderRepository:<instance>-<12 hex>), to run as
// CreateRequest.Image. It reads the daemon's OS and architecture (Info,
// cached for a minute: they decide the image's content and so its tag),
// refuses a daemon it has no holder binary for, returns at once when the
// tag is present with the expected ID, and otherwise loads the generated
// archive (ImageLoad: nothing is pulled or built, nothing left dangling)
// and checks that the daemon gave it the expected ID. A tag that exists
// with another ID is not dockctl's: an error wrapping ErrConflict.
func (c *Client) EnsureHolderImage(ctx context.Context, instance string) (string, error) {
	p := &c.holderPlatform
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at.IsZero() || time.Since(p.at) > platformTTL {
		cctx, cancel := c.callCtx(ctx)
		info, err := c.api.Info(cctx)
		cancel()
		if err != nil {
			return "", mapErr("read the daemon's platform for the holder image", err)
		}
		p.os, p.goarch, p.at = info.OSType, goarchOf(info.Architecture), time.Now()
	}
	if p.os != "linux" {
		return "", fmt.Errorf("holder image: the Docker daemon runs %s/%s containers; dockctl's pod holder exists for linux/%s only",
			p.os, p.goarch, strings.Join(holder.Arches(), ", linux/"))
	}
	img, err := BuildHolderImage(instance, p.goarch)
	if err != nil {
		return "", fmt.Errorf("holder image for the daemon's linux/%s: %w", p.goarch, err)
	}
	id, err := c.imageID(ctx, img.Ref)
	switch {
	case err != nil:
		return "", err
	case id == img.ID:
		return img.Ref, nil
	case id != "":
		return "", foreignTag(img, id)
	}

	lctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.api.ImageLoad(lctx, bytes.NewReader(img.Tar), client.ImageLoadWithQuiet(true))
	if err != nil {
		return "", mapErr("load holder image "+img.Ref, err)
	}
	streamErr := readPullStream(resp.Body) // same JSON message stream as a pull
	resp.Body.Close()
	if streamErr != nil {
		return "", fmt.Errorf("load holder image %s: %w", img.Ref, streamErr)
	}
	id, err = c.imageID(ctx, img.Ref)
	switch {
	case err != nil:
		return "", err
	case id == "":
		return "", fmt.Errorf("load holder image %s: the daemon reported success but has no such tag", img.Ref)
	case id != img.ID:
		return "", foreignTag(img, id)
	}
	c.log.Info("loaded the pod holder image", "image", img.Ref, "id", img.ID, "bytes", len(img.Tar))
	return img.Ref, nil
}

func foreignTag(img HolderImageArchive, id string) error {
	return &mappedError{sentinel: ErrConflict,
		err: fmt.Errorf("holder image: tag %s names image %s, not dockctl's %s; remove that tag", img.Ref, id, img.ID)}
}

// imageID returns the ID of the image ref names, "" if there is none.
func (c *Client) imageID(ctx context.Context, ref string) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	insp, err := c.api.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return insp.ID, nil
	case cerrdefs.IsNotFound(err):
		return "", nil
	}
	return "", mapErr("inspect image "+ref, err)
}

// Image is a helper image dockctl made, as ListHelperImages reports it.
type Image struct {
	ID     string
	Tags   []string
	Labels map[string]string
}

// ListHelperImages returns the helper images of the instance (labels
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
