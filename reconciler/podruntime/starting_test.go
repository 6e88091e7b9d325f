package podruntime

import "testing"

// Starting counts the pods in flight across the runtimes sharing it and
// tells when the last one ended, once per time the count falls to zero;
// a nil one counts nothing.
func TestStartingCountsPodsInFlight(t *testing.T) {
	tests := []struct {
		name     string
		batches  []int // pods per begin, in order
		endOrder []int // indexes of batches, ended in this order
		// anyAfter[i]: Any after the i-th end; wantIdle: idle calls.
		anyAfter []bool
		wantIdle int
	}{
		{"one batch", []int{3}, []int{0}, []bool{false}, 1},
		{"two runtimes, ended in turn", []int{2, 1}, []int{0, 1}, []bool{true, false}, 1},
		{"an empty batch counts nothing", []int{0, 1}, []int{1, 0}, []bool{false, false}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idle := 0
			s := NewStarting(func() { idle++ })
			var ends []func()
			for _, n := range tt.batches {
				ends = append(ends, s.begin(n))
			}
			if !s.Any() {
				t.Fatal("no pod in flight after the begins")
			}
			for i, b := range tt.endOrder {
				ends[b]()
				ends[b]() // once only
				if got := s.Any(); got != tt.anyAfter[i] {
					t.Errorf("after end %d: Any %v, want %v", i, got, tt.anyAfter[i])
				}
			}
			if idle != tt.wantIdle {
				t.Errorf("idle told %d times, want %d", idle, tt.wantIdle)
			}
		})
	}
	var none *Starting
	none.begin(2)()
	if none.Any() {
		t.Error("a nil Starting counted a pod")
	}
}
