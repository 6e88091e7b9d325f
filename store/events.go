package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Bounds of the event log (see the package doc, "Layout").
const (
	eventsDir = "events"

	// MaxEventsPerNamespace caps one namespace's file; the events seen
	// longest ago go first.
	MaxEventsPerNamespace = 1000
	// EventTTL is Kubernetes' default --event-ttl: an event not seen again
	// for this long is dropped.
	EventTTL = time.Hour
	// MaxEventMessage is the longest message kept, in bytes (Kubernetes'
	// events.k8s.io note limit); a longer one is cut.
	MaxEventMessage = 1024
	// maxEventReason is Kubernetes' limit on a reason.
	maxEventReason = 128

	// The similar-event aggregation of client-go's EventAggregator: the
	// tenth distinct message of one (object, type, reason, source) within
	// the interval becomes one combined event.
	similarEventsMax      = 10
	similarEventsInterval = 10 * time.Minute
	combinedPrefix        = "(combined from similar events): "
)

// Event types, as Kubernetes names them.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// InvolvedObject names the object an event is about: its kind (Deployment, Pod,
// Service…), namespace ("" is default) and name (for a pod, the name `get
// pods` shows).
type InvolvedObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Event is one row of the event log, with the fields of a v1.Event that
// mean something here.
type Event struct {
	// Name is unique in its namespace, "<object>.<hex>" as Kubernetes
	// names events; RecordEvents sets it.
	Name           string         `json:"name,omitempty"`
	Type           string         `json:"type"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message"`
	InvolvedObject InvolvedObject `json:"involvedObject"`
	// Source is the component that recorded it ("dockctl-controller").
	Source         string    `json:"source,omitempty"`
	Count          int32     `json:"count"`
	FirstTimestamp time.Time `json:"firstTimestamp"`
	LastTimestamp  time.Time `json:"lastTimestamp"`
}

type eventsFile struct {
	Version int     `json:"version"`
	Events  []Event `json:"events"`
}

// eventsNow is the clock of the TTL; tests replace it.
var eventsNow = time.Now

func eventsPath(ns string) string { return filepath.Join(eventsDir, orDefault(ns)+".json") }

// sameKey is client-go's EventCorrelator key: a repeat of it is counted.
func (e *Event) sameKey(o *Event) bool {
	return e.InvolvedObject == o.InvolvedObject && e.Type == o.Type && e.Reason == o.Reason &&
		e.Message == o.Message && e.Source == o.Source
}

// similarKey is the EventAggregator's key: the message left out.
func (e *Event) similarKey(o *Event) bool {
	return e.InvolvedObject == o.InvolvedObject && e.Type == o.Type && e.Reason == o.Reason && e.Source == o.Source
}

// RecordEvents adds evs to the log in one write per namespace, under the
// write lock. A repeat of a stored event (same object, type, reason,
// message and source) adds its count and moves its last timestamp instead
// of adding a row; the tenth distinct message of one object, type and
// reason within ten minutes is merged into one "(combined from similar
// events)" row. Each write drops events older than EventTTL and the
// oldest beyond MaxEventsPerNamespace. No event, no write.
//
// Each namespace is written on its own: an invalid event, or a namespace
// whose log cannot be written, costs only that, and the error returned
// joins one error per failure. A log that does not decode (cut short by a
// full disk, edited by hand) is moved aside as <ns>.json.corrupt-<time>
// (the one kept; an older one is removed) and a new log started: the
// events are recorded and the error says where the old log went, so it is
// reported once. A log of a newer format is never overwritten: that
// namespace's events are refused.
func (s *Store) RecordEvents(evs []Event) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if len(evs) == 0 {
		return nil
	}
	var errs []error
	byNS := map[string][]Event{}
	for _, e := range evs {
		if err := checkNamespace(e.InvolvedObject.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("event %s: %w", e.Reason, err))
			continue
		}
		if e.Type != EventNormal && e.Type != EventWarning {
			errs = append(errs, fmt.Errorf("event %s: type %q: must be Normal or Warning", e.Reason, e.Type))
			continue
		}
		e.InvolvedObject.Namespace = orDefault(e.InvolvedObject.Namespace)
		byNS[e.InvolvedObject.Namespace] = append(byNS[e.InvolvedObject.Namespace], e)
	}
	if len(byNS) == 0 {
		return errors.Join(errs...)
	}
	err := s.transaction(func() error {
		dir := filepath.Join(s.dir, eventsDir)
		if err := os.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return notWritable(s.dir, err)
		}
		if err := checkPrivateDir(dir, false); err != nil {
			return err
		}
		for _, ns := range slices.Sorted(mapKeys(byNS)) {
			if err := s.recordNamespaceEvents(dir, ns, byNS[ns]); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// recordNamespaceEvents merges evs into namespace ns's log (the caller
// holds the write lock), starting a new log in place of a corrupt one.
func (s *Store) recordNamespaceEvents(dir, ns string, evs []Event) error {
	cur, err := s.readEvents(ns)
	var reset error
	if errors.Is(err, ErrCorrupt) {
		aside, merr := moveAside(dir, ns+".json")
		if merr != nil {
			return fmt.Errorf("%w; moving it aside: %w", err, merr)
		}
		reset = fmt.Errorf("%w: moved aside to %s, a new log started", err, filepath.Join(eventsDir, aside))
		cur = nil
	} else if err != nil {
		return err
	}
	now := eventsNow()
	for _, e := range evs {
		cur = mergeEvent(cur, e)
	}
	cur = boundEvents(cur, now)
	data, err := json.MarshalIndent(eventsFile{Version: formatVersion, Events: cur}, "", "  ")
	if err != nil {
		return errors.Join(reset, fmt.Errorf("events of namespace %s: %w", ns, err))
	}
	if err := writeFileAtomic(dir, ns+".json", append(data, '\n')); err != nil {
		return errors.Join(reset, fmt.Errorf("state directory %s: %w", s.dir, err))
	}
	return reset
}

// corruptMarker names a log moved aside: <name>.corrupt-<UTC time>. It
// does not end in .json, so Events and WatchEvents never take it for a log.
const corruptMarker = ".corrupt-"

// moveAside renames dir/name to name.corrupt-<time>, after removing the
// one an earlier call left: a log that keeps breaking does not fill the
// disk with copies. It returns the new name.
func moveAside(dir, name string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name+corruptMarker) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
	}
	aside := name + corruptMarker + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, aside)); err != nil {
		return "", err
	}
	return aside, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// mergeEvent adds e to cur as the EventCorrelator would.
func mergeEvent(cur []Event, e Event) []Event {
	if len(e.Message) > MaxEventMessage {
		e.Message = truncateUTF8(e.Message, MaxEventMessage)
	}
	e.Reason = truncateUTF8(e.Reason, maxEventReason)
	if e.Count < 1 {
		e.Count = 1
	}
	if e.FirstTimestamp.IsZero() || (!e.LastTimestamp.IsZero() && e.LastTimestamp.Before(e.FirstTimestamp)) {
		e.FirstTimestamp = e.LastTimestamp
	}
	if e.LastTimestamp.IsZero() {
		e.LastTimestamp = e.FirstTimestamp
	}
	if i := slices.IndexFunc(cur, func(c Event) bool { return c.sameKey(&e) }); i >= 0 {
		cur[i] = bump(cur[i], e)
		return cur
	}
	// The aggregator counts distinct messages seen recently.
	distinct := 1
	combined := -1
	for i := range cur {
		c := &cur[i]
		if !c.similarKey(&e) || e.LastTimestamp.Sub(c.LastTimestamp) > similarEventsInterval {
			continue
		}
		if strings.HasPrefix(c.Message, combinedPrefix) {
			combined = i
			continue
		}
		distinct++
	}
	if combined >= 0 || distinct >= similarEventsMax {
		e.Message = truncateUTF8(combinedPrefix+e.Message, MaxEventMessage)
		if combined >= 0 {
			c := bump(cur[combined], e)
			c.Message = e.Message
			cur[combined] = c
			return cur
		}
	}
	e.Name = eventName(e)
	return append(cur, e)
}

func bump(c, e Event) Event {
	c.Count += e.Count
	if e.LastTimestamp.After(c.LastTimestamp) {
		c.LastTimestamp = e.LastTimestamp
	}
	if e.FirstTimestamp.Before(c.FirstTimestamp) {
		c.FirstTimestamp = e.FirstTimestamp
	}
	return c
}

// eventName is Kubernetes' "<object>.<hex>": unique, and stable for one
// first occurrence.
func eventName(e Event) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%d", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message, e.FirstTimestamp.UnixNano())))
	return e.InvolvedObject.Name + "." + hex.EncodeToString(h[:8])
}

// boundEvents drops expired events and the oldest beyond the cap, and
// sorts by last timestamp.
func boundEvents(evs []Event, now time.Time) []Event {
	evs = slices.DeleteFunc(evs, func(e Event) bool { return now.Sub(e.LastTimestamp) > EventTTL })
	slices.SortStableFunc(evs, func(a, b Event) int { return a.LastTimestamp.Compare(b.LastTimestamp) })
	if n := len(evs) - MaxEventsPerNamespace; n > 0 {
		evs = slices.Delete(evs, 0, n)
	}
	return evs
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !isRuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0x80 {
		s = s[:len(s)-1] // a cut multi-byte rune's leading byte
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// readEvents reads namespace ns's log, unexpired or not. An error wraps
// ErrCorrupt only for a log that does not decode and is not of a newer
// format, the one RecordEvents may replace.
func (s *Store) readEvents(ns string) ([]Event, error) {
	rel := eventsPath(ns)
	data, err := s.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	var f eventsFile
	if err := decodeVersioned(data, &f, &f.Version); err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	return f.Events, nil
}

// SkippedLogsError is what Events returns with all when some namespace's
// log could not be read: the events of the others come with it, so that
// one bad log does not hide every namespace's events. Errs has one error
// per log left out, naming it.
type SkippedLogsError struct{ Errs []error }

func (e *SkippedLogsError) Error() string   { return errors.Join(e.Errs...).Error() }
func (e *SkippedLogsError) Unwrap() []error { return e.Errs }

// Events returns the unexpired events of namespace ns ("" is default), or
// of every namespace with all, sorted by last timestamp. Expired events
// are hidden on read (ties keep the order recorded), so that an idle writer need not rewrite the file to
// expire them. With all, a log that cannot be read is left out and
// reported in a *SkippedLogsError returned along with the others' events.
func (s *Store) Events(ns string, all bool) ([]Event, error) {
	var nss []string
	if all {
		entries, err := os.ReadDir(filepath.Join(s.dir, eventsDir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("state directory %s: %w", s.dir, err)
		}
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !isTempName(e.Name()) && isDNSLabel(n) {
				nss = append(nss, n)
			}
		}
	} else {
		if err := checkNamespace(ns); err != nil {
			return nil, err
		}
		nss = []string{orDefault(ns)}
	}
	now := eventsNow()
	var out []Event
	var skipped []error
	for _, n := range nss {
		evs, err := s.readEvents(n)
		if err != nil {
			if !all {
				return nil, err
			}
			skipped = append(skipped, err)
			continue
		}
		for _, e := range evs {
			if now.Sub(e.LastTimestamp) <= EventTTL {
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int {
		return cmp.Or(a.LastTimestamp.Compare(b.LastTimestamp), strings.Compare(a.InvolvedObject.Namespace, b.InvolvedObject.Namespace)) // ties: recorded order
	})
	if len(skipped) > 0 {
		return out, &SkippedLogsError{Errs: skipped}
	}
	return out, nil
}

// WatchEvents sends the namespace of every event log that changed, and ""
// when changes may have been lost; the channel is closed when ctx ends. It
// watches the files (fsnotify), it does not poll: `events -w` reads the
// log again on each. As Watch, it begins on a state directory or an events
// directory that does not exist yet, and follows them as they appear.
func (s *Store) WatchEvents(ctx context.Context) (<-chan string, error) {
	return s.watch(ctx, eventsWatch)
}

// eventsWatch is what WatchEvents covers: the events directory, and the
// state directory to see it appear.
var eventsWatch = watchSpec{top: []string{"", eventsDir}, key: eventsKey}

// eventsKey maps the path of an event log to its namespace.
func eventsKey(rel string) (string, bool) {
	dir, base := filepath.Split(rel)
	if filepath.Clean(dir) != eventsDir || isTempName(base) {
		return "", false
	}
	ns, ok := strings.CutSuffix(base, ".json")
	return ns, ok && isDNSLabel(ns)
}
