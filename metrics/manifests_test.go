package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestManifestsSynced(t *testing.T) {
	m := New()
	at := time.Unix(1700000000, 0)
	steps := []struct {
		ok                bool
		syncsOK, syncsErr float64
		errors            float64
		lastSuccess       float64
	}{
		{ok: true, syncsOK: 1, lastSuccess: 1700000000},
		{ok: false, syncsOK: 1, syncsErr: 1, errors: 1, lastSuccess: 1700000000},
		{ok: true, syncsOK: 2, syncsErr: 1, errors: 1, lastSuccess: 1700000060},
	}
	for i, s := range steps {
		m.ManifestsSynced("/srv/k8s", s.ok, at.Add(time.Duration(i)*30*time.Second))
		got := []float64{
			testutil.ToFloat64(m.manifests.syncs.WithLabelValues("/srv/k8s", "ok")),
			testutil.ToFloat64(m.manifests.syncs.WithLabelValues("/srv/k8s", "error")),
			testutil.ToFloat64(m.manifests.errors.WithLabelValues("/srv/k8s")),
			testutil.ToFloat64(m.manifests.lastSuccess.WithLabelValues("/srv/k8s")),
		}
		want := []float64{s.syncsOK, s.syncsErr, s.errors, s.lastSuccess}
		for j := range got {
			if got[j] != want[j] {
				t.Errorf("step %d: series %d = %v, want %v", i, j, got[j], want[j])
			}
		}
	}
}
