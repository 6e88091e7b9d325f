package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func newScaleCommand(g *globalOptions) *cobra.Command {
	var replicas int32
	cmd := deploymentCommand("scale deployment NAME --replicas N", "Change a deployment's replica count", func(cmd *cobra.Command, name string) error {
		if replicas < 0 {
			return fmt.Errorf("The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0") // kubectl's words
		}
		if replicas > manifests.MaxReplicasLimit {
			return fmt.Errorf("--replicas must be <= %d, got %d", manifests.MaxReplicasLimit, replicas)
		}
		err := g.updateDeployment("scale", name, func(_ *store.Record, d *manifests.Deployment) error {
			d.Spec.Replicas = &replicas
			return hostPortConflict(d)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s scaled\n", name)
		return nil
	})
	cmd.Example = `  # Run 5 replicas of deployment web
  dockctl scale deployment web --replicas 5

  # Stop every replica of deployment api of namespace team (the deployment stays)
  dockctl scale deployment/api --replicas 0 -n team`
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "desired number of replicas")
	_ = cmd.MarkFlagRequired("replicas") // as kubectl: `required flag(s) "replicas" not set`
	return cmd
}

func newDeleteCommand(g *globalOptions) *cobra.Command {
	var (
		skip           bool
		in             input
		wait           bool
		timeout        time.Duration
		all            bool
		selector       string
		allNamespaces  bool
		ignoreNotFound bool
		gracePeriod    int
		now, force     bool
		cascade        string
	)
	cmd := &cobra.Command{
		Use:   "delete KIND NAME | delete KIND --all | delete KIND -l SELECTOR | delete -f PATH | delete -k DIR",
		Short: "Delete objects (deployments, statefulsets, jobs, pods, services…, namespaces with everything in them); the controller then removes their containers",
		Long: "Delete objects of the state directory; the controller then removes their containers.\n\n" +
			"Deleting a pod restarts a replica, as a ReplicaSet does: the pod is Terminating at once, the controller\n" +
			"stops it as a scale-down would (out of its Services, preStop hooks, stop signal, kill after its grace\n" +
			"period: --grace-period, --now) and its deployment gets a new pod at once, within replicas + maxSurge.\n" +
			"--grace-period=0 --force does not wait, and the pod gets the kubelet's least grace of 2 seconds, even\n" +
			"one whose stop is under way. For pods --wait is the default, as kubectl's, while a controller runs;\n" +
			"--timeout is 0 by default (a week), as kubectl's.\n\n" + kindsSentence(deleteKindWords),
		Example: `  # Delete a deployment, and wait until its containers are gone
  dockctl delete deployment web --wait

  # Restart a misbehaving replica: its deployment creates a new pod
  dockctl delete pod web-5d8f9c7b6a-0

  # Kill a pod stuck terminating within 2 seconds, without waiting
  dockctl delete pod web-5d8f9c7b6a-1 --grace-period=0 --force

  # Restart every pod labeled app=api, giving each 5 seconds to stop
  dockctl delete pods -l app=api --grace-period=5

  # Delete every ConfigMap of namespace team
  dockctl delete configmaps --all -n team

  # Delete the services labeled tier=front, in every namespace
  dockctl delete svc -l tier=front -A

  # Delete the objects of a manifest; one that is already gone is no error
  dockctl delete -f app.yaml --ignore-not-found`,
		RunE: func(cmd *cobra.Command, args []string) error {
			orphan, err := checkCascade(cascade)
			if err != nil {
				return err
			}
			byList := all || selector != ""
			var refs []store.ObjectRef
			grace, err := resolveGrace(gracePeriod, now, force, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			pods := &deletePodsOptions{grace: grace, wait: wait || !cmd.Flags().Changed("wait"), waitSet: cmd.Flags().Changed("wait"),
				timeout: timeout, ignoreNotFound: ignoreNotFound}
			var podArgs []string
			var podSelected func() error // delete pods -l or --all, among other kinds
			// The errors are kubectl's (its resource builder's), but
			// for -f with --all or -l, which kubectl takes as a filter
			// of the files.
			switch {
			case in.given() && len(args) > 0:
				return fmt.Errorf("when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well")
			case in.given() && byList:
				return fmt.Errorf("give either -f or -k, or --all/-l, not both")
			case all && selector != "":
				return fmt.Errorf("cannot set --all and --selector at the same time")
			case in.given():
				b, err := g.loadBundle(&in, cmd.InOrStdin(), skip, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				refs = b.Refs()
			case byList:
				if len(args) == 0 {
					return fmt.Errorf("at least one resource must be specified to use a selector")
				}
				objs, err := objectArgs(args, deleteKinds...)
				switch {
				case err != nil:
					return err
				case strings.Contains(args[0], "/"):
					return fmt.Errorf("selectors and the all flag cannot be used when passing resource/name arguments")
				case objs[0].name != "":
					return fmt.Errorf("name cannot be provided when a selector is specified")
				}
				if err := checkSelector(objs[0].kind, selector); err != nil {
					return err
				}
				ns := g.namespace
				if allNamespaces {
					ns = ""
				}
				if i := slices.IndexFunc(objs, func(o objectArg) bool { return deletedByController(o.kind) }); i >= 0 {
					// Pods are not stored objects: the controller is
					// asked to delete them (pods.go), after the others.
					psel, err := kindByName(objs[i].kind).selectorParser()(selector) // as get pods -l
					if err != nil {
						return err
					}
					objs = slices.Delete(slices.Clone(objs), i, i+1)
					if len(objs) == 0 {
						return pods.deleteSelected(cmd.Context(), g, ns, psel, cmd.OutOrStdout(), cmd.ErrOrStderr())
					}
					podSelected = func() error {
						return pods.deleteSelected(cmd.Context(), g, ns, psel, cmd.OutOrStdout(), cmd.ErrOrStderr())
					}
				}
				sel, err := parseSelector(selector)
				if err != nil {
					return err
				}
				st, err := g.readStore()
				if err != nil {
					return err
				}
				for _, obj := range objs { // each kind of TYPE1,TYPE2 in turn
					found, err := selectObjects(st, storeKinds[obj.kind], ns, sel)
					if err != nil {
						return err
					}
					refs = append(refs, found...)
				}
				if len(refs) == 0 {
					if podSelected != nil {
						return podSelected()
					}
					fmt.Fprintln(cmd.OutOrStdout(), "No resources found")
					return nil
				}
				// As kubectl: what vanished since the list is no error.
				if !cmd.Flags().Changed("ignore-not-found") {
					ignoreNotFound = true
				}
			case allNamespaces:
				return fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
			default:
				objs, err := objectArgs(args, deleteKinds...)
				if err != nil {
					return err
				}
				if objs[0].name == "" {
					return fmt.Errorf("resource(s) were provided, but no name was specified")
				}
				podArgs, objs = podNames(objs)
				for _, o := range objs {
					refs = append(refs, store.ObjectRef{Kind: storeKinds[o.kind], Namespace: g.namespace, Name: o.name})
				}
			}
			if len(refs) == 0 && len(podArgs) > 0 {
				return pods.deleteNamed(cmd.Context(), g, podArgs, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			// Deleting a namespace deletes its deployments: --wait waits
			// for their containers too.
			var waitKeys []string
			if wait {
				for _, r := range refs {
					if r.Kind == store.KindNamespace {
						waitKeys = append(waitKeys, liveKeysIn(st, r.Name)...)
					}
				}
			}
			results, err := st.DeleteObjectsWith(refs, store.DeleteOptions{Orphan: orphan})
			if err != nil {
				return err
			}
			// As kubectl delete -f: one that is missing is reported, and
			// does not keep the others running; with --ignore-not-found it
			// is not reported at all.
			var errs []error
			for _, r := range results {
				if r.Err != nil {
					if !ignoreNotFound || !errors.Is(r.Err, store.ErrNotFound) {
						errs = append(errs, notFoundIn(g, r.Kind, r.Namespace, r.Name, r.Err))
					}
					continue
				}
				if r.Kind == store.KindDeployment {
					waitKeys = append(waitKeys, store.Key(r.Namespace, r.Name))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s deleted\n", r.ObjectRef)
			}
			if wait && len(waitKeys) > 0 {
				if err := waitDeleted(cmd.Context(), g, st, dedupe(waitKeys), deleteWaitTimeout(timeout), cmd.OutOrStdout()); err != nil {
					errs = append(errs, err)
				}
			}
			if len(podArgs) > 0 {
				errs = append(errs, pods.deleteNamed(cmd.Context(), g, podArgs, cmd.OutOrStdout(), cmd.ErrOrStderr()))
			}
			if podSelected != nil {
				errs = append(errs, podSelected())
			}
			return errors.Join(errs...)
		},
	}
	in.addFlags(cmd, "delete the objects named in these manifests")
	addSkipUnsupported(cmd, &skip)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until their containers are gone (needs a running controller; for pods the default while one runs)")
	cmd.Flags().IntVar(&gracePeriod, "grace-period", -1, "pods: seconds given to stop before the kill, in place of the pod's terminationGracePeriodSeconds (-1: the pod's; 0 with --force: the kubelet's least, 2s, without waiting)")
	cmd.Flags().BoolVar(&now, "now", false, "pods: stop them with a grace period of 1 second")
	cmd.Flags().BoolVar(&force, "force", false, "pods: with --grace-period=0 (its default then), do not wait: they get the kubelet's least grace of 2s, even those already stopping")
	// kubectl delete's default for every kind: a pod's stop may rightly
	// take its whole grace period (up to the controller's
	// --max-grace-period) after its drain and preStop hooks.
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long --wait waits (0, the default: a week, as kubectl's)")
	cmd.Flags().BoolVar(&all, "all", false, "delete every object of the kind in the namespace (-n, or every namespace with -A)")
	// A plain string, not a slice: "app in (a,b)" must not be split on its comma.
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "delete the objects of the kind whose metadata.labels match (=, ==, !=, in, notin, KEY, !KEY)")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "with --all or -l: in every namespace")
	cmd.Flags().BoolVar(&ignoreNotFound, "ignore-not-found", false, "an object that does not exist is no error (the default with --all and -l)")
	cmd.Flags().StringVar(&cascade, "cascade", "background", `"background" or "foreground": what the object owns is deleted with it (its pods, a CronJob's Jobs); "orphan": it is left, pods running without owner (not for deployments)`)
	return cmd
}

// selectObjects returns the live objects of kind (the store's) in
// namespace ns ("" every namespace; ignored for namespaces, which are in
// none) whose metadata.labels sel matches, sorted by namespace and name.
// A state file that cannot be read fails it: deleting "all" past it
// would leave an object the user meant to delete.
func selectObjects(st *store.Store, kind, ns string, sel labels.Selector) ([]store.ObjectRef, error) {
	var refs []store.ObjectRef
	add := func(deleted bool, m *manifests.ObjectMeta) {
		objNS := m.NamespaceOrDefault()
		if kind == store.KindNamespace {
			objNS = ""
		} else if ns != "" && objNS != ns {
			return
		}
		if !deleted && sel.Matches(labels.Set(m.Labels)) {
			refs = append(refs, store.ObjectRef{Kind: kind, Namespace: objNS, Name: m.Name})
		}
	}
	objs, errs := st.ListObjects(kind)
	for _, o := range objs {
		add(o.Deleted, o.Meta)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return refs, nil
}

// liveKeysIn returns the keys of the live deployments of namespace ns.
func liveKeysIn(st *store.Store, ns string) []string {
	recs, _ := st.List()
	var out []string
	for _, r := range recs {
		if r.NamespaceOrDefault() == ns {
			out = append(out, r.Key())
		}
	}
	return out
}

func dedupe(keys []string) []string {
	seen := map[string]bool{}
	out := keys[:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// hostPortConflict refuses what apply's validation refuses, for the commands
// that change a stored deployment without a manifest (scale, rollout undo):
// each replica would need the same host port, and only one can bind it.
// Every container of the pod counts, init containers and sidecars too: the
// pod publishes the ports of all of them.
func hostPortConflict(d *manifests.Deployment) error {
	if d.Replicas() <= 1 {
		return nil
	}
	for _, c := range d.Spec.Template.Spec.AllContainers() {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				return fmt.Errorf("deployment %s publishes hostPort %d (container %s): it cannot run more than one replica (it has %d)",
					d.Metadata.Name, p.HostPort, c.Name, d.Replicas())
			}
		}
	}
	return nil
}

// checkCascade reads kubectl's --cascade values, reporting whether the
// deletion orphans: background and foreground both delete what the object
// owns (its pods, a CronJob's Jobs, a StatefulSet's claims under its
// retention policy) once it is gone, which is what either ends with;
// orphan (and kubectl's deprecated false) leaves it, the pods running
// without owner (store.DeleteOptions, docs/design.md §17.1).
func checkCascade(v string) (orphan bool, err error) {
	switch v {
	case "background", "foreground", "true":
		return false, nil
	case "orphan", "false":
		return true, nil
	}
	return false, fmt.Errorf(`invalid cascade value (%s). Must be "background", "foreground", or "orphan".`, v)
}
