package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// Watch reports changes to the deployment records: it sends the name of a
// deployment whose record was created, replaced or removed, and "" when
// events may have been lost (watcher error, queue overflow), meaning
// "resync everything". It does not de-duplicate: the consumer's work queue
// does. The channel is closed when ctx ends.
//
// Because records are replaced by rename, one write shows up as a single
// create event for the final name; the temporary files are ignored.
func (s *Store) Watch(ctx context.Context) (<-chan string, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching state directory %s: %w", s.dir, err)
	}
	if err := w.Add(filepath.Join(s.dir, deploymentsDir)); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watching state directory %s: %w", s.dir, err)
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		defer func() { _ = w.Close() }()
		send := func(name string) bool {
			select {
			case out <- name:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if name, ok := recordName(ev.Name); ok && !send(name) {
					return
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				if !send("") {
					return
				}
			}
		}
	}()
	return out, nil
}

// recordName maps a path in deployments/ to its deployment name, rejecting
// temporary and foreign files.
func recordName(path string) (string, bool) {
	base := filepath.Base(path)
	if strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".json") {
		return "", false
	}
	name := strings.TrimSuffix(base, ".json")
	if checkName(name) != nil {
		return "", false
	}
	return name, true
}
