package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler"
)

// Operation label values of the dockctl_docker_api_* series: one per
// reconciler.Docker method that calls the Engine API. They match the keys of
// internal/dockerfake's call counts, so that a benchmark reads the same names
// from a fake and from a live controller's /metrics.
const (
	OpList    = "list"
	OpCreate  = "create"
	OpStart   = "start"
	OpUnpause = "unpause"
	OpRemove  = "remove"
	OpImage   = "image"
	OpInspect = "inspect"
	OpExec    = "exec"
	OpStop    = "stop"
	// OpVolume counts creates and removals of pod volumes; OpImageRemove
	// removals of helper images (their load is OpImage, their list OpList).
	OpVolume      = "volume"
	OpImageRemove = "image_remove"
)

// operations is indexed by op; the order is fixed because the atomic call
// counts are an array indexed the same way.
var operations = [...]string{OpList, OpCreate, OpStart, OpUnpause, OpRemove, OpImage, OpInspect, OpExec, OpStop, OpVolume, OpImageRemove}

type op int

const (
	opList op = iota
	opCreate
	opStart
	opUnpause
	opRemove
	opImage
	opInspect
	opExec
	opStop
	opVolume
	opImageRemove
	numOps
)

// writeOps are the operations that change the Engine's state: an idle
// controller must make none.
var writeOps = []op{opCreate, opStart, opUnpause, opRemove, opStop, opVolume, opImageRemove}

type dockerMetrics struct {
	calls    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// Children resolved once: the decorator runs on every Docker call and
	// need not look labels up each time.
	callsBy    [numOps]prometheus.Counter
	errorsBy   [numOps]prometheus.Counter
	durationBy [numOps]prometheus.Observer

	// counts mirrors callsBy for DockerCalls: reading a Prometheus counter
	// back needs the client_model protobuf types, an atomic does not.
	counts [numOps]atomic.Uint64
}

func newDockerMetrics(f factory) *dockerMetrics {
	d := &dockerMetrics{
		calls: f.counterVec("docker_api_calls_total",
			"Docker Engine API calls made by the controller, by operation.", "operation"),
		errors: f.counterVec("docker_api_errors_total",
			"Docker Engine API calls that returned an error, by operation.", "operation"),
		duration: f.histogramVec("docker_api_call_duration_seconds",
			"Latency of Docker Engine API calls, by operation (image includes a pull when one is needed).", durationBuckets, "operation"),
	}
	// Creating every child now makes every operation appear at 0 from the
	// first scrape.
	for i, name := range operations {
		d.callsBy[i] = d.calls.WithLabelValues(name)
		d.errorsBy[i] = d.errors.WithLabelValues(name)
		d.durationBy[i] = d.duration.WithLabelValues(name)
	}
	return d
}

func (d *dockerMetrics) observe(o op, start time.Time, err error) {
	d.durationBy[o].Observe(time.Since(start).Seconds())
	d.callsBy[o].Inc()
	d.counts[o].Add(1)
	if err != nil {
		d.errorsBy[o].Inc()
	}
}

// DockerCalls returns how many calls of each operation went through the
// decorators InstrumentDocker returned, keyed by the operation label values
// (the same numbers as dockctl_docker_api_calls_total). Every operation is
// present, at 0 when never called.
func (m *Metrics) DockerCalls() map[string]uint64 {
	out := make(map[string]uint64, numOps)
	for i, name := range operations {
		out[name] = m.docker.counts[i].Load()
	}
	return out
}

// DockerWriteCalls returns how many calls changed the Engine's state
// (create, start, unpause, remove).
func (m *Metrics) DockerWriteCalls() uint64 {
	var n uint64
	for _, o := range writeOps {
		n += m.docker.counts[o].Load()
	}
	return n
}

// InstrumentDocker returns d counting every call, its latency and its errors
// by operation. Events passes through uncounted: it is one long-lived
// subscription whose breaks dockctl_docker_event_stream_reconnects_total
// already counts.
func (m *Metrics) InstrumentDocker(d reconciler.Docker) reconciler.Docker {
	return &instrumentedDocker{Docker: d, m: m.docker}
}

// instrumentedDocker embeds the wrapped Docker so that a method added to
// reconciler.Docker still compiles here (passed through, uncounted) while
// other packages evolve the interface; TestInstrumentDockerCoversInterface
// fails until such a method is instrumented or declared a pass-through.
type instrumentedDocker struct {
	reconciler.Docker
	m *dockerMetrics
}

func (d *instrumentedDocker) ListContainers(ctx context.Context, instance string) ([]dockerx.Container, error) {
	start := time.Now()
	cs, err := d.Docker.ListContainers(ctx, instance)
	d.m.observe(opList, start, err)
	return cs, err
}

func (d *instrumentedDocker) ListDeploymentContainers(ctx context.Context, instance, deployment string) ([]dockerx.Container, error) {
	start := time.Now()
	cs, err := d.Docker.ListDeploymentContainers(ctx, instance, deployment)
	d.m.observe(opList, start, err)
	return cs, err
}

func (d *instrumentedDocker) CreateContainer(ctx context.Context, req dockerx.CreateRequest) (string, error) {
	start := time.Now()
	id, err := d.Docker.CreateContainer(ctx, req)
	d.m.observe(opCreate, start, err)
	return id, err
}

func (d *instrumentedDocker) StartContainer(ctx context.Context, id string) error {
	start := time.Now()
	err := d.Docker.StartContainer(ctx, id)
	d.m.observe(opStart, start, err)
	return err
}

func (d *instrumentedDocker) UnpauseContainer(ctx context.Context, id string) error {
	start := time.Now()
	err := d.Docker.UnpauseContainer(ctx, id)
	d.m.observe(opUnpause, start, err)
	return err
}

func (d *instrumentedDocker) RemoveContainer(ctx context.Context, id string) error {
	start := time.Now()
	err := d.Docker.RemoveContainer(ctx, id)
	d.m.observe(opRemove, start, err)
	return err
}

func (d *instrumentedDocker) EnsureImage(ctx context.Context, ref, pullPolicy string, secrets []dockerx.RegistryCredential) error {
	start := time.Now()
	err := d.Docker.EnsureImage(ctx, ref, pullPolicy, secrets)
	d.m.observe(opImage, start, err)
	return err
}

func (d *instrumentedDocker) ImageUser(ctx context.Context, ref string) (string, error) {
	start := time.Now()
	u, err := d.Docker.ImageUser(ctx, ref)
	d.m.observe(opImage, start, err)
	return u, err
}

func (d *instrumentedDocker) InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error) {
	start := time.Now()
	det, err := d.Docker.InspectContainer(ctx, id)
	d.m.observe(opInspect, start, err)
	return det, err
}

func (d *instrumentedDocker) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, error) {
	start := time.Now()
	code, err := d.Docker.Exec(ctx, id, cmd, timeout)
	d.m.observe(opExec, start, err)
	return code, err
}

func (d *instrumentedDocker) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	start := time.Now()
	err := d.Docker.StopContainer(ctx, id, timeout)
	d.m.observe(opStop, start, err)
	return err
}

func (d *instrumentedDocker) EnsureHolderImage(ctx context.Context, instance string) (string, error) {
	start := time.Now()
	ref, err := d.Docker.EnsureHolderImage(ctx, instance)
	d.m.observe(opImage, start, err)
	return ref, err
}

func (d *instrumentedDocker) ListHelperImages(ctx context.Context, instance string) ([]dockerx.Image, error) {
	start := time.Now()
	imgs, err := d.Docker.ListHelperImages(ctx, instance)
	d.m.observe(opList, start, err)
	return imgs, err
}

func (d *instrumentedDocker) RemoveImage(ctx context.Context, id string) error {
	start := time.Now()
	err := d.Docker.RemoveImage(ctx, id)
	d.m.observe(opImageRemove, start, err)
	return err
}

func (d *instrumentedDocker) CreateVolume(ctx context.Context, req dockerx.VolumeRequest) (string, error) {
	start := time.Now()
	name, err := d.Docker.CreateVolume(ctx, req)
	d.m.observe(opVolume, start, err)
	return name, err
}

func (d *instrumentedDocker) CreateClaimVolume(ctx context.Context, req dockerx.ClaimVolumeRequest) (string, error) {
	start := time.Now()
	name, err := d.Docker.CreateClaimVolume(ctx, req)
	d.m.observe(opVolume, start, err)
	return name, err
}

func (d *instrumentedDocker) ListVolumes(ctx context.Context, instance string) ([]dockerx.Volume, error) {
	start := time.Now()
	vols, err := d.Docker.ListVolumes(ctx, instance)
	d.m.observe(opList, start, err)
	return vols, err
}

func (d *instrumentedDocker) RemoveVolume(ctx context.Context, name string) error {
	start := time.Now()
	err := d.Docker.RemoveVolume(ctx, name)
	d.m.observe(opVolume, start, err)
	return err
}
