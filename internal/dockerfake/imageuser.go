package dockerfake

import (
	"context"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
)

// SetImageUser gives a present image the User its config names ("" by
// default: root), as `docker image inspect` reports it.
func (e *Engine) SetImageUser(ref, user string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.imageUsers == nil {
		e.imageUsers = map[string]string{}
	}
	e.images[ref] = true
	e.imageUsers[ref] = user
}

// ImageUser is dockerx.Client.ImageUser: the User of a present image,
// ErrNotFound for an absent one. Counted as the call "image-inspect".
func (e *Engine) ImageUser(ctx context.Context, ref string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls["image-inspect"]++
	if e.down {
		return "", fmt.Errorf("inspect image %s: %w", ref, dockerx.ErrUnreachable)
	}
	if !e.images[ref] {
		return "", fmt.Errorf("inspect image %s: no such image: %w", ref, dockerx.ErrNotFound)
	}
	return e.imageUsers[ref], nil
}
