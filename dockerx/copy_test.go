package dockerx

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

// copyAPI answers the archive endpoints from one path of one container.
type copyAPI struct {
	dockerAPI
	path    string
	content string
	// put records CopyToContainer's directory and content.
	putDir, put string
}

func (f *copyAPI) ContainerStatPath(_ context.Context, _, path string) (container.PathStat, error) {
	if path != f.path {
		return container.PathStat{}, cerrdefs.ErrNotFound.WithMessage("Could not find the file " + path + " in container")
	}
	return container.PathStat{Name: "f", Size: int64(len(f.content)), Mode: 0o644}, nil
}

func (f *copyAPI) CopyFromContainer(ctx context.Context, id, path string) (io.ReadCloser, container.PathStat, error) {
	s, err := f.ContainerStatPath(ctx, id, path)
	if err != nil {
		return nil, s, err
	}
	return io.NopCloser(strings.NewReader(f.content)), s, nil
}

func (f *copyAPI) CopyToContainer(_ context.Context, _, dir string, content io.Reader, _ container.CopyToContainerOptions) error {
	if dir != "/data" {
		return cerrdefs.ErrNotFound.WithMessage("Could not find the file " + dir + " in container")
	}
	b, err := io.ReadAll(content)
	f.putDir, f.put = dir, string(b)
	return err
}

// The archive methods hand the streams through and map a missing path to
// ErrNotFound, as every other call maps the Engine's errors.
func TestCopyMethodsMapMissingPathsToNotFound(t *testing.T) {
	api := &copyAPI{path: "/etc/f", content: "tar bytes"}
	c := &Client{api: api, timeout: time.Second, leaves: leaveGate{decided: true}}
	ctx := context.Background()
	s, err := c.StatPath(ctx, "id", "/etc/f")
	if err != nil || s.Name != "f" || s.Size != 9 {
		t.Fatalf("StatPath = %+v, %v", s, err)
	}
	if _, err := c.StatPath(ctx, "id", "/nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("StatPath of a missing path: %v, want ErrNotFound", err)
	}
	rc, s, err := c.CopyFrom(ctx, "id", "/etc/f")
	if err != nil || s.Mode != 0o644 {
		t.Fatalf("CopyFrom = %+v, %v", s, err)
	}
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "tar bytes" || rc.Close() != nil {
		t.Errorf("CopyFrom's stream: %q %v", b, err)
	}
	if _, _, err := c.CopyFrom(ctx, "id", "/nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("CopyFrom of a missing path: %v, want ErrNotFound", err)
	}
	if err := c.CopyTo(ctx, "id", "/data", strings.NewReader("up")); err != nil || api.putDir != "/data" || api.put != "up" {
		t.Errorf("CopyTo: %v, put %q into %q", err, api.put, api.putDir)
	}
	if err := c.CopyTo(ctx, "id", "/nope", strings.NewReader("up")); !errors.Is(err, ErrNotFound) {
		t.Errorf("CopyTo into a missing directory: %v, want ErrNotFound", err)
	}
}
