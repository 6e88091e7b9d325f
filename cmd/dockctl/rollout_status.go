package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// `rollout status` of a DaemonSet or StatefulSet: kubectl's status
// viewers (k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go),
// read from the stored object and the status its controller wrote
// (docs/design.md §17.1): the object's generation against the one the
// status is of, then the counts. The words are kubectl's, so scripts
// that read them keep working.

// errRolloutTimeout is kubectl's words when --timeout passes.
var errRolloutTimeout = errors.New("timed out waiting for the condition")

// daemonSetRolloutStatus is kubectl's DaemonSetStatusViewer: a message,
// whether the rollout is done, or an error for a strategy with no rollout.
func daemonSetRolloutStatus(ds *manifests.DaemonSet, gen, observed int64, st *appsv1.DaemonSetStatus) (string, bool, error) {
	if t := ds.Spec.UpdateStrategy.Type; t != "" && t != string(appsv1.RollingUpdateDaemonSetStrategyType) {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateDaemonSetStrategyType)
	}
	if observed == 0 || gen > observed {
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
}

// statefulSetRolloutStatus is kubectl's StatefulSetStatusViewer.
func statefulSetRolloutStatus(ss *manifests.StatefulSet, gen, observed int64, st *appsv1.StatefulSetStatus) (string, bool, error) {
	us := ss.Spec.UpdateStrategy
	if us.Type != "" && us.Type != string(appsv1.RollingUpdateStatefulSetStrategyType) {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
	}
	if observed == 0 || gen > observed {
		return "Waiting for statefulset spec update to be observed...\n", false, nil
	}
	replicas := int32(1)
	if ss.Spec.Replicas != nil {
		replicas = *ss.Spec.Replicas
	}
	if st.ReadyReplicas < replicas {
		return fmt.Sprintf("Waiting for %d pods to be ready...\n", replicas-st.ReadyReplicas), false, nil
	}
	if ru := us.RollingUpdate; ru != nil && ru.Partition != nil {
		if want := replicas - *ru.Partition; st.UpdatedReplicas < want {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...\n",
				st.UpdatedReplicas, want), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedReplicas), true, nil
	}
	if st.UpdateRevision != st.CurrentRevision {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...\n",
			st.UpdatedReplicas, st.UpdateRevision), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", st.CurrentReplicas, st.CurrentRevision), true, nil
}

// workloadRolloutStatus reads the stored DaemonSet or StatefulSet ref
// and its status once and judges its rollout.
func workloadRolloutStatus(st *store.Store, ref store.ObjectRef) (string, bool, error) {
	o, err := st.LookupObject(ref)
	if err != nil {
		return "", false, err
	}
	if o.Deleted {
		return "", false, fmt.Errorf("%w: %s %q", store.ErrNotFound, ref.Kind, ref.Name)
	}
	switch obj := o.Object.(type) {
	case *manifests.DaemonSet:
		var s appsv1.DaemonSetStatus
		observed, err := st.ReadWorkloadStatus(ref, o.Created, &s)
		if err != nil {
			return "", false, err
		}
		return daemonSetRolloutStatus(obj, o.Generation, observed, &s)
	case *manifests.StatefulSet:
		var s appsv1.StatefulSetStatus
		observed, err := st.ReadWorkloadStatus(ref, o.Created, &s)
		if err != nil {
			return "", false, err
		}
		return statefulSetRolloutStatus(obj, o.Generation, observed, &s)
	}
	return "", false, fmt.Errorf("no status viewer for %T", o.Object)
}

// waitWorkloadRollout prints each new message of workloadRolloutStatus
// until the rollout is done, as kubectl's rollout status watches; a zero
// timeout waits forever.
func waitWorkloadRollout(ctx context.Context, st *store.Store, ref store.ObjectRef, timeout time.Duration, out io.Writer) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	last := ""
	for {
		msg, done, err := workloadRolloutStatus(st, ref)
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
		case <-ctx.Done():
			return errRolloutTimeout
		case <-time.After(200 * time.Millisecond):
		}
	}
}
