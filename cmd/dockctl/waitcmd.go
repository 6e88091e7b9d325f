package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// waitOptions are wait's flags.
type waitOptions struct {
	forSpec       string
	timeout       time.Duration
	selector      string
	all           bool
	allNamespaces bool
}

// waitResync is how long a wait sleeps without a change reported before
// it looks again: a change no source reported (a lost event, a watch that
// could not start) is seen by then. A variable for the tests that must
// see the sources alone at work.
var waitResync = 5 * time.Second

func newWaitCommand(g *globalOptions) *cobra.Command {
	o := &waitOptions{}
	cmd := &cobra.Command{
		Use:   "wait (TYPE/NAME… | TYPE NAME… | TYPE -l SELECTOR | TYPE --all) --for=delete|condition=TYPE[=VALUE]|jsonpath='{EXPR}'[=VALUE] [-n NS | -A] [--timeout 30s]",
		Short: "Wait until pods, deployments or other workloads meet a condition or a JSONPath value, or are deleted, as kubectl wait",
		Example: `  # Wait until the pods labeled app=web are ready, a minute at most
  dockctl wait --for=condition=Ready pod -l app=web --timeout=60s

  # Wait until deployment web is available
  dockctl wait --for=condition=Available deployment/web

  # Wait until deployments web and api are available, two minutes at most
  dockctl wait --for=condition=Available deploy/web deploy/api --timeout 2m

  # Wait until deployment web has three ready replicas
  dockctl wait --for=jsonpath='{.status.readyReplicas}'=3 deployment/web

  # Wait until job migrate completes, five minutes at most
  dockctl wait --for=condition=complete job/migrate --timeout 5m

  # Wait until every pod of namespace team runs
  dockctl wait --for=jsonpath='{.status.phase}'=Running pods --all -n team

  # Check once, without waiting, whether deployment web is available
  dockctl wait --for=condition=Available deployment/web --timeout=0

  # Wait until deployment web and its containers are gone
  dockctl delete deployment web
  dockctl wait --for=delete deployment/web --timeout 60s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWait(cmd, g, o, args)
		},
	}
	cmd.Flags().StringVar(&o.forSpec, "for", "", "what to wait for: delete, condition=TYPE[=VALUE] (VALUE True unless given, compared case-insensitively), "+
		"or jsonpath='{EXPR}'[=VALUE] (on the object get -o json prints; without VALUE, that EXPR finds a value)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this long (exit 1); 0 checks once and does not wait, negative waits a week")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector (=, ==, !=, in, notin, KEY, !KEY) of the objects of TYPE to wait for, "+
		"deployments and other workloads by their metadata.labels, pods by their labels: those it selects when wait starts")
	cmd.Flags().BoolVar(&o.all, "all", false, "wait for every object of TYPE in the namespace, those there when wait starts")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "with -l or --all, select in every namespace")
	cmd.ValidArgsFunction = g.kindThenName(pluralsOf(waitKinds), 2)
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{
		"condition=Available", "condition=Progressing", "condition=ReplicaFailure",
		"condition=Ready", "condition=ContainersReady", "condition=Initialized", "condition=PodScheduled",
		"condition=Complete", "condition=Failed",
		"jsonpath=", "delete"}, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	return cmd
}

// waitRequest is what wait waits for: the objects named, in order, or
// every object of kind that sel selects when the wait starts (kubectl
// resolves its list once: a pod a scale-up adds later is not waited for).
type waitRequest struct {
	named     []objectArg
	selecting bool
	kind      string
	sel       labels.Selector
	// allNamespaces is -A: the selection spans every namespace.
	allNamespaces bool
}

// request reads wait's arguments as kubectl's resource builder does.
func (o *waitOptions) request(args []string) (waitRequest, error) {
	if o.all && o.selector != "" {
		return waitRequest{}, errors.New("setting 'all' parameter but found a non empty selector.")
	}
	objs, err := objectArgs(args, waitKinds...)
	if err != nil {
		return waitRequest{}, err
	}
	if !o.all && o.selector == "" {
		switch {
		case objs[0].name == "":
			return waitRequest{}, errors.New("resource(s) were provided, but no name was specified")
		case o.allNamespaces:
			return waitRequest{}, errors.New("a resource cannot be retrieved by name across all namespaces")
		}
		return waitRequest{named: objs}, nil
	}
	switch {
	case strings.Contains(args[0], "/"):
		return waitRequest{}, errors.New("selectors and the all flag cannot be used when passing resource/name arguments")
	case objs[0].name != "":
		return waitRequest{}, errors.New("name cannot be provided when a selector is specified")
	}
	kind := objs[0].kind
	if err := checkSelector(kind, o.selector); err != nil {
		return waitRequest{}, err
	}
	// As get -l: pods by their labels, with its short keys (deployment=NAME).
	sel, err := kindByName(kind).selectorParser()(o.selector)
	if err != nil {
		return waitRequest{}, err
	}
	return waitRequest{selecting: true, kind: kind, sel: sel, allNamespaces: o.allNamespaces}, nil
}

// errNoMatchingResources is kubectl wait's error when -l or --all
// selected nothing (but for --for=delete, which is then met).
var errNoMatchingResources = errors.New("no matching resources found")

func runWait(cmd *cobra.Command, g *globalOptions, o *waitOptions, args []string) error {
	if o.forSpec == "" {
		return fmt.Errorf("--for must be given: %s", forForms)
	}
	c, err := parseWaitFor(o.forSpec)
	if err != nil {
		return err
	}
	req, err := o.request(args)
	if err != nil {
		return err
	}
	st, err := g.readStore()
	if err != nil {
		return err
	}
	// As kubectl's wait, under its interrupt handler: Ctrl-C or SIGTERM
	// ends it with status 1.
	sigCtx, interrupted, stop := interruptible(cmd.Context())
	defer stop()
	// kubectl wait: zero checks once and does not wait, negative waits a
	// week; one deadline for all the objects.
	ctx, timeout := sigCtx, o.timeout
	if timeout < 0 {
		timeout = aWeek
	}
	if timeout != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	w := &waiter{g: g, st: st, cond: c, once: timeout == 0, errOut: cmd.ErrOrStderr()}
	err = w.run(ctx, cmd.OutOrStdout(), req)
	if sigCtx.Err() != nil && cmd.Context().Err() == nil {
		return interrupted(nil)
	}
	return err
}

// run looks at the instance and waits for each target in turn, as
// kubectl's wait visits its objects: each met one printed, the failures
// (not found, not met, timed out) of the others returned together.
func (w *waiter) run(ctx context.Context, out io.Writer, req waitRequest) error {
	g, st := w.g, w.st
	var err error
	if !w.once {
		// Subscribed before the first look, so that nothing happening
		// in between is missed: pods change in Docker alone, deployments'
		// conditions in the controller's status files. The deferred
		// cancel ends them.
		if w.changes, err = changeSources(ctx, g.instance, st.Watch, st.WatchStatus); err != nil {
			// A state directory that cannot be watched (none yet…):
			// Docker's events and the resync alone.
			if w.changes, err = changeSources(ctx, g.instance); err != nil {
				return err
			}
		}
	}
	timedOut := func() error { return errors.New("timed out waiting for the condition") }
	if w.cli, err = g.docker(ctx); err != nil {
		if ctx.Err() != nil {
			return timedOut()
		}
		return err
	}
	defer w.cli.Close()
	if w.snap, err = takeSnapshotWith(ctx, g, st, w.cli); err != nil {
		if ctx.Err() != nil {
			return timedOut()
		}
		return err
	}
	targets := w.targets(req)
	if len(targets) == 0 && !w.cond.delete {
		return errNoMatchingResources
	}
	var errs []error
	for _, t := range targets {
		// One at a time, as kubectl: each reported as it is met.
		there, err := w.present(&t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !there {
			continue // gone before its turn: nothing to wait for
		}
		if err := w.await(ctx, t); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(out, "%s condition met\n", t.printName())
	}
	return errors.Join(errs...)
}

// waitTarget is one object wait waits for.
type waitTarget struct {
	kind, namespace, name string
	// uid tells the pod --for=delete waits for from a pod re-created
	// under its name, which is another ("" until known); created tells
	// the deployment from one deleted and applied again (zero until
	// known).
	uid     string
	created time.Time
}

// objectName is how kubectl's errors name it: pods/NAME, deployments/NAME.
func (t waitTarget) objectName() string { return apiResourceOf(t.kind).resource + "/" + t.name }

// printName is how kubectl's name printer names it: pod/NAME,
// deployment.apps/NAME.
func (t waitTarget) printName() string {
	return strings.ToLower(apiResourceOf(t.kind).groupKind()) + "/" + t.name
}

// waiter looks at the instance (a snapshot, as get takes it) again on
// each change, until each target is done.
type waiter struct {
	g       *globalOptions
	st      *store.Store
	cli     *dockerx.Client
	cond    waitCondition
	once    bool
	changes <-chan struct{} // nil with once
	snap    *snapshot
	errOut  io.Writer
	said    string // the last look's failure, said once
}

// targets are the objects named, or those the selection selects in the
// first snapshot, sorted as kubectl lists them. --for=delete selects the
// deployments deleted whose containers are not all gone, as it waits for
// a named one's.
func (w *waiter) targets(req waitRequest) []waitTarget {
	var out []waitTarget
	if !req.selecting {
		for _, obj := range req.named {
			out = append(out, waitTarget{kind: obj.kind, namespace: w.g.namespace, name: obj.name})
		}
		return out
	}
	inScope := func(ns string) bool { return req.allNamespaces || ns == w.g.namespace }
	out = kindByName(req.kind).wait.selected(w, req, inScope)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].namespace != out[j].namespace {
			return out[i].namespace < out[j].namespace
		}
		return out[i].name < out[j].name
	})
	return out
}

// present says whether t is there when its turn comes (the pod of
// --for=delete is then the one whose going is awaited). For a condition,
// one that is not is an error, as kubectl's lookup of the object; for
// --for=delete it is already met.
func (w *waiter) present(t *waitTarget) (bool, error) {
	return kindByName(t.kind).wait.present(w, t)
}

// await looks at t on each change until it is done: the condition met,
// or the object gone. An object that goes while its condition is awaited
// is awaited until it is back (re-created under its name) or the time
// is up, as kubectl's watch does.
func (w *waiter) await(ctx context.Context, t waitTarget) error {
	for {
		done, err := w.done(t)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if w.once {
			return fmt.Errorf("condition not met for %s%s", t.objectName(), w.noController()) // kubectl's words
		}
		if err := w.next(ctx); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("timed out waiting for the condition on %s%s", t.objectName(), w.noController()) // kubectl's words
			}
			return err
		}
	}
}

// done judges t on the last snapshot.
func (w *waiter) done(t waitTarget) (bool, error) {
	if w.cond.delete {
		return gone(w.snap, t), nil
	}
	obj, ok, err := kindByName(t.kind).wait.object(w, t)
	if !ok || err != nil {
		return false, err
	}
	// What get -o json prints, as JSON decodes it.
	objs, err := genericObjects([]row{{object: func() (any, error) { return obj, nil }}})
	if err != nil {
		return false, err
	}
	m, _ := objs[0].(map[string]any)
	return w.cond.met(m)
}

// noController is what wait adds to a failure when no controller holds
// the state directory's lock: nothing makes the instance change, and the
// deployments' conditions, stale, are Unknown to it.
func (w *waiter) noController() string {
	if w.snap == nil || w.snap.controllerRunning {
		return ""
	}
	return fmt.Sprintf(": is `dockctl controller` running for instance %q?", w.g.instance)
}

// gone says whether t is deleted: a deployment's record and every
// container of it gone (as delete --wait waits), or its record replaced
// by another's (deleted and applied again: kubectl's wait is met on the
// first one's deletion); a pod no longer there (another under its name is
// not it).
func gone(snap *snapshot, t waitTarget) bool {
	return kindByName(t.kind).wait.gone(snap, t)
}

// waitOps is how wait finds and judges the objects of one kind.
type waitOps struct {
	// selected are the targets -l or --all selects (req.sel, in the
	// namespaces inScope).
	selected func(w *waiter, req waitRequest, inScope func(ns string) bool) []waitTarget
	// present is waiter.present of a target of the kind.
	present func(w *waiter, t *waitTarget) (bool, error)
	// object is the target as get -o json shows it; ok false when it is
	// not there.
	object func(w *waiter, t waitTarget) (obj any, ok bool, err error)
	// gone is gone of a target of the kind.
	gone func(snap *snapshot, t waitTarget) bool
}

// deploymentWait waits for deployments: by their records, and when
// deleted for their containers too.
var deploymentWait = waitOps{
	selected: func(w *waiter, req waitRequest, inScope func(ns string) bool) []waitTarget {
		var out []waitTarget
		snap := w.snap
		recs := snap.records
		if w.cond.delete {
			for key, r := range snap.deleted {
				if snap.record(key) == nil && len(snap.ownedContainersOf(key)) > 0 {
					recs = append(recs, r)
				}
			}
		}
		for _, r := range recs {
			if inScope(r.NamespaceOrDefault()) && req.sel.Matches(labels.Set(r.Deployment.Metadata.Labels)) {
				out = append(out, waitTarget{kind: kindDeployment, namespace: r.NamespaceOrDefault(), name: r.Name, created: r.CreatedAt})
			}
		}
		return out
	},
	present: func(w *waiter, t *waitTarget) (bool, error) {
		snap, key := w.snap, store.Key(t.namespace, t.name)
		if w.cond.delete {
			if r := cmp.Or(snap.record(key), snap.deleted[key]); r != nil && t.created.IsZero() {
				t.created = r.CreatedAt
			}
			return !gone(snap, *t), nil
		}
		if snap.record(key) == nil {
			return false, snap.missing(w.g, t.namespace, t.name)
		}
		return true, nil
	},
	object: func(w *waiter, t waitTarget) (any, bool, error) {
		r := w.snap.record(store.Key(t.namespace, t.name))
		if r == nil {
			return nil, false, nil
		}
		d := w.snap.deploymentObject(r)
		if !w.snap.controllerRunning {
			// docs/design.md §1: what only the controller knows is unknown
			// when stale: no controller runs to keep its conditions true.
			conds := slices.Clone(d.Status.Conditions)
			for i := range conds {
				conds[i].Status = "Unknown"
			}
			d.Status.Conditions = conds
		}
		return d, true, nil
	},
	gone: func(snap *snapshot, t waitTarget) bool {
		key := store.Key(t.namespace, t.name)
		if r := snap.record(key); r != nil {
			return !t.created.IsZero() && !r.CreatedAt.Equal(t.created)
		}
		return len(snap.ownedContainersOf(key)) == 0
	},
}

// podWait waits for pods: from Docker, one by its uid when deleted.
var podWait = waitOps{
	selected: func(w *waiter, req waitRequest, inScope func(ns string) bool) []waitTarget {
		var out []waitTarget
		// One target per name: the live pod, when a terminating one has
		// its name too.
		at := map[string]int{}
		for _, e := range w.snap.allPods() {
			if !inScope(e.Namespace) || !req.sel.Matches(labels.Set(e.labels())) {
				continue
			}
			t := waitTarget{kind: kindPod, namespace: e.Namespace, name: e.Name, uid: e.uid()}
			key := e.Namespace + "/" + e.Name
			if i, ok := at[key]; ok {
				if !e.Terminating {
					out[i] = t
				}
				continue
			}
			at[key] = len(out)
			out = append(out, t)
		}
		return out
	},
	present: func(w *waiter, t *waitTarget) (bool, error) {
		snap := w.snap
		if w.cond.delete {
			if t.uid == "" {
				e, err := snap.pod(w.g, t.namespace, t.name)
				if err != nil {
					return false, nil
				}
				t.uid = e.uid()
			}
			return !gone(snap, *t), nil
		}
		_, err := snap.pod(w.g, t.namespace, t.name)
		return err == nil, err
	},
	object: func(w *waiter, t waitTarget) (any, bool, error) {
		e, err := w.snap.pod(w.g, t.namespace, t.name)
		if err != nil {
			return nil, false, nil
		}
		pod, err := e.podObject(w.snap)
		if err != nil {
			return nil, false, err
		}
		return pod, true, nil
	},
	gone: func(snap *snapshot, t waitTarget) bool {
		for _, e := range snap.podsNamed(t.namespace, t.name) {
			if e.uid() == t.uid {
				return false
			}
		}
		return true
	},
}

// next waits for a change (or waitResync without one) and takes a new
// snapshot. A look that fails (Docker unreachable for a moment) is said
// once and tried again on the next change: the Docker events' reconnect
// is one.
func (w *waiter) next(ctx context.Context) error {
	resync := time.NewTimer(waitResync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.changes:
		case <-resync.C:
		}
		snap, err := takeSnapshotWith(ctx, w.g, w.st, w.cli)
		if err == nil {
			w.snap, w.said = snap, ""
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if msg := err.Error(); msg != w.said {
			fmt.Fprintln(w.errOut, "warning:", err)
			w.said = msg
		}
		resync.Reset(waitResync)
	}
}
