package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/store"
)

// scrapeHTTP reads /metrics over the network, the way the benchmark harness
// does.
func scrapeHTTP(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", resp.StatusCode, body)
	}
	return parseExposition(t, string(body))
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gaugesAre reports whether a scrape shows the deployment's four gauges at
// the given values.
func gaugesAre(got map[string]float64, deployment string, desired, actual, ready, available float64) bool {
	for name, want := range map[string]float64{
		"dockctl_deployment_spec_replicas":             desired,
		"dockctl_deployment_status_replicas":           actual,
		"dockctl_deployment_status_replicas_ready":     ready,
		"dockctl_deployment_status_replicas_available": available,
	} {
		v, ok := got[fmt.Sprintf(`%s{deployment=%q,namespace="default"}`, name, deployment)]
		if !ok || v != want {
			return false
		}
	}
	return true
}

func hasDeploymentSeries(got map[string]float64, deployment string) bool {
	label := fmt.Sprintf("deployment=%q", deployment)
	for k := range got {
		if strings.Contains(k, "{"+label) || strings.Contains(k, ","+label) {
			return true
		}
	}
	return false
}

// A real controller, driven by the in-memory engine through the decorator
// and reporting to Metrics, is scraped over HTTP: the figures must be what
// happened to the engine.
func TestControllerMetricsEndToEnd(t *testing.T) {
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	engine := dockerfake.New(testImage)
	m := New()
	ctrl := reconciler.New(m.InstrumentDocker(engine), st, reconciler.Options{
		Instance:     "i",
		ResyncPeriod: time.Hour, // only events drive syncs: the counts below are exact
		Observer:     m,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})

	ctx, cancel := context.WithCancel(context.Background())
	addr, served, err := Serve(ctx, "127.0.0.1:0", m.Handler(ctrl.Ready))
	if err != nil {
		t.Fatal(err)
	}
	// The controller has not talked to Docker yet.
	if code := getStatus(t, "http://"+addr+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the first list: %d, want 503", code)
	}

	if _, err := st.Apply(store.Deployments([]*manifests.Deployment{testDeployment("web", 3), testDeployment("db", 1)}...), store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- ctrl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	}()

	// Status is computed from the observation that opens a sync, so the
	// gauges converge on the sync that follows the containers' start events
	// (at least two successful syncs), which reports itself after its counts.
	var got map[string]float64
	waitFor(t, "web 3/3 and db 1/1 in the gauges after two syncs each", func() bool {
		got = scrapeHTTP(t, addr)
		return gaugesAre(got, "web", 3, 3, 3, 3) && gaugesAre(got, "db", 1, 1, 1, 1) &&
			got[`dockctl_syncs_total{deployment="web",namespace="default",result="success"}`] >= 2 &&
			got[`dockctl_syncs_total{deployment="db",namespace="default",result="success"}`] >= 2
	})
	checkSeries(t, got, map[string]float64{
		`dockctl_docker_api_calls_total{operation="create"}`:  4, // one per replica, no retry
		`dockctl_docker_api_calls_total{operation="start"}`:   4,
		`dockctl_docker_api_calls_total{operation="remove"}`:  0,
		`dockctl_docker_api_calls_total{operation="unpause"}`: 0,
		`dockctl_docker_api_errors_total{operation="create"}`: 0,
	}, []string{
		`dockctl_syncs_total{deployment="web",namespace="default",result="error"}`,
		`dockctl_sync_errors_total{deployment="web",namespace="default"}`,
	})
	if got[`dockctl_docker_api_calls_total{operation="list"}`] < 1 {
		t.Error("no list call counted")
	}
	if calls := m.DockerCalls(); calls[OpCreate] != 4 || uint64(engine.Calls()["create"]) != calls[OpCreate] {
		t.Errorf("DockerCalls() = %v, engine saw %v", calls, engine.Calls())
	}
	if code := getStatus(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after convergence: %d, want 200", code)
	}

	// docker rm -f of one replica: the repair is one more create and start.
	var victim string
	for _, c := range engine.Snapshot() {
		if c.Deployment == "web" {
			victim = c.ID
			break
		}
	}
	if err := engine.Remove(victim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the repair to be counted and web back to 3/3", func() bool {
		got = scrapeHTTP(t, addr)
		return got[`dockctl_docker_api_calls_total{operation="create"}`] == 5 && gaugesAre(got, "web", 3, 3, 3, 3)
	})

	// Deleting a deployment removes its containers, then its series.
	if err := st.Delete("", "db"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db's series to disappear", func() bool {
		got = scrapeHTTP(t, addr)
		return !hasDeploymentSeries(got, "db")
	})
	checkSeries(t, got, map[string]float64{
		`dockctl_docker_api_calls_total{operation="remove"}`: 1,
	}, nil)
	// web's series stay; its gauges are read as they settle, since a
	// status write of web's own (the repair above) may land in between.
	if !hasDeploymentSeries(got, "web") {
		t.Error("deleting db removed web's series")
	}
	waitFor(t, "web's gauges at 3/3 beside db's deletion", func() bool {
		return gaugesAre(scrapeHTTP(t, addr), "web", 3, 3, 3, 3)
	})
	for _, c := range engine.Snapshot() {
		if c.Deployment == "db" {
			t.Errorf("db container %s survived deletion", c.Name)
		}
		if c.State != dockerx.StateRunning {
			t.Errorf("container %s is %s", c.Name, c.State)
		}
	}
}
