package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

type applyOptions struct {
	in       input
	skip     bool // --skip-unsupported
	dryRun   string
	prune    bool
	all      bool
	selector string
	wait     bool
	timeout  time.Duration
	force    bool // --force-conflicts
}

func newApplyCommand(g *globalOptions) *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -f PATH [-f PATH…] [--prune --all|-l SELECTOR]",
		Short: "Record the desired state of the objects of manifest files (deployments, statefulsets, jobs, services, ingresses…)",
		Example: `  # Apply a manifest, and wait until its deployments are rolled out
  dockctl apply -f web.yaml --wait

  # Apply every manifest of a directory, from standard input too
  dockctl apply -f k8s/
  cat web.yaml | dockctl apply -f -

  # Validate without storing
  dockctl apply -f web.yaml --dry-run

  # Apply a directory and delete what it no longer declares, among the objects labeled app=web
  dockctl apply -f k8s/ --prune -l app=web`,
		Long: "Validate every document of every file first; if any is invalid nothing is stored.\n" +
			"PATH is a file, a directory (with its subdirectories, -R, unless --recursive=false: *.yaml, *.yml, *.json) or - for standard input.\n" +
			"Namespaces are stored first, then configmaps, secrets and claims, then services, then deployments, as one unit. An object that names\n" +
			"no namespace goes to -n's (default \"default\"); one that names another than -n given is refused.\n\n" +
			kindsSentence(pluralsOf(kindNames(func(k *kindInfo) bool { return k.manifest != "" }))),
		RunE: func(cmd *cobra.Command, args []string) error {
			// kubectl's words.
			if len(args) > 0 {
				return usageErrorf(cmd, "Unexpected args: %v", args)
			}
			if !o.in.given() {
				return errNoFilename
			}
			return runApply(cmd, g, o)
		},
	}
	o.in.addFlags(cmd, "manifest file, directory or - (repeatable)")
	addSkipUnsupported(cmd, &o.skip)
	cmd.Flags().StringVar(&o.dryRun, "dry-run", "none", "validate and print without storing (none|client)")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	cmd.Flags().BoolVar(&o.prune, "prune", false, "delete the deployments, services, configmaps, secrets and claims absent from the applied files, in the namespaces the files' objects are in (needs --all or -l; namespaces are never pruned)")
	cmd.Flags().BoolVar(&o.all, "all", false, "with --prune: consider every object of those namespaces for pruning")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "apply only the objects of the files whose metadata.labels match, and with --prune prune only matching ones")
	cmd.Flags().BoolVar(&o.force, "force-conflicts", false, "take over the objects another manager (a manifests directory of the controller) manages, instead of refusing them; that directory then leaves them alone and reports a conflict")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait until every applied deployment is rolled out (needs a running controller)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --wait waits (0: a week, as kubectl)")
	return cmd
}

// errNoFilename and errNoDiffInput are kubectl's error of apply and diff
// without -f or -k, naming the flags dockctl has: diff also reads
// --manifests.
var (
	errNoFilename  = errors.New("must specify one of -f and -k")
	errNoDiffInput = errors.New("must specify one of -f, -k and --manifests")
)

// addSkipUnsupported adds --skip-unsupported to a command that reads
// manifests.
func addSkipUnsupported(cmd *cobra.Command, skip *bool) {
	cmd.Flags().BoolVar(skip, "skip-unsupported", false,
		"skip objects of kinds dockctl does not support (with a warning each) instead of refusing the input; kinds that grant nothing on one host (ServiceAccount, RBAC, PodDisruptionBudget, HorizontalPodAutoscaler, Kustomization) are always skipped")
}

func runApply(cmd *cobra.Command, g *globalOptions, o *applyOptions) error {
	dry, err := parseDryRun(o.dryRun)
	if err != nil {
		return err
	}
	opts := store.ApplyOptions{DryRun: dry, Prune: o.prune, Manager: store.ManagerApply, ForceConflicts: o.force, SaveConfig: true}
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
		if sel, err = labels.Parse(o.selector); err != nil {
			// kubectl's resource builder's words (-l of files).
			return fmt.Errorf("the provided selector %q is not valid: %v", o.selector, err)
		}
		opts.PruneSelector = sel
	}
	b, err := g.loadBundle(&o.in, cmd.InOrStdin(), o.skip, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	opts.KeepPaused = b.keepPaused
	if sel != nil {
		// kubectl applies only the objects of the files that match -l.
		if b.filter(sel); b.empty() {
			return fmt.Errorf("no deployments, services, namespaces, configmaps, secrets or claims in %v match the selector %q", &o.in, o.selector)
		}
	}
	warnIgnored(cmd.ErrOrStderr(), b)
	st, err := g.storeFor(dry)
	if err != nil {
		return err
	}
	warnPrivileges(cmd.ErrOrStderr(), &b.Bundle, st)
	results, err := st.Apply(b.Bundle, opts)
	if err != nil {
		return err
	}
	if !dry {
		warnNoController(cmd.ErrOrStderr(), st, g.instance, noControllerApply, time.Now()) // heartbeat.go
	}
	out := cmd.OutOrStdout()
	for _, r := range results {
		suffix := ""
		if dry {
			suffix = " (dry run)"
		}
		fmt.Fprintf(out, "%s %s%s\n", r.ObjectRef, r.Action, suffix)
	}
	if o.wait && !dry {
		var keys []string
		for _, r := range results {
			if r.Kind == store.KindDeployment && r.Action != store.Pruned {
				keys = append(keys, store.Key(r.Namespace, r.Name))
			}
		}
		return waitRollouts(cmd.Context(), g, st, keys, deleteWaitTimeout(o.timeout), out)
	}
	return nil
}

// parseDryRun reads --dry-run: none (or false) or client (or true).
func parseDryRun(s string) (bool, error) {
	switch s {
	case "none", "false", "":
		return false, nil
	case "client", "true":
		return true, nil
	}
	return false, fmt.Errorf("--dry-run must be none or client, got %q", s)
}

// storeFor opens the state directory for a command that writes, or with
// dry for its dry run, which stores nothing: read-only, so that it needs no
// write access and creates (or fixes) nothing.
func (g *globalOptions) storeFor(dry bool) (*store.Store, error) {
	if dry {
		return g.readStore()
	}
	return g.openStore()
}

func newDiffCommand(g *globalOptions) *cobra.Command {
	var (
		in    input
		dirs  []string
		skip  bool
		force bool
	)
	cmd := &cobra.Command{
		Use:   "diff -f PATH | diff --manifests DIR",
		Short: "Show what apply would change (exit 0: none, 1: differences, >1: error)",
		Example: `  # Show what applying web.yaml would change
  dockctl diff -f web.yaml

  # Apply only if something would change
  dockctl diff -f k8s/ >/dev/null || dockctl apply -f k8s/

  # Preview what a controller running with --manifests /srv/k8s would create, change and delete
  dockctl diff --manifests /srv/k8s`,
		// Exit 1 means "differences": every error, usage errors included,
		// is 2, as kubectl's, so that a script never takes one for the
		// other.
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				n   int
				err error
			)
			switch {
			case len(args) > 0:
				return &exitError{code: 2, err: usageErrorf(cmd, "Unexpected args: %v", args)}
			case in.given() && len(dirs) > 0:
				return &exitError{code: 2, err: errors.New("-f or -k and --manifests cannot be used together")}
			case len(dirs) > 0:
				n, err = runDiffManifests(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, dirs, skip)
			case !in.given():
				// Not MarkFlagRequired: cobra's own check would exit 1.
				return &exitError{code: 2, err: errNoDiffInput}
			default:
				n, err = runDiff(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, &in, skip, force)
			}
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if n > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	in.addFlags(cmd, "manifest file, directory or - (one of -f, -k and --manifests is required)")
	cmd.Flags().StringArrayVar(&dirs, "manifests", nil, "preview `dockctl controller --manifests` with these paths, as the controller sees them (repeatable): what it would create, change and delete")
	addSkipUnsupported(cmd, &skip)
	cmd.Flags().BoolVar(&force, "force-conflicts", false, "with -f: preview apply --force-conflicts (an object a manifests directory manages is a conflict, an error, without it)")
	// kubectl's flag error (its hint), with diff's exit status for an
	// error (docs/design.md §15: 2).
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: 2, err: flagError(c, err)}
	})
	return cmd
}

// runDiff prints a unified diff per object between what is stored and what
// the files declare, and returns how many differ.
func runDiff(stdin io.Reader, out, warn io.Writer, g *globalOptions, in *input, skip, force bool) (int, error) {
	b, err := g.loadBundle(in, stdin, skip, warn)
	if err != nil {
		return 0, err
	}
	warnIgnored(warn, b)
	st, err := g.readStore()
	if err != nil {
		return 0, err
	}
	// kubectl diff compares with a server-side dry run: what apply would
	// refuse (the data of an immutable ConfigMap or Secret, a Secret's
	// type, a claim's spec, a namespace that does not exist) is an error,
	// not a diff; what it would store (the file merged with the live
	// object) is what the diff shows.
	_, stored, err := st.Preview(b.Bundle, store.ApplyOptions{KeepPaused: b.keepPaused, ForceConflicts: force, SaveConfig: true})
	if err != nil {
		return 0, fmt.Errorf("apply would refuse it: %w", err)
	}
	d := &differ{out: out}
	if err := diffObjects(st, stored, d.show); err != nil {
		return 0, err
	}
	return d.n, nil
}

// differ prints unified diffs and counts them.
type differ struct {
	out io.Writer
	n   int
}

func (d *differ) show(name string, live, next []byte) error {
	if bytes.Equal(live, next) {
		return nil
	}
	d.n++
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(live)), B: difflib.SplitLines(string(next)),
		FromFile: "live/" + name, ToFile: "merged/" + name, Context: 3,
	})
	if err != nil {
		return err
	}
	fmt.Fprint(d.out, text)
	return nil
}

// diffObjects shows, per object of b (as store.Preview returns them: as
// apply would store them), the stored object next to b's, compared as
// specs, not bookkeeping: without the server-set metadata, which is never
// in the files, and with the namespace as the store keeps it ("" for
// default, as an earlier release may have kept it); rendered by the kind's
// diff (YAML when it has none), under its diffName.
func diffObjects(st *store.Store, b *store.Bundle, show func(name string, live, next []byte) error) error {
	return b.Each(func(kind string, next any, m *manifests.ObjectMeta) error {
		k := kindByStore(kind)
		if k == nil {
			return fmt.Errorf("diff: unknown kind %q", kind)
		}
		name := k.name + "/" + diffName(m.Namespace, m.Name)
		if k.diffName != nil {
			name = k.diffName(m.Namespace, m.Name)
		}
		var live any
		o, err := st.LookupObject(store.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name})
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err // unreadable: apply would refuse it too
		case !o.Deleted:
			live = o.Object
			diffMeta(o.Meta)
		}
		diffMeta(m) // the copy's own: Each's objects are copies
		render := k.diff
		if render == nil {
			render = diffYAML
		}
		lb, nb, err := render(live, next)
		if err != nil {
			return err
		}
		return show(name, lb, nb)
	})
}

// diffMeta clears what diff does not compare of an object's metadata.
func diffMeta(m *manifests.ObjectMeta) {
	m.Generation, m.CreationTimestamp = 0, nil
	if m.Namespace == manifests.DefaultNamespace {
		m.Namespace = ""
	}
}

// objectDiff renders the stored object (nil: none live) and the next one
// for diff.
type objectDiff func(live, next any) (lb, nb []byte, err error)

// diffYAML renders both sides as YAML.
func diffYAML(live, next any) (lb, nb []byte, err error) {
	if live != nil {
		if lb, err = yaml.Marshal(live); err != nil {
			return nil, nil, err
		}
	}
	nb, err = yaml.Marshal(next)
	return lb, nb, err
}

// diffDeployment renders deployments as their files are written.
func diffDeployment(live, next any) (lb, nb []byte, err error) {
	if live != nil {
		if lb, err = manifests.Marshal(live.(*manifests.Deployment), "yaml"); err != nil {
			return nil, nil, err
		}
	}
	nb, err = manifests.Marshal(next.(*manifests.Deployment), "yaml")
	return lb, nb, err
}

// diffDeploymentName keeps the names of earlier releases: live/web.
func diffDeploymentName(ns, name string) string { return diffName(ns, name) }

// prunedYAML is the live object a prune would delete, as the diff shows
// it: a Secret's values masked as diffSecret masks them.
func prunedYAML(g *globalOptions, st *store.Store, ref store.ObjectRef) ([]byte, error) {
	obj, err := storedObject(g, st, ref)
	if err != nil {
		return nil, err
	}
	live, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if s, ok := obj.(*manifests.Secret); ok {
		live, _, err = maskSecret(live, s, nil, nil)
	}
	return live, err
}

// diffName names an object of a namespace in a diff's header: its name in
// the default namespace, namespace/name in any other.
func diffName(ns, name string) string {
	if ns == "" || ns == manifests.DefaultNamespace {
		return name
	}
	return ns + "/" + name
}

// runDiffManifests previews `dockctl controller --manifests` with paths:
// the diff of every object it would create or change, and of every one it
// would delete. A path it could not apply whole (an invalid file, an
// empty or unreadable directory) is an error, after the diff of the rest.
func runDiffManifests(out, warn io.Writer, g *globalOptions, paths []string, skip bool) (int, error) {
	if err := checkManifestPaths(paths); err != nil {
		return 0, err
	}
	st, err := g.readStore()
	if err != nil {
		return 0, err
	}
	for i, p := range paths {
		paths[i] = filepath.Clean(p)
	}
	plan, results, conflicts, err := sourcedir.New(st, sourcedir.Options{Paths: paths, SkipUnsupported: skip}).Preview()
	if err != nil {
		return 0, fmt.Errorf("the controller's apply would be refused: %w", err)
	}
	for _, sk := range plan.Skipped() {
		fmt.Fprintf(warn, "Warning: %s\n", sk)
	}
	for _, c := range conflicts {
		fmt.Fprintf(warn, "Warning: %s is managed by %q: the controller would leave it as it is\n", c.ObjectRef, c.Manager)
	}
	d := &differ{out: out}
	if err := diffObjects(st, plan.Stored, d.show); err != nil {
		return 0, err
	}
	for _, r := range results {
		if r.Action != store.Pruned {
			continue
		}
		live, err := prunedYAML(g, st, r.ObjectRef)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", r.ObjectRef, err)
		}
		name := strings.ToLower(r.Kind) + "/" + diffName(r.Namespace, r.Name)
		if r.Kind == store.KindDeployment {
			name = diffName(r.Namespace, r.Name) // as above: live/web
		}
		if err := d.show(name, live, nil); err != nil {
			return 0, err
		}
	}
	if problems := plan.Problems(); len(problems) > 0 {
		return d.n, errors.New(strings.Join(problems, "\n"))
	}
	return d.n, nil
}

// warnPrivileges warns about every setting of b's pod templates that the
// controller gates (docs/design.md §13): warn, do not refuse, as the
// controller decides with its own flags. Every workload kind's pods pass
// the same gates as a Deployment's.
func warnPrivileges(errOut io.Writer, b *store.Bundle, st *store.Store) {
	for _, d := range b.Deployments {
		for _, p := range manifests.Privileges(d, hostFor(st)) {
			fmt.Fprintf(errOut, "Warning: deployment/%s: %s\n", d.Metadata.Name, p)
		}
	}
	for _, w := range bundleWorkloads(b) {
		t, base := w.PodTemplate()
		for _, p := range manifests.TemplatePrivileges(t, base, hostFor(st)) {
			fmt.Fprintf(errOut, "Warning: %s/%s: %s\n", strings.ToLower(w.WorkloadKind()), w.ObjectMeta().Name, p)
		}
	}
}

// bundleWorkloads are b's objects of the workload kinds beyond Deployment,
// in the bundle's order of kinds.
func bundleWorkloads(b *store.Bundle) []manifests.Workload {
	var out []manifests.Workload
	out = appendWorkloads(out, b.StatefulSets)
	out = appendWorkloads(out, b.DaemonSets)
	out = appendWorkloads(out, b.ReplicaSets)
	out = appendWorkloads(out, b.Jobs)
	out = appendWorkloads(out, b.CronJobs)
	return appendWorkloads(out, b.Pods)
}

func appendWorkloads[T manifests.Workload](out []manifests.Workload, objs []T) []manifests.Workload {
	for _, o := range objs {
		out = append(out, o)
	}
	return out
}
