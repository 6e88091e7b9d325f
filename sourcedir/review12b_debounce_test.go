package sourcedir

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Run's debounce restarts on every event and has no upper bound: while
// anything keeps changing where it watches — the directory holding the
// path is watched too (--manifests /home/me/k8s watches /home/me; a log
// or a cache written there every few hundred milliseconds) — no sync
// runs, and a change to the manifests waits for the resync period (2m by
// default) instead of "within a second". A debounce needs a maximum
// delay.
func TestReview12bDebounceStarvedByUnrelatedChurn(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	image := running(t, dir) // resync an hour away
	waitFor(t, "web:1", image)

	// Something writes a file beside the directory, every 100ms.
	ctx, cancel := context.WithCancel(context.Background())
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = os.WriteFile(filepath.Join(root, "app.log"), []byte(time.Now().String()), 0o644)
			}
		}
	}()
	defer func() { cancel(); <-churned }()

	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:2"))
	deadline := time.Now().Add(15 * time.Second)
	for image() != "web:2" {
		if time.Now().After(deadline) {
			t.Fatalf("the change of web.yaml not applied after 15s while a file beside the directory keeps changing (image %q)", image())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
