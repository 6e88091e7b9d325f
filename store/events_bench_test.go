package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkRecordEvents measures one flush of the controller's recorder
// into a namespace that already holds MaxEventsPerNamespace events (the
// steady state of a busy namespace: each write reads, merges, bounds and
// rewrites the whole file), and reports the file's size: the README's
// storage figures come from here.
//
//	go test ./store -run '^$' -bench RecordEvents -benchtime 20x
func BenchmarkRecordEvents(b *testing.B) {
	for _, tc := range []struct {
		name string
		msg  string
	}{
		// The typical message: "Started container app in pod web-…".
		{"msg56", strings.Repeat("m", 56)},
		{"msg1024", strings.Repeat("m", MaxEventMessage)},
		// The worst case: every byte escaped by encoding/json (\u003c).
		{"msg1024escaped", strings.Repeat("<", MaxEventMessage)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			full := make([]Event, 0, MaxEventsPerNamespace)
			for i := range MaxEventsPerNamespace {
				// A pod each, so that nothing is counted or combined.
				full = append(full, ev("Pod", "", fmt.Sprintf("web-5d8f9c7b6a-%d", i), EventNormal, "Started", tc.msg, t0))
			}
			if err := s.RecordEvents(full); err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				// A new object each time: one row added, the oldest dropped.
				e := ev("Pod", "", fmt.Sprintf("api-7c9d8e6f5a-%d", i), EventNormal, "Started", tc.msg, t0)
				if err := s.RecordEvents([]Event{e}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			fi, err := os.Stat(filepath.Join(s.Dir(), eventsPath("")))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()), "file-bytes")
		})
	}
}
