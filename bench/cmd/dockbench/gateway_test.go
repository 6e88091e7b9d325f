package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// firstAnswer waits through failed answers for the first 200, and gives
// up with the last failure once its time is over.
func TestFirstAnswerWaitsForTheFirst200(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int64 // answers 503 before the first 200; -1: never 200
		wantErr  string
	}{
		{name: "answers at once", failures: 0},
		{name: "answers after three 503s", failures: 3},
		{name: "never answers 200", failures: -1, wantErr: "HTTP 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen atomic.Int64
			srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
				if n := seen.Add(1); tc.failures < 0 || n <= tc.failures {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			})
			timeout := time.Minute
			if tc.wantErr != "" {
				timeout = 200 * time.Millisecond
			}
			took, err := firstAnswer(context.Background(), strings.TrimPrefix(srv.URL, "http://"), timeout)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("firstAnswer = %s, %v; want an error naming %q", took, err, tc.wantErr)
				}
				return
			}
			if err != nil || took <= 0 {
				t.Fatalf("firstAnswer = %s, %v; want a positive time", took, err)
			}
			if got := seen.Load(); got != tc.failures+1 {
				t.Errorf("%d requests, want %d (each 503, then the 200)", got, tc.failures+1)
			}
		})
	}
}
