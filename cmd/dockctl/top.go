package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// `dockctl top pods|deployments`: kubectl top's table, with the figures
// metrics-server would give read from Docker's stats, in one shot.

const (
	// topConcurrency bounds the stats calls in flight. Each waits for two
	// of Docker's samples (one to two seconds: its collector runs every
	// second, for every container asked about in the same pass), so calls
	// made together take about as long as one, and a bound of 8 keeps a
	// large instance from opening a connection per container: 16 pods
	// took 4.1 s here, 2 pods 2.1 s.
	topConcurrency = 8
	// metricsCreationDelay is how old kubectl lets a pod be before it
	// calls its missing metrics an error rather than "not available yet".
	metricsCreationDelay = 2 * time.Minute
)

const topLong = `Display resource (CPU/memory) usage of pods or deployments, as kubectl top does, from Docker's
stats rather than from metrics-server.

CPU(cores) is the CPU used over about one second (between two of Docker's samples), in
millicores: 1000m is one core. MEMORY(bytes) is the working set, as kubelet reports it: memory
in use less the inactive file cache the kernel can reclaim first (what kubelet's memory
evictions go by), in MiB.

A pod's figures are the sum of its running containers (app, init and sidecar containers) without
its holder, as metrics-server leaves out a pod's pause container; a deployment's are the sum of
its pods. A container that is not running has no figures, and a pod or deployment none of whose
containers runs is left out, as metrics-server leaves it out.`

// topOptions are the flags of `top pods` and `top deployments`.
type topOptions struct {
	selector      string
	allNamespaces bool
	containers    bool // pods only: a row per container
	sortBy        string
	noHeaders     bool
	sum           bool
}

func newTopCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top pods|deployments [NAME | -l SELECTOR]",
		Short: "Display resource (CPU/memory) usage of pods or deployments",
		Long:  topLong,
		Example: `  # Show the CPU and memory of the pods of the default namespace
  dockctl top pods

  # Show the deployments of every namespace, the busiest first
  dockctl top deployments -A --sort-by cpu`,
		RunE: subcommandsOnly(false), // kubectl top's help goes to stderr
	}
	for _, kind := range kindNames(func(k *kindInfo) bool { return k.top != nil }) {
		cmd.AddCommand(newTopKindCommand(g, kind))
	}
	return cmd
}

// topOps is top's command for one kind (top pods, top deployments).
type topOps struct {
	use          string
	aliases      []string
	short        string
	example      string
	selectorHelp string
	// containers: the kind has --containers (a row per container).
	containers bool
	// pick finds the objects to report on (by name, or those -l selects).
	pick func(o *topOptions, g *globalOptions, snap *snapshot, sel labels.Selector, name string) ([]topObject, error)
}

var podTop = topOps{
	use:     "pods [NAME | -l SELECTOR]",
	aliases: []string{"pod", "po"},
	short:   "Display resource (CPU/memory) usage of pods",
	example: `  # Show metrics for all pods in the default namespace
  dockctl top pods

  # Show metrics for all pods in the given namespace
  dockctl top pod --namespace=NAMESPACE

  # Show metrics for a given pod and its containers
  dockctl top pod POD_NAME --containers

  # Show metrics for the pods defined by label app=web, and their sum
  dockctl top pod -l app=web --sum`,
	selectorHelp: "label selector (=, ==, !=, in, notin, KEY, !KEY) on the pods' labels, their template's " +
		"(deployment=NAME is short for io.dockctl.deployment=NAME, revision=HASH for io.dockctl.template-hash=HASH)",
	containers: true,
	pick:       (*topOptions).topPods,
}

var deploymentTop = topOps{
	use:     "deployments [NAME | -l SELECTOR]",
	aliases: []string{"deployment", "deploy", "deployments.apps", "deployment.apps"},
	short:   "Display resource (CPU/memory) usage of deployments (the sum of their pods)",
	example: `  # Show metrics for all deployments in the default namespace
  dockctl top deployments

  # Show metrics for deployment web
  dockctl top deploy web

  # Show metrics for the deployments of every namespace, the largest first, and their sum
  dockctl top deployments -A --sort-by memory --sum`,
	selectorHelp: "label selector (=, ==, !=, in, notin, KEY, !KEY) on the deployments' metadata.labels",
	pick:         (*topOptions).topDeployments,
}

// newTopKindCommand is `top pods` or `top deployments`: kind's topOps.
func newTopKindCommand(g *globalOptions, kind string) *cobra.Command {
	o := &topOptions{}
	t := kindByName(kind).top
	cmd := &cobra.Command{
		Use:     t.use,
		Aliases: t.aliases,
		Short:   t.short,
		Example: t.example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runTop(cmd, g, o, kind, name)
		},
	}
	cmd.Long = topLong
	f := cmd.Flags()
	// A plain string, not a slice: "app in (a,b)" must not be split on its comma.
	f.StringVarP(&o.selector, "selector", "l", "", t.selectorHelp)
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace (a NAMESPACE column comes first)")
	f.StringVar(&o.sortBy, "sort-by", "", "sort by cpu or memory, the largest first (default: by name)")
	f.BoolVar(&o.noHeaders, "no-headers", false, "print the table without its header line")
	f.BoolVar(&o.sum, "sum", false, "print the sum of the resource usage under the table")
	if t.containers {
		f.BoolVar(&o.containers, "containers", false, "print the usage of each container of a pod (a POD column comes first)")
	}
	return cmd
}

// validate checks the flags as kubectl does, before anything is read.
func (o *topOptions) validate(name string) error {
	switch {
	case o.sortBy != "" && o.sortBy != "cpu" && o.sortBy != "memory":
		return errors.New("--sort-by accepts only cpu or memory")
	case name != "" && o.selector != "":
		return errors.New("only one of NAME or selector can be provided")
	case name != "" && o.allNamespaces:
		return errors.New("a resource cannot be retrieved by name across all namespaces, as in kubectl")
	}
	return nil
}

func runTop(cmd *cobra.Command, g *globalOptions, o *topOptions, kind, name string) error {
	if err := o.validate(name); err != nil {
		return err
	}
	sel, err := kindByName(kind).selectorParser()(o.selector)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	snap, cli, err := g.liveSnapshot(ctx, false)
	if err != nil {
		return err
	}
	defer cli.Close()
	for _, err := range snap.recordErrs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	objs, err := kindByName(kind).top.pick(o, g, snap, sel, name)
	if err != nil {
		return err
	}
	var cs []dockerx.Container
	for _, obj := range objs {
		for _, m := range obj.members {
			cs = append(cs, m.c)
		}
	}
	samples, err := sampleContainers(ctx, cli, cs)
	if err != nil {
		return err
	}
	rows := topRows(objs, samples)
	if len(rows) == 0 {
		return o.noMetrics(cmd.ErrOrStderr(), g, kind, objs, snap.now)
	}
	return o.print(cmd.OutOrStdout(), rows)
}

// topObject is a pod or a deployment top reports on, with the containers
// whose usage makes its own.
type topObject struct {
	namespace, name string
	created         time.Time
	members         []topMember
}

// topMember is a running container of a pod, under its name in the pod.
type topMember struct {
	name string
	c    dockerx.Container
}

func (o *topOptions) inScope(g *globalOptions, ns string) bool {
	return o.allNamespaces || ns == g.namespace
}

// topPods picks the pods `get pods` would list.
func (o *topOptions) topPods(g *globalOptions, snap *snapshot, sel labels.Selector, name string) ([]topObject, error) {
	var objs []topObject
	for _, e := range snap.allPods() {
		if o.inScope(g, e.Namespace) && (name == "" || e.Name == name) && sel.Matches(labels.Set(e.labels())) {
			objs = append(objs, topObject{namespace: e.Namespace, name: e.Name, created: e.Created, members: podMembers(e)})
		}
	}
	if name != "" && len(objs) == 0 {
		return nil, notFoundIn(g, kindPod, g.namespace, name, store.ErrNotFound)
	}
	return objs, nil
}

// topDeployments picks the deployments `get deployments` would list, each
// with the containers of its pods (of any revision, terminating ones too:
// they still use what they use).
func (o *topOptions) topDeployments(g *globalOptions, snap *snapshot, sel labels.Selector, name string) ([]topObject, error) {
	var objs []topObject
	for _, r := range snap.records {
		ns := r.NamespaceOrDefault()
		if !o.inScope(g, ns) || (name != "" && r.Name != name) || !sel.Matches(labels.Set(r.Deployment.Metadata.Labels)) {
			continue
		}
		obj := topObject{namespace: ns, name: r.Name, created: r.CreatedAt}
		for _, e := range snap.allPods() {
			if !e.orphan && !e.deleted && e.Namespace == ns && e.ownedBy(manifests.Kind, r.Name) {
				obj.members = append(obj.members, podMembers(e)...)
			}
		}
		objs = append(objs, obj)
	}
	if name != "" && len(objs) == 0 {
		return nil, snap.missing(g, g.namespace, name)
	}
	return objs, nil
}

// podMembers are the containers of a pod that have usage: the running
// ones (a paused one keeps its memory, as a frozen container does for
// kubelet), never the holder, as metrics-server never counts a pod's pause
// container.
func podMembers(e podEntry) []topMember {
	var out []topMember
	for _, pc := range e.Containers {
		if c := pc.Container; c != nil && (c.State == dockerx.StateRunning || c.State == dockerx.StatePaused) {
			out = append(out, topMember{name: pc.DisplayName(), c: *c})
		}
	}
	return out
}

// statsSource is what top needs of Docker.
type statsSource interface {
	ContainerStats(ctx context.Context, id string) (dockerx.ContainerStats, error)
}

// sampleContainers reads the usage of each container, topConcurrency at a
// time. A container removed since the listing has no sample; any other
// failure fails the command (a figure left out silently would be wrong).
func sampleContainers(ctx context.Context, src statsSource, cs []dockerx.Container) (map[string]dockerx.ContainerStats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		first error
		out   = make(map[string]dockerx.ContainerStats, len(cs))
		slots = make(chan struct{}, topConcurrency)
	)
	for _, c := range cs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s, err := src.ContainerStats(ctx, c.ID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, dockerx.ErrNotFound):
			case err != nil:
				if first == nil {
					first = fmt.Errorf("container %s: %w", c.Name, err)
					cancel()
				}
			default:
				out[c.ID] = s
			}
		}()
	}
	wg.Wait()
	return out, first
}

// usage is a CPU and memory figure in kubectl's quantities: CPU from
// nanocores, memory from bytes, as metrics-server makes them.
type usage struct {
	cpu, memory resource.Quantity
}

func usageOf(s dockerx.ContainerStats) usage {
	return usage{cpu: *resource.NewScaledQuantity(int64(s.CPUNanoCores), resource.Nano),
		memory: *resource.NewQuantity(int64(s.MemoryWorkingSet), resource.BinarySI)}
}

func (u *usage) add(v usage) {
	u.cpu.Add(v.cpu)
	u.memory.Add(v.memory)
}

// topRow is the usage of a pod or deployment, with its containers' (for
// --containers).
type topRow struct {
	namespace, name string
	usage
	containers []topContainer
}

type topContainer struct {
	name string
	usage
}

// topRows sums each object's containers that have figures; an object
// without any has no row, as metrics-server reports no metrics for a pod
// none of whose containers it could measure.
func topRows(objs []topObject, samples map[string]dockerx.ContainerStats) []topRow {
	var rows []topRow
	for _, obj := range objs {
		r := topRow{namespace: obj.namespace, name: obj.name}
		for _, m := range obj.members {
			s, ok := samples[m.c.ID]
			if !ok || !s.Complete() {
				continue
			}
			u := usageOf(s)
			r.containers = append(r.containers, topContainer{name: m.name, usage: u})
			r.add(u)
		}
		if len(r.containers) > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

// noMetrics says why nothing was printed, in kubectl's words: nothing
// selected (not an error), or objects without metrics — an error naming
// the first one older than kubectl's grace for new pods, else "not
// available yet".
func (o *topOptions) noMetrics(w io.Writer, g *globalOptions, kind string, objs []topObject, now time.Time) error {
	if len(objs) == 0 {
		if o.allNamespaces {
			fmt.Fprintln(w, "No resources found")
		} else {
			fmt.Fprintf(w, "No resources found in %s namespace.\n", g.namespace)
		}
		return nil
	}
	for _, obj := range objs {
		if age := now.Sub(obj.created); age > metricsCreationDelay {
			return fmt.Errorf("Metrics not available for %s %s/%s, age: %s", kind, obj.namespace, obj.name, age.Round(time.Second))
		}
	}
	return errors.New("metrics not available yet")
}

// formatCPU and formatMemory print a figure as kubectl top does:
// millicores rounded up, MiB rounded down.
func formatCPU(q resource.Quantity) string    { return fmt.Sprintf("%dm", q.MilliValue()) }
func formatMemory(q resource.Quantity) string { return fmt.Sprintf("%dMi", q.Value()/(1024*1024)) }

// print prints the rows as kubectl's TopCmdPrinter: its tab writer
// (minimum width 6, padding 3, each cell tab-terminated, so lines end in
// spaces), NAMESPACE first with -A, POD before each container's NAME with
// --containers, sorted by namespace and name or, with --sort-by, the
// largest first, and with --sum two lines under the figures. kubectl
// aligns the sum under the figures only when it prints headers; it is
// aligned here in any case.
func (o *topOptions) print(out io.Writer, rows []topRow) error {
	w := tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
	columns := 3
	if o.allNamespaces {
		columns++
	}
	if o.containers {
		columns++
	}
	if !o.noHeaders {
		if o.allNamespaces {
			fmt.Fprint(w, "NAMESPACE\t")
		}
		if o.containers {
			fmt.Fprint(w, "POD\t")
		}
		fmt.Fprint(w, "NAME\tCPU(cores)\tMEMORY(bytes)\t\n")
	}
	o.sortRows(rows)
	var total usage
	line := func(prefix []string, name string, u usage) {
		for _, p := range prefix {
			fmt.Fprint(w, p+"\t")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", name, formatCPU(u.cpu), formatMemory(u.memory))
	}
	for _, r := range rows {
		var prefix []string
		if o.allNamespaces {
			prefix = append(prefix, r.namespace)
		}
		total.add(r.usage)
		if !o.containers {
			line(prefix, r.name, r.usage)
			continue
		}
		for _, c := range r.containers {
			line(append(prefix, r.name), c.name, c.usage)
		}
	}
	if o.sum {
		fmt.Fprint(w, strings.Repeat("\t", columns-2)+"________\t________\t\n")
		line(make([]string, columns-3), "", total)
	}
	return w.Flush()
}

// sortRows orders rows, and each row's containers, as kubectl's sorters
// do; ties keep name order so that the output is stable.
func (o *topOptions) sortRows(rows []topRow) {
	less := func(a, b usage) (bool, bool) {
		switch o.sortBy {
		case "cpu":
			return a.cpu.MilliValue() > b.cpu.MilliValue(), a.cpu.MilliValue() != b.cpu.MilliValue()
		case "memory":
			return a.memory.Value() > b.memory.Value(), a.memory.Value() != b.memory.Value()
		}
		return false, false
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if l, decided := less(rows[i].usage, rows[j].usage); decided {
			return l
		}
		if o.allNamespaces && rows[i].namespace != rows[j].namespace {
			return rows[i].namespace < rows[j].namespace
		}
		return rows[i].name < rows[j].name
	})
	for _, r := range rows {
		sort.SliceStable(r.containers, func(i, j int) bool {
			if l, decided := less(r.containers[i].usage, r.containers[j].usage); decided {
				return l
			}
			return r.containers[i].name < r.containers[j].name
		})
	}
}
