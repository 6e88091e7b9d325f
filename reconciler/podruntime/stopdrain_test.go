package podruntime_test

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/reconciler/internal/podtest"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// TestStopDeadlineCoversTheDrain: the kill deadline a stop records (what a
// restarted controller resumes from) includes the drain's bound.
func TestStopDeadlineCoversTheDrain(t *testing.T) {
	tests := []struct {
		grace time.Duration
		drain bool
		want  time.Duration
	}{
		{30 * time.Second, true, 40 * time.Second},
		{3 * time.Second, true, 6 * time.Second},
		{30 * time.Second, false, 30 * time.Second},
	}
	for _, tt := range tests {
		op := podruntime.StopRequest{Kind: podruntime.StopRemove, Grace: tt.grace}
		if tt.drain {
			op.Drain = &podruntime.DrainRef{Namespace: "default", Pod: "p"}
		}
		if got := podruntime.StopDeadline(op, podtest.T0).Sub(podtest.T0); got != tt.want {
			t.Errorf("grace %v drain %v: deadline in %v, want %v", tt.grace, tt.drain, got, tt.want)
		}
	}
}
