package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/dockerx"
)

// get -w, --watch-only and --output-watch-events, for every kind: one
// driver that lists the kind with its own getter (the table the printer
// would print), then, on every change Docker or the state directory
// reports, lists it again after a short quiet time and prints what differs
// from the rows it printed last, as kubectl prints the watch events of the
// API server. Nothing polls: an idle watch sleeps until a change, or the
// safety resync.

// watchDebounce gathers a burst of changes (a rollout's creates, starts
// and status writes) into one listing.
const watchDebounce = 150 * time.Millisecond

// watchResync lists again when nothing was reported for this long: a
// change no source reported (the controller stopping, a lost event) shows
// up by then. A variable for tests that must see the sources alone at work.
var watchResync = 30 * time.Second

// Watch events, as the API server names them.
const (
	watchAdded    = "ADDED"
	watchModified = "MODIFIED"
	watchDeleted  = "DELETED"
)

// eventColumn is kubectl's EVENT cell: every type padded to the longest.
var eventColumn = map[string]string{watchAdded: "ADDED   ", watchModified: "MODIFIED", watchDeleted: "DELETED "}

// interruptible is kubectl's interrupt handler around a watch (get -w,
// events -w; k8s.io/kubectl/pkg/util/interrupt): the context it returns
// ends on SIGINT, SIGTERM, SIGHUP or SIGQUIT, and interrupted turns a
// watch that ended so into exit status 1, as that handler's os.Exit(1)
// (err as it is otherwise: parent's end, as a test's, is no interruption).
func interruptible(parent context.Context) (ctx context.Context, interrupted func(err error) error, stop func()) {
	ctx, stop = signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	return ctx, func(err error) error {
		if err == nil && ctx.Err() != nil && parent.Err() == nil {
			return &exitError{code: 1}
		}
		return err
	}, stop
}

// watchGet is get -w: it subscribes to every source of change first, so
// that nothing happening between the first listing and the subscriptions
// is missed, then lists and watches until interrupted, which ends it with
// status 1, as kubectl's interrupt handler does.
func watchGet(cmd *cobra.Command, g *globalOptions, o *getOptions, list getter, name string) error {
	if o.sortBy != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning: --watch or --watch-only requested, --sort-by will be ignored") // kubectl's words
	}
	ctx, interrupted, stop := interruptible(cmd.Context())
	defer stop()
	cmd.SetContext(ctx)
	changes, err := watchSources(ctx, g)
	if err != nil {
		return err
	}
	l := newWatchLister(cmd, g, o, list)
	first, err := l.list(name)
	if err != nil {
		return err
	}
	w := &watchLoop{
		list: func() (*listing, error) { return l.list("") },
		// After the first listing, which fails as kubectl's for a name
		// that is not there, the kind is listed whole and the name
		// picked out: the object may go and come back.
		name: name, changes: changes, debounce: watchDebounce, resync: watchResync,
		out: cmd.OutOrStdout(), warn: l.warn,
		printer: &watchPrinter{p: l.printer, events: o.watchEvents}, watchOnly: o.watchOnly,
	}
	return interrupted(w.run(ctx, first))
}

// watchSources merges everything that changes what get shows into one
// channel holding at most one pending signal (a listing answers any number
// of changes): the records (store.Watch), the controller's status files
// (store.WatchStatus), the events log (store.WatchEvents) and the
// instance's containers (Docker events, whose subscription reconnects by
// itself and says so with a Gap, which is a change like any other).
func watchSources(ctx context.Context, g *globalOptions) (<-chan struct{}, error) {
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	return changeSources(ctx, g.instance, st.Watch, st.WatchStatus, st.WatchEvents)
}

// changeSources merges the state directory's watches given and the
// instance's Docker events into one channel holding at most one pending
// signal. A watch that cannot start is an error.
func changeSources(ctx context.Context, instance string, watches ...func(context.Context) (<-chan string, error)) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	for _, watch := range watches {
		ch, err := watch(ctx)
		if err != nil {
			return nil, err
		}
		go forward(ch, out)
	}
	// Its own warnings about a broken stream would repeat every few
	// seconds while Docker is down: the listing that the Down event
	// triggers says it once.
	cli, err := dockerx.NewClient(dockerx.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	events := cli.Events(ctx, instance)
	go func() {
		forward(events, out)
		cli.Close()
	}()
	return out, nil
}

// forward signals out for each value of in, until in is closed (when the
// watch's context ends).
func forward[T any](in <-chan T, out chan<- struct{}) {
	for range in {
		select {
		case out <- struct{}{}:
		default: // one is pending already
		}
	}
}

// listing is one listing of the kind: the table its getter built (nil when
// it found nothing) and whether it has a NAMESPACE column.
type listing struct {
	t             *table
	allNamespaces bool
}

// watchLister lists the kind with its getter, whose printer keeps the
// table instead of printing it.
type watchLister struct {
	cmd     *cobra.Command
	g       *globalOptions
	o       *getOptions
	get     getter
	printer *printer // -o's, for the stream
	errOut  io.Writer
	got     *listing
	// said are the lines the last listing said on stderr (warnings about
	// unreadable records…): a listing repeats only what is new.
	said map[string]bool
}

func newWatchLister(cmd *cobra.Command, g *globalOptions, o *getOptions, get getter) *watchLister {
	l := &watchLister{cmd: cmd, g: g, o: o, get: get, printer: o.printer, errOut: cmd.ErrOrStderr()}
	capture := *o.printer
	capture.capture = func(t *table, allNamespaces bool) { l.got = &listing{t: t, allNamespaces: allNamespaces} }
	o.printer = &capture
	return l
}

func (l *watchLister) list(name string) (*listing, error) {
	var stderr bytes.Buffer
	l.cmd.SetErr(&stderr)
	defer l.cmd.SetErr(l.errOut)
	l.got = &listing{}
	err := l.get(l.cmd, l.g, l.o, name)
	said := map[string]bool{}
	for _, line := range strings.SplitAfter(stderr.String(), "\n") {
		if line != "" && !l.said[line] {
			io.WriteString(l.errOut, line)
		}
		said[line] = true
	}
	l.said = said
	return l.got, err
}

// warn says why a listing failed (Docker unreachable…), once until a
// listing succeeds or fails otherwise: the watch goes on, and lists again
// on the next change or resync.
func (l *watchLister) warn(err error) {
	line := fmt.Sprintf("warning: %v\n", err)
	if !l.said[line] {
		io.WriteString(l.errOut, line)
	}
	l.said = map[string]bool{line: true}
}

// watchLoop is the watch: it lists on a change (after debounce, so that a
// burst is one listing) or after resync without one, and prints the
// changes from the rows it holds.
type watchLoop struct {
	list             func() (*listing, error)
	name             string // a single NAME: only its row
	changes          <-chan struct{}
	debounce, resync time.Duration
	out              io.Writer
	warn             func(error)
	printer          *watchPrinter
	watchOnly        bool

	rows  map[string]watchedRow // by namespace/name, as last listed
	order []string              // their keys, in the listing's order
	// last is the last listing with columns, for a header and a kind
	// when the latest found nothing.
	last listing
}

// watchedRow is one object as last listed: its row, its cells as the
// table prints them, what tells a change (sig), and which object it is
// (id, the row's: an object deleted and created again under its name is
// another).
type watchedRow struct {
	row   row
	cells []string
	sig   string
	id    string
}

// watchChange is one object to print: added, modified or deleted.
type watchChange struct {
	event string
	row   watchedRow
}

func (w *watchLoop) run(ctx context.Context, first *listing) error {
	changes, err := w.diff(first)
	if err != nil {
		return err
	}
	if !w.watchOnly {
		if err := w.print(changes); err != nil {
			return err
		}
	}
	resync := time.NewTimer(w.resync)
	defer resync.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.changes:
			if debounce == nil {
				debounce = time.After(w.debounce)
			}
			continue
		case <-debounce:
		case <-resync.C:
		}
		debounce = nil
		resync.Reset(w.resync)
		l, err := w.list()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			changes, err = w.diff(l)
		}
		if err != nil {
			w.warn(err) // the rows held stay: nothing is taken for deleted
			continue
		}
		if err := w.print(changes); err != nil {
			return err
		}
	}
}

func (w *watchLoop) print(changes []watchChange) error {
	if len(changes) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := w.printer.print(&buf, w.last.t, w.last.allNamespaces, changes); err != nil {
		return err
	}
	_, err := w.out.Write(buf.Bytes())
	return err
}

// diff takes in a listing and returns what changed since the one before:
// the objects added or modified, in the listing's order, then those
// deleted, each printed as last listed (kubectl prints an object deleted
// as it was). An object replaced by another of its name (deleted and
// created again between two listings) is a DELETED of the old one then an
// ADDED of the new one, kubectl's two watch events.
func (w *watchLoop) diff(l *listing) ([]watchChange, error) {
	t := l.t
	if t == nil {
		t = &table{}
	}
	if len(t.columns) > 0 || w.last.t == nil {
		w.last = listing{t: t, allNamespaces: l.allNamespaces}
	}
	sig := w.printer.signer(t, l.allNamespaces)
	rows := make(map[string]watchedRow, len(t.rows))
	var order []string
	var changes []watchChange
	for _, r := range t.rows {
		if w.name != "" && r.name != w.name {
			continue
		}
		key := r.namespace + "/" + r.name
		e, err := sig(r)
		if err != nil {
			return nil, err
		}
		e.id = r.id
		switch old, ok := w.rows[key]; {
		case !ok:
			changes = append(changes, watchChange{watchAdded, e})
		case old.id != e.id:
			changes = append(changes, watchChange{watchDeleted, old}, watchChange{watchAdded, e})
		case old.sig != e.sig:
			changes = append(changes, watchChange{watchModified, e})
		}
		rows[key] = e
		order = append(order, key)
	}
	for _, key := range w.order {
		if _, ok := rows[key]; !ok {
			changes = append(changes, watchChange{watchDeleted, w.rows[key]})
		}
	}
	w.rows, w.order = rows, order
	return changes, nil
}

// watchPrinter prints the stream in -o's format, as kubectl's printers
// print watch events: a table's header once (with the first row), then a
// row per change lined up with the rows above; -o json|yaml an object per
// change (YAML documents separated by ---); -o name a name; jsonpath and
// custom-columns evaluated on each object. With events, a table has an
// EVENT column first, and every other format is given kubectl's watch
// event, {"type": …, "object": …}, but -o name, which names the object.
type watchPrinter struct {
	p      *printer
	events bool
	align  alignedWriter
	header bool // the table's (or custom columns') header is printed
	docs   int  // YAML documents printed
}

// watchEvent is a metav1.WatchEvent.
type watchEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

// clockColumns are the columns that change with the clock alone.
var clockColumns = map[string]bool{"AGE": true, "LAST SEEN": true, "FIRST SEEN": true, "LAST SYNC": true}

// durationRE matches age()'s durations.
var durationRE = regexp.MustCompile(`\b[0-9]+[smhd]\b`)

// signer returns what makes a row of t a watchedRow. What tells a change
// is what the format shows: a table's cells, the durations of its clock
// columns left out (an object whose AGE moves has not changed, one whose
// LAST SEEN says a new count has), or for the other formats the object,
// but its clockFields.
func (wp *watchPrinter) signer(t *table, allNamespaces bool) func(row) (watchedRow, error) {
	if wp.p.human() {
		var clock []int
		first := 0
		if allNamespaces {
			first = 1
		}
		for i, c := range t.columns {
			if clockColumns[c] {
				clock = append(clock, first+i)
			}
		}
		if wp.p.format == "wide" {
			for i, c := range t.wide {
				if clockColumns[c] {
					clock = append(clock, first+len(t.columns)+i)
				}
			}
		}
		return func(r row) (watchedRow, error) {
			cells := wp.p.rowCells(r, allNamespaces)
			sig := slices.Clone(cells)
			for _, i := range clock {
				sig[i] = durationRE.ReplaceAllString(sig[i], "")
			}
			return watchedRow{row: r, cells: cells, sig: strings.Join(sig, "\t")}, nil
		}
	}
	return func(r row) (watchedRow, error) {
		objs, err := genericObjects([]row{r})
		if err != nil {
			return watchedRow{}, err
		}
		if m, ok := objs[0].(map[string]any); ok {
			for _, f := range t.clockFields {
				delete(m, f)
			}
		}
		b, err := json.Marshal(objs[0])
		return watchedRow{row: r, sig: string(b)}, err
	}
}

// print prints changes to rows of t.
func (wp *watchPrinter) print(out io.Writer, t *table, allNamespaces bool, changes []watchChange) error {
	p := wp.p
	switch p.format {
	case "", "table", "wide":
		var lines [][]string
		if !wp.header && !p.noHeaders {
			lines = append(lines, wp.withEvent("EVENT", p.headerCells(t, allNamespaces)))
			wp.header = true
		}
		for _, c := range changes {
			lines = append(lines, wp.withEvent(eventColumn[c.event], c.row.cells))
		}
		return wp.align.write(out, lines)
	case "name":
		for _, c := range changes {
			if _, err := fmt.Fprintf(out, "%s/%s\n", t.kind, c.row.row.name); err != nil {
				return err
			}
		}
		return nil
	case "json", "yaml":
		for _, c := range changes {
			obj, err := c.row.row.object()
			if err != nil {
				return err
			}
			if err := wp.printObject(out, c.event, obj); err != nil {
				return err
			}
		}
		return nil
	case "jsonpath":
		for _, c := range changes {
			obj, err := wp.generic(c)
			if err != nil {
				return err
			}
			if err := p.jp.Execute(out, obj); err != nil {
				return fmt.Errorf("error executing jsonpath: %v", err)
			}
		}
		return nil
	case "custom-columns":
		var lines [][]string
		if !wp.header && !p.noHeaders {
			lines = append(lines, p.columnHeaders())
			wp.header = true
		}
		for _, c := range changes {
			obj, err := wp.generic(c)
			if err != nil {
				return err
			}
			cells, err := p.columnCells(obj)
			if err != nil {
				return err
			}
			lines = append(lines, cells)
		}
		return wp.align.write(out, lines)
	}
	return unknownFormat(p.format)
}

// generic is what jsonpath and custom columns are evaluated on: the
// object as JSON decodes it, in its watch event with events.
func (wp *watchPrinter) generic(c watchChange) (any, error) {
	objs, err := genericObjects([]row{c.row.row})
	if err != nil {
		return nil, err
	}
	if wp.events {
		return map[string]any{"type": c.event, "object": objs[0]}, nil
	}
	return objs[0], nil
}

// withEvent puts the EVENT column first, with events.
func (wp *watchPrinter) withEvent(cell string, cells []string) []string {
	if !wp.events {
		return cells
	}
	return append([]string{cell}, cells...)
}

// printObject prints one object as kubectl's JSON and YAML printers print
// it in a watch: indented JSON, or a compact line for a watch event; YAML
// documents after the first preceded by ---.
func (wp *watchPrinter) printObject(out io.Writer, event string, obj any) error {
	if wp.p.format == "yaml" {
		if wp.docs++; wp.docs > 1 {
			if _, err := io.WriteString(out, "---\n"); err != nil {
				return err
			}
		}
	}
	if !wp.events {
		return printObjects(out, wp.p.format, []any{obj}, true)
	}
	ev := watchEvent{Type: event, Object: obj}
	var b []byte
	var err error
	if wp.p.format == "yaml" {
		b, err = yaml.Marshal(ev)
	} else if b, err = json.Marshal(ev); err == nil {
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// alignedWriter lines cells up in columns as printTable's tabwriter does
// (each column as wide as its widest cell and three spaces, the last cell
// as it is), remembering the widths across writes as kubectl's watch does
// (its tabwriter remembers them across flushes): a later row lines up with
// the rows above unless a cell is wider, which widens its column from then
// on.
type alignedWriter struct{ widths []int }

func (a *alignedWriter) write(out io.Writer, lines [][]string) error {
	const padding = 3
	for _, cells := range lines {
		for i := 0; i < len(cells)-1; i++ {
			w := utf8.RuneCountInString(cells[i]) + padding
			if i == len(a.widths) {
				a.widths = append(a.widths, w)
			} else if w > a.widths[i] {
				a.widths[i] = w
			}
		}
	}
	var b strings.Builder
	for _, cells := range lines {
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", a.widths[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}
