package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func newRolloutCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout status|history|undo|restart|pause|resume (deployment|statefulset|daemonset) NAME",
		Short: "Manage the rollout of a deployment, statefulset or daemonset",
		Example: `  # Wait until deployment web is rolled out
  dockctl rollout status deployment/web

  # Roll back deployment web to its previous revision
  dockctl rollout undo deployment web`,
		RunE: subcommandsOnly(true), // kubectl rollout's help goes to stdout
	}
	cmd.AddCommand(newRolloutStatusCommand(g), newRolloutHistoryCommand(g), newRolloutUndoCommand(g),
		newRolloutRestartCommand(g), newRolloutPauseCommand(g, true), newRolloutPauseCommand(g, false))
	return cmd
}

// rolloutOps is how rollout acts on one kind (kindInfo.rollout): each
// subcommand takes the kinds whose function it needs is set, and refuses
// the others in kubectl's words (kindRefusals).
type rolloutOps struct {
	status  func(cmd *cobra.Command, g *globalOptions, name string, timeout time.Duration) error
	history func(cmd *cobra.Command, g *globalOptions, name string, revision int64) error
	undo    func(cmd *cobra.Command, g *globalOptions, name string, toRevision int64) error
	restart func(cmd *cobra.Command, g *globalOptions, name string) error
	pause   func(cmd *cobra.Command, g *globalOptions, name string, pause bool) error
}

// deploymentRollout is rollout of a Deployment, from its record's
// revisions (store.Record.Revisions).
var deploymentRollout = rolloutOps{status: deploymentRolloutStatus, history: deploymentRolloutHistory,
	undo: deploymentRolloutUndo, restart: deploymentRolloutRestart, pause: deploymentRolloutPause}

// rolloutCommand is a rollout subcommand of the kinds has accepts:
// "KIND NAME" or "KIND/NAME", run with the kind's ops.
func rolloutCommand(use, short string, has func(o *rolloutOps) bool, run func(cmd *cobra.Command, o *rolloutOps, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("required resource not specified") // kubectl rollout's words
			}
			kind, name, err := resourceArg(args, kindNames(func(k *kindInfo) bool { return k.rollout != nil && has(k.rollout) })...)
			if err != nil {
				return refuseKind(cmd, err)
			}
			return run(cmd, kindByName(kind).rollout, name)
		},
	}
}

func newRolloutStatusCommand(g *globalOptions) *cobra.Command {
	var timeout time.Duration
	cmd := rolloutCommand("status (deployment|statefulset|daemonset) NAME", "Wait until the rollout finishes (exit 0) or exceeds its progress deadline or --timeout (exit 1)",
		func(o *rolloutOps) bool { return o.status != nil },
		func(cmd *cobra.Command, o *rolloutOps, name string) error { return o.status(cmd, g, name, timeout) })
	cmd.Example = `  # Wait until deployment web is rolled out
  dockctl rollout status deployment/web

  # Wait until daemonset agent or statefulset db is rolled out
  dockctl rollout status daemonset/agent
  dockctl rollout status sts db

  # Give up after two minutes (exit 1)
  dockctl rollout status deploy web --timeout 2m`
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long (exit 1); 0 waits forever")
	return cmd
}

func deploymentRolloutStatus(cmd *cobra.Command, g *globalOptions, name string, timeout time.Duration) error {
	st, err := g.readStore()
	if err != nil {
		return err
	}
	if _, err := st.Get(g.namespace, name); err != nil {
		return notFound(g, name, err)
	}
	// kubectl rollout status: zero means never time out; a negative
	// timeout is taken for zero.
	err = waitRollouts(cmd.Context(), g, st, []string{store.Key(g.namespace, name)}, max(timeout, 0), cmd.OutOrStdout())
	if err == errDeadlineExceeded {
		return &exitError{code: 1}
	}
	return err
}

func newRolloutHistoryCommand(g *globalOptions) *cobra.Command {
	var revision int64
	cmd := rolloutCommand("history (deployment|statefulset|daemonset) NAME [--revision N]", "List the revisions of a deployment, statefulset or daemonset, or show one revision's template",
		func(o *rolloutOps) bool { return o.history != nil },
		func(cmd *cobra.Command, o *rolloutOps, name string) error { return o.history(cmd, g, name, revision) })
	cmd.Example = `  # List the revisions of deployment web
  dockctl rollout history deployment/web

  # Show the pod template of revision 2
  dockctl rollout history deployment/web --revision 2

  # List the revisions of statefulset db
  dockctl rollout history sts/db`
	cmd.Flags().Int64Var(&revision, "revision", 0, "show the template of this revision")
	return cmd
}

func deploymentRolloutHistory(cmd *cobra.Command, g *globalOptions, name string, revision int64) error {
	st, err := g.readStore()
	if err != nil {
		return err
	}
	rec, err := st.Get(g.namespace, name)
	if err != nil {
		return notFound(g, name, err)
	}
	out := cmd.OutOrStdout()
	if revision != 0 {
		rev := findRevision(rec.Revisions, revision)
		if rev == nil {
			return errors.New("unable to find the specified revision") // kubectl's words
		}
		d := rec.Deployment.DeepCopy()
		d.Spec.Template = rev.Template
		fmt.Fprintf(out, "deployment/%s revision %d (template hash %s)\n", name, rev.Number, rev.Hash)
		b, err := manifests.Marshal(d, "yaml")
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return printRevisions(out, "deployment", name, rec.Revisions, time.Now())
}

func newRolloutUndoCommand(g *globalOptions) *cobra.Command {
	var toRevision int64
	cmd := rolloutCommand("undo (deployment|statefulset|daemonset) NAME [--to-revision N]", "Roll back to the previous revision, or to revision N",
		func(o *rolloutOps) bool { return o.undo != nil },
		func(cmd *cobra.Command, o *rolloutOps, name string) error { return o.undo(cmd, g, name, toRevision) })
	cmd.Example = `  # Roll back deployment web to its previous revision
  dockctl rollout undo deployment/web

  # Roll back to revision 2
  dockctl rollout undo deployment web --to-revision 2

  # Roll back statefulset db to its previous revision
  dockctl rollout undo statefulset/db`
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to (default: the previous one)")
	return cmd
}

func deploymentRolloutUndo(cmd *cobra.Command, g *globalOptions, name string, toRevision int64) error {
	var target int64
	skipped := false
	err := g.updateDeployment("rollout", name, func(rec *store.Record, d *manifests.Deployment) error {
		// kubectl's words, without the store's `deployment "web":`.
		var rev *store.Revision
		switch {
		case toRevision != 0:
			rev = findRevision(rec.Revisions, toRevision)
			if rev == nil {
				return plainError(fmt.Sprintf("unable to find specified revision %d in history", toRevision))
			}
		case len(rec.Revisions) < 2:
			return plainError(fmt.Sprintf("no rollout history found for deployment %q", name))
		default:
			rev = &rec.Revisions[len(rec.Revisions)-2]
		}
		if d.Spec.Paused {
			return plainError("you cannot rollback a paused deployment; resume it first with 'dockctl rollout resume' and try again")
		}
		target = rev.Number
		if cur := rec.CurrentRevision(); cur != nil && cur.Hash == rev.Hash {
			skipped = true // nothing to restore
			return nil
		}
		d.Spec.Template = rev.Template
		// As Kubernetes copies the ReplicaSet's change-cause back to the
		// Deployment on a rollback: the restored revision keeps its own
		// cause in the history, not that of the release rolled back from.
		if rev.ChangeCause != "" {
			if d.Metadata.Annotations == nil {
				d.Metadata.Annotations = map[string]string{}
			}
			d.Metadata.Annotations[manifests.AnnotationChangeCause] = rev.ChangeCause
		} else {
			delete(d.Metadata.Annotations, manifests.AnnotationChangeCause)
		}
		return hostPortConflict(d)
	})
	if err != nil {
		return err
	}
	if skipped {
		fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s skipped rollback (current template already matches revision %d)\n", name, target)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s rolled back (to revision %d)\n", name, target)
	return nil
}

func newRolloutRestartCommand(g *globalOptions) *cobra.Command {
	cmd := rolloutCommand("restart (deployment|statefulset|daemonset) NAME", "Replace every container with a rolling update (a new revision via a restartedAt annotation)",
		func(o *rolloutOps) bool { return o.restart != nil },
		func(cmd *cobra.Command, o *rolloutOps, name string) error { return o.restart(cmd, g, name) })
	cmd.Example = `  # Replace every container of deployment web, one rolling update
  dockctl rollout restart deployment/web

  # The same in namespace team
  dockctl rollout restart deploy api -n team

  # Replace the pods of statefulset db, highest ordinal first
  dockctl rollout restart sts/db`
	return cmd
}

func deploymentRolloutRestart(cmd *cobra.Command, g *globalOptions, name string) error {
	err := g.updateDeployment("rollout", name, func(_ *store.Record, d *manifests.Deployment) error {
		if d.Spec.Paused {
			return plainError(fmt.Sprintf("%s %q can't restart paused deployment (run rollout resume first)", apiResourceOf(kindDeployment).qualified(), name))
		}
		if d.Spec.Template.Metadata.Annotations == nil {
			d.Spec.Template.Metadata.Annotations = map[string]string{}
		}
		d.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] = time.Now().UTC().Format(time.RFC3339Nano)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s restarted\n", name)
	return nil
}

func newRolloutPauseCommand(g *globalOptions, pause bool) *cobra.Command {
	verb, done, short := "resume", "resumed", "Resume rolling out new revisions"
	if pause {
		verb, done, short = "pause", "paused", "Stop rolling out new revisions (scaling still works)"
	}
	cmd := rolloutCommand(verb+" deployment NAME", short, func(o *rolloutOps) bool { return o.pause != nil },
		func(cmd *cobra.Command, o *rolloutOps, name string) error {
			if err := o.pause(cmd, g, name, pause); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deployment/%s %s\n", name, done)
			return nil
		})
	if pause {
		cmd.Example = `  # Stop rolling out changes of deployment web (set image, apply) until it is resumed
  dockctl rollout pause deployment/web`
	} else {
		cmd.Example = `  # Roll out the changes made while deployment web was paused
  dockctl rollout resume deployment/web`
	}
	return cmd
}

func deploymentRolloutPause(_ *cobra.Command, g *globalOptions, name string, pause bool) error {
	// kubectl's refusal of a pause of a paused deployment (and of a
	// resume of one that is not).
	already := "is not paused"
	if pause {
		already = "is already paused"
	}
	return g.updateDeployment("rollout", name, func(_ *store.Record, d *manifests.Deployment) error {
		if d.Spec.Paused == pause {
			return plainError(fmt.Sprintf("%s %q %s", apiResourceOf(kindDeployment).qualified(), name, already))
		}
		d.Spec.Paused = pause
		return nil
	})
}
