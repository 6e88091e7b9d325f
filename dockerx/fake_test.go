package dockerx

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeAPI implements the few endpoints a test needs; calling any other
// panics through the nil embedded interface, which flags an unexpected call.
type fakeAPI struct {
	dockerAPI

	createErr  error
	removeErr  error
	inspectImg map[string]bool // present images
	inspectErr error
	pullErr    error  // returned by ImagePull itself
	pullStream string // JSON progress returned by ImagePull
	// pullAuth, when set, decides per X-Registry-Auth ("" anonymous)
	// the JSON progress of a pull (registryauth_test.go).
	pullAuth    func(auth string) string
	pullAuths   []string // the X-Registry-Auth of every pull
	mu          sync.Mutex
	pulls       []string
	eventsCalls int
	// loggingDriver is the daemon's default log driver Info reports.
	loggingDriver string
	infoCalls     int
	created       *container.HostConfig // the last create's host config
	// events returns, per Events call, the channels to hand out.
	events func(call int) (<-chan events.Message, <-chan error)
	// inspectGate, when set, holds every ContainerInspect until it is
	// closed (or the call's context is done), as Docker holds an inspect
	// while it handles the container's exit.
	inspectGate chan struct{}
	inspected   []string // IDs ContainerInspect was called with
}

func (f *fakeAPI) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	f.mu.Lock()
	f.inspected = append(f.inspected, id)
	gate := f.inspectGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return container.InspectResponse{}, ctx.Err()
		}
	}
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: id}}, nil
}

func newFakeClient(f *fakeAPI) *Client {
	return &Client{
		api: f, timeout: time.Second, pullTimeout: time.Second,
		dockerConfigDir:  "/nonexistent/dockctl-test-docker-config", // never the tester's own
		log:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		eventsMinBackoff: time.Millisecond, eventsMaxBackoff: 4 * time.Millisecond,
		// An Engine without the leave deadlock: leavegate_test.go tests the gate.
		leaves: leaveGate{decided: true},
	}
}

func (f *fakeAPI) DaemonHost() string { return "unix:///fake/docker.sock" }

func (f *fakeAPI) ContainerCreate(_ context.Context, _ *container.Config, hc *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, _ string) (container.CreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = hc
	return container.CreateResponse{ID: "abc"}, f.createErr
}

func (f *fakeAPI) Info(context.Context) (system.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.infoCalls++
	return system.Info{LoggingDriver: f.loggingDriver}, nil
}

func (f *fakeAPI) ContainerRemove(context.Context, string, container.RemoveOptions) error {
	return f.removeErr
}

func (f *fakeAPI) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	if f.inspectErr != nil {
		return image.InspectResponse{}, f.inspectErr
	}
	if f.inspectImg[ref] {
		return image.InspectResponse{ID: "sha256:x"}, nil
	}
	return image.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

func (f *fakeAPI) ImagePull(_ context.Context, ref string, o image.PullOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	f.pulls = append(f.pulls, ref)
	f.pullAuths = append(f.pullAuths, o.RegistryAuth)
	f.mu.Unlock()
	if f.pullErr != nil {
		return nil, f.pullErr
	}
	if f.pullAuth != nil {
		return io.NopCloser(strings.NewReader(f.pullAuth(o.RegistryAuth))), nil
	}
	return io.NopCloser(strings.NewReader(f.pullStream)), nil
}

func (f *fakeAPI) Events(context.Context, events.ListOptions) (<-chan events.Message, <-chan error) {
	f.mu.Lock()
	n := f.eventsCalls
	f.eventsCalls++
	f.mu.Unlock()
	return f.events(n)
}
