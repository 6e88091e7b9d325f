package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

type logsOptions struct {
	follow        bool
	tail          string
	container     string
	allContainers bool
	since         time.Duration
	sinceTime     string
	timestamps    bool
	// selector picks the pods of -n's namespace by their labels (-l), in
	// place of a name.
	selector string
	// prefix is --prefix; prefixSet tells that it was given, so that it
	// wins over the default (prefixed).
	prefix, prefixSet bool
	// maxLogRequests bounds the streams -f follows at once, counted as
	// kubectl's requests (followRequests).
	maxLogRequests int
	// ignoreErrors prints a stream's error as a line and goes on with
	// the others.
	ignoreErrors bool
	// previous is -p: the lines of the container's runs before its
	// current one (previousRun).
	previous bool
	// allPods is kubectl's --all-pods: every pod of the object named, not
	// its first (logsOps.every), each line prefixed.
	allPods bool
}

// selectorTail is kubectl's --tail when a selector picks the pods and
// none is given: the last 10 lines of each container.
const selectorTail = "10"

// defaultMaxLogRequests is kubectl's --max-log-requests.
const defaultMaxLogRequests = 5

// prefixed tells whether each line carries [pod/NAME/CONTAINER], kubectl's
// --prefix: as given, else where dockctl prints several containers at once
// beyond what kubectl's default would (a deployment's every replica, as
// kubectl's --all-pods, which sets --prefix; --all-containers), never for
// one container of one pod nor -l, as kubectl.
func (o *logsOptions) prefixed(kind string) bool {
	if o.prefixSet {
		return o.prefix
	}
	return o.replicas(kind) || o.allContainers
}

// replicas says whether o prints every pod of an object of kind: a
// deployment's always, another's under --all-pods.
func (o *logsOptions) replicas(kind string) bool {
	if replicas(kind) {
		return true
	}
	k := kindByName(kind)
	return o.allPods && k != nil && k.logs != nil && k.logs.every != nil
}

// logsOps is how logs reads the objects of one kind.
type logsOps struct {
	// pods are the pods of the object name in -n's namespace.
	pods func(g *globalOptions, snap *snapshot, name string) ([]podEntry, error)
	// replicas: its pods are replicas, each printed, prefixed by
	// default, and one lacking the container skipped (kubectl's
	// --all-pods).
	replicas bool
	// every are all the pods of the object, for --all-pods; nil: pods
	// are all of them already, or the kind has one pod (a pod).
	every func(g *globalOptions, snap *snapshot, name string) ([]podEntry, error)
}

// replicas says whether kind's pods are replicas (logsOps.replicas);
// kind "" is -l's.
func replicas(kind string) bool {
	k := kindByName(kind)
	return k != nil && k.logs != nil && k.logs.replicas
}

var podLogs = logsOps{
	pods: func(g *globalOptions, snap *snapshot, name string) ([]podEntry, error) {
		e, err := snap.pod(g, g.namespace, name)
		if err != nil {
			return nil, err
		}
		return []podEntry{e}, nil
	},
}

var deploymentLogs = logsOps{
	pods: func(g *globalOptions, snap *snapshot, name string) ([]podEntry, error) {
		var pods []podEntry
		for _, e := range snap.allPods() {
			if e.Namespace == g.namespace && e.ownedBy(manifests.Kind, name) {
				pods = append(pods, e)
			}
		}
		if len(pods) == 0 {
			if err := snap.absent(g, g.namespace, name); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("deployment %q has no containers in %s", name, g.where(g.namespace))
		}
		return pods, nil
	},
	replicas: true,
}

// workloadLogs reads a workload's logs as kubectl does: those of its
// first pod (attachable's choice), not of every pod.
func workloadLogs(kind string) *logsOps {
	selector := podsOfWorkload(kind)
	return &logsOps{pods: func(g *globalOptions, snap *snapshot, name string) ([]podEntry, error) {
		pods, err := selector(snap, g, g.namespace, name)
		if err != nil {
			return nil, err
		}
		e, ok := attachable(pods)
		if !ok {
			return nil, fmt.Errorf("%s %q has no pods in %s", strings.ToLower(kind), name, g.where(g.namespace))
		}
		return []podEntry{e}, nil
	}, every: func(g *globalOptions, snap *snapshot, name string) ([]podEntry, error) {
		pods, err := selector(snap, g, g.namespace, name)
		if err != nil {
			return nil, err
		}
		if len(pods) == 0 {
			return nil, fmt.Errorf("%s %q has no pods in %s", strings.ToLower(kind), name, g.where(g.namespace))
		}
		sort.SliceStable(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
		return pods, nil
	}}
}

// logPrefix is kubectl's --prefix for a container of a pod.
func logPrefix(pod, container string) string {
	return "[pod/" + pod + "/" + container + "] "
}

// dockerOptions are the lines o asks of each container's log, as of now.
func (o *logsOptions) dockerOptions(now time.Time, follow bool) (dockerx.LogsOptions, error) {
	d := dockerx.LogsOptions{Follow: follow, Tail: o.tail, Timestamps: o.timestamps}
	switch {
	case o.since != 0 && o.sinceTime != "":
		return d, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified") // kubectl's words
	case o.since < 0:
		return d, errors.New("--since must be greater than 0")
	case o.since > 0:
		d.Since = now.Add(-o.since)
	case o.sinceTime != "":
		t, err := time.Parse(time.RFC3339Nano, o.sinceTime)
		if err != nil {
			return d, fmt.Errorf("--since-time must be an RFC 3339 time, as 2026-12-03T10:00:00Z: %w", err)
		}
		d.Since = t
	}
	return d, nil
}

// logsUsage is kubectl's usage line of logs, in its error for a missing
// argument.
const logsUsage = "logs [-f] (POD | TYPE/NAME | -l SELECTOR) [-c CONTAINER]"

func newLogsCommand(g *globalOptions) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use: "logs deployment/NAME | pod/NAME | POD [CONTAINER] | -l SELECTOR [-c CONTAINER | --all-containers] [-f] [--tail N] " +
			"[--since D | --since-time T] [--timestamps] [--prefix] [--max-log-requests N] [--ignore-errors]",
		Short: "Print the logs of a pod's container, of every replica of a deployment, or of the pods a selector picks",
		Example: `  # Print the logs of every replica of deployment web, each line prefixed with its pod and container
  dockctl logs deployment/web

  # Follow the last 20 lines of container sidecar of a pod
  dockctl logs web-5d8f9c7b6a-0 -c sidecar -f --tail 20

  # Print the logs of every container of a pod, init containers first
  dockctl logs pod/web-5d8f9c7b6a-0 --all-containers

  # Print the last hour of deployment web's logs, each line with its time
  dockctl logs deploy/web --since 1h --timestamps

  # Print the last 10 lines of each pod labelled app=web, prefixed with the pod and container
  dockctl logs -l app=web --prefix

  # Follow the pods labelled tier=front, up to 10 streams at once
  dockctl logs -l tier=front -f --max-log-requests 10`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var kind, name, container string
			switch {
			case o.selector == "" && len(args) == 0, len(args) > 2:
				return usageErrorf(cmd, "expected '%s'.\nPOD or TYPE/NAME is a required argument for the logs command", logsUsage)
			case o.selector != "" && len(args) > 0:
				return usageErrorf(cmd, "only a selector (-l) or a POD name is allowed")
			case o.selector == "":
				var err error
				if kind, name, container, err = logsArgs(args); err != nil {
					return err
				}
			}
			if container != "" {
				if cmd.Flags().Changed("container") {
					return errors.New("only one of -c or an inline [CONTAINER] arg is allowed")
				}
				o.container = container
			}
			if o.selector != "" && !cmd.Flags().Changed("tail") {
				o.tail = selectorTail
			}
			o.prefixSet = cmd.Flags().Changed("prefix")
			if _, err := o.dockerOptions(time.Now(), o.follow); err != nil {
				return err
			}
			if o.allContainers && o.container != "" {
				return fmt.Errorf("--all-containers=true should not be specified with container name %s", o.container)
			}
			ctx := cmd.Context()
			snap, cli, err := g.liveSnapshot(ctx, false)
			if err != nil {
				return err
			}
			defer cli.Close()
			streams, err := logStreams(g, snap, kind, name, o)
			if err != nil {
				return err
			}
			if len(streams) == 0 {
				// Only a selector matches nothing, which is no error.
				g.noResources(cmd.ErrOrStderr(), g.namespace)
				return nil
			}
			printed := map[string]bool{}
			for _, s := range streams {
				if s.notice != "" && !printed[s.notice] {
					printed[s.notice] = true
					fmt.Fprintln(cmd.ErrOrStderr(), s.notice)
				}
			}
			return printLogs(ctx, cli, streams, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "stream new lines as they are written")
	cmd.Flags().StringVar(&o.tail, "tail", "all", "lines from the end of each container's log (all or N); with a selector, 10 unless given, as kubectl")
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "the container of the pod (its name in the template); "+
		"default: the one the pod's kubectl.kubernetes.io/default-container annotation names, else its only app container")
	cmd.Flags().DurationVar(&o.since, "since", 0, "only lines newer than this relative duration, as 5s, 2m or 3h")
	cmd.Flags().StringVar(&o.sinceTime, "since-time", "", "only lines after this RFC 3339 time (at most one of --since and --since-time)")
	cmd.Flags().BoolVar(&o.timestamps, "timestamps", false, "prefix each line with its RFC 3339 time, as Docker recorded it")
	cmd.Flags().BoolVar(&o.allContainers, "all-containers", false, "every container of the pod, init containers first, each line prefixed with [pod/NAME/CONTAINER]")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "the pods of the namespace whose labels match this selector (=, ==, !=, in, notin, key, !key), in place of a name")
	cmd.Flags().BoolVar(&o.prefix, "prefix", false, "prefix each line with its source, [pod/NAME/CONTAINER] "+
		"(default for a deployment's replicas and --all-containers; --prefix=false turns it off)")
	cmd.Flags().IntVar(&o.maxLogRequests, "max-log-requests", defaultMaxLogRequests, "the most log streams -f follows at once, of -l or of one pod's --all-containers; a deployment's replicas count as one pod (more is an error, as in kubectl)")
	cmd.Flags().BoolVarP(&o.previous, "previous", "p", false, "the lines of the container's runs before its current one: of a container waiting to restart its exited run; "+
		"of one that restarted the runs before the current one (all of them: Docker keeps one log per container); none: an error, as kubectl")
	cmd.Flags().BoolVar(&o.allPods, "all-pods", false, "every pod of the job, statefulset, daemonset… named, not its first, each line prefixed (a deployment's are all printed anyway)")
	cmd.Flags().BoolVar(&o.ignoreErrors, "ignore-errors", false, "print a container's log error as an \"error: …\" line and go on with the others, instead of stopping")
	return cmd
}

// logsArgs reads `deployment NAME`, `deployment/NAME`, `pod NAME`,
// `pod/NAME`, and kubectl's `POD [CONTAINER]`.
func logsArgs(args []string) (kind, name, container string, err error) {
	if _, known := kindAlias(args[0]); !strings.Contains(args[0], "/") && !known {
		if len(args) == 2 {
			container = args[1]
		}
		return kindPod, args[0], container, nil
	}
	kind, name, err = resourceArg(args, logsKinds...)
	return kind, name, "", err
}

// logStream is one container's log to print.
type logStream struct {
	id, name string // Docker's ID and name of the container
	// replica is the pod of a deployment's replica ("" for a pod named
	// or picked by -l): see followRequests.
	replica string
	prefix  string // put before each line ("" for none)
	// notice tells which container was chosen for the user (stderr), when
	// the pod has several and none was named.
	notice string
	// err is why the stream cannot be read (a pod -l picked whose
	// container is not there): reported at its turn, as kubectl reports
	// the API server's refusal of that one stream.
	err error
	// previous, for -p, are the lines of the container's earlier runs.
	previous *logWindow
}

// logWindow is a part of a container's log by the time of its lines:
// those written at or after since (zero: from the first) and before
// until (zero: to the last).
type logWindow struct{ since, until time.Time }

// previousRun is -p's part of container pc of pod e: the lines of its
// runs before the current one. A dockctl container restarts in place
// (docs/design.md §8: the controller starts the exited container again),
// and Docker keeps one log for every run of a container, so these are
// there: of a container waiting to restart (kubectl's last state
// terminated), its exited run's, from its start; of a running container
// that restarted, or one that exited after it restarted, those written
// before its current (last) run started — every
// earlier run's when it restarted more than once (notice says so), where
// kubectl's kubelet keeps the one before only. A container that never
// restarted, or was made anew (its log gone with the one it replaced),
// has none: kubectl's error.
func previousRun(snap *snapshot, e podEntry, pc podruntime.PodContainer) (*logWindow, string, error) {
	// logStreams has inspected the containers of every pod (their starts).
	d := snap.containerDetails(pc.Container)
	if d != nil && !d.StartedAt.IsZero() {
		state, last := e.ContainerState(pc)
		switch {
		case last.Terminated != nil:
			return &logWindow{since: d.StartedAt}, "", nil
		case (state.Running != nil || state.Terminated != nil) && pc.View.Restarts > 0:
			// Running or exited after a restart (an init container run
			// again, then completed): kubelet's last state is the run
			// before; Docker's log holds it before the last run's start.
			notice := ""
			if pc.View.Restarts > 1 {
				notice = fmt.Sprintf("container %q in pod %q restarted %d times: its previous logs are those of every earlier run (Docker keeps one log per container)",
					pc.DisplayName(), e.Name, pc.View.Restarts)
			}
			return &logWindow{until: d.StartedAt}, notice, nil
		}
	}
	// kubectl's words.
	return nil, "", fmt.Errorf("previous terminated container %q in pod %q not found", pc.DisplayName(), e.Name)
}

// logPods returns the pods whose logs `logs` prints: the one named, the
// replicas of a deployment, or (kind "") those of -n's namespace the
// selector matches, none being no error.
func logPods(g *globalOptions, snap *snapshot, kind, name string, o *logsOptions) ([]podEntry, error) {
	if kind != "" {
		ops := kindByName(kind).logs
		if o.allPods && ops.every != nil {
			return ops.every(g, snap, name)
		}
		return ops.pods(g, snap, name)
	}
	selector := o.selector
	var pods []podEntry
	sel, err := parseContainerSelector(selector)
	if err != nil {
		return nil, err
	}
	for _, e := range snap.allPods() {
		if e.Namespace == g.namespace && sel.Matches(labels.Set(e.labels())) {
			pods = append(pods, e)
		}
	}
	return pods, nil
}

// logStreams picks the containers whose logs `logs` prints: of one pod, of
// every pod of a deployment or of the pods a selector picks (logPods), the
// container -c names (or the pod's default one), or with --all-containers
// every container that exists, init containers first. A holder is never
// one of them: it logs nothing. Prefixes: see prefixed.
func logStreams(g *globalOptions, snap *snapshot, kind, name string, o *logsOptions) ([]logStream, error) {
	pods, err := logPods(g, snap, kind, name, o)
	if err != nil || len(pods) == 0 {
		return nil, err
	}
	if o.previous {
		// previousRun reads the containers' starts: one inspecting pass
		// (one Docker client) for all the pods, not one a pod.
		snap.inspect(pods)
	}
	prefix := func(e podEntry, pc podruntime.PodContainer) string {
		if !o.prefixed(kind) {
			return ""
		}
		return logPrefix(e.Name, pc.DisplayName())
	}
	var out []logStream
	if o.allContainers {
		for _, e := range pods {
			for _, pc := range e.Containers {
				if c := pc.Container; c != nil {
					s := logStream{id: c.ID, name: c.Name, prefix: prefix(e, pc), replica: o.replicaOf(kind, e)}
					if o.previous {
						w, notice, err := previousRun(snap, e, pc)
						if err != nil {
							return nil, err
						}
						s.previous, s.notice = w, notice
					}
					out = append(out, s)
				}
			}
		}
		if len(out) == 0 && kind != "" {
			return nil, fmt.Errorf("%s %q has no container created yet", kind, name)
		}
		return out, nil
	}
	var skipped error
	for _, e := range pods {
		pc, notice, err := pickContainer(e, o.container)
		missing := errors.Is(err, errContainerNotFound)
		if err == nil && pc.Container == nil {
			err, missing = notCreated(e, pc), true
		}
		switch {
		case err == nil && o.previous:
			w, pnotice, perr := previousRun(snap, e, pc)
			if perr != nil {
				if kind == "" {
					out = append(out, logStream{name: e.Name, err: perr})
					continue
				}
				return nil, perr
			}
			c := pc.Container
			if notice == "" {
				notice = pnotice
			} else if pnotice != "" {
				notice += "\n" + pnotice
			}
			out = append(out, logStream{id: c.ID, name: c.Name, prefix: prefix(e, pc), notice: notice, replica: o.replicaOf(kind, e), previous: w})
		case err == nil:
			c := pc.Container
			out = append(out, logStream{id: c.ID, name: c.Name, prefix: prefix(e, pc), notice: notice, replica: o.replicaOf(kind, e)})
		case o.replicas(kind) && missing:
			// A replica of another revision may lack it, or not have
			// created it yet: the others say.
			skipped = firstErr(skipped, err)
		case kind == "":
			out = append(out, logStream{name: e.Name, err: err})
		default:
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, skipped
	}
	return out, nil
}

// replicaOf is a stream's replica: its pod when o prints every pod of
// an object of kind (a deployment's, --all-pods).
func (o *logsOptions) replicaOf(kind string, e podEntry) string {
	if !o.replicas(kind) {
		return ""
	}
	return e.Name
}

// followRequests is how many log requests kubectl's -f makes for the same
// command, which --max-log-requests bounds: one per stream of -l or of
// one pod (--all-containers). Of a deployment kubectl follows one pod,
// where dockctl prints every replica (as --all-pods): it counts the
// streams of one replica only, so that following a deployment of any
// size is never refused, as kubectl never refuses it.
func followRequests(streams []logStream) int {
	perReplica := map[string]int{}
	n := 0
	for _, s := range streams {
		if s.replica == "" {
			n++
			continue
		}
		perReplica[s.replica]++
	}
	most := 0
	for _, c := range perReplica {
		most = max(most, c)
	}
	return n + most
}

// notCreated words why a pod's container that pickContainer chose has no
// Docker container to read.
func notCreated(e podEntry, pc podruntime.PodContainer) error {
	if state, _ := e.ContainerState(pc); state.Waiting != nil {
		return fmt.Errorf("container %q in pod %q is waiting to start: %s", pc.DisplayName(), e.Name, state.Waiting.Reason)
	}
	return fmt.Errorf("container %q of pod %q was removed after it completed: its logs went with it", pc.DisplayName(), e.Name)
}

// firstErr keeps the first of the errors met.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// errContainerNotFound is a -c naming no container of the pod.
var errContainerNotFound = errors.New("container not found")

// pickContainer chooses the container of a pod whose log `logs` prints, as
// kubectl does (since its default-container change): the named one; else
// the one the pod's kubectl.kubernetes.io/default-container annotation
// names; else its first app container — with a notice naming the choices
// when the pod has more than one container.
func pickContainer(e podEntry, name string) (podruntime.PodContainer, string, error) {
	find := func(n string) (podruntime.PodContainer, bool) {
		for _, pc := range e.Containers {
			if pc.DisplayName() == n {
				return pc, true
			}
		}
		return podruntime.PodContainer{}, false
	}
	if name != "" {
		if pc, ok := find(name); ok {
			return pc, "", nil
		}
		return podruntime.PodContainer{}, "", fmt.Errorf("%w: no container %q in pod %q (it has: %s)", errContainerNotFound, name, e.Name, strings.Join(allNames(e), ", "))
	}
	if def := e.annotations()[AnnotationDefaultContainer]; def != "" {
		if pc, ok := find(def); ok {
			return pc, "", nil
		}
	}
	var apps, inits []string
	var first *podruntime.PodContainer
	for i, pc := range e.Containers {
		if pc.Init {
			inits = append(inits, pc.DisplayName()+" (init)")
			continue
		}
		apps = append(apps, pc.DisplayName())
		if first == nil {
			first = &e.Containers[i]
		}
	}
	if first == nil {
		return podruntime.PodContainer{}, "", fmt.Errorf("pod %q has no app container", e.Name)
	}
	notice := ""
	if len(apps)+len(inits) > 1 {
		notice = fmt.Sprintf("Defaulted container %q out of: %s", first.DisplayName(), strings.Join(append(apps, inits...), ", "))
	}
	return *first, notice, nil
}

// allNames lists a pod's container names, init containers first.
func allNames(e podEntry) []string {
	out := make([]string, 0, len(e.Containers))
	for _, pc := range e.Containers {
		out = append(out, pc.DisplayName())
	}
	return out
}

// logSource is what printLogs needs of Docker.
type logSource interface {
	LogsWith(ctx context.Context, id string, o dockerx.LogsOptions) (io.ReadCloser, error)
}

// options are the Docker options of s's lines: opts, within its previous
// window for -p, not followed (the run is over).
func (s logStream) options(opts dockerx.LogsOptions) dockerx.LogsOptions {
	if w := s.previous; w != nil {
		opts.Follow = false
		if w.since.After(opts.Since) {
			opts.Since = w.since
		}
		opts.Until = w.until
	}
	return opts
}

// printLogs prints the streams' logs. Without -f one after the other, in
// order, as kubectl prints a pod's containers; with -f all at once, lines
// interleaved but each whole, at most --max-log-requests of kubectl's
// requests (followRequests; more is kubectl's error, before any is
// opened). A stream's error stops the
// command, or with --ignore-errors is printed as an "error: " line among
// the logs, as kubectl prints it, and the others go on.
func printLogs(ctx context.Context, cli logSource, streams []logStream, o *logsOptions, w io.Writer) error {
	out := &lockedWriter{w: w}
	opts, err := o.dockerOptions(time.Now(), o.follow)
	if err != nil {
		return err
	}
	if n := followRequests(streams); o.follow && n > 1 && n > o.maxLogRequests {
		return fmt.Errorf("you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit",
			n, o.maxLogRequests)
	}
	// failed reports err, a stream's: as a line with --ignore-errors
	// (false: go on), else as the command's error (true: stop).
	failed := func(err error) bool {
		if !o.ignoreErrors {
			return true
		}
		out.line("error: " + err.Error())
		return false
	}
	open := func(ctx context.Context, s logStream) (io.ReadCloser, error) {
		if s.err != nil {
			return nil, s.err
		}
		rc, err := cli.LogsWith(ctx, s.id, s.options(opts))
		if err != nil {
			return nil, fmt.Errorf("logs %s: %w", s.name, err)
		}
		return rc, nil
	}
	if !o.follow {
		for _, s := range streams {
			rc, err := open(ctx, s)
			if err == nil {
				err = prefixLines(out, rc, s.prefix)
				rc.Close()
			}
			if err != nil && failed(err) {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rcs := make([]io.ReadCloser, len(streams))
	for i, s := range streams {
		rc, err := open(ctx, s)
		if err != nil && failed(err) {
			return err // cancel closes the streams opened so far
		}
		rcs[i] = rc
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i, rc := range rcs {
		if rc == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rc.Close()
			err := prefixLines(out, rc, streams[i].prefix)
			if err == nil || ctx.Err() != nil || !failed(err) {
				return
			}
			mu.Lock()
			first = firstErr(first, err)
			mu.Unlock()
			cancel() // kubectl stops at the first error: so do the others
		}()
	}
	wg.Wait()
	return first
}

// lockedWriter keeps lines from different containers whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// line writes one whole line.
func (w *lockedWriter) line(s string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := io.WriteString(w.w, s+"\n")
	return err
}

// prefixLines copies r's lines to w, each whole and after prefix, of any
// length (kubectl's DefaultConsumeRequest reads with ReadBytes too: a JSON
// document or a stack trace on one line is printed, and the lines after
// it). A last line without its newline is printed with one.
func prefixLines(w *lockedWriter, r io.Reader, prefix string) error {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if werr := w.line(prefix + strings.TrimRight(string(b), "\r\n")); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
