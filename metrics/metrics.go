package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/util/workqueue"

	"github.com/dockctl/dockctl/reconciler"
)

const namespace = "dockctl"

// Result label values of dockctl_syncs_total.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// durationBuckets covers what one sync or one Docker call can take here: a
// label-filtered list takes a few milliseconds, a create+start about 180 ms,
// a sync scaling to 100 replicas about 10 s, and an image pull minutes.
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// queueBuckets are the ones Kubernetes uses for its work queues (10 ns to
// 10 s), so that dashboards built for kube-controller-manager read ours too.
// Written out rather than computed, so that the le labels read 1e-05, not
// 9.999999999999999e-06.
var queueBuckets = []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10}

// Metrics collects the controller's metrics on its own registry. Build it
// with New; it is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	syncs        *prometheus.CounterVec
	syncErrors   *prometheus.CounterVec
	syncDuration *prometheus.HistogramVec

	// Named after kube-state-metrics' kube_deployment_* series, so that the
	// same queries work on dockctl and on a cluster.
	desired   *prometheus.GaugeVec
	actual    *prometheus.GaugeVec
	ready     *prometheus.GaugeVec
	available *prometheus.GaugeVec

	reconnects prometheus.Counter

	// The instance network (docs/design.md §10): a name conflict, and how
	// probes reach pods (one series per mode, 1 for the current one).
	networkConflict prometheus.Gauge
	probeMode       *prometheus.GaugeVec

	docker    *dockerMetrics
	queue     queueProvider
	manifests *manifestsMetrics

	// forgotten holds deployments whose series were dropped: a SyncDone that
	// follows DeploymentForgotten (the controller reports the sync after the
	// deployment's fate) must not bring them back. mu also serialises the
	// drop with the updates of the same deployment's series.
	mu        sync.Mutex
	forgotten map[deploymentID]bool
}

// deploymentID names a deployment's series: deployment and namespace
// labels, as kube-state-metrics labels its kube_deployment_* series.
type deploymentID struct{ namespace, name string }

// The controller feeds a *Metrics through these seams.
var (
	_ reconciler.Observer        = (*Metrics)(nil)
	_ reconciler.NetworkObserver = (*Metrics)(nil)
	_ workqueue.MetricsProvider  = queueProvider{}
)

// New returns Metrics registered on a fresh registry, together with the Go
// runtime and process collectors (CPU seconds, RSS, open files), which the
// benchmark reads to measure an idle controller's cost.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	// The namespace label came with namespaces; a query that selects on
	// deployment alone keeps working.
	deployment := []string{"deployment", "namespace"}
	m := &Metrics{
		reg: reg,
		syncs: f.counterVec("syncs_total",
			"Deployment syncs (observe, plan, execute), by outcome.", "deployment", "namespace", "result"),
		syncErrors: f.counterVec("sync_errors_total",
			"Deployment syncs that failed and were requeued with backoff; the same as syncs_total{result=\"error\"}, kept separate so that alerts need no label filter.", deployment...),
		syncDuration: f.histogramVec("sync_duration_seconds",
			"Time one deployment sync took, Docker calls included.", durationBuckets, deployment...),
		desired: f.gaugeVec("deployment_spec_replicas",
			"Replicas the deployment declares.", deployment...),
		actual: f.gaugeVec("deployment_status_replicas",
			"Containers the deployment has, of any revision, as last observed.", deployment...),
		ready: f.gaugeVec("deployment_status_replicas_ready",
			"Containers of the deployment that are running and healthy (or have no health check), as last observed.", deployment...),
		available: f.gaugeVec("deployment_status_replicas_available",
			"Containers of the deployment ready for at least minReadySeconds, as last observed.", deployment...),
		reconnects: f.counter("docker_event_stream_reconnects_total",
			"Times the Docker event stream broke and was re-established; each one triggers a full resync."),
		networkConflict: f.gauge("instance_network_conflict",
			"1 when a Docker network has the instance network's name without this instance's label: it is not used, and pods are created without it."),
		probeMode: f.gaugeVec("probe_mode",
			"How httpGet and tcpSocket probes reach pods: 1 for the current mode (direct from the controller, relay through the DNS helper, or undecided until the helper runs).", "mode"),
		docker:    newDockerMetrics(f),
		queue:     newQueueProvider(f),
		manifests: newManifestsMetrics(f),
		forgotten: map[deploymentID]bool{},
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Registry returns the registry the metrics live on, for tests and for
// callers that add their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SyncDone implements reconciler.Observer.
func (m *Metrics) SyncDone(namespace, deployment string, took time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forgotten[deploymentID{namespace, deployment}] {
		return
	}
	result := ResultSuccess
	if err != nil {
		result = ResultError
		m.syncErrors.WithLabelValues(deployment, namespace).Inc()
	}
	m.syncs.WithLabelValues(deployment, namespace, result).Inc()
	m.syncDuration.WithLabelValues(deployment, namespace).Observe(took.Seconds())
}

// DeploymentObserved implements reconciler.Observer. It also revives a
// deployment forgotten earlier: a name can be deleted and applied again.
func (m *Metrics) DeploymentObserved(namespace, deployment string, desired, actual, ready, available int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.forgotten, deploymentID{namespace, deployment})
	m.desired.WithLabelValues(deployment, namespace).Set(float64(desired))
	m.actual.WithLabelValues(deployment, namespace).Set(float64(actual))
	m.ready.WithLabelValues(deployment, namespace).Set(float64(ready))
	m.available.WithLabelValues(deployment, namespace).Set(float64(available))
}

// DeploymentForgotten implements reconciler.Observer: every series of the
// deployment goes, counters included, as kube-state-metrics drops a deleted
// object's series; a stale gauge would claim replicas that no longer exist.
// A deployment of the same name in another namespace keeps its own.
func (m *Metrics) DeploymentForgotten(namespace, deployment string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgotten[deploymentID{namespace, deployment}] = true
	match := prometheus.Labels{"deployment": deployment, "namespace": namespace}
	m.syncs.DeletePartialMatch(match)
	m.syncErrors.DeletePartialMatch(match)
	m.syncDuration.DeletePartialMatch(match)
	m.desired.DeletePartialMatch(match)
	m.actual.DeletePartialMatch(match)
	m.ready.DeletePartialMatch(match)
	m.available.DeletePartialMatch(match)
}

// EventStreamGap implements reconciler.Observer.
func (m *Metrics) EventStreamGap() { m.reconnects.Inc() }

// InstanceNetworkConflict implements reconciler.NetworkObserver.
func (m *Metrics) InstanceNetworkConflict(conflict bool) {
	v := 0.0
	if conflict {
		v = 1
	}
	m.networkConflict.Set(v)
}

// ProbeMode implements reconciler.NetworkObserver.
func (m *Metrics) ProbeMode(mode string) {
	for _, md := range []string{reconciler.ProbeDirect, reconciler.ProbeRelay, reconciler.ProbeUndecided} {
		v := 0.0
		if md == mode {
			v = 1
		}
		m.probeMode.WithLabelValues(md).Set(v)
	}
}

// QueueProvider returns the work-queue metrics provider, for
// workqueue.SetProvider or a queue config's MetricsProvider. Its series are
// dockctl_workqueue_* with the queue's name in the "name" label. Note that
// workqueue.SetProvider is process-global, honours only its first call, and
// affects only queues created after it: call it before reconciler.New.
func (m *Metrics) QueueProvider() workqueue.MetricsProvider { return m.queue }

// queueProvider implements workqueue.MetricsProvider with the series
// Kubernetes' own controllers export, prefixed dockctl_.
type queueProvider struct {
	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

func newQueueProvider(f factory) queueProvider {
	return queueProvider{
		depth: f.gaugeVec("workqueue_depth",
			"Items waiting in the work queue.", "name"),
		adds: f.counterVec("workqueue_adds_total",
			"Items added to the work queue; adding one that is already waiting counts nothing (the queue de-duplicates).", "name"),
		latency: f.histogramVec("workqueue_queue_duration_seconds",
			"Time an item waits in the work queue before a worker takes it.", queueBuckets, "name"),
		workDuration: f.histogramVec("workqueue_work_duration_seconds",
			"Time a worker spends on an item.", queueBuckets, "name"),
		unfinished: f.gaugeVec("workqueue_unfinished_work_seconds",
			"Seconds of work in progress not yet observed by work_duration; a large value means stuck workers.", "name"),
		longestRunning: f.gaugeVec("workqueue_longest_running_processor_seconds",
			"How long the longest-running worker has been on its item.", "name"),
		retries: f.counterVec("workqueue_retries_total",
			"Items requeued with backoff after a failed sync.", "name"),
	}
}

func (q queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}

func (q queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}

func (q queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}

func (q queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.workDuration.WithLabelValues(name)
}

func (q queueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}

func (q queueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longestRunning.WithLabelValues(name)
}

func (q queueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}

// factory creates metrics named dockctl_* and registers them on reg.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
