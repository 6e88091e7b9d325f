package dockerx

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// negotiating wraps the SDK client so that the API version is negotiated
// once, before any call that uses it. The SDK negotiates lazily inside the
// first requests and writes its version field while concurrent requests
// read it unguarded (ContainerList reads it to encode filters, getAPIPath
// to build the path): the race detector caught a controller's sweep and its
// event subscription doing exactly that. A call made while negotiation
// cannot happen (the daemon is down) fails with the ping's error, which is
// what the call itself would have returned.
type negotiating struct {
	*client.Client
	mu   sync.Mutex
	done atomic.Bool
}

func (n *negotiating) negotiate(ctx context.Context) error {
	if n.done.Load() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done.Load() {
		return nil
	}
	ping, err := n.Client.Ping(ctx)
	if err != nil {
		return err
	}
	n.Client.NegotiateAPIVersionPing(ping)
	n.done.Store(true)
	return nil
}

func (n *negotiating) ServerVersion(ctx context.Context) (types.Version, error) {
	if err := n.negotiate(ctx); err != nil {
		return types.Version{}, err
	}
	return n.Client.ServerVersion(ctx)
}

func (n *negotiating) Info(ctx context.Context) (system.Info, error) {
	if err := n.negotiate(ctx); err != nil {
		return system.Info{}, err
	}
	return n.Client.Info(ctx)
}

func (n *negotiating) ContainerList(ctx context.Context, o container.ListOptions) ([]container.Summary, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, err
	}
	return n.Client.ContainerList(ctx, o)
}

func (n *negotiating) ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return container.CreateResponse{}, err
	}
	return n.Client.ContainerCreate(ctx, cfg, hc, nc, p, name)
}

func (n *negotiating) ContainerStart(ctx context.Context, id string, o container.StartOptions) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.ContainerStart(ctx, id, o)
}

func (n *negotiating) ContainerStop(ctx context.Context, id string, o container.StopOptions) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.ContainerStop(ctx, id, o)
}

func (n *negotiating) ContainerUnpause(ctx context.Context, id string) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.ContainerUnpause(ctx, id)
}

func (n *negotiating) ContainerRemove(ctx context.Context, id string, o container.RemoveOptions) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.ContainerRemove(ctx, id, o)
}

func (n *negotiating) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return container.InspectResponse{}, err
	}
	return n.Client.ContainerInspect(ctx, id)
}

func (n *negotiating) ContainerLogs(ctx context.Context, id string, o container.LogsOptions) (io.ReadCloser, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, err
	}
	return n.Client.ContainerLogs(ctx, id, o)
}

func (n *negotiating) ContainerStats(ctx context.Context, id string, stream bool) (container.StatsResponseReader, error) {
	if err := n.negotiate(ctx); err != nil {
		return container.StatsResponseReader{}, err
	}
	return n.Client.ContainerStats(ctx, id, stream)
}

func (n *negotiating) ContainerExecCreate(ctx context.Context, id string, o container.ExecOptions) (container.ExecCreateResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return container.ExecCreateResponse{}, err
	}
	return n.Client.ContainerExecCreate(ctx, id, o)
}

func (n *negotiating) ContainerExecStart(ctx context.Context, id string, o container.ExecStartOptions) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.ContainerExecStart(ctx, id, o)
}

func (n *negotiating) ContainerExecInspect(ctx context.Context, id string) (container.ExecInspect, error) {
	if err := n.negotiate(ctx); err != nil {
		return container.ExecInspect{}, err
	}
	return n.Client.ContainerExecInspect(ctx, id)
}

func (n *negotiating) ImageInspect(ctx context.Context, ref string, o ...client.ImageInspectOption) (image.InspectResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return image.InspectResponse{}, err
	}
	return n.Client.ImageInspect(ctx, ref, o...)
}

func (n *negotiating) ImagePull(ctx context.Context, ref string, o image.PullOptions) (io.ReadCloser, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, err
	}
	return n.Client.ImagePull(ctx, ref, o)
}

func (n *negotiating) ImageLoad(ctx context.Context, in io.Reader, o ...client.ImageLoadOption) (image.LoadResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return image.LoadResponse{}, err
	}
	return n.Client.ImageLoad(ctx, in, o...)
}

func (n *negotiating) ImageList(ctx context.Context, o image.ListOptions) ([]image.Summary, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, err
	}
	return n.Client.ImageList(ctx, o)
}

func (n *negotiating) ImageRemove(ctx context.Context, id string, o image.RemoveOptions) ([]image.DeleteResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, err
	}
	return n.Client.ImageRemove(ctx, id, o)
}

func (n *negotiating) VolumeCreate(ctx context.Context, o volume.CreateOptions) (volume.Volume, error) {
	if err := n.negotiate(ctx); err != nil {
		return volume.Volume{}, err
	}
	return n.Client.VolumeCreate(ctx, o)
}

func (n *negotiating) VolumeList(ctx context.Context, o volume.ListOptions) (volume.ListResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return volume.ListResponse{}, err
	}
	return n.Client.VolumeList(ctx, o)
}

func (n *negotiating) VolumeRemove(ctx context.Context, id string, force bool) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.VolumeRemove(ctx, id, force)
}

func (n *negotiating) VolumeInspect(ctx context.Context, id string) (volume.Volume, error) {
	if err := n.negotiate(ctx); err != nil {
		return volume.Volume{}, err
	}
	return n.Client.VolumeInspect(ctx, id)
}

func (n *negotiating) ContainerExecAttach(ctx context.Context, id string, o container.ExecAttachOptions) (types.HijackedResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return types.HijackedResponse{}, err
	}
	return n.Client.ContainerExecAttach(ctx, id, o)
}

func (n *negotiating) ContainerExecResize(ctx context.Context, id string, o container.ResizeOptions) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.ContainerExecResize(ctx, id, o)
}

func (n *negotiating) ContainerAttach(ctx context.Context, id string, o container.AttachOptions) (types.HijackedResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return types.HijackedResponse{}, err
	}
	return n.Client.ContainerAttach(ctx, id, o)
}

func (n *negotiating) ContainerWait(ctx context.Context, id string, cond container.WaitCondition) (<-chan container.WaitResponse, <-chan error) {
	if err := n.negotiate(ctx); err != nil {
		errC := make(chan error, 1)
		errC <- err
		return make(chan container.WaitResponse), errC
	}
	return n.Client.ContainerWait(ctx, id, cond)
}

func (n *negotiating) NetworkCreate(ctx context.Context, name string, o network.CreateOptions) (network.CreateResponse, error) {
	if err := n.negotiate(ctx); err != nil {
		return network.CreateResponse{}, err
	}
	return n.Client.NetworkCreate(ctx, name, o)
}

func (n *negotiating) NetworkInspect(ctx context.Context, id string, o network.InspectOptions) (network.Inspect, error) {
	if err := n.negotiate(ctx); err != nil {
		return network.Inspect{}, err
	}
	return n.Client.NetworkInspect(ctx, id, o)
}

func (n *negotiating) NetworkList(ctx context.Context, o network.ListOptions) ([]network.Summary, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, err
	}
	return n.Client.NetworkList(ctx, o)
}

func (n *negotiating) NetworkConnect(ctx context.Context, id, containerID string, cfg *network.EndpointSettings) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.NetworkConnect(ctx, id, containerID, cfg)
}

func (n *negotiating) NetworkRemove(ctx context.Context, id string) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.NetworkRemove(ctx, id)
}

// Events reports a failed negotiation on its error channel, as a failed
// subscription would: the reconnect loop backs off and tries again.
func (n *negotiating) Events(ctx context.Context, o events.ListOptions) (<-chan events.Message, <-chan error) {
	if err := n.negotiate(ctx); err != nil {
		errs := make(chan error, 1)
		errs <- err
		return make(chan events.Message), errs
	}
	return n.Client.Events(ctx, o)
}

func (n *negotiating) ContainerStatPath(ctx context.Context, id, path string) (container.PathStat, error) {
	if err := n.negotiate(ctx); err != nil {
		return container.PathStat{}, err
	}
	return n.Client.ContainerStatPath(ctx, id, path)
}

func (n *negotiating) CopyFromContainer(ctx context.Context, id, path string) (io.ReadCloser, container.PathStat, error) {
	if err := n.negotiate(ctx); err != nil {
		return nil, container.PathStat{}, err
	}
	return n.Client.CopyFromContainer(ctx, id, path)
}

func (n *negotiating) CopyToContainer(ctx context.Context, id, path string, content io.Reader, o container.CopyToContainerOptions) error {
	if err := n.negotiate(ctx); err != nil {
		return err
	}
	return n.Client.CopyToContainer(ctx, id, path, content, o)
}
