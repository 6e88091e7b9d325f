package dockerx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
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

// Default deadlines. Container operations on a healthy Engine take
// milliseconds (create ≈ 14 ms, start ≈ 160 ms on a 2-core host), so 30s only
// trips on a daemon that is truly stuck. A pull moves image layers and gets
// far longer.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultPullTimeout = 10 * time.Minute
)

// ErrImagePull marks a failed image pull, so that callers can report it as
// Kubernetes reports ErrImagePull, distinct from a failed create.
var ErrImagePull = errors.New("image pull failed")

// dockerAPI is the subset of the SDK client that dockctl uses. Keeping it
// small documents exactly which Engine endpoints dockctl depends on, and lets
// the unit tests drive the error mapping and the event reconnect loop without
// a daemon. *client.Client satisfies it.
type dockerAPI interface {
	Ping(ctx context.Context) (types.Ping, error)
	ServerVersion(ctx context.Context) (types.Version, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerStop(ctx context.Context, containerID string, options container.StopOptions) error
	ContainerUnpause(ctx context.Context, containerID string) error
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerLogs(ctx context.Context, containerID string, options container.LogsOptions) (io.ReadCloser, error)
	ContainerStatPath(ctx context.Context, containerID, path string) (container.PathStat, error)
	CopyFromContainer(ctx context.Context, containerID, srcPath string) (io.ReadCloser, container.PathStat, error)
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	ContainerStats(ctx context.Context, containerID string, stream bool) (container.StatsResponseReader, error)
	ContainerExecCreate(ctx context.Context, containerID string, options container.ExecOptions) (container.ExecCreateResponse, error)
	ContainerExecStart(ctx context.Context, execID string, config container.ExecStartOptions) error
	ContainerExecInspect(ctx context.Context, execID string) (container.ExecInspect, error)
	ContainerExecAttach(ctx context.Context, execID string, config container.ExecAttachOptions) (types.HijackedResponse, error)
	ContainerExecResize(ctx context.Context, execID string, options container.ResizeOptions) error
	ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerWait(ctx context.Context, containerID string, condition container.WaitCondition) (<-chan container.WaitResponse, <-chan error)
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, refStr string, options image.PullOptions) (io.ReadCloser, error)
	ImageLoad(ctx context.Context, input io.Reader, loadOpts ...client.ImageLoadOption) (image.LoadResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, imageID string, options image.RemoveOptions) ([]image.DeleteResponse, error)
	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	NetworkCreate(ctx context.Context, name string, options network.CreateOptions) (network.CreateResponse, error)
	NetworkInspect(ctx context.Context, networkID string, options network.InspectOptions) (network.Inspect, error)
	NetworkList(ctx context.Context, options network.ListOptions) ([]network.Summary, error)
	NetworkConnect(ctx context.Context, networkID, containerID string, config *network.EndpointSettings) error
	NetworkRemove(ctx context.Context, networkID string) error
	Info(ctx context.Context) (system.Info, error)
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)
	DaemonHost() string
	Close() error
}

// Client talks to one Docker Engine. It is safe for concurrent use.
type Client struct {
	api         dockerAPI
	timeout     time.Duration
	pullTimeout time.Duration
	log         *slog.Logger
	host        string // overrides DOCKER_HOST when set
	// backoff bounds for the event subscription; fields so tests can shrink them.
	eventsMinBackoff time.Duration
	eventsMaxBackoff time.Duration

	logMaxSize  int64 // ContainerLogs.MaxSize of every create
	logMaxFiles int
	logDriver   cachedDriver

	platform     daemonPlatform // EnsureHolderImage's and EnsureHelperImage's view of the daemon
	helperBinary string         // WithHelperBinary

	dockerConfigDir string // WithDockerConfig; "" is the docker CLI's choice

	leaves leaveGate // serialises stops and removals on Engines that need it (leavegate.go)
}

// cachedDriver is the daemon's default log driver, read at most once a
// minute: a daemon restarted with another default is noticed soon enough.
type cachedDriver struct {
	mu     sync.Mutex
	driver string
	at     time.Time
}

// logDriverTTL is how long the daemon's default log driver is cached.
const logDriverTTL = time.Minute

// Option configures NewClient.
type Option func(*Client)

// WithTimeout sets the deadline of each Docker call except pulls.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithPullTimeout sets the deadline of one image pull.
func WithPullTimeout(d time.Duration) Option { return func(c *Client) { c.pullTimeout = d } }

// WithDockerConfig sets the directory of the docker CLI config.json whose
// credentials pulls use (registryauth.go); the default, "", is the docker
// CLI's: $DOCKER_CONFIG, else ~/.docker.
func WithDockerConfig(dir string) Option { return func(c *Client) { c.dockerConfigDir = dir } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// WithContainerLogs sets the log rotation of the replicas this client
// creates (default DefaultContainerLogMaxSize × DefaultContainerLogMaxFiles);
// maxSize 0 disables it, leaving the daemon's log options.
func WithContainerLogs(maxSize int64, maxFiles int) Option {
	return func(c *Client) { c.logMaxSize, c.logMaxFiles = maxSize, maxFiles }
}

// WithHost overrides DOCKER_HOST, e.g. "unix:///tmp/x/docker.sock" for a
// private test daemon.
func WithHost(host string) Option { return func(c *Client) { c.host = host } }

// NewClient returns a client configured as the docker CLI is, from
// DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH and DOCKER_API_VERSION,
// negotiating the API version so that it works against Engine API 1.41 and
// newer. It does not contact the daemon; call Ping for that.
func NewClient(opts ...Option) (*Client, error) {
	c := &Client{
		timeout:          DefaultTimeout,
		pullTimeout:      DefaultPullTimeout,
		log:              slog.Default(),
		eventsMinBackoff: 100 * time.Millisecond,
		eventsMaxBackoff: 5 * time.Second,
		logMaxSize:       DefaultContainerLogMaxSize,
		logMaxFiles:      DefaultContainerLogMaxFiles,
	}
	for _, o := range opts {
		o(c)
	}
	copts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if c.host != "" {
		copts = append(copts, client.WithHost(c.host))
	}
	api, err := client.NewClientWithOpts(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	c.api = &negotiating{Client: api}
	return c, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error { return c.api.Close() }

// callCtx bounds one Docker call.
func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// Ping checks that the daemon answers. When it does not, the error wraps
// ErrUnreachable and says where dockctl looked and how to point it elsewhere.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	if _, err := c.api.Ping(ctx); err != nil {
		if client.IsErrConnectionFailed(err) || errors.Is(err, context.DeadlineExceeded) {
			return &mappedError{
				sentinel: ErrUnreachable,
				err: fmt.Errorf("cannot reach the Docker daemon at %s (is it running, and may this user open its socket? set DOCKER_HOST to use another): %w",
					c.api.DaemonHost(), err),
			}
		}
		return mapErr("ping", err)
	}
	return nil
}

// ServerVersion returns the Engine version and API version, for
// `dockctl version`, e.g. "20.10.24 (API 1.41)".
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	v, err := c.api.ServerVersion(ctx)
	if err != nil {
		return "", mapErr("server version", err)
	}
	return fmt.Sprintf("%s (API %s)", v.Version, v.APIVersion), nil
}

// mappedError keeps the daemon's message while letting errors.Is match one
// of this package's sentinels, so callers never need the SDK's errdefs.
type mappedError struct {
	sentinel error
	err      error
}

func (e *mappedError) Error() string   { return e.err.Error() }
func (e *mappedError) Unwrap() []error { return []error{e.sentinel, e.err} }

// mapErr wraps err with the operation that failed and, when it has one of
// the meanings callers branch on, the matching sentinel.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, classify(err))
}

// classify attaches the sentinel matching the SDK error's meaning, if any.
func classify(err error) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return &mappedError{sentinel: ErrNotFound, err: err}
	case cerrdefs.IsConflict(err):
		return &mappedError{sentinel: ErrConflict, err: err}
	case client.IsErrConnectionFailed(err):
		return &mappedError{sentinel: ErrUnreachable, err: err}
	}
	return err
}

// containerLogs returns the log rotation for a create: the client's
// settings and the daemon's default log driver.
func (c *Client) containerLogs(ctx context.Context) (ContainerLogs, error) {
	if c.logMaxSize <= 0 {
		return ContainerLogs{}, nil
	}
	c.logDriver.mu.Lock()
	defer c.logDriver.mu.Unlock()
	if c.logDriver.at.IsZero() || time.Since(c.logDriver.at) > logDriverTTL {
		ctx, cancel := c.callCtx(ctx)
		defer cancel()
		info, err := c.api.Info(ctx)
		if err != nil {
			return ContainerLogs{}, mapErr("read the daemon's default log driver", err)
		}
		c.logDriver.driver, c.logDriver.at = info.LoggingDriver, time.Now()
	}
	return ContainerLogs{Driver: c.logDriver.driver, MaxSize: c.logMaxSize, MaxFiles: c.logMaxFiles}, nil
}
