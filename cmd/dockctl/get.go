package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

type getOptions struct {
	output   string
	selector string
	// showLabels, labelColumns, sortBy and noHeaders are --show-labels,
	// -L, --sort-by and --no-headers; printer prints in -o's format (newPrinter).
	showLabels   bool
	labelColumns []string
	sortBy       string
	noHeaders    bool
	printer      *printer
	// allNamespaces is -A: every namespace, with a NAMESPACE column.
	allNamespaces bool
	// names are the names asked for when there are several (the getter
	// then lists every object and the printer keeps theirs).
	names []string
	// watch, watchOnly and watchEvents are -w, --watch-only and
	// --output-watch-events (watch.go).
	watch, watchOnly, watchEvents bool
	// combined: several kinds are listed together (getSeveralKinds): they
	// share one snapshot (snap, taken by the first), and the notice of an
	// empty listing is printed once for all.
	combined bool
	snap     *snapshot
	// snapErr is why the snapshot of a combined listing could not be
	// taken: the kinds after it are not listed.
	snapErr error
}

// watching tells whether the listing is get -w's (or --watch-only's).
func (o *getOptions) watching() bool { return o.watch || o.watchOnly }

// noResources prints kubectl's notice of an empty listing of a kind of
// namespaces (namespaced) or not, unless names were asked for (then each
// missing one is an error) or the listing is a watch's (kubectl then says
// nothing and waits for the first object).
func (o *getOptions) noResources(w io.Writer, g *globalOptions, namespaced bool) {
	if len(o.names) > 0 || o.watching() || o.combined {
		return
	}
	ns := o.scope(g)
	if !namespaced {
		ns = ""
	}
	g.noResources(w, ns)
}

// inScope reports whether an object of namespace ns is listed: every one
// with -A, else those of -n's namespace.
func (o *getOptions) inScope(g *globalOptions, ns string) bool {
	return o.allNamespaces || ns == g.namespace
}

// scope is the namespace the listing looked in, for its messages: "" for
// all of them.
func (o *getOptions) scope(g *globalOptions) string {
	if o.allNamespaces {
		return ""
	}
	return g.namespace
}

func newGetCommand(g *globalOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get (all | KIND[,KIND…] [NAME…] | KIND/NAME…) [-l SELECTOR] [-n NAMESPACE | -A] [-w | --watch-only]",
		Short: "List objects of any kind (deployments, statefulsets, daemonsets, jobs, cronjobs, pods, services, ingresses, gateways…) with their live status",
		Long:  "List objects with their live status, as kubectl get (all: the kinds of get all). " + kindsSentence(pluralsOf(kindNames(func(k *kindInfo) bool { return k.get != nil }))),
		Example: `  # List the deployments of the default namespace
  dockctl get deployments

  # List the pods of every namespace, with their address, node, deployment, revision and containers
  dockctl get pods -A -o wide

  # List the pods, services and deployments, as kubectl get all
  dockctl get all

  # The names and addresses of the pods, without the header line
  dockctl get pods -o custom-columns=NAME:.metadata.name,IP:.status.podIP --no-headers

  # Show deployment web as YAML
  dockctl get deployment web -o yaml

  # List the containers of deployment web
  dockctl get containers -l deployment=web

  # Print each service's name and cluster IP, sorted by name
  dockctl get svc -o custom-columns=NAME:.metadata.name,IP:.spec.clusterIP --sort-by .metadata.name

  # Print the ready replicas of deployment web
  dockctl get deploy web -o jsonpath='{.status.readyReplicas}'

  # Show whether the controller's manifests directories (--manifests) were applied whole
  dockctl get manifests

  # List the pods, then print a pod's row again each time it changes (Ctrl-C ends it)
  dockctl get pods -w

  # Only the changes to deployment web, as watch events in JSON
  dockctl get deployment web --watch-only --output-watch-events -o json

  # List the services and deployments together, a table each
  dockctl get svc,deployments

  # List configmaps with their labels, and secrets with a column for label app
  dockctl get configmaps --show-labels
  dockctl get secrets -L app`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				// kubectl's words.
				fmt.Fprintf(cmd.ErrOrStderr(), "You must specify the type of resource to get. %s\n\n", suggestAPIResources(cmd))
				hint := seeHelp(cmd)
				if siblingExists(cmd.Parent(), "explain") {
					hint = fmt.Sprintf("Use \"%s explain <resource>\" for a detailed description of that resource (e.g. %[1]s explain deployments).\n", cmd.Parent().CommandPath()) + hint
				}
				return &hintError{err: errors.New("Required resource not specified."), hint: hint}
			}
			args = expandCategories(args) // get all, get all,configmaps (getall.go)
			objs, err := objectArgs(args, slices.Collect(maps.Keys(getters))...)
			if err != nil {
				return err
			}
			// The kinds in the order given (TYPE1,TYPE2 or TYPE1/NAME
			// TYPE2/NAME), each with its names.
			var kinds []string
			namesOf := map[string][]string{}
			for _, obj := range objs {
				if _, ok := namesOf[obj.kind]; !ok {
					kinds = append(kinds, obj.kind)
					namesOf[obj.kind] = nil
				}
				if obj.name != "" {
					namesOf[obj.kind] = append(namesOf[obj.kind], obj.name)
				}
			}
			kind := kinds[0]
			names := namesOf[kind]
			// kubectl's words, and its order.
			for _, k := range kinds {
				if o.selector != "" && len(namesOf[k]) > 0 {
					return errors.New("name cannot be provided when a selector is specified")
				}
				if o.allNamespaces && len(namesOf[k]) > 0 && k != kindNamespace {
					return errors.New("a resource cannot be retrieved by name across all namespaces")
				}
			}
			if err := checkSelector(kind, o.selector); err != nil {
				return err
			}
			p, err := newPrinter(o.printFlags())
			if err != nil {
				return err
			}
			o.printer = p
			list := getters[kind]
			if o.watchEvents && !o.watching() {
				return fmt.Errorf("--output-watch-events option can only be used with --watch or --watch-only") // kubectl's words
			}
			if len(kinds) > 1 {
				if o.watching() {
					return errors.New("you may only specify a single resource type") // kubectl's watch builder's words
				}
				return getSeveralKinds(cmd, g, o, kindRuns(objs))
			}
			if o.watching() {
				if len(names) > 1 {
					return fmt.Errorf("watch is only supported on individual resources and resource collections, but %d resources were found", len(names)) // kubectl's words
				}
				return watchGet(cmd, g, o, list, strings.Join(names, ""))
			}
			if len(names) <= 1 {
				return list(cmd, g, o, strings.Join(names, ""))
			}
			// Several names: as kubectl, the ones found in one listing,
			// then a NotFound for each other.
			o.names, p.only = names, names
			if err := list(cmd, g, o, ""); err != nil {
				return err
			}
			return errors.Join(missingNames(g, kind, names, p.printed)...)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table|wide|json|yaml|name|jsonpath=TEMPLATE|jsonpath-as-json=TEMPLATE|custom-columns=HEADER:PATH,…|custom-columns-file=FILE|go-template=TEMPLATE|go-template-file=FILE")
	cmd.Flags().BoolVar(&o.showLabels, "show-labels", false, "table and wide output: a last LABELS column with each object's labels")
	cmd.Flags().StringSliceVarP(&o.labelColumns, "label-columns", "L", nil, "table and wide output: a column for each label key given (KEY[,KEY…]), headed by the key upper-cased")
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "table, wide and custom-columns output: no header line (with -w, never one)")
	cmd.Flags().StringVar(&o.sortBy, "sort-by", "", "sort the objects by the value of a JSONPath (as -o json shows them, e.g. '{.metadata.name}'), numbers numerically, in any output")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "after listing the objects, print each one again every time it changes or is deleted (from Docker events and the state directory), until interrupted")
	cmd.Flags().BoolVar(&o.watchOnly, "watch-only", false, "print the changes to the objects, without listing them first")
	cmd.Flags().BoolVar(&o.watchEvents, "output-watch-events", false, "with --watch or --watch-only, print watch events (ADDED, MODIFIED, DELETED): an EVENT column, or -o json|yaml's {type, object}; the objects listed first are ADDED")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace (a NAMESPACE column comes first)")
	// A plain string, not a slice: "app in (a,b)" must not be split on its comma.
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector (=, ==, !=, in, notin, KEY, !KEY): deployments, services and endpoints by their metadata.labels, "+
		"pods by their template's labels, containers by their labels (for pods and containers deployment=NAME is short for "+
		"io.dockctl.deployment=NAME, revision=HASH for io.dockctl.template-hash=HASH)")
	return cmd
}

// kindRun is what one listing of getSeveralKinds shows: a kind, whole,
// or the names of consecutive arguments of that kind.
type kindRun struct {
	kind  string
	names []string
}

// kindRuns groups the objects asked for as kubectl prints them: in the
// arguments' order, a new listing each time the kind changes (pod/A
// deployment/B pod/C is three); a kind asked for whole is listed once.
func kindRuns(objs []objectArg) []kindRun {
	var runs []kindRun
	whole := map[string]bool{}
	for _, obj := range objs {
		if obj.name == "" {
			if !whole[obj.kind] {
				whole[obj.kind] = true
				runs = append(runs, kindRun{kind: obj.kind})
			}
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].kind == obj.kind && runs[n-1].names != nil {
			runs[n-1].names = append(runs[n-1].names, obj.name)
			continue
		}
		runs = append(runs, kindRun{kind: obj.kind, names: []string{obj.name}})
	}
	return runs
}

// getSeveralKinds lists several kinds (get TYPE1,TYPE2, or TYPE1/NAME
// TYPE2/NAME), each run in turn, as kubectl does: a table per run with
// its rows, a blank line between two, each name prefixed with its kind
// (configmap/cfg) under NAME when the objects are of several kinds (a
// kind listed whole counts, empty or not; a named one when found); in
// the other formats every object in one List (-o name: KIND/NAME lines).
// No kind has an object: kubectl's one "No resources found" notice. A
// name a kind lacks is a NotFound, after what was found. Docker out of
// reach ends it at the first kind that needs it: said once.
func getSeveralKinds(cmd *cobra.Command, g *globalOptions, o *getOptions, runs []kindRun) error {
	p := o.printer
	var lists []listing
	p.capture = func(t *table, allNamespaces bool) { lists = append(lists, listing{t, allNamespaces}) }
	o.combined = true
	var errs []error
	namespaced := !o.allNamespaces
	shown := map[string]bool{} // the kinds of the objects printed
	for _, run := range runs {
		namespaced = namespaced && apiResourceOf(run.kind).namespaced
		n := len(lists)
		o.names = run.names // a kind's getter lists only these (getPods)
		err := getters[run.kind](cmd, g, o, "")
		o.names = nil
		if err != nil {
			errs = append(errs, err) // as kubectl, the other kinds are still listed
			if o.snapErr != nil {
				break // but for Docker out of reach: it would be said again for each
			}
			continue
		}
		if len(run.names) == 0 {
			shown[run.kind] = true
			continue
		}
		var printed map[string]bool
		if len(lists) > n {
			l := &lists[len(lists)-1]
			t := *l.t
			p.only, p.printed = run.names, nil
			t.rows = p.pick(t.rows)
			printed = p.printed
			p.only, p.printed = nil, nil
			l.t = &t
			shown[run.kind] = shown[run.kind] || len(t.rows) > 0
		}
		errs = append(errs, missingNames(g, run.kind, run.names, printed)...)
	}
	p.capture = nil
	printed := false
	for _, l := range lists {
		printed = printed || len(l.t.rows) > 0
	}
	if err := p.printKinds(cmd.OutOrStdout(), lists, len(shown) > 1); err != nil {
		return err
	}
	if !printed && p.human() && len(errs) == 0 {
		ns := o.scope(g)
		if !namespaced {
			ns = ""
		}
		g.noResources(cmd.ErrOrStderr(), ns)
	}
	return errors.Join(errs...)
}

// missingNames are the NotFound errors of the names of kind not printed.
func missingNames(g *globalOptions, kind string, names []string, printed map[string]bool) []error {
	var errs []error
	for _, n := range names {
		if !printed[n] {
			errs = append(errs, notFoundIn(g, kind, g.namespace, n, store.ErrNotFound))
		}
	}
	return errs
}

// printFlags are the output flags get was given.
func (o *getOptions) printFlags() printFlags {
	return printFlags{output: o.output, showLabels: o.showLabels, labelColumns: o.labelColumns, sortBy: o.sortBy, noHeaders: o.noHeaders}
}

// getter lists one kind, all of its objects or the one named, through
// o.printer (which, for get -w, hands the table over instead of printing it).
type getter func(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error

// listing is how every get begins (its output format checked already):
// the selector parsed (by parse), the snapshot taken (or, for one of
// several kinds, the one the first took) and the records it could not
// read warned about.
func (o *getOptions) listing(cmd *cobra.Command, g *globalOptions, parse func(string) (labels.Selector, error)) (labels.Selector, *snapshot, error) {
	sel, err := parse(o.selector)
	if err != nil {
		return nil, nil, err
	}
	if o.snap != nil {
		return sel, o.snap, nil // warned about when taken
	}
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		if o.combined {
			o.snapErr = err
		}
		return nil, nil, err
	}
	for _, err := range snap.recordErrs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	warnNoController(cmd.ErrOrStderr(), snap.st, g.instance, noControllerRead, snap.now) // heartbeat.go
	if o.combined {
		o.snap = snap
	}
	return sel, snap, nil
}

func getDeployments(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseSelector)
	if err != nil {
		return err
	}
	var recs []*store.Record
	for _, r := range snap.records {
		if o.inScope(g, r.NamespaceOrDefault()) && (name == "" || r.Name == name) && sel.Matches(labels.Set(r.Deployment.Metadata.Labels)) {
			recs = append(recs, r)
		}
	}
	if name != "" && len(recs) == 0 {
		return snap.missing(g, g.namespace, name)
	}
	if len(recs) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		o.noResources(cmd.ErrOrStderr(), g, true)
		return nil
	}
	return renderDeployments(cmd.OutOrStdout(), snap, recs, o.printer, name != "", o.allNamespaces)
}

// nsColumn is the NAMESPACE column kubectl puts first with -A: its header,
// or a row's cell.
func nsColumn(allNamespaces bool, ns string) string {
	if !allNamespaces {
		return ""
	}
	return ns + "\t"
}

// renderDeployments prints deployments in one of the output formats; its
// output is the contract scripts rely on (golden-tested). With
// allNamespaces the table starts with a NAMESPACE column, as kubectl's.
func renderDeployments(out io.Writer, snap *snapshot, recs []*store.Record, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "deployment.apps", columns: []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"},
		wide: []string{"IMAGE", "TEMPLATE-HASH", "GENERATION", "OBSERVED"}}
	for _, r := range recs {
		d := snap.deploymentObject(r)
		st := d.Status
		observed := "<unknown>"
		if st.ObservedGeneration > 0 {
			observed = fmt.Sprint(st.ObservedGeneration)
			if !snap.controllerRunning {
				observed += " (stale?)"
			}
		}
		t.rows = append(t.rows, row{namespace: r.NamespaceOrDefault(), name: r.Name, labels: d.Metadata.Labels, id: createdID(r.CreatedAt),
			cells: []string{r.Name, fmt.Sprintf("%d/%d", st.ReadyReplicas, d.Replicas()), fmt.Sprint(st.UpdatedReplicas),
				fmt.Sprint(st.AvailableReplicas), age(snap.now.Sub(r.CreatedAt))},
			wide:   []string{images(d), shortHash(d), fmt.Sprint(r.Generation), observed},
			object: func() (any, error) { return d, nil }})
	}
	return p.print(out, t, single, allNamespaces)
}

// images lists the images of a deployment's app containers, as kubectl's
// IMAGES column does.
func images(d *manifests.Deployment) string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}

func getPods(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseContainerSelector)
	if err != nil {
		return err
	}
	var pods []podEntry
	for _, e := range snap.allPods() {
		// Of several names, only theirs: what their objects need of
		// Docker is asked for those pods only.
		named := name == "" && len(o.names) == 0 || e.Name == name || slices.Contains(o.names, e.Name)
		if o.inScope(g, e.Namespace) && named && sel.Matches(labels.Set(e.labels())) {
			pods = append(pods, e)
		}
	}
	if name != "" && len(pods) == 0 {
		return notFoundIn(g, "pod", g.namespace, name, store.ErrNotFound)
	}
	if len(pods) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		o.noResources(cmd.ErrOrStderr(), g, true)
		return nil
	}
	return renderPods(cmd.OutOrStdout(), snap, pods, o.printer, name != "", o.allNamespaces)
}

// renderPods prints pods in one of the output formats (golden-tested): the
// table as kubectl's; -o wide with kubectl's wide columns (IP, NODE — the
// Docker host —, NOMINATED NODE and READINESS GATES, which a host never
// has), then dockctl's: the deployment, revision, app containers and the
// owner (KIND/NAME, as describe's Controlled By); -o
// json|yaml as v1 Pods; -o name as pod/NAME. Only what shows the node or
// the containers' start times asks Docker for them (podstatus.go).
func renderPods(out io.Writer, snap *snapshot, pods []podEntry, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "pod", columns: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		wide: []string{"IP", "NODE", "NOMINATED NODE", "READINESS GATES", "DEPLOYMENT", "REVISION", "CONTAINERS", "OWNER"}}
	node := ""
	if p.format == "wide" {
		node = snap.nodeName()
	}
	// The objects' start times: every listed pod's containers inspected
	// at once, when the first object is made.
	inspect := sync.OnceFunc(func() { snap.inspect(pods) })
	for i := range pods {
		e := &pods[i]
		t.rows = append(t.rows, row{namespace: e.Namespace, name: e.Name, labels: e.labels(), id: e.uid(),
			cells: []string{e.Name, fmt.Sprintf("%d/%d", e.Ready, e.Total), e.statusWord(), fmt.Sprint(e.Restarts), age(snap.now.Sub(e.Created))},
			wide: []string{orNone(e.podIP(snap)), orNone(node), "<none>", "<none>",
				orNone(e.deploymentName()), orNone(e.Hash), joinOrNone(e.appContainerNames()), orNone(e.ownerName())},
			object: func() (any, error) { inspect(); return e.podObject(snap) }})
	}
	return p.print(out, t, single, allNamespaces)
}

func getContainers(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseContainerSelector)
	if err != nil {
		return err
	}
	var objs []containerObject
	for _, c := range append(slices.Clip(snap.containers), snap.helpers...) {
		if !o.inScope(g, containerNamespace(c)) || (name != "" && c.Name != name) || !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		objs = append(objs, snap.containerObject(c))
	}
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].Namespace != objs[j].Namespace {
			return objs[i].Namespace < objs[j].Namespace
		}
		return objs[i].Name < objs[j].Name
	})
	if name != "" && len(objs) == 0 {
		return notFoundIn(g, "container", g.namespace, name, store.ErrNotFound)
	}
	if len(objs) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		o.noResources(cmd.ErrOrStderr(), g, true)
		return nil
	}
	return renderContainers(cmd.OutOrStdout(), snap, objs, o.printer, o.allNamespaces)
}

// renderContainers prints containers in one of the output formats.
func renderContainers(out io.Writer, snap *snapshot, objs []containerObject, p *printer, allNamespaces bool) error {
	t := &table{kind: "container", columns: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		wide: []string{"POD", "DEPLOYMENT", "REVISION", "IMAGE", "PORTS"}, clockFields: []string{"status"}}
	for _, obj := range objs {
		ready := "0/1"
		if obj.Ready {
			ready = "1/1"
		}
		status := obj.Phase
		if obj.Orphan {
			status += " (orphan)"
		}
		ports := strings.Join(obj.Ports, ",")
		if ports == "" {
			ports = "<none>"
		}
		t.rows = append(t.rows, row{namespace: obj.Namespace, name: obj.Name, labels: obj.Labels,
			cells:  []string{obj.Name, ready, status, fmt.Sprint(obj.Restarts), age(snap.now.Sub(obj.Created))},
			wide:   []string{orNone(obj.Pod), orNone(obj.Deployment), orNone(obj.TemplateHash), obj.Image, ports},
			object: func() (any, error) { return obj, nil }})
	}
	return p.print(out, t, false, allNamespaces)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
