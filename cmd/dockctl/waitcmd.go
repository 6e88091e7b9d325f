package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/store"
)

// waitCondition is what `wait --for` awaits, parsed as kubectl parses it:
// delete, or condition=TYPE with an optional =VALUE (True by default).
type waitCondition struct {
	delete bool
	typ    string // condition type, as the controller records it (Available…)
	value  string // "True", "False" or "Unknown"
}

func parseWaitFor(s string) (waitCondition, error) {
	if strings.EqualFold(s, "delete") {
		return waitCondition{delete: true}, nil
	}
	rest, ok := strings.CutPrefix(s, "condition=")
	if !ok || rest == "" {
		return waitCondition{}, fmt.Errorf("unrecognized condition: %q (expected delete or condition=TYPE[=VALUE])", s)
	}
	typ, value, hasValue := strings.Cut(rest, "=")
	if typ == "" {
		return waitCondition{}, fmt.Errorf("unrecognized condition: %q (expected delete or condition=TYPE[=VALUE])", s)
	}
	if !hasValue {
		value = "True"
	}
	return waitCondition{typ: typ, value: value}, nil
}

// conditionMet says whether a live deployment meets c: the condition's
// status matches, case-insensitively as kubectl compares, and was judged
// for the record's current generation (a stale Available says nothing
// about a spec just applied).
func conditionMet(c waitCondition, rec *store.Record, status *store.Status) bool {
	if status == nil || status.ObservedGeneration < rec.Generation {
		return false
	}
	for _, cond := range status.Conditions {
		if strings.EqualFold(cond.Type, c.typ) {
			return strings.EqualFold(cond.Status, c.value)
		}
	}
	return false
}

func newWaitCommand(g *globalOptions) *cobra.Command {
	var (
		forSpec string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait deployment/NAME… --for=condition=TYPE[=VALUE]|delete [--timeout 30s]",
		Short: "Wait until deployments meet a condition (Available, Progressing, ReplicaFailure) or are deleted, as kubectl wait",
		Example: `  # Wait until deployment web is available
  dockctl wait --for=condition=Available deployment/web

  # Wait until deployments web and api are available, two minutes at most
  dockctl wait --for=condition=Available deploy/web deploy/api --timeout 2m

  # Check once, without waiting, whether deployment web is available
  dockctl wait --for=condition=Available deployment/web --timeout=0

  # Wait until deployment web and its containers are gone
  dockctl delete deployment web
  dockctl wait --for=delete deployment/web --timeout 60s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if forSpec == "" {
				return fmt.Errorf("--for must be given: delete or condition=TYPE[=VALUE]")
			}
			c, err := parseWaitFor(forSpec)
			if err != nil {
				return err
			}
			names, err := waitNames(args)
			if err != nil {
				return err
			}
			st, err := g.readStore()
			if err != nil {
				return err
			}
			// kubectl wait: zero checks once and does not wait, negative
			// waits a week.
			ctx, once := cmd.Context(), timeout == 0
			if timeout < 0 {
				timeout = aWeek
			}
			if !once {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			out := cmd.OutOrStdout()
			for _, name := range names {
				// One at a time, as kubectl: each reports as it is met.
				var err error
				if c.delete {
					err = waitDeletion(ctx, g, st, name, once)
				} else {
					err = waitCond(ctx, g, st, name, c, once)
				}
				if err != nil {
					return err
				}
				if c.delete {
					fmt.Fprintf(out, "deployment.apps/%s deleted\n", name)
				} else {
					fmt.Fprintf(out, "deployment.apps/%s condition met\n", name)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&forSpec, "for", "", "what to wait for: delete, or condition=TYPE[=VALUE] (VALUE True unless given)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long (exit 1); 0 checks once and does not wait, negative waits a week")
	cmd.ValidArgsFunction = g.kindThenName([]string{kindDeployment}, 2)
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{"condition=Available", "condition=Progressing", "condition=ReplicaFailure", "delete"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// waitNames takes deployment/NAME arguments, or `deployment NAME…`.
func waitNames(args []string) ([]string, error) {
	objs, err := objectArgs(args, kindDeployment)
	if err != nil {
		return nil, err
	}
	if objs[0].name == "" {
		return nil, errors.New("resource(s) were provided, but no name was specified")
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.name
	}
	return names, nil
}

func waitTimedOut(name string) error {
	return fmt.Errorf("timed out waiting for the condition on deployments/%s", name)
}

// conditionNotMet is kubectl wait's error when --timeout 0 checked once.
func conditionNotMet(name string) error {
	return fmt.Errorf("condition not met for deployments/%s", name)
}

// waitCond rereads the record and its status whenever the state directory
// changes, and every second besides (the controller's status writes are
// what it waits for, and a watch can miss a directory made later). With
// once it looks once.
func waitCond(ctx context.Context, g *globalOptions, st *store.Store, name string, c waitCondition, once bool) error {
	var changed <-chan string
	if !once {
		var err error
		if changed, err = st.Watch(ctx); err != nil {
			changed = nil // the tick alone then
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		rec, err := st.Get(g.namespace, name)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return notFound(g, name, err)
			}
			return err
		}
		status, err := st.ReadStatus(g.namespace, name)
		if err != nil {
			return fmt.Errorf("reading the status of deployment %q: %w", name, err)
		}
		if conditionMet(c, rec, status) {
			return nil
		}
		if once {
			return conditionNotMet(name)
		}
		select {
		case <-ctx.Done():
			return waitTimedOut(name)
		case <-changed:
		case <-tick.C:
		}
	}
}

// waitDeletion waits until the record is gone and no container of it is
// left, as `delete --wait`; a deployment that never existed is deleted.
// With once it looks once.
func waitDeletion(ctx context.Context, g *globalOptions, st *store.Store, name string, once bool) error {
	cli, err := g.docker(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return waitTimedOut(name)
		}
		return err
	}
	defer cli.Close()
	key := store.Key(g.namespace, name)
	for {
		ps, err := observeProgress(ctx, cli, st, g.instance, []string{key})
		if err != nil {
			if ctx.Err() != nil {
				return waitTimedOut(name)
			}
			return err
		}
		if ps[0].gone {
			return nil
		}
		if once {
			return conditionNotMet(name)
		}
		select {
		case <-ctx.Done():
			return waitTimedOut(name)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
