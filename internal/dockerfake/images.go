package dockerfake

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/dockctl/dockctl/dockerx"
)

// HolderImageArch is the architecture the fake daemon reports: its holder
// image is the one dockerx.Client would load on linux/amd64.
const HolderImageArch = "amd64"

// HolderImageRef returns the reference EnsureHolderImage gives the
// instance: the real, fixed one (dockerx.BuildHolderImage on amd64).
func HolderImageRef(instance string) string {
	img, err := dockerx.BuildHolderImage(instance, HolderImageArch)
	if err != nil {
		return ""
	}
	return img.Ref
}

// EnsureHolderImage makes the instance's holder image present, with the
// reference and ID the real client would give it, and returns its
// reference. OnHolderImage, when set, can make it fail. Counted as
// "image:holder".
func (e *Engine) EnsureHolderImage(ctx context.Context, instance string) (string, error) {
	if err := e.imageCall("image:holder", "holder image", instance, e.OnHolderImage); err != nil {
		return "", err
	}
	img, err := dockerx.BuildHolderImage(instance, HolderImageArch)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addHelperImageLocked(instance, img.ID, img.Ref)
	return img.Ref, nil
}

// imageCall counts an ensure of a helper image as call, and fails as the
// daemon being down or the test's hook makes it.
func (e *Engine) imageCall(call, what, instance string, hook func(string) error) error {
	e.mu.Lock()
	e.calls[call]++
	down := e.down
	e.mu.Unlock()
	if down {
		return fmt.Errorf("%s: %w", what, dockerx.ErrUnreachable)
	}
	if hook != nil {
		return hook(instance)
	}
	return nil
}

// addHelperImageLocked makes a helper image of the instance present.
func (e *Engine) addHelperImageLocked(instance, id, ref string) {
	if e.helpers == nil {
		e.helpers = map[string]dockerx.Image{}
	}
	e.images[ref] = true
	e.helpers[id] = dockerx.Image{ID: id, Tags: []string{ref},
		Labels: map[string]string{dockerx.LabelInstance: instance, dockerx.LabelRole: dockerx.RoleHelperImage}}
}

// ListHelperImages lists the instance's helper images, sorted by ID.
// Counted as "image:list".
func (e *Engine) ListHelperImages(ctx context.Context, instance string) ([]dockerx.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["image:list"]++
	if e.down {
		return nil, fmt.Errorf("list helper images: %w", dockerx.ErrUnreachable)
	}
	var out []dockerx.Image
	for _, img := range e.helpers {
		if img.Labels[dockerx.LabelInstance] == instance && img.Labels[dockerx.LabelRole] == dockerx.RoleHelperImage {
			out = append(out, copyImage(img))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RemoveImage removes a helper image by ID, never forcing: while a
// container that still exists (in any state) was created from it, the
// error wraps ErrConflict, as Docker's 409. A missing image is success.
// Counted as "image:remove".
func (e *Engine) RemoveImage(ctx context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["image:remove"]++
	if e.down {
		return fmt.Errorf("remove image %s: %w", id, dockerx.ErrUnreachable)
	}
	img, ok := e.helpers[id]
	if !ok {
		return nil
	}
	var users []string
	for cid, c := range e.containers {
		if c.Image == id || slices.Contains(img.Tags, c.Image) {
			users = append(users, short(cid))
		}
	}
	if len(users) > 0 {
		sort.Strings(users)
		return fmt.Errorf("remove image %s: conflict: unable to delete (must be forced) - image is being used by container %v: %w", id, users, dockerx.ErrConflict)
	}
	delete(e.helpers, id)
	for _, tag := range img.Tags {
		delete(e.images, tag)
	}
	return nil
}

// HelperImages returns every helper image regardless of instance, sorted
// by ID.
func (e *Engine) HelperImages() []dockerx.Image {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []dockerx.Image
	for _, img := range e.helpers {
		out = append(out, copyImage(img))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func copyImage(img dockerx.Image) dockerx.Image {
	img.Tags = slices.Clone(img.Tags)
	img.Labels = copyMap(img.Labels)
	return img
}
