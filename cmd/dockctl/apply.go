package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

type applyOptions struct {
	files    []string
	skip     bool // --skip-unsupported
	dryRun   string
	prune    bool
	all      bool
	selector string
	wait     bool
	timeout  time.Duration
}

func newApplyCommand(g *globalOptions) *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -f PATH [-f PATH…] [--prune --all|-l SELECTOR]",
		Short: "Record the desired state of deployments from manifest files",
		Long: "Validate every document of every file first; if any is invalid nothing is stored.\n" +
			"PATH is a file, a directory (recursively: *.yaml, *.yml, *.json) or - for standard input.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd, g, o)
		},
	}
	cmd.Flags().StringSliceVarP(&o.files, "filename", "f", nil, "manifest file, directory or - (repeatable)")
	addSkipUnsupported(cmd, &o.skip)
	cmd.Flags().StringVar(&o.dryRun, "dry-run", "none", "validate and print without storing (none|client)")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	cmd.Flags().BoolVar(&o.prune, "prune", false, "delete this instance's deployments absent from the applied files (needs --all or -l)")
	cmd.Flags().BoolVar(&o.all, "all", false, "with --prune: consider every deployment of the instance for pruning")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "apply only the deployments of the files whose metadata.labels match, and with --prune prune only matching ones")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait until every applied deployment is rolled out (needs a running controller)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func loadDeployments(paths []string, stdin io.Reader, skip bool, warn io.Writer) ([]*manifests.Deployment, error) {
	deps, _, err := loadForApply(paths, stdin, skip, warn)
	return deps, err
}

// addSkipUnsupported adds --skip-unsupported to a command that reads
// manifests.
func addSkipUnsupported(cmd *cobra.Command, skip *bool) {
	cmd.Flags().BoolVar(skip, "skip-unsupported", false,
		"skip objects of kinds dockctl does not support (with a warning each) instead of refusing the input; kinds that grant nothing on one host (ServiceAccount, RBAC, PodDisruptionBudget, HorizontalPodAutoscaler, Kustomization) are always skipped")
}

// loadForApply loads the deployments of paths and names those that leave
// spec.paused unset: as with spec.replicas, apply keeps the live value.
// Every object skipped is named on warn, one line each, as kubectl warns.
func loadForApply(paths []string, stdin io.Reader, skip bool, warn io.Writer) ([]*manifests.Deployment, map[string]bool, error) {
	docs, skipped, err := manifests.LoadAll(paths, stdin, manifests.LoadOptions{SkipUnsupported: skip})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range skipped {
		fmt.Fprintf(warn, "Warning: %s\n", s)
	}
	if docs, err = deploymentsOnly(docs, skip, warn); err != nil {
		return nil, nil, err
	}
	if len(docs) == 0 {
		return nil, nil, fmt.Errorf("no deployments found in %v", paths)
	}
	out := make([]*manifests.Deployment, 0, len(docs))
	keepPaused := map[string]bool{}
	for _, d := range docs {
		if !d.ReplicasSet {
			// Unset tells the store to keep the live count (1 on create).
			d.Deployment.Spec.Replicas = nil
		}
		if !d.PausedSet {
			keepPaused[d.Deployment.Metadata.Name] = true
		}
		out = append(out, d.Deployment)
	}
	return out, keepPaused, nil
}

func runApply(cmd *cobra.Command, g *globalOptions, o *applyOptions) error {
	var (
		dry bool
		err error
	)
	switch o.dryRun {
	case "none", "false", "":
	case "client", "true":
		dry = true
	default:
		return fmt.Errorf("--dry-run must be none or client, got %q", o.dryRun)
	}
	opts := store.ApplyOptions{DryRun: dry, Prune: o.prune}
	var sel labels.Selector
	switch {
	case o.all && o.selector != "":
		return fmt.Errorf("--all and -l cannot be used together")
	case o.all && !o.prune:
		return fmt.Errorf("--all only applies with --prune")
	case o.prune && !o.all && o.selector == "":
		// As in kubectl: a bare --prune with one file would delete every
		// other deployment of the instance.
		return fmt.Errorf("--prune needs --all or -l SELECTOR: --all prunes every deployment absent from the files, -l only those matching")
	case o.selector != "":
		if sel, err = parseSelector(o.selector); err != nil {
			return err
		}
		opts.PruneSelector = sel
	}
	deps, keepPaused, err := loadForApply(o.files, cmd.InOrStdin(), o.skip, cmd.ErrOrStderr())
	opts.KeepPaused = keepPaused
	if err != nil {
		return err
	}
	if sel != nil {
		// kubectl applies only the objects of the files that match -l.
		matching := deps[:0]
		for _, d := range deps {
			if sel.Matches(labels.Set(d.Metadata.Labels)) {
				matching = append(matching, d)
			}
		}
		if deps = matching; len(deps) == 0 {
			return fmt.Errorf("no deployments in %v match the selector %q", o.files, o.selector)
		}
	}
	// A dry run stores nothing, so it opens the state directory read-only:
	// it needs no write access and creates (or fixes) nothing.
	open := g.openStore
	if dry {
		open = g.readStore
	}
	st, err := open()
	if err != nil {
		return err
	}
	// Warn, do not refuse: the controller decides with its own flags.
	for _, d := range deps {
		for _, p := range manifests.Privileges(d, hostForPaths(st.Dir())) {
			fmt.Fprintf(cmd.ErrOrStderr(), "Warning: deployment/%s: %s\n", d.Metadata.Name, p)
		}
	}
	results, err := st.Apply(deps, opts)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for _, r := range results {
		suffix := ""
		if dry {
			suffix = " (dry run)"
		}
		fmt.Fprintf(out, "deployment/%s %s%s\n", r.Name, r.Action, suffix)
	}
	if o.wait && !dry {
		names := make([]string, 0, len(results))
		for _, r := range results {
			if r.Action != store.Pruned {
				names = append(names, r.Name)
			}
		}
		return waitRollouts(cmd.Context(), g, st, names, o.timeout, out)
	}
	return nil
}

func newDiffCommand(g *globalOptions) *cobra.Command {
	var (
		files []string
		skip  bool
	)
	cmd := &cobra.Command{
		Use:   "diff -f PATH",
		Short: "Show what apply would change (exit 0: none, 1: differences, >1: error)",
		// Exit 1 means "differences": every error, usage errors included,
		// is 2, so that a script never takes one for the other.
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return &exitError{code: 2, err: err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				// Not MarkFlagRequired: cobra's own check would exit 1.
				return &exitError{code: 2, err: errors.New(`required flag(s) "filename" not set`)}
			}
			n, err := runDiff(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, files, skip)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if n > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory or - (required)")
	addSkipUnsupported(cmd, &skip)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 2, err: err} })
	return cmd
}

// runDiff prints a unified diff per deployment between what is stored and
// what the files declare, and returns how many differ.
func runDiff(stdin io.Reader, out, warn io.Writer, g *globalOptions, files []string, skip bool) (int, error) {
	deps, keepPaused, err := loadForApply(files, stdin, skip, warn)
	if err != nil {
		return 0, err
	}
	st, err := g.readStore()
	if err != nil {
		return 0, err
	}
	differ := 0
	for _, d := range deps {
		var live []byte
		rec, err := st.Get(d.Metadata.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, err // unreadable: apply would refuse it too
		}
		var liveDep *manifests.Deployment
		if err == nil {
			liveDep = &rec.Deployment
		}
		// What apply keeps of the live deployment is no difference.
		if err := store.KeepLive(liveDep, d, keepPaused[d.Metadata.Name]); err != nil {
			return 0, err
		}
		if err == nil {
			// Compare specs, not bookkeeping: server-set metadata is
			// never in the files.
			stored := rec.Deployment.DeepCopy()
			stored.Metadata.Generation, stored.Metadata.CreationTimestamp = 0, nil
			if live, err = manifests.Marshal(stored, "yaml"); err != nil {
				return 0, err
			}
		}
		next, err := manifests.Marshal(d, "yaml")
		if err != nil {
			return 0, err
		}
		if bytes.Equal(live, next) {
			continue
		}
		differ++
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(live)), B: difflib.SplitLines(string(next)),
			FromFile: "live/" + d.Metadata.Name, ToFile: "merged/" + d.Metadata.Name, Context: 3,
		})
		if err != nil {
			return 0, err
		}
		fmt.Fprint(out, text)
	}
	return differ, nil
}

// deploymentsOnly keeps the Deployments of a bundle. Services, Namespaces
// and namespaces other than default decode (manifests) but are not stored
// yet: until the store takes them, a Service or Namespace is refused, or
// skipped with a warning under --skip-unsupported, as every kind apply
// cannot apply is, and a Deployment in another namespace is refused (the
// store would file it as default's).
func deploymentsOnly(docs []*manifests.Document, skip bool, warn io.Writer) ([]*manifests.Document, error) {
	out := docs[:0:0]
	var errs manifests.ErrorList
	for _, d := range docs {
		m := d.Meta()
		if d.Deployment != nil {
			if ns := m.NamespaceOrDefault(); ns != manifests.DefaultNamespace {
				errs = append(errs, &manifests.FieldError{File: d.File, Line: d.Line, Path: "metadata.namespace",
					Msg: fmt.Sprintf("unsupported value %q: apply stores only the default namespace yet", ns)})
			}
			out = append(out, d)
			continue
		}
		if skip {
			s := manifests.Skipped{File: d.File, Line: d.Line, Kind: d.Kind(), Name: m.Name, Unsupported: true}
			fmt.Fprintf(warn, "Warning: %s\n", s)
			continue
		}
		errs = append(errs, &manifests.FieldError{File: d.File, Line: d.Line, Path: "kind",
			Msg: fmt.Sprintf("unsupported kind %q (%s %q): apply does not store it yet; --skip-unsupported applies the rest without it", d.Kind(), d.Kind(), m.Name)})
	}
	return out, errs.Err()
}
