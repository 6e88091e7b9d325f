package dockerfake

import (
	"context"

	"github.com/dockctl/dockctl/dockerx"
)

// TEMPORARY until the holder branch merges.

func (e *Engine) CreateVolume(ctx context.Context, req dockerx.VolumeRequest) (string, error) {
	return dockerx.VolumeName(req.Pod.Holder, req.Volume, req.Pod.UID), nil
}
func (e *Engine) ListVolumes(ctx context.Context, instance string) ([]dockerx.Volume, error) {
	return nil, nil
}
func (e *Engine) RemoveVolume(ctx context.Context, name string) error { return nil }
func (e *Engine) EnsureHolderImage(ctx context.Context, instance string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.images["dockctl-holder:test"] = true
	return "dockctl-holder:test", nil
}
func (e *Engine) ListHelperImages(ctx context.Context, instance string) ([]dockerx.Image, error) {
	return nil, nil
}
func (e *Engine) RemoveImage(ctx context.Context, id string) error { return nil }
