package metrics

import (
	"bufio"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"

	"github.com/dockctl/dockctl/reconciler"
)

// scrape reads /metrics through the handler, as Prometheus or the benchmark
// harness would, and returns every sample keyed by its series as written in
// the exposition text: name{label="value",...}, labels sorted by name.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", rec.Code, rec.Body)
	}
	return parseExposition(t, rec.Body.String())
}

func parseExposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("malformed sample line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// checkSeries asserts that every series in want is present with its value and
// that no series in absent is present.
func checkSeries(t *testing.T, got map[string]float64, want map[string]float64, absent []string) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("series %s missing", k)
			continue
		}
		if g != v {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
	for _, k := range absent {
		if _, ok := got[k]; ok {
			t.Errorf("series %s present, want absent", k)
		}
	}
}

func TestObserver(t *testing.T) {
	failed := errors.New("list containers: daemon down")
	tests := []struct {
		name   string
		do     func(m *Metrics)
		want   map[string]float64
		absent []string
	}{
		{
			name: "successful sync",
			do:   func(m *Metrics) { m.SyncDone("default", "web", 30*time.Millisecond, nil) },
			want: map[string]float64{
				`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`:            1,
				`dockctl_sync_duration_seconds_count{deployment="web",namespace="default"}`:             1,
				`dockctl_sync_duration_seconds_sum{deployment="web",namespace="default"}`:               0.03,
				`dockctl_sync_duration_seconds_bucket{deployment="web",namespace="default",le="0.025"}`: 0,
				`dockctl_sync_duration_seconds_bucket{deployment="web",namespace="default",le="0.05"}`:  1,
				`dockctl_docker_event_stream_reconnects_total`:                                          0,
			},
			absent: []string{
				`dockctl_syncs_total{deployment="web",namespace="default",result="error"}`,
				`dockctl_sync_errors_total{deployment="web",namespace="default"}`,
			},
		},
		{
			name: "failed sync counts as a sync and as an error",
			do: func(m *Metrics) {
				m.SyncDone("default", "web", time.Millisecond, nil)
				m.SyncDone("default", "web", time.Millisecond, failed)
				m.SyncDone("default", "web", time.Millisecond, failed)
			},
			want: map[string]float64{
				`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`: 1,
				`dockctl_syncs_total{deployment="web",namespace="default",result="error"}`:   2,
				`dockctl_sync_errors_total{deployment="web",namespace="default"}`:            2,
				`dockctl_sync_duration_seconds_count{deployment="web",namespace="default"}`:  3,
			},
		},
		{
			name: "observed counts set the gauges, the latest wins",
			do: func(m *Metrics) {
				m.DeploymentObserved("default", "web", 3, 1, 0, 0)
				m.DeploymentObserved("default", "web", 3, 4, 3, 2)
				m.DeploymentObserved("default", "db", 1, 1, 1, 1)
			},
			want: map[string]float64{
				`dockctl_deployment_spec_replicas{deployment="web",namespace="default"}`:             3,
				`dockctl_deployment_status_replicas{deployment="web",namespace="default"}`:           4,
				`dockctl_deployment_status_replicas_ready{deployment="web",namespace="default"}`:     3,
				`dockctl_deployment_status_replicas_available{deployment="web",namespace="default"}`: 2,
				`dockctl_deployment_spec_replicas{deployment="db",namespace="default"}`:              1,
			},
		},
		{
			name: "forgetting drops every series of that deployment only",
			do: func(m *Metrics) {
				for _, d := range []string{"web", "db"} {
					m.DeploymentObserved("default", d, 2, 2, 2, 2)
					m.SyncDone("default", d, time.Millisecond, nil)
					m.SyncDone("default", d, time.Millisecond, failed)
				}
				m.DeploymentForgotten("default", "web")
			},
			want: map[string]float64{
				`dockctl_deployment_spec_replicas{deployment="db",namespace="default"}`:     2,
				`dockctl_syncs_total{deployment="db",namespace="default",result="success"}`: 1,
				`dockctl_sync_errors_total{deployment="db",namespace="default"}`:            1,
			},
			absent: []string{
				`dockctl_deployment_spec_replicas{deployment="web",namespace="default"}`,
				`dockctl_deployment_status_replicas{deployment="web",namespace="default"}`,
				`dockctl_deployment_status_replicas_ready{deployment="web",namespace="default"}`,
				`dockctl_deployment_status_replicas_available{deployment="web",namespace="default"}`,
				`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`,
				`dockctl_syncs_total{deployment="web",namespace="default",result="error"}`,
				`dockctl_sync_errors_total{deployment="web",namespace="default"}`,
				`dockctl_sync_duration_seconds_count{deployment="web",namespace="default"}`,
			},
		},
		{
			// The controller reports a sync after the deployment's fate is
			// known, so the sync that forgot it reports after forgetting.
			name: "a sync reported after forgetting does not revive the series",
			do: func(m *Metrics) {
				m.DeploymentObserved("default", "web", 1, 1, 1, 1)
				m.SyncDone("default", "web", time.Millisecond, nil)
				m.DeploymentForgotten("default", "web")
				m.SyncDone("default", "web", time.Millisecond, nil)
			},
			absent: []string{
				`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`,
				`dockctl_sync_duration_seconds_count{deployment="web",namespace="default"}`,
			},
		},
		{
			name: "a deployment applied again after deletion is counted afresh",
			do: func(m *Metrics) {
				m.DeploymentObserved("default", "web", 5, 5, 5, 5)
				m.SyncDone("default", "web", time.Millisecond, nil)
				m.DeploymentForgotten("default", "web")
				m.SyncDone("default", "web", time.Millisecond, nil)
				m.DeploymentObserved("default", "web", 2, 0, 0, 0)
				m.SyncDone("default", "web", time.Millisecond, nil)
			},
			want: map[string]float64{
				`dockctl_deployment_spec_replicas{deployment="web",namespace="default"}`:     2,
				`dockctl_deployment_status_replicas{deployment="web",namespace="default"}`:   0,
				`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`: 1,
				`dockctl_sync_duration_seconds_count{deployment="web",namespace="default"}`:  1,
			},
		},
		{
			name: "event stream gaps are counted",
			do: func(m *Metrics) {
				m.EventStreamGap()
				m.EventStreamGap()
			},
			want: map[string]float64{`dockctl_docker_event_stream_reconnects_total`: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			tt.do(m)
			checkSeries(t, scrape(t, m), tt.want, tt.absent)
		})
	}
}

// The gauges hold one series per known deployment and none once forgotten,
// which is what keeps the label cardinality bounded.
func TestObserverSeriesCount(t *testing.T) {
	m := New()
	for _, d := range []string{"a", "b", "c"} {
		m.DeploymentObserved("default", d, 1, 1, 1, 1)
	}
	m.DeploymentForgotten("default", "b")
	for _, g := range []struct {
		name string
		n    int
	}{
		{"desired", testutil.CollectAndCount(m.desired)},
		{"actual", testutil.CollectAndCount(m.actual)},
		{"ready", testutil.CollectAndCount(m.ready)},
		{"available", testutil.CollectAndCount(m.available)},
	} {
		if g.n != 2 {
			t.Errorf("%s gauge has %d series, want 2", g.name, g.n)
		}
	}
	if v := testutil.ToFloat64(m.available.WithLabelValues("c", "default")); v != 1 {
		t.Errorf("available{c} = %v, want 1", v)
	}
}

// The provider is driven by a real client-go work queue, given through the
// queue's config rather than workqueue.SetProvider: that one is process-wide
// and honours only its first call, which tests cannot share.
func TestQueueProvider(t *testing.T) {
	m := New()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		// Retries wait an hour: the retried item stays out of the depth
		// count for the whole test.
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployments", MetricsProvider: m.QueueProvider()},
	)
	defer q.ShutDown()

	q.Add("a")
	q.Add("b")
	q.Add("a") // de-duplicated: neither an add nor depth
	checkSeries(t, scrape(t, m), map[string]float64{
		`dockctl_workqueue_depth{name="deployments"}`:      2,
		`dockctl_workqueue_adds_total{name="deployments"}`: 2,
	}, nil)

	item, _ := q.Get()
	// The longest-running gauge is refreshed by the queue every 500 ms while
	// a worker holds an item.
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.queue.longestRunning.WithLabelValues("deployments")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("longest running processor never reported while an item was held")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v := testutil.ToFloat64(m.queue.unfinished.WithLabelValues("deployments")); v <= 0 {
		t.Errorf("unfinished work seconds = %v while an item is held, want > 0", v)
	}
	q.AddRateLimited(item) // a failed sync's retry: counted now, queued in an hour
	q.Done(item)

	checkSeries(t, scrape(t, m), map[string]float64{
		`dockctl_workqueue_depth{name="deployments"}`:                        1,
		`dockctl_workqueue_queue_duration_seconds_count{name="deployments"}`: 1,
		`dockctl_workqueue_work_duration_seconds_count{name="deployments"}`:  1,
		`dockctl_workqueue_retries_total{name="deployments"}`:                1,
	}, nil)
}

// Deployments of one name in two namespaces have series of their own, and
// forgetting one keeps the other's.
func TestObserverNamespaces(t *testing.T) {
	m := New()
	m.DeploymentObserved("default", "web", 3, 3, 3, 3)
	m.DeploymentObserved("team", "web", 1, 1, 0, 0)
	m.SyncDone("team", "web", time.Millisecond, nil)
	m.SyncDone("default", "web", time.Millisecond, nil)
	m.DeploymentForgotten("team", "web")
	m.SyncDone("team", "web", time.Millisecond, nil) // after its fate: no revival
	got := scrape(t, m)
	for series, want := range map[string]float64{
		`dockctl_deployment_spec_replicas{deployment="web",namespace="default"}`:         3,
		`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`:     1,
		`dockctl_deployment_status_replicas_ready{deployment="web",namespace="default"}`: 3,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	for k := range got {
		if strings.Contains(k, `namespace="team"`) {
			t.Errorf("series %s of the forgotten team/web is still there", k)
		}
	}
}

// The instance network's conflict and the probe mode are one series each
// per state, the current one set: a dashboard shows the mode, and an alert
// fires on a conflict.
func TestNetworkObserver(t *testing.T) {
	m := New()
	steps := []struct {
		act  func()
		want map[string]float64
	}{
		{func() { m.ProbeMode(reconciler.ProbeUndecided) }, map[string]float64{
			`dockctl_probe_mode{mode="undecided"}`: 1, `dockctl_probe_mode{mode="direct"}`: 0, `dockctl_probe_mode{mode="relay"}`: 0,
			"dockctl_instance_network_conflict": 0}},
		{func() { m.ProbeMode(reconciler.ProbeRelay) }, map[string]float64{
			`dockctl_probe_mode{mode="undecided"}`: 0, `dockctl_probe_mode{mode="direct"}`: 0, `dockctl_probe_mode{mode="relay"}`: 1}},
		{func() { m.InstanceNetworkConflict(true) }, map[string]float64{"dockctl_instance_network_conflict": 1}},
		{func() { m.InstanceNetworkConflict(false) }, map[string]float64{"dockctl_instance_network_conflict": 0}},
	}
	for i, s := range steps {
		s.act()
		got := scrape(t, m)
		for k, v := range s.want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("step %d: %s = %v (present %v), want %v", i, k, g, ok, v)
			}
		}
	}
}
