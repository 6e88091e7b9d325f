package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/store"
)

// eventsNow is the clock of events' ages; golden tests fix it.
var eventsNow = time.Now

type eventsOptions struct {
	watch         bool
	allNamespaces bool
	forObject     string
	types         []string
	output        string
}

func newEventsCommand(g *globalOptions) *cobra.Command {
	o := &eventsOptions{}
	cmd := &cobra.Command{
		Use:   "events [-w] [-n NAMESPACE | -A] [--for KIND/NAME] [--types Warning,Normal] [-o json|yaml]",
		Short: "List the events the controller recorded, as kubectl events",
		Example: `  # List the recent events of the default namespace
  dockctl events

  # The events of every namespace, and then new ones as they come
  dockctl events -A -w

  # Only the warnings about deployment web
  dockctl events --for deployment/web --types Warning`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd, g, o)
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "after listing, print the events that are added or change")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the events of every namespace")
	cmd.Flags().StringVar(&o.forObject, "for", "", "only the events about this object: KIND/NAME (deployment/web, pod/web-5d8f9c7b6a-0…)")
	cmd.Flags().StringSliceVar(&o.types, "types", nil, "only events of these types: Normal, Warning")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json|yaml")
	return cmd
}

// eventFilter is --for and --types as a predicate.
func eventFilter(forObject string, types []string) (func(store.Event) bool, error) {
	var kind, name string
	if forObject != "" {
		k, n, ok := strings.Cut(forObject, "/")
		kind = eventKinds[kindAliases[strings.ToLower(k)]]
		if !ok || n == "" || kind == "" {
			return nil, fmt.Errorf("--for %q: expected KIND/NAME (deployment/web, pod/NAME, service/NAME…)", forObject)
		}
		name = n
	}
	want := map[string]bool{}
	for _, t := range types {
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "normal":
			want[store.EventNormal] = true
		case "warning":
			want[store.EventWarning] = true
		default:
			return nil, fmt.Errorf("valid --types are Normal or Warning, got %q", t) // kubectl's words
		}
	}
	return func(e store.Event) bool {
		return (kind == "" || e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name) && (len(want) == 0 || want[e.Type])
	}, nil
}

func runEvents(cmd *cobra.Command, g *globalOptions, o *eventsOptions) error {
	switch o.output {
	case "", "json", "yaml":
	default:
		return unknownFormat(o.output)
	}
	keep, err := eventFilter(o.forObject, o.types)
	if err != nil {
		return err
	}
	st, err := g.readStore()
	if err != nil {
		return err
	}
	warned := map[string]bool{}
	list := func() ([]store.Event, error) {
		evs, err := readEvents(cmd.ErrOrStderr(), st, g.namespace, o.allNamespaces, warned)
		return slices.DeleteFunc(evs, func(e store.Event) bool { return !keep(e) }), err
	}
	var changes <-chan string
	interrupted := func(err error) error { return err }
	if o.watch {
		// -w ends on a signal with status 1, as kubectl events -w's
		// interrupt handler.
		ctx, intr, stop := interruptible(cmd.Context())
		defer stop()
		interrupted = intr
		// Watch before the first read, so that nothing written between the
		// two is missed.
		if changes, err = st.WatchEvents(ctx); err != nil {
			return err
		}
	}
	evs, err := list()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(evs) == 0 && o.output == "" && !o.watch {
		g.nothingFound(cmd.ErrOrStderr(), "events", scopeOf(g, o.allNamespaces), ".") // kubectl events' words
		return nil
	}
	if err := printEvents(out, evs, o.output, o.allNamespaces, true, !o.watch); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	seen := map[string]store.Event{}
	for _, e := range evs {
		seen[e.Name] = e
	}
	for range changes {
		evs, err := list()
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
			continue
		}
		var fresh []store.Event
		for _, e := range evs {
			if prev, ok := seen[e.Name]; !ok || prev.Count != e.Count || !prev.LastTimestamp.Equal(e.LastTimestamp) || prev.Message != e.Message {
				fresh = append(fresh, e)
				seen[e.Name] = e
			}
		}
		if err := printEvents(out, fresh, o.output, o.allNamespaces, len(seen) == len(fresh), false); err != nil {
			return err
		}
	}
	return interrupted(nil)
}

// readEvents is st.Events where, with -A, a namespace whose log cannot be
// read is a warning and the others are listed, as get warns about a record
// it cannot read. warned keeps -w from repeating one warning on every
// change (nil: warn each time).
func readEvents(errOut io.Writer, st *store.Store, ns string, all bool, warned map[string]bool) ([]store.Event, error) {
	evs, err := st.Events(ns, all)
	var skipped *store.SkippedLogsError
	if !errors.As(err, &skipped) {
		return evs, err
	}
	for _, e := range skipped.Errs {
		if msg := e.Error(); !warned[msg] {
			fmt.Fprintln(errOut, "warning:", msg)
			if warned != nil {
				warned[msg] = true
			}
		}
	}
	return evs, nil
}

func scopeOf(g *globalOptions, all bool) string {
	if all {
		return ""
	}
	return g.namespace
}

// printEvents prints events as kubectl events does: a table of LAST SEEN,
// TYPE, REASON, OBJECT and MESSAGE (NAMESPACE first with -A), or with -o
// each v1.Event (a List when list, one object after another when watching).
func printEvents(out io.Writer, evs []store.Event, format string, allNamespaces, header, list bool) error {
	if format != "" {
		objs := make([]any, len(evs))
		for i, e := range evs {
			objs[i] = eventObject(e)
		}
		if list {
			return printObjects(out, format, objs, false)
		}
		for _, o := range objs {
			if err := printObjects(out, format, []any{o}, true); err != nil {
				return err
			}
		}
		return nil
	}
	if len(evs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	if header {
		fmt.Fprintln(tw, nsColumn(allNamespaces, "NAMESPACE")+"LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	}
	now := eventsNow()
	for _, e := range evs {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", nsColumn(allNamespaces, e.InvolvedObject.Namespace), eventAge(e, now), e.Type, e.Reason,
			strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name, oneLine(e.Message))
	}
	return tw.Flush()
}

// eventAge is kubectl's "3m (x4 over 10m)" for a repeated event, "3m"
// otherwise.
func eventAge(e store.Event, now time.Time) string {
	last := age(now.Sub(e.LastTimestamp))
	if e.Count > 1 {
		return fmt.Sprintf("%s (x%d over %s)", last, e.Count, age(now.Sub(e.FirstTimestamp)))
	}
	return last
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }

// eventObject is an event as a v1.Event.
func eventObject(e store.Event) *corev1.Event {
	return &corev1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.InvolvedObject.Namespace,
			CreationTimestamp: metav1.NewTime(e.FirstTimestamp)},
		InvolvedObject: corev1.ObjectReference{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace,
			Name: e.InvolvedObject.Name, APIVersion: eventAPIVersion(e.InvolvedObject.Kind)},
		Reason: e.Reason, Message: e.Message, Type: e.Type, Count: e.Count,
		Source:         corev1.EventSource{Component: e.Source},
		FirstTimestamp: metav1.NewTime(e.FirstTimestamp), LastTimestamp: metav1.NewTime(e.LastTimestamp),
	}
}

func eventAPIVersion(kind string) string {
	if kind == "Deployment" {
		return "apps/v1"
	}
	return "v1"
}

// getEvents is get events (ev): the printer's every format over v1.Events.
func getEvents(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	if o.selector != "" {
		return fmt.Errorf("get events: -l is not supported (events carry no labels)")
	}
	st, err := g.readStore()
	if err != nil {
		return err
	}
	evs, err := readEvents(cmd.ErrOrStderr(), st, g.namespace, o.allNamespaces, nil)
	if err != nil {
		return err
	}
	if name != "" {
		evs = slices.DeleteFunc(evs, func(e store.Event) bool { return e.Name != name })
		if len(evs) == 0 {
			return notFoundIn(g, kindEvent, g.namespace, name, store.ErrNotFound)
		}
	}
	if len(evs) == 0 && o.printer.human() {
		o.noResources(cmd.ErrOrStderr(), g, true)
		return nil
	}
	now := eventsNow()
	t := &table{kind: "event", columns: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
		wide: []string{"SUBOBJECT", "SOURCE", "FIRST SEEN", "COUNT", "NAME"}}
	for _, e := range evs {
		e := e
		t.rows = append(t.rows, row{namespace: e.InvolvedObject.Namespace, name: e.Name, id: createdID(e.FirstTimestamp),
			cells:  []string{eventAge(e, now), e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, oneLine(e.Message)},
			wide:   []string{"", e.Source, age(now.Sub(e.FirstTimestamp)), fmt.Sprint(e.Count), e.Name},
			object: func() (any, error) { return eventObject(e), nil }})
	}
	return o.printer.print(cmd.OutOrStdout(), t, name != "", o.allNamespaces)
}

// describeEvents prints describe's last section: the events about the
// object, as kubectl's describers do.
func describeEvents(w io.Writer, g *globalOptions, kind, name string) {
	st, err := g.readStore()
	var evs []store.Event
	if err == nil {
		evs, err = st.Events(g.namespace, false)
	}
	if err != nil {
		fmt.Fprintf(w, "Events:  <unknown> (%v)\n", err)
		return
	}
	writeEvents(w, evs, eventKinds[kind], name, eventsNow())
}

func writeEvents(w io.Writer, evs []store.Event, kind, name string, now time.Time) {
	evs = slices.DeleteFunc(slices.Clone(evs), func(e store.Event) bool {
		return e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name
	})
	if len(evs) == 0 {
		fmt.Fprintln(w, "Events:  <none>")
		return
	}
	fmt.Fprintln(w, "Events:")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range evs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, eventAge(e, now), e.Source, oneLine(e.Message))
	}
	_ = tw.Flush()
}
