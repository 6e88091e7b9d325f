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
		Use:   "delete deployment NAME | delete -f PATH",
		Short: "Delete deployments; the controller then removes their containers",
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			switch {
			case len(files) > 0 && len(args) > 0:
				return fmt.Errorf("give either -f or a deployment name, not both")
			case len(files) > 0:
				deps, err := loadDeployments(files, cmd.InOrStdin(), skip, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				for _, d := range deps {
					names = append(names, d.Metadata.Name)
				}
			default:
				name, err := deploymentArg(args)
				if err != nil {
					return err
				}
				names = []string{name}
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			// As kubectl delete -f: one that is missing is reported, and
			// does not keep the others running.
			var deleted []string
			var errs []error
			for _, name := range names {
				if err := st.Delete(name); err != nil {
					errs = append(errs, notFound(g, name, err))
					continue
				}
				deleted = append(deleted, name)
				fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s deleted\n", name)
			}
			if wait && len(deleted) > 0 {
				if err := waitDeleted(cmd.Context(), g, st, deleted, timeout, cmd.OutOrStdout()); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "delete the deployments named in these manifests")
	addSkipUnsupported(cmd, &skip)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until their containers are gone (needs a running controller)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
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
