package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// manifestsMetrics are the series of the manifests directories
// (`dockctl controller --manifests`), one per path: few, and fixed by the
// flags, so the path is a safe label.
type manifestsMetrics struct {
	syncs       *prometheus.CounterVec
	errors      *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
}

func newManifestsMetrics(f factory) *manifestsMetrics {
	return &manifestsMetrics{
		syncs: f.counterVec("manifests_syncs_total",
			"Reads and applies of a manifests directory, by outcome (ok, error: an invalid file, a conflict, an empty or unreadable directory, a refused apply).", "path", "result"),
		errors: f.counterVec("manifests_sync_errors_total",
			"Syncs of a manifests directory that did not apply it whole; the same as manifests_syncs_total{result=\"error\"}, kept separate so that alerts need no label filter.", "path"),
		lastSuccess: f.gaugeVec("manifests_last_success_timestamp_seconds",
			"Unix time of the last sync that applied the manifests directory whole; alert on time() minus it.", "path"),
	}
}

// ManifestsSynced records one sync of manifests path (sourcedir.Metrics).
func (m *Metrics) ManifestsSynced(path string, ok bool, at time.Time) {
	if ok {
		m.manifests.syncs.WithLabelValues(path, "ok").Inc()
		m.manifests.lastSuccess.WithLabelValues(path).Set(float64(at.UnixNano()) / 1e9)
		return
	}
	m.manifests.syncs.WithLabelValues(path, "error").Inc()
	m.manifests.errors.WithLabelValues(path).Inc()
}
