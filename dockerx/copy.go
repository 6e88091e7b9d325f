package dockerx

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/docker/docker/api/types/container"
)

// The archive endpoints, for dockctl cp (docs/cli.md): a path of a
// container read or written as a tar stream, as `docker cp` does. The
// streams are the caller's to check: an archive read from a container
// comes from a process the user may not trust, and its entries are
// extracted only through a guard against paths that leave the
// destination (cmd/dockctl's cp).

// PathStat is what the Engine says of a path in a container.
type PathStat struct {
	Name string
	Size int64
	Mode os.FileMode
	// LinkTarget is a symbolic link's target, resolved in the container.
	LinkTarget string
	Mtime      time.Time
}

func pathStat(s container.PathStat) PathStat {
	return PathStat{Name: s.Name, Size: s.Size, Mode: s.Mode, LinkTarget: s.LinkTarget, Mtime: s.Mtime}
}

// StatPath stats path in container id; a missing path is ErrNotFound.
func (c *Client) StatPath(ctx context.Context, id, path string) (PathStat, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.api.ContainerStatPath(ctx, id, path)
	if err != nil {
		return PathStat{}, mapErr("stat of "+path+" in container "+id, err)
	}
	return pathStat(s), nil
}

// CopyFrom returns path of container id as a tar stream (its entries
// named from path's base name: a directory's files under it) and path's
// stat. Only opening the stream is bounded by the client's deadline; the
// caller closes it.
func (c *Client) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, PathStat, error) {
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(c.timeout, cancel)
	rc, s, err := c.api.CopyFromContainer(ctx, id, path)
	timer.Stop()
	if err != nil {
		cancel()
		return nil, PathStat{}, mapErr("copy of "+path+" from container "+id, err)
	}
	return &cancelReader{ReadCloser: rc, cancel: cancel}, pathStat(s), nil
}

// CopyTo extracts the tar stream content into dir, an existing directory
// of container id, as the Engine extracts it (no directory may be
// replaced by a file, nor the reverse).
func (c *Client) CopyTo(ctx context.Context, id, dir string, content io.Reader) error {
	err := c.api.CopyToContainer(ctx, id, dir, content, container.CopyToContainerOptions{})
	if err != nil {
		return mapErr("copy into "+dir+" of container "+id, err)
	}
	return nil
}

// cancelReader ends its request's context when closed.
type cancelReader struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (r *cancelReader) Close() error {
	err := r.ReadCloser.Close()
	r.cancel()
	return err
}
