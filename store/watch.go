package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/dockctl/dockctl/manifests"
)

// Watch reports changes to the records of every kind, in every namespace:
// it sends the key of an object whose record was created, replaced or
// removed — Key(ns, name) ("namespace/name") for a deployment,
// ServiceKey(ns, name) ("service:namespace/name") for a Service,
// NamespaceKey(name) ("namespace:name") for a Namespace,
// ConfigMapKey ("configmap:namespace/name"), SecretKey
// ("secret:namespace/name"), ClaimKey ("pvc:namespace/name") and, for the
// pod-deletion requests of a deployment, PodDeletionKey
// ("pod-deletion:namespace/name");
// ParseWatchKey tells them apart — and "" when events may have been lost (watcher error,
// queue overflow), meaning "resync everything". The controller's status
// files are not watched (WatchStatus reports them): the controller writes
// them, and must not wake itself up. It does not de-duplicate: the
// consumer's work queue does. The channel is closed when ctx ends.
//
// Because records are replaced by rename, one write shows up as a single
// create event for the final name; the temporary files are ignored. The
// directories of a namespace created later are watched as they appear,
// and the records already in them when the watch begins are sent, so a
// record written between a directory's creation and its watch is not
// missed.
func (s *Store) Watch(ctx context.Context) (<-chan string, error) {
	return s.watch(ctx, recordWatch)
}

// recordWatch is what Watch covers: the record directories.
var recordWatch = watchSpec{
	top:     append(kindDirs(), namespacesDir, podDeletionsDir),
	subdirs: watchedSubdirs,
	key:     watchKey,
}

// WatchStatus reports changes to what the controller writes for `get` to
// show, which Watch leaves out: it sends Key(ns, name) when the status of
// a deployment changed, ServiceKey(ns, name) when a Service's did,
// ManifestsStatusKey when the report on the manifests directories did,
// and "" when events may have been lost. As Watch, it watches the
// directories (fsnotify) and never polls, follows namespaces created
// later, and closes the channel when ctx ends. WriteStatus and
// WriteServiceStatus write nothing when nothing changed, so an idle
// controller sends nothing.
func (s *Store) WatchStatus(ctx context.Context) (<-chan string, error) {
	return s.watch(ctx, statusWatch)
}

// ManifestsStatusKey is the key WatchStatus sends for manifests.json.
const ManifestsStatusKey = "manifests:"

// statusWatch is what WatchStatus covers: the state directory itself (for
// manifests.json), the status directories, and namespaces/ to see new
// namespaces' directories appear.
var statusWatch = watchSpec{
	top:     []string{"", statusDir, serviceStatusDir, workloadStatusDir, namespacesDir},
	subdirs: []string{statusDir, serviceStatusDir, workloadStatusDir},
	key:     statusKey,
}

// statusKey maps the path of a controller-written file to its key.
func statusKey(rel string) (string, bool) {
	if rel == sourcesFile {
		return ManifestsStatusKey, true
	}
	parts := strings.Split(rel, string(filepath.Separator))
	base := parts[len(parts)-1]
	kindWord := ""
	if len(parts) >= 2 && parts[len(parts)-2] == workloadStatusDir {
		// <kind>.<name>.json
		var ok bool
		if kindWord, base, ok = strings.Cut(base, "."); !ok {
			return "", false
		}
	}
	name, ok := recordName(base)
	if !ok {
		return "", false
	}
	ns := ""
	switch {
	case len(parts) == 4 && parts[0] == namespacesDir && isNamespaceDir(parts[1]):
		ns = parts[1]
	case len(parts) != 2:
		return "", false
	}
	switch parts[len(parts)-2] {
	case statusDir:
		return Key(ns, name), true
	case serviceStatusDir:
		return ServiceKey(ns, name), true
	case workloadStatusDir:
		return workloadStatusKey(ns, kindWord+"."+name)
	}
	return "", false
}

// watchSpec is what one watch of the state directory covers.
type watchSpec struct {
	// top are the directories watched, relative to the state directory
	// ("" is the directory itself, always watched): those that exist from
	// the start, the others as they appear.
	top []string
	// subdirs are the directories watched under each namespace's root.
	subdirs []string
	// key maps a file's path to the key sent, rejecting the others.
	key func(rel string) (string, bool)
}

// watch watches what spec covers, sending the keys of the files that
// change (see Watch). A state directory that does not exist yet (read
// only, nothing applied: get -w, events -w) is no error, and nothing is
// created: its nearest existing parent is watched until it appears, then
// it is watched as any, and what it holds by then reported.
func (s *Store) watch(ctx context.Context, spec watchSpec) (<-chan string, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching state directory %s: %w", s.dir, err)
	}
	sw := &stateWatcher{s: s, w: w, spec: spec, watched: map[string]bool{}}
	if err := sw.attach(nil); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watching state directory %s: %w", s.dir, err)
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		defer func() { _ = w.Close() }()
		sw.run(ctx, out)
	}()
	return out, nil
}

// attach watches the state directory and what spec covers in it, with
// keys listing the records already there; while the directory does not
// exist, its nearest existing parent instead (parent set), moved down as
// the directories on the way appear.
func (sw *stateWatcher) attach(keys *[]string) error {
	for {
		fi, err := os.Stat(sw.s.dir)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("not a directory")
		case err == nil:
			if sw.parent != "" {
				_ = sw.w.Remove(sw.parent)
				sw.parent = ""
			}
			return sw.addAll(keys)
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		parent := filepath.Dir(sw.s.dir)
		for {
			if _, err := os.Stat(parent); err == nil || parent == filepath.Dir(parent) {
				break
			}
			parent = filepath.Dir(parent)
		}
		if parent == sw.parent {
			return nil
		}
		if sw.parent != "" {
			_ = sw.w.Remove(sw.parent)
		}
		if err := sw.w.Add(parent); err != nil {
			return err
		}
		// Look again: a directory on the way may have appeared before
		// the watch of its parent began.
		sw.parent = parent
	}
}

// addAll watches the state directory, spec's top directories that exist
// and every namespace's.
func (sw *stateWatcher) addAll(keys *[]string) error {
	err := sw.add("", keys)
	for _, rel := range sw.spec.top {
		if rel != "" {
			err = errors.Join(err, sw.addTop(rel, keys))
		}
	}
	if len(sw.spec.subdirs) == 0 {
		return err
	}
	nss, errs := sw.s.namespaceDirs()
	err = errors.Join(err, errors.Join(errs...))
	for _, ns := range nss {
		err = errors.Join(err, sw.addNamespace(nsRoot(ns), keys))
	}
	return err
}

// addTop watches rel, one of spec's top directories, if it exists; with
// keys, also the namespaces' directories already in namespaces/ (it
// appeared while nobody watched it).
func (sw *stateWatcher) addTop(rel string, keys *[]string) error {
	err := sw.addIfExists(rel, keys)
	if err != nil || keys == nil || rel != namespacesDir || len(sw.spec.subdirs) == 0 {
		return err
	}
	nss, errs := sw.s.namespaceDirs()
	err = errors.Join(errs...)
	for _, ns := range nss {
		err = errors.Join(err, sw.addNamespace(nsRoot(ns), keys))
	}
	return err
}

func (sw *stateWatcher) run(ctx context.Context, out chan<- string) {
	send := func(key string) bool {
		select {
		case out <- key:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sw.w.Events:
			if !ok {
				return
			}
			if sw.parent != "" {
				// Waiting for the state directory: a directory on the
				// way to it may have appeared.
				if ev.Name != sw.s.dir && !strings.HasPrefix(sw.s.dir, ev.Name+string(filepath.Separator)) {
					continue
				}
				var keys []string
				if err := sw.attach(&keys); err != nil {
					keys = append(keys, "")
				}
				for _, k := range keys {
					if !send(k) {
						return
					}
				}
				continue
			}
			rel, err := filepath.Rel(sw.s.dir, ev.Name)
			if err != nil {
				continue
			}
			if key, ok := sw.spec.key(rel); ok {
				if !send(key) {
					return
				}
				continue
			}
			if !ev.Has(fsnotify.Create) {
				continue
			}
			// A directory of a new namespace: watch it, and report
			// what is already in it.
			var keys []string
			if err := sw.addNew(rel, &keys); err != nil {
				keys = append(keys, "")
			}
			for _, k := range keys {
				if !send(k) {
					return
				}
			}
		case _, ok := <-sw.w.Errors:
			if !ok {
				return
			}
			if !send("") {
				return
			}
		}
	}
}

// stateWatcher keeps the watches of the state directory's record
// directories; only Watch's goroutine uses it after Watch returns.
type stateWatcher struct {
	s       *Store
	w       *fsnotify.Watcher
	spec    watchSpec
	watched map[string]bool
	// parent is the directory watched while the state directory does not
	// exist ("" once it does).
	parent string
}

// add watches rel and, with keys, lists the keys of the records already
// there (a directory that appeared while nobody watched it).
func (sw *stateWatcher) add(rel string, keys *[]string) error {
	if sw.watched[rel] {
		return nil
	}
	path := filepath.Join(sw.s.dir, rel)
	if err := sw.w.Add(path); err != nil {
		return err
	}
	sw.watched[rel] = true
	if keys == nil {
		return nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if k, ok := sw.spec.key(filepath.Join(rel, e.Name())); ok {
			*keys = append(*keys, k)
		}
	}
	return nil
}

func (sw *stateWatcher) addIfExists(rel string, keys *[]string) error {
	err := sw.add(rel, keys)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// addNamespace watches a namespace's root and its record directories.
func (sw *stateWatcher) addNamespace(root string, keys *[]string) error {
	err := sw.addIfExists(root, keys)
	for _, sub := range sw.spec.subdirs {
		err = errors.Join(err, sw.addIfExists(filepath.Join(root, sub), keys))
	}
	return err
}

// addNew handles the creation of rel: one of spec's top directories, a
// namespace's root or one of its record directories is watched, and the
// keys of its records listed.
func (sw *stateWatcher) addNew(rel string, keys *[]string) error {
	parts := strings.Split(rel, string(filepath.Separator))
	top := len(parts) == 1 && slices.Contains(sw.spec.top, rel)
	if !top && (len(parts) < 2 || parts[0] != namespacesDir || !isNamespaceDir(parts[1])) {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(sw.s.dir, rel)); err != nil || !fi.IsDir() {
		return nil // gone again, or not a directory dockctl made
	}
	switch {
	case top:
		return sw.addTop(rel, keys)
	case len(parts) == 2:
		return sw.addNamespace(rel, keys)
	case len(parts) == 3 && slices.Contains(sw.spec.subdirs, parts[2]):
		return sw.addIfExists(rel, keys)
	}
	return nil
}

func isNamespaceDir(name string) bool { return isDNSLabel(name) && name != manifests.DefaultNamespace }

// watchedSubdirs are a namespace's directories of records.
var watchedSubdirs = append(kindDirs(), podDeletionsDir)

// watchKey maps the path of a record file (relative to the state
// directory) to its watch key, rejecting temporary and foreign files.
func watchKey(rel string) (string, bool) {
	parts := strings.Split(rel, string(filepath.Separator))
	base := parts[len(parts)-1]
	if strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".json") {
		return "", false
	}
	name := strings.TrimSuffix(base, ".json")
	var ns string
	switch {
	case len(parts) == 2 && parts[0] == namespacesDir:
		if !isDNSLabel(name) {
			return "", false
		}
		return NamespaceKey(name), true
	case len(parts) == 2:
	case len(parts) == 4 && parts[0] == namespacesDir && isNamespaceDir(parts[1]):
		ns = parts[1]
	default:
		return "", false
	}
	dir := parts[len(parts)-2]
	if dir == podDeletionsDir {
		if !isDNSLabel(name) {
			return "", false
		}
		return PodDeletionKey(ns, name), true
	}
	k := kindOfDir(dir)
	if k == nil || checkName(k.Kind(), name) != nil {
		return "", false
	}
	return watchKeyOf(k, ns, name), true
}

// recordName maps a record's file name to the object's name.
func recordName(base string) (string, bool) {
	if strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".json") {
		return "", false
	}
	name := strings.TrimSuffix(base, ".json")
	if !isDNSLabel(name) {
		return "", false
	}
	return name, true
}
