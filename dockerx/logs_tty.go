package dockerx

import (
	"context"
	"io"

	"github.com/docker/docker/pkg/stdcopy"
)

// logsCopier returns how to copy the log stream of container id: as it is
// for a container with a TTY (tty: true), whose output Docker does not
// multiplex, else demultiplexed.
func (c *Client) logsCopier(ctx context.Context, id string) (func(io.Writer, io.Reader) error, error) {
	ictx, cancel := c.callCtx(ctx)
	defer cancel()
	ins, err := c.api.ContainerInspect(ictx, id)
	if err != nil {
		return nil, mapErr("logs of container "+id, err)
	}
	if ins.Config != nil && ins.Config.Tty {
		return func(w io.Writer, r io.Reader) error { _, err := io.Copy(w, r); return err }, nil
	}
	return func(w io.Writer, r io.Reader) error { _, err := stdcopy.StdCopy(w, w, r); return err }, nil
}
