package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler"
)

type logsOptions struct {
	follow        bool
	tail          string
	container     string
	allContainers bool
	since         time.Duration
	sinceTime     string
	timestamps    bool
}

// dockerOptions are the lines o asks of each container's log, as of now.
func (o *logsOptions) dockerOptions(now time.Time, follow bool) (dockerx.LogsOptions, error) {
	d := dockerx.LogsOptions{Follow: follow, Tail: o.tail, Timestamps: o.timestamps}
	switch {
	case o.since != 0 && o.sinceTime != "":
		return d, fmt.Errorf("at most one of --since or --since-time may be given, as in kubectl")
	case o.since < 0:
		return d, fmt.Errorf("--since must be positive: %s", o.since)
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

func newLogsCommand(g *globalOptions) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs deployment/NAME | pod/NAME | POD [CONTAINER] [-c CONTAINER | --all-containers] [-f] [--tail N] [--since D | --since-time T] [--timestamps]",
		Short: "Print the logs of a pod's container, or of every replica of a deployment (each line prefixed with its container)",
		Example: `  # Print the logs of every replica of deployment web
  dockctl logs deployment/web

  # Follow the last 20 lines of container sidecar of a pod
  dockctl logs web-5d8f9c7b6a-0 -c sidecar -f --tail 20

  # Print the logs of every container of a pod, init containers first
  dockctl logs pod/web-5d8f9c7b6a-0 --all-containers

  # Print the last hour of deployment web's logs, each line with its time
  dockctl logs deploy/web --since 1h --timestamps`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, container, err := logsArgs(args)
			if err != nil {
				return err
			}
			if container != "" {
				if o.container != "" && o.container != container {
					return fmt.Errorf("container %q given twice: as an argument and with -c %q", container, o.container)
				}
				o.container = container
			}
			if _, err := o.dockerOptions(time.Now(), o.follow); err != nil {
				return err
			}
			if o.allContainers && o.container != "" {
				return fmt.Errorf("--all-containers cannot be given with a container name (-c)")
			}
			ctx := cmd.Context()
			st, err := g.readStore()
			if err != nil {
				return err
			}
			cli, err := g.docker(ctx)
			if err != nil {
				return err
			}
			defer cli.Close()
			snap, err := takeSnapshotWith(ctx, g, st, cli)
			if err != nil {
				return err
			}
			streams, err := logStreams(g, snap, kind, name, o)
			if err != nil {
				return err
			}
			if len(streams) > 0 && streams[0].notice != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), streams[0].notice)
			}
			return printLogs(ctx, cli, streams, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "stream new lines as they are written")
	cmd.Flags().StringVar(&o.tail, "tail", "all", "lines from the end of each container's log (all or N)")
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "the container of the pod (its name in the template); "+
		"default: the one the pod's kubectl.kubernetes.io/default-container annotation names, else its only app container")
	cmd.Flags().DurationVar(&o.since, "since", 0, "only lines newer than this relative duration, as 5s, 2m or 3h")
	cmd.Flags().StringVar(&o.sinceTime, "since-time", "", "only lines after this RFC 3339 time (at most one of --since and --since-time)")
	cmd.Flags().BoolVar(&o.timestamps, "timestamps", false, "prefix each line with its RFC 3339 time, as Docker recorded it")
	cmd.Flags().BoolVar(&o.allContainers, "all-containers", false, "every container of the pod, init containers first, each line prefixed with [pod/NAME/CONTAINER]")
	return cmd
}

// logsArgs reads `deployment NAME`, `deployment/NAME`, `pod NAME`,
// `pod/NAME`, and kubectl's `POD [CONTAINER]`.
func logsArgs(args []string) (kind, name, container string, err error) {
	if !strings.Contains(args[0], "/") && kindAliases[args[0]] == "" {
		if len(args) == 2 {
			container = args[1]
		}
		return kindPod, args[0], container, nil
	}
	kind, name, err = resourceArg(args, kindDeployment, kindPod)
	return kind, name, "", err
}

// logStream is one container's log to print.
type logStream struct {
	id, name string // Docker's ID and name of the container
	prefix   string // put before each line ("" for none)
	// notice tells which container was chosen for the user (stderr), when
	// the pod has several and none was named.
	notice string
}

// logStreams picks the containers whose logs `logs` prints: of one pod or
// of every pod of a deployment, the container -c names (or the pod's
// default one), or with --all-containers every container that exists, init
// containers first. A holder is never one of them: it logs nothing.
// Prefixes: [pod/NAME/CONTAINER] with --all-containers (kubectl's
// --prefix), [container] for a deployment's replicas, none for one
// container of one pod.
func logStreams(g *globalOptions, snap *snapshot, kind, name string, o *logsOptions) ([]logStream, error) {
	var pods []podEntry
	if kind == kindPod {
		e, err := snap.pod(g, g.namespace, name)
		if err != nil {
			return nil, err
		}
		pods = []podEntry{e}
	} else {
		for _, e := range snap.allPods() {
			if e.Namespace == g.namespace && e.Deployment == name {
				pods = append(pods, e)
			}
		}
		if len(pods) == 0 {
			if err := snap.absent(g, g.namespace, name); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("deployment %q has no containers in %s", name, g.where(g.namespace))
		}
	}
	var out []logStream
	if o.allContainers {
		for _, e := range pods {
			for _, pc := range e.Containers {
				if c := pc.Container; c != nil {
					out = append(out, logStream{id: c.ID, name: c.Name, prefix: "[pod/" + e.Name + "/" + containerName(pc) + "] "})
				}
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s %q has no container created yet", kind, name)
		}
		return out, nil
	}
	var skipped error
	for _, e := range pods {
		pc, notice, err := pickContainer(e, o.container)
		switch {
		case errors.Is(err, errContainerNotFound) && kind == kindDeployment:
			// A replica of another revision may lack it: the others say.
			skipped = firstErr(skipped, err)
			continue
		case err != nil:
			return nil, err
		}
		c := pc.Container
		if c == nil {
			state, _ := e.containerState(pc)
			err := fmt.Errorf("container %q of pod %q was removed after it completed: its logs went with it", containerName(pc), e.Name)
			if state.Waiting != nil {
				err = fmt.Errorf("container %q in pod %q is waiting to start: %s", containerName(pc), e.Name, state.Waiting.Reason)
			}
			if kind == kindDeployment {
				skipped = firstErr(skipped, err)
				continue
			}
			return nil, err
		}
		prefix := ""
		if kind == kindDeployment {
			prefix = "[" + c.Name + "] "
		}
		out = append(out, logStream{id: c.ID, name: c.Name, prefix: prefix, notice: notice})
	}
	if len(out) == 0 {
		return nil, skipped
	}
	return out, nil
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
func pickContainer(e podEntry, name string) (reconciler.PodContainer, string, error) {
	find := func(n string) (reconciler.PodContainer, bool) {
		for _, pc := range e.Containers {
			if containerName(pc) == n {
				return pc, true
			}
		}
		return reconciler.PodContainer{}, false
	}
	if name != "" {
		if pc, ok := find(name); ok {
			return pc, "", nil
		}
		return reconciler.PodContainer{}, "", fmt.Errorf("%w: no container %q in pod %q (it has: %s)", errContainerNotFound, name, e.Name, strings.Join(allNames(e), ", "))
	}
	if def := e.annotations()[AnnotationDefaultContainer]; def != "" {
		if pc, ok := find(def); ok {
			return pc, "", nil
		}
	}
	var apps, inits []string
	var first *reconciler.PodContainer
	for i, pc := range e.Containers {
		if pc.Init {
			inits = append(inits, containerName(pc)+" (init)")
			continue
		}
		apps = append(apps, containerName(pc))
		if first == nil {
			first = &e.Containers[i]
		}
	}
	if first == nil {
		return reconciler.PodContainer{}, "", fmt.Errorf("pod %q has no app container", e.Name)
	}
	notice := ""
	if len(apps)+len(inits) > 1 {
		notice = fmt.Sprintf("Defaulted container %q out of: %s", containerName(*first), strings.Join(append(apps, inits...), ", "))
	}
	return *first, notice, nil
}

// allNames lists a pod's container names, init containers first.
func allNames(e podEntry) []string {
	out := make([]string, 0, len(e.Containers))
	for _, pc := range e.Containers {
		out = append(out, containerName(pc))
	}
	return out
}

// logSource is what printLogs needs of Docker.
type logSource interface {
	LogsWith(ctx context.Context, id string, o dockerx.LogsOptions) (io.ReadCloser, error)
}

// printLogs prints the streams' logs. Without -f one after the other, in
// order, as kubectl prints a pod's containers; with -f all at once, lines
// interleaved but each whole.
func printLogs(ctx context.Context, cli logSource, streams []logStream, o *logsOptions, w io.Writer) error {
	out := &lockedWriter{w: w}
	opts, err := o.dockerOptions(time.Now(), o.follow)
	if err != nil {
		return err
	}
	if !o.follow {
		for _, s := range streams {
			rc, err := cli.LogsWith(ctx, s.id, opts)
			if err != nil {
				return fmt.Errorf("logs %s: %w", s.name, err)
			}
			err = prefixLines(out, rc, s.prefix)
			rc.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	rcs := make([]io.ReadCloser, 0, len(streams))
	for _, s := range streams {
		rc, err := cli.LogsWith(ctx, s.id, opts)
		if err != nil {
			for _, rc := range rcs {
				rc.Close()
			}
			return fmt.Errorf("logs %s: %w", s.name, err)
		}
		rcs = append(rcs, rc)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, rc := range rcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rc.Close()
			errs[i] = prefixLines(out, rc, streams[i].prefix)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// lockedWriter keeps lines from different containers whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func prefixLines(w *lockedWriter, r io.Reader, prefix string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		w.mu.Lock()
		_, err := io.WriteString(w.w, prefix+strings.TrimRight(sc.Text(), "\r")+"\n")
		w.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return sc.Err()
}
