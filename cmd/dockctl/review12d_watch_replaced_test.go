package main

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Review of get -w (issue 12 item 2): each test here proves a defect.

// kubectl get -w prints every watch event: an object deleted and created
// again under the same name (a configmap deleted and re-applied, a pod
// recreated by its controller, `delete -f x.yaml && apply -f x.yaml`) is
// a DELETED then an ADDED, each a row. dockctl's watch compares the cells
// it printed with the durations of AGE blanked out, by name: when both
// happen between two of its listings (they are 150 ms apart in a burst)
// and the new object's cells read the same, it prints nothing at all,
// with or without --output-watch-events. The object's identity (its
// creation time, or a uid) is not part of what tells a change.
func TestReview12dWatchPrintsAnObjectReplacedBetweenListings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := newPrinter(printFlags{output: "table"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var mu sync.Mutex
		pods := []fakePod{{"default", "web-a", "Running", 0, start.Add(-5 * time.Minute)}}
		list := func() (*listing, error) {
			mu.Lock()
			defer mu.Unlock()
			return &listing{t: podTable(pods)}, nil
		}
		var out syncBuffer
		changes := make(chan struct{}, 1)
		w := &watchLoop{list: list, changes: changes, debounce: watchDebounce, resync: watchResync,
			out: &out, printer: &watchPrinter{p: p, events: true}, warn: func(err error) { t.Errorf("listing: %v", err) }}
		first, _ := list()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.run(ctx, first) }()
		synctest.Wait()
		before := out.String()
		// web-a is deleted and a new web-a created, both reported (the
		// sources' signals fold into one pending change).
		mu.Lock()
		pods = []fakePod{{"default", "web-a", "Running", 0, time.Now()}}
		mu.Unlock()
		changes <- struct{}{}
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		after := strings.TrimPrefix(out.String(), before)
		if !regexp.MustCompile(`(?m)^DELETED +web-a `).MatchString(after) || !regexp.MustCompile(`(?m)^ADDED +web-a `).MatchString(after) {
			t.Errorf("web-a deleted and created again: printed %q, want a DELETED row and an ADDED row (kubectl's two watch events)", after)
		}
	})
}
