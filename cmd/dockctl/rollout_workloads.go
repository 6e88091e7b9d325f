package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Rollout of a StatefulSet and a DaemonSet (docs/design.md §17.2): their
// history is the revisions their record keeps (store.StoredObject.
// Revisions, as Kubernetes keeps their ControllerRevisions), undo and
// restart change the stored object's pod template (the controller then
// rolls its pods to it, as its update strategy says), and status follows
// the status their controller writes, judged as kubectl's status viewers
// judge it.

// workloadRollout is rollout of the kind of v: template is an object's pod
// template, viewer kubectl's status viewer of the kind.
func workloadRollout(v *workloadView) *rolloutOps {
	kind := v.kind
	word := strings.ToLower(kind) // the CLI's word of it (kindStatefulSet…)
	template := rolloutTemplates[kind]
	return &rolloutOps{
		history: func(cmd *cobra.Command, g *globalOptions, name string, revision int64) error {
			o, err := liveWorkload(g, kind, name)
			if err != nil {
				return err
			}
			revs := workloadRevisions(o, template)
			out := cmd.OutOrStdout()
			if revision != 0 {
				rev := findRevision(revs, revision)
				if rev == nil {
					return errors.New("unable to find the specified revision") // kubectl's words
				}
				fmt.Fprintf(out, "%s/%s revision %d (template hash %s)\n", word, name, rev.Number, rev.Hash)
				b, err := yaml.Marshal(struct {
					Template manifests.PodTemplateSpec `json:"template"`
				}{rev.Template})
				if err != nil {
					return err
				}
				_, err = out.Write(b)
				return err
			}
			return printRevisions(out, word, name, revs, time.Now())
		},
		undo: func(cmd *cobra.Command, g *globalOptions, name string, toRevision int64) error {
			var target int64
			skipped := false
			err := updateWorkload(g, kind, name, func(o *store.StoredObject) error {
				revs := workloadRevisions(o, template)
				// kubectl's findHistory words.
				var rev *store.Revision
				switch {
				case toRevision != 0:
					if rev = findRevision(revs, toRevision); rev == nil {
						return fmt.Errorf("unable to find specified revision %d in history", toRevision)
					}
				case len(revs) < 2:
					return errors.New("no last revision to roll back to")
				default:
					rev = &revs[len(revs)-2]
				}
				target = rev.Number
				t := template(o.Object)
				if manifests.TemplateHash(t) == rev.Hash {
					skipped = true
					return nil
				}
				*t = rev.Template
				return nil
			})
			if err != nil {
				return err
			}
			if skipped {
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s skipped rollback (current template already matches revision %d)\n", word, name, target)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s rolled back (to revision %d)\n", word, name, target)
			return nil
		},
		restart: func(cmd *cobra.Command, g *globalOptions, name string) error {
			err := updateWorkload(g, kind, name, func(o *store.StoredObject) error {
				t := template(o.Object)
				if t.Metadata.Annotations == nil {
					t.Metadata.Annotations = map[string]string{}
				}
				t.Metadata.Annotations[manifests.AnnotationRestartedAt] = time.Now().UTC().Format(time.RFC3339Nano)
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s restarted\n", word, name)
			return nil
		},
		status: func(cmd *cobra.Command, g *globalOptions, name string, timeout time.Duration) error {
			return workloadRolloutStatus(cmd, g, v, name, timeout)
		},
	}
}

// rolloutTemplates are the pod templates of the kinds rollout acts on
// beyond Deployment, by the store's kind.
var rolloutTemplates = map[string]func(obj any) *manifests.PodTemplateSpec{
	store.KindStatefulSet: func(obj any) *manifests.PodTemplateSpec { return &obj.(*manifests.StatefulSet).Spec.Template },
	store.KindDaemonSet:   func(obj any) *manifests.PodTemplateSpec { return &obj.(*manifests.DaemonSet).Spec.Template },
}

// rolloutBundles are the bundles that store an object of the kinds
// rollout acts on beyond Deployment, by the store's kind.
var rolloutBundles = map[string]func(obj any) store.Bundle{
	store.KindStatefulSet: func(obj any) store.Bundle {
		return store.Bundle{StatefulSets: []*manifests.StatefulSet{obj.(*manifests.StatefulSet)}}
	},
	store.KindDaemonSet: func(obj any) store.Bundle {
		return store.Bundle{DaemonSets: []*manifests.DaemonSet{obj.(*manifests.DaemonSet)}}
	},
}

// liveWorkload is the stored live object kind/name of -n's namespace, or
// kubectl's NotFound.
func liveWorkload(g *globalOptions, kind, name string) (*store.StoredObject, error) {
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	o, err := st.LookupObject(store.ObjectRef{Kind: kind, Namespace: g.namespace, Name: name})
	if err == nil && o.Deleted {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, notFoundIn(g, strings.ToLower(kind), g.namespace, name, err)
	}
	return o, nil
}

// workloadRevisions are o's revisions; a record of a release that kept
// none has its current template for its one revision.
func workloadRevisions(o *store.StoredObject, template func(any) *manifests.PodTemplateSpec) []store.Revision {
	if len(o.Revisions) > 0 {
		return o.Revisions
	}
	t := template(o.Object)
	return []store.Revision{{Number: 1, Hash: manifests.TemplateHash(t), Template: *t,
		ChangeCause: o.Meta.Annotations[manifests.AnnotationChangeCause], CreatedAt: o.Created}}
}

func findRevision(revs []store.Revision, n int64) *store.Revision {
	for i := range revs {
		if revs[i].Number == n {
			return &revs[i]
		}
	}
	return nil
}

// printRevisions is rollout history's table, of any kind's revisions.
func printRevisions(out io.Writer, word, name string, revs []store.Revision, now time.Time) error {
	fmt.Fprintf(out, "%s/%s\n", word, name)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tTEMPLATE-HASH\tAGE\tCHANGE-CAUSE")
	for _, r := range revs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.Number, r.Hash, age(now.Sub(r.CreatedAt)), orNone(r.ChangeCause))
	}
	return tw.Flush()
}

// updateWorkload changes the stored object kind/name of -n's namespace
// with fn and stores it whole as an update by rollout (the manager stays,
// as patch's), the controller rolling it out. The object is stored as
// read, ownerReferences included, not decoded from YAML.
func updateWorkload(g *globalOptions, kind, name string, fn func(o *store.StoredObject) error) error {
	st, err := g.openStore()
	if err != nil {
		return err
	}
	o, err := st.LookupObject(store.ObjectRef{Kind: kind, Namespace: g.namespace, Name: name})
	if err == nil && o.Deleted {
		err = store.ErrNotFound
	}
	if err != nil {
		return notFoundIn(g, strings.ToLower(kind), g.namespace, name, err)
	}
	o.Meta.Generation, o.Meta.CreationTimestamp = 0, nil // the store's, not the object's
	if err := fn(o); err != nil {
		return err
	}
	if _, err := st.Apply(rolloutBundles[kind](o.Object), store.ApplyOptions{Updater: "rollout"}); err != nil {
		return fmt.Errorf("%s %q: %w", strings.ToLower(kind), name, err)
	}
	return nil
}

// rolloutViewers are kubectl's status viewers (polymorphichelpers'
// StatefulSetStatusViewer, DaemonSetStatusViewer): given the object, the
// status its controller wrote and the record generation that status is
// of, the line to print, whether the rollout is done, or why it cannot be
// followed.
var rolloutViewers = map[string]func(obj any, status any, observed, generation int64) (string, bool, error){
	store.KindStatefulSet: func(obj any, s any, observed, generation int64) (string, bool, error) {
		sts, st := obj.(*manifests.StatefulSet), s.(*appsv1.StatefulSetStatus)
		if sts.Spec.UpdateStrategy.Type != "" && sts.Spec.UpdateStrategy.Type != string(appsv1.RollingUpdateStatefulSetStrategyType) {
			return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
		}
		if observed == 0 || generation > observed {
			return "Waiting for statefulset spec update to be observed...\n", false, nil
		}
		replicas := int32Or(sts.Spec.Replicas, 1)
		if st.ReadyReplicas < replicas {
			return fmt.Sprintf("Waiting for %d pods to be ready...\n", replicas-st.ReadyReplicas), false, nil
		}
		if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
			if st.UpdatedReplicas < replicas-*ru.Partition {
				return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...\n",
					st.UpdatedReplicas, replicas-*ru.Partition), false, nil
			}
			return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedReplicas), true, nil
		}
		if st.UpdateRevision != st.CurrentRevision {
			return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...\n",
				st.UpdatedReplicas, st.UpdateRevision), false, nil
		}
		return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", st.CurrentReplicas, st.CurrentRevision), true, nil
	},
	store.KindDaemonSet: func(obj any, s any, observed, generation int64) (string, bool, error) {
		ds, st := obj.(*manifests.DaemonSet), s.(*appsv1.DaemonSetStatus)
		if ds.Spec.UpdateStrategy.Type != "" && ds.Spec.UpdateStrategy.Type != string(appsv1.RollingUpdateDaemonSetStrategyType) {
			// kubectl names the StatefulSet's strategy type here; the
			// words are the same.
			return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
		}
		if observed == 0 || generation > observed {
			return "Waiting for daemon set spec update to be observed...\n", false, nil
		}
		if st.UpdatedNumberScheduled < st.DesiredNumberScheduled {
			return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...\n",
				ds.Metadata.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled), false, nil
		}
		if st.NumberAvailable < st.DesiredNumberScheduled {
			return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...\n",
				ds.Metadata.Name, st.NumberAvailable, st.DesiredNumberScheduled), false, nil
		}
		return fmt.Sprintf("daemon set %q successfully rolled out\n", ds.Metadata.Name), true, nil
	},
}

// workloadRolloutStatus prints kubectl's status viewer's line each time
// it changes, until the rollout is done (exit 0) or timeout passes
// (exit 1; 0 waits forever), waking on each change of the store's objects
// or statuses.
func workloadRolloutStatus(cmd *cobra.Command, g *globalOptions, v *workloadView, name string, timeout time.Duration) error {
	st, err := g.readStore()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	changes, err := storeChanges(ctx, st.Watch, st.WatchStatus)
	if err != nil {
		return err
	}
	viewer, out, last := rolloutViewers[v.kind], cmd.OutOrStdout(), ""
	for {
		o, err := liveWorkload(g, v.kind, name)
		if err != nil {
			return err
		}
		s := v.status()
		observed, err := st.ReadWorkloadStatus(store.ObjectRef{Kind: v.kind, Namespace: g.namespace, Name: name}, o.Created, s)
		if err != nil {
			return err
		}
		msg, done, err := viewer(o.Object, s, observed, o.Generation)
		if err != nil {
			return err
		}
		if msg != last {
			fmt.Fprint(out, msg)
			last = msg
		}
		if done {
			return nil
		}
		select {
		case <-changes:
		case <-ctx.Done():
			if cmd.Context().Err() == nil {
				return &exitError{code: 1, err: errors.New("timed out waiting for the condition")}
			}
			return ctx.Err()
		}
	}
}

// storeChanges signals each change the store's watches report.
func storeChanges(ctx context.Context, watches ...func(context.Context) (<-chan string, error)) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	for _, w := range watches {
		ch, err := w(ctx)
		if err != nil {
			return nil, err
		}
		go forward(ch, out)
	}
	return out, nil
}
