package sourcedir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/dockctl/dockctl/internal/kustomize"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Recorder records an event about an object, as Kubernetes' EventRecorder
// does (eventType "Normal" or "Warning", reason CamelCase). A source's own
// events name kind "ManifestsSource" and the path.
type Recorder interface {
	Event(kind, namespace, name, eventType, reason, message string)
}

// SourceKind is the kind events about a manifests path name.
const SourceKind = "ManifestsSource"

// Metrics is what a sync reports to the metrics (package metrics
// implements it): per path, whether the sync applied it whole.
type Metrics interface {
	ManifestsSynced(path string, ok bool, at time.Time)
}

// Options configure a Syncer.
type Options struct {
	// Paths are the manifests directories or files, as given.
	Paths []string
	// AllowEmpty lets a path that became empty or unreadable delete its
	// objects, once it has stayed so for AllowEmptyAfter.
	AllowEmpty      bool
	AllowEmptyAfter time.Duration
	// ForceConflicts takes over the objects of other managers the paths
	// declare, instead of reporting them.
	ForceConflicts bool
	// SkipUnsupported is apply's --skip-unsupported.
	SkipUnsupported bool
	// ReadTimeout bounds the read of one file (DefaultReadTimeout if 0).
	ReadTimeout time.Duration
	Clock       clock.PassiveClock
	Recorder    Recorder
	Metrics     Metrics
	Log         *slog.Logger
}

// Syncer applies its paths to a store; Sync is one pass. It is not safe
// for concurrent use.
type Syncer struct {
	st         *store.Store
	opts       Options
	emptySince map[string]time.Time
	last       map[string]*time.Time // last success per path
	// warned are the skipped objects already warned about: a warning
	// (log, event) when one appears, not at every sync.
	warned map[string]bool
	// watched are the directories Run watches, and which of their
	// changes matter.
	watched map[string]*watchedDir
	files   *fileReader
}

// New returns the Syncer of opts.Paths over st.
func New(st *store.Store, opts Options) *Syncer {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Syncer{st: st, opts: opts, emptySince: map[string]time.Time{}, last: map[string]*time.Time{}, warned: map[string]bool{},
		files: newFileReader(opts.ReadTimeout)}
}

// source is what one path held at one read.
type source struct {
	path    string
	files   int
	objects int
	// unreadable is why the path could not be read at all, nil if it
	// could.
	unreadable error
	// partial: a directory below the path could not be read (it is in
	// bad): what was read is not all the path holds.
	partial bool
	// bad maps a refused file, or an unreadable directory, to why.
	bad map[string]error
	// good are the placed objects of each readable file.
	good map[string]*Placed
	// skipped are the objects of unsupported kinds left out
	// (SkipUnsupported).
	skipped []manifests.Skipped
}

// empty: nothing was read from the path. A partial read is not empty:
// it is refused as an invalid file is (nothing is deleted, whatever
// AllowEmpty), since what could not be read may hold every object.
func (s *source) empty() bool { return s.unreadable != nil || (s.objects == 0 && !s.partial) }

// read reads path whole. A symbolic link is resolved first, so that a
// link swapped over it (git-sync) is followed anew, and the files are
// named under path as given. What path holds is read as list and
// fileReader say (files.go): nothing outside it.
func (s *Syncer) read(path string) *source {
	src := &source{path: path, bad: map[string]error{}, good: map[string]*Placed{}}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		src.unreadable = err
		return src
	}
	if kustomize.File(real) != "" {
		s.readKustomization(src, real)
		return src
	}
	files, refused, unreadable, err := list(path, real)
	if err != nil {
		src.unreadable = err
		return src
	}
	// Files are opened inside rootDir, through no link out of it.
	rootDir := real
	if len(files) == 1 && files[0].at == real {
		rootDir = filepath.Dir(real)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		src.unreadable = err
		return src
	}
	defer func() { _ = root.Close() }()
	// under names f, found under real, under path as given.
	under := func(f string) (string, error) {
		if f == real {
			return path, nil
		}
		rel, err := filepath.Rel(real, f)
		if err != nil {
			return "", err
		}
		return filepath.Join(path, rel), nil
	}
	for dir, why := range unreadable {
		name, err := under(dir)
		if err != nil {
			src.unreadable = err
			return src
		}
		src.partial = true
		src.bad[name] = fmt.Errorf("%s: cannot read the directory: %w", name, why)
	}
	for f, why := range refused {
		name, err := under(f)
		if err != nil {
			src.unreadable = err
			return src
		}
		src.files++
		src.bad[name] = fmt.Errorf("%s: %w", name, why)
	}
	for _, f := range files {
		name, err := under(f.at)
		if err != nil {
			src.unreadable = err
			return src
		}
		src.files++
		// The target list resolved inside rootDir, opened through no
		// link out of it (a link swapped meanwhile cannot lead out).
		rel, err := filepath.Rel(rootDir, f.target)
		if err != nil {
			src.unreadable = err
			return src
		}
		data, err := s.files.read(root, rel, f.target)
		if err != nil {
			src.bad[name] = fmt.Errorf("%s: %w", name, err)
			continue
		}
		s.decode(src, name, data)
	}
	return src
}

// decode adds the objects of one file's data to src, or refuses the file.
func (s *Syncer) decode(src *source, name string, data []byte) {
	docs, skipped, err := manifests.DecodeAll(name, data, manifests.LoadOptions{SkipUnsupported: s.opts.SkipUnsupported})
	if err == nil {
		var p *Placed
		if p, err = Place(docs, manifests.DefaultNamespace, false); err == nil {
			src.good[name] = p
			src.objects += len(docs)
			for _, s := range skipped {
				if s.Unsupported {
					s.File = name
					src.skipped = append(src.skipped, s)
				}
			}
			return
		}
	}
	src.bad[name] = err
}

// Plan is what one read of the paths would apply.
type Plan struct {
	Bundle  *Placed
	Options store.ApplyOptions
	sources []*source
	// managers names each object's path's manager.
	managers map[store.ObjectRef]string
	// held is which file declares each object.
	held map[store.ObjectRef]string
	// deferred: the paths alone would delete, but the sync was made
	// while changes were still arriving (see SyncHoldingDeletes).
	deferred bool
	// Stored, after Preview, is Bundle's objects as the apply would store
	// them: merged with the live ones (store.Preview).
	Stored *store.Bundle
}

// Read reads every path and plans the apply: the objects of the good
// files, each managed by its path, and whether deleting what left the
// paths is safe (PruneOwned).
func (s *Syncer) Read() *Plan {
	now := s.opts.Clock.Now()
	p := &Plan{Bundle: &Placed{KeepPaused: map[string]bool{}}, managers: map[store.ObjectRef]string{}, held: map[store.ObjectRef]string{}}
	prune := true
	owned := map[string]bool{}
	for _, path := range s.opts.Paths {
		src := s.read(path)
		p.sources = append(p.sources, src)
		owned[store.DirectoryManager(path)] = true
		if src.empty() {
			since, ok := s.emptySince[path]
			if !ok {
				since = now
				s.emptySince[path] = since
			}
			if !s.opts.AllowEmpty || now.Sub(since) < s.opts.AllowEmptyAfter {
				prune = false
			}
		} else {
			delete(s.emptySince, path)
		}
	}
	// An object declared twice: both files are refused.
	for _, src := range p.sources {
		for _, name := range sortedKeys(src.good) {
			for _, ref := range refsOf(src.good[name]) {
				if first, ok := p.held[ref]; ok {
					err := fmt.Errorf("%s %q is also defined in %s", strings.ToLower(ref.Kind), display(ref), first)
					src.bad[name] = err
					for _, o := range p.sources {
						if _, ok := o.good[first]; ok {
							o.bad[first] = fmt.Errorf("%s %q is also defined in %s", strings.ToLower(ref.Kind), display(ref), name)
						}
					}
					continue
				}
				p.held[ref] = name
			}
		}
	}
	p.Options = store.ApplyOptions{
		ManagerOf:      func(ref store.ObjectRef) string { return p.managers[normRef(ref)] },
		Owns:           func(m string) bool { return owned[m] },
		ForceConflicts: s.opts.ForceConflicts,
		PruneOwned:     prune,
		// A directory is an applier: its next sync merges with what it
		// applied (fields others set and it never did are kept).
		SaveConfig: true,
	}
	p.rebuild()
	return p
}

// rebuild makes the bundle of the good files, refused ones left out; any
// refused file turns deletion off.
func (p *Plan) rebuild() {
	p.Bundle = &Placed{KeepPaused: map[string]bool{}}
	p.managers = map[store.ObjectRef]string{}
	for _, src := range p.sources {
		for name := range src.bad {
			delete(src.good, name)
			p.Options.PruneOwned = false
		}
		for _, name := range sortedKeys(src.good) {
			p.Bundle.Add(src.good[name])
			for _, ref := range refsOf(src.good[name]) {
				p.managers[ref] = store.DirectoryManager(src.path)
			}
		}
	}
	p.Options.KeepPaused = p.Bundle.KeepPaused
}

// blame looks for the files the store refuses on their own (with the
// plan's Namespaces, which they may need): a change an immutable object
// refuses, a namespace nobody declares. They are refused as undecodable
// files are, and the plan rebuilt without them; false when no file alone
// is refused (the refusal is the whole's).
func (s *Syncer) blame(p *Plan) bool {
	opts := p.Options
	opts.DryRun, opts.PruneOwned, opts.ForceConflicts = true, false, true
	found := false
	for _, src := range p.sources {
		for _, name := range sortedKeys(src.good) {
			b := src.good[name].Bundle
			b.Namespaces = p.Bundle.Namespaces
			if _, err := s.st.Apply(b, opts); err != nil {
				src.bad[name] = err
				found = true
			}
		}
	}
	if found {
		p.rebuild()
	}
	return found
}

// Skipped are the objects of unsupported kinds the paths hold, left out
// (SkipUnsupported), each to warn about.
func (p *Plan) Skipped() []manifests.Skipped {
	var out []manifests.Skipped
	for _, src := range p.sources {
		out = append(out, src.skipped...)
	}
	return out
}

// Deletes reports whether the plan deletes what left the paths.
func (p *Plan) Deletes() bool { return p.Options.PruneOwned }

// Sync reads the paths and applies them. Objects of other managers are
// reported and left out, and so are the files the store refuses on their
// own (see blame); a refusal of the rest as a whole fails the sync,
// which then changes nothing. The returned results are the store's.
func (s *Syncer) Sync() ([]store.ApplyResult, error) { return s.sync(false) }

// SyncHoldingDeletes is Sync, creating and changing objects but deleting
// none: for a sync made while changes are still arriving. A checkout
// half done holds whole files (git writes each anew, and replaces) but
// may not hold an object that moves yet, in neither its old place nor
// its new one; only a sync once the changes stopped may delete.
func (s *Syncer) SyncHoldingDeletes() ([]store.ApplyResult, error) { return s.sync(true) }

func (s *Syncer) sync(holdDeletes bool) ([]store.ApplyResult, error) {
	p := s.Read()
	if holdDeletes && p.Options.PruneOwned {
		p.Options.PruneOwned, p.deferred = false, true
	}
	results, conflicts, err := s.apply(p)
	now := s.opts.Clock.Now().UTC()
	s.report(p, conflicts, err, now)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.Action == store.Unchanged {
			continue
		}
		src := p.managers[normRef(r.ObjectRef)]
		s.opts.Log.Info("manifests: "+string(r.Action), "object", r.ObjectRef.String(), "namespace", r.Namespace, "source", src)
		if s.opts.Recorder != nil {
			reason := map[store.Action]string{store.Created: "Created", store.Configured: "Configured", store.Pruned: "Deleted"}[r.Action]
			what := "applied from " + strings.TrimPrefix(src, "manifests:")
			if r.Action == store.Pruned {
				what = "deleted: no longer in its manifests directory"
			}
			s.opts.Recorder.Event(r.Kind, r.Namespace, r.Name, "Normal", reason, fmt.Sprintf("%s %s", r.ObjectRef, what))
		}
	}
	return results, nil
}

// apply stores p; a conflict leaves the conflicting objects out and
// applies the rest.
func (s *Syncer) apply(p *Plan) ([]store.ApplyResult, []store.Conflict, error) {
	results, err := s.put(p)
	var ce *store.ConflictError
	if err != nil && !errors.As(err, &ce) && s.blame(p) {
		results, err = s.put(p)
	}
	if !errors.As(err, &ce) {
		return results, nil, err
	}
	skip := map[store.ObjectRef]bool{}
	for _, c := range ce.Conflicts {
		skip[normRef(c.ObjectRef)] = true
	}
	p.Bundle.Bundle = without(p.Bundle.Bundle, skip)
	results, err = s.put(p)
	return results, ce.Conflicts, err
}

// put applies p's bundle; a dry run (Preview) keeps in p.Stored the
// objects as the apply would store them.
func (s *Syncer) put(p *Plan) ([]store.ApplyResult, error) {
	if !p.Options.DryRun {
		return s.st.Apply(p.Bundle.Bundle, p.Options)
	}
	results, stored, err := s.st.Preview(p.Bundle.Bundle, p.Options)
	p.Stored = stored
	return results, err
}

// report writes each path's status, logs and records what went wrong.
func (s *Syncer) report(p *Plan, conflicts []store.Conflict, applyErr error, now time.Time) {
	var out []store.SourceStatus
	deletes := p.Deletes() || p.deferred
	warned := map[string]bool{}
	for _, src := range p.sources {
		st := store.SourceStatus{Path: src.path, Manager: store.DirectoryManager(src.path), Files: src.files, Objects: src.objects, LastSync: now, Ready: true, Reason: "Synced"}
		var msgs []string
		for _, name := range sortedKeys(src.bad) {
			st.Errors = append(st.Errors, name)
			msgs = append(msgs, src.bad[name].Error())
		}
		for _, sk := range src.skipped {
			msg := sk.String()
			msgs = append(msgs, msg)
			warned[msg] = true
			if !s.warned[msg] {
				s.opts.Log.Warn("manifests: "+msg, "source", src.path)
				s.event(SourceKind, "", src.path, "Warning", "SkippedUnsupported", msg)
			}
		}
		mine := 0
		for _, c := range conflicts {
			if file := p.held[normRef(c.ObjectRef)]; file != "" && s.pathOf(p, file) == src.path {
				mine++
				msgs = append(msgs, fmt.Sprintf("%s %q is managed by %q: left as it is", strings.ToLower(c.Kind), display(c.ObjectRef), c.Manager))
				s.event(c.Kind, c.Namespace, c.Name, "Warning", "ManagerConflict",
					fmt.Sprintf("%s in %s is managed by %q: not applied (dockctl controller --force-conflicts takes it over)", c.ObjectRef, file, c.Manager))
			}
		}
		switch {
		case applyErr != nil:
			st.Ready, st.Reason = false, "ApplyFailed"
			msgs = append(msgs, applyErr.Error()+" (nothing changed)")
		case src.unreadable != nil:
			st.Ready, st.Reason = false, "Unreadable"
			msgs = append(msgs, src.unreadable.Error())
		case src.partial:
			st.Ready, st.Reason = false, "Unreadable" // what is unreadable is in msgs
		case len(src.bad) > 0:
			st.Ready, st.Reason = false, "InvalidManifests"
		case src.objects == 0:
			st.Ready, st.Reason = false, "Empty"
			msgs = append(msgs, "no objects")
		case mine > 0:
			st.Ready, st.Reason = false, "Conflict"
		}
		if since, ok := s.emptySince[src.path]; ok {
			t := since.UTC()
			st.EmptySince = &t
			if !deletes {
				msgs = append(msgs, "deleting nothing")
			}
		} else if !deletes && !st.Ready {
			msgs = append(msgs, "deleting nothing until it is fixed")
		}
		if p.deferred {
			msgs = append(msgs, "changes still arriving: deleting nothing until they stop")
		}
		st.Message = strings.Join(msgs, "; ")
		if st.Ready {
			t := now
			s.last[src.path] = &t
		}
		st.LastSuccess = s.last[src.path]
		if !st.Ready {
			s.opts.Log.Warn("manifests: "+st.Reason, "source", src.path, "message", st.Message)
			s.event(SourceKind, "", src.path, "Warning", st.Reason, st.Message)
		}
		if s.opts.Metrics != nil {
			s.opts.Metrics.ManifestsSynced(src.path, st.Ready, now)
		}
		out = append(out, st)
	}
	s.warned = warned
	if err := s.st.WriteSourceStatus(out); err != nil {
		s.opts.Log.Error("manifests: writing status", "err", err)
	}
}

func (s *Syncer) event(kind, ns, name, typ, reason, msg string) {
	if s.opts.Recorder != nil {
		s.opts.Recorder.Event(kind, ns, name, typ, reason, msg)
	}
}

// pathOf is the path whose read holds file.
func (s *Syncer) pathOf(p *Plan, file string) string {
	for _, src := range p.sources {
		if _, ok := src.good[file]; ok {
			return src.path
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// normRef is ref as the store reports it: namespace "default" for
// default, none for a Namespace.
func normRef(ref store.ObjectRef) store.ObjectRef {
	if ref.Kind == store.KindNamespace {
		ref.Namespace = ""
	} else if ref.Namespace == "" {
		ref.Namespace = manifests.DefaultNamespace
	}
	return ref
}

func display(ref store.ObjectRef) string {
	if ref.Namespace == "" || ref.Namespace == manifests.DefaultNamespace {
		return ref.Name
	}
	return ref.Namespace + "/" + ref.Name
}

// refsOf names p's objects.
func refsOf(p *Placed) []store.ObjectRef {
	var out []store.ObjectRef
	add := func(kind string, m *manifests.ObjectMeta) {
		out = append(out, normRef(store.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name}))
	}
	for _, o := range p.Namespaces {
		add(store.KindNamespace, &o.Metadata)
	}
	for _, o := range p.ConfigMaps {
		add(store.KindConfigMap, &o.Metadata)
	}
	for _, o := range p.Secrets {
		add(store.KindSecret, &o.Metadata)
	}
	for _, o := range p.Claims {
		add(store.KindPersistentVolumeClaim, &o.Metadata)
	}
	for _, o := range p.Services {
		add(store.KindService, &o.Metadata)
	}
	for _, o := range p.Deployments {
		add(store.KindDeployment, &o.Metadata)
	}
	return out
}

// without is b less the objects of skip.
func without(b store.Bundle, skip map[store.ObjectRef]bool) store.Bundle {
	ok := func(kind string, m *manifests.ObjectMeta) bool {
		return !skip[normRef(store.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name})]
	}
	return store.Bundle{
		Namespaces:  filter(b.Namespaces, func(o *manifests.Namespace) bool { return ok(store.KindNamespace, &o.Metadata) }),
		ConfigMaps:  filter(b.ConfigMaps, func(o *manifests.ConfigMap) bool { return ok(store.KindConfigMap, &o.Metadata) }),
		Secrets:     filter(b.Secrets, func(o *manifests.Secret) bool { return ok(store.KindSecret, &o.Metadata) }),
		Claims:      filter(b.Claims, func(o *manifests.PersistentVolumeClaim) bool { return ok(store.KindPersistentVolumeClaim, &o.Metadata) }),
		Services:    filter(b.Services, func(o *manifests.Service) bool { return ok(store.KindService, &o.Metadata) }),
		Deployments: filter(b.Deployments, func(o *manifests.Deployment) bool { return ok(store.KindDeployment, &o.Metadata) }),
		Zeros:       b.Zeros, // those of the skipped objects are never looked up
	}
}

func filter[T any](in []T, ok func(T) bool) []T {
	var out []T
	for _, v := range in {
		if ok(v) {
			out = append(out, v)
		}
	}
	return out
}

// Preview is what Sync would do, writing nothing: the plan (its bundle
// without the objects of other managers, and Stored), the store's results
// (Pruned for what it would delete) and the conflicts.
func (s *Syncer) Preview() (*Plan, []store.ApplyResult, []store.Conflict, error) {
	p := s.Read()
	p.Options.DryRun = true
	results, conflicts, err := s.apply(p)
	return p, results, conflicts, err
}

// Problems says, one line each, what keeps the plan from applying its
// paths whole: refused files, unreadable or empty paths (and that nothing
// is deleted then).
func (p *Plan) Problems() []string {
	var out []string
	for _, src := range p.sources {
		for _, name := range sortedKeys(src.bad) {
			msg := src.bad[name].Error()
			if !strings.HasPrefix(msg, name+":") { // decode errors name their file
				msg = name + ": " + msg
			}
			out = append(out, msg+" (its objects are kept as they are)")
		}
		switch {
		case src.unreadable != nil:
			out = append(out, fmt.Sprintf("%s: unreadable: %v", src.path, src.unreadable))
		case src.partial:
			// the unreadable directories are among bad
		case src.objects == 0:
			out = append(out, fmt.Sprintf("%s: no objects", src.path))
		}
	}
	if len(out) > 0 && !p.Deletes() {
		out = append(out, "nothing would be deleted until that is fixed")
	}
	return out
}
