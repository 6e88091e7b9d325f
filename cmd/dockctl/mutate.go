package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func newScaleCommand(g *globalOptions) *cobra.Command {
	var replicas int32
	cmd := deploymentCommand("scale deployment NAME --replicas N", "Change a deployment's replica count", func(cmd *cobra.Command, name string) error {
		if !cmd.Flags().Changed("replicas") {
			return fmt.Errorf("--replicas is required")
		}
		if replicas < 0 {
			return fmt.Errorf("--replicas must be >= 0, got %d", replicas)
		}
		if replicas > manifests.MaxReplicasLimit {
			return fmt.Errorf("--replicas must be <= %d, got %d", manifests.MaxReplicasLimit, replicas)
		}
		err := g.updateDeployment(name, func(_ *store.Record, d *manifests.Deployment) error {
			d.Spec.Replicas = &replicas
			return hostPortConflict(d)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s scaled\n", name)
		return nil
	})
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "desired number of replicas")
	return cmd
}

func newDeleteCommand(g *globalOptions) *cobra.Command {
	var (
		skip    bool
		files   []string
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "delete deployment|service|namespace|configmap|secret|pvc NAME | delete -f PATH",
		Short: "Delete deployments, services, configmaps, secrets or namespaces (with everything in them); the controller then removes their containers",
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var refs []store.ObjectRef
			switch {
			case len(files) > 0 && len(args) > 0:
				return fmt.Errorf("give either -f or a name, not both")
			case len(files) > 0:
				b, err := g.loadBundle(files, cmd.InOrStdin(), skip, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				refs = b.refs()
			default:
				kind, name, err := resourceArg(args, kindDeployment, kindService, kindNamespace, kindConfigMap, kindSecret, kindClaim)
				if err != nil {
					return err
				}
				refs = []store.ObjectRef{{Kind: storeKinds[kind], Namespace: g.namespace, Name: name}}
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
			results, err := st.DeleteObjects(refs)
			if err != nil {
				return err
			}
			// As kubectl delete -f: one that is missing is reported, and
			// does not keep the others running.
			var errs []error
			for _, r := range results {
				if r.Err != nil {
					errs = append(errs, notFoundIn(g, r.Kind, r.Namespace, r.Name, r.Err))
					continue
				}
				if r.Kind == store.KindDeployment {
					waitKeys = append(waitKeys, store.Key(r.Namespace, r.Name))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s deleted\n", r.ObjectRef)
			}
			if wait && len(waitKeys) > 0 {
				if err := waitDeleted(cmd.Context(), g, st, dedupe(waitKeys), timeout, cmd.OutOrStdout()); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "delete the objects named in these manifests")
	addSkipUnsupported(cmd, &skip)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until their containers are gone (needs a running controller)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// storeKinds maps the CLI's kinds to the store's.
var storeKinds = map[string]string{
	kindDeployment: store.KindDeployment, kindService: store.KindService, kindNamespace: store.KindNamespace,
	kindConfigMap: store.KindConfigMap, kindSecret: store.KindSecret,
	kindClaim: store.KindPersistentVolumeClaim,
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
