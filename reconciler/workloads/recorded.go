package workloads

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// What an owner's status records of its pods' containers (docs/design.md
// §5, §17.1): the runtime keeps its memory in the process
// (podruntime.Runtime.Recorded), the read commands run without it. So
// each sync records, with the status it writes anyway, its live
// containers' restarts and readiness verdicts, and the read commands
// judge the pods by them as the controller does (RecordedContainers):
// without it a probed container is never ready in `get pods`. An
// unchanged record writes nothing (store.UpdateWorkloadStatus), and
// nothing is recorded per probe run: only a changed verdict changes it.

// The writers of a workload's recorded containers
// (store.WorkloadUpdate.Writer): its owner's sync, and the orphan keeper
// of its kind and name (orphans.go), each its own pods'.
const (
	WriterPods    = "pods"
	WriterOrphans = "orphans"
)

// RecordUpdate is the status update that records rec (a runtime's
// memory as Runtime.Recorded gives it) as writer's; nil records none.
func RecordUpdate(writer string, rec map[string]*podruntime.ContainerState) (store.WorkloadUpdate, error) {
	u := store.WorkloadUpdate{Writer: writer}
	if rec == nil {
		return u, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return u, fmt.Errorf("encode the recorded containers: %w", err)
	}
	u.Containers = b
	return u, nil
}

// recall seeds runtime key's memory, on its first sync in this process,
// from what writer recorded in the status of ref's object created at
// created (podruntime.Runtime.Recall): a record that cannot be read
// seeds nothing.
func (c *Controller) recall(key, writer string, ref store.ObjectRef, created time.Time) {
	c.runtime.Recall(key, func() map[string]*podruntime.ContainerState {
		recs, err := c.cfg.Store.ReadWorkloadContainers(ref, created)
		if err != nil {
			c.cfg.Log.Warn("reading recorded containers", "workload", ref.String(), "err", err)
			return nil
		}
		return decodeRecorded(recs[writer], c.cfg.Log)
	})
}

// decodeRecorded decodes one writer's recorded containers; a record that
// does not decode is none (it only costs a restart count and a verdict
// the controller judges again).
func decodeRecorded(raw json.RawMessage, log *slog.Logger) map[string]*podruntime.ContainerState {
	if len(raw) == 0 {
		return nil
	}
	var out map[string]*podruntime.ContainerState
	if err := json.Unmarshal(raw, &out); err != nil {
		log.Warn("recorded containers do not decode: ignored", "err", err)
		return nil
	}
	return out
}

// ContainersReader reads what a workload's status recorded of its
// containers (store.Store).
type ContainersReader interface {
	ReadWorkloadContainers(ref store.ObjectRef, created time.Time) (map[string]json.RawMessage, error)
}

// RecordedContainers is what the status of obj (of kind, in namespace ns)
// records of containers cs, by container ID, as the read commands judge
// them by it at now (podruntime.CurrentVerdicts): the memory
// podruntime.Judge takes. An orphan's (store.PodOrphan) is its orphan
// keeper's record, any other's its owner's: each is judged by the one
// that runs it. nil when nothing is recorded (a status written before
// the record, a controller never run).
func RecordedContainers(kind string, obj *store.StoredObject, st ContainersReader, ns string, cs []dockerx.Container, now time.Time) map[string]*podruntime.ContainerState {
	if obj == nil || obj.Object == nil {
		return nil
	}
	recs, err := st.ReadWorkloadContainers(store.ObjectRef{Kind: kind, Namespace: ns, Name: obj.Meta.Name}, obj.Created)
	if err != nil || len(recs) == 0 {
		return nil
	}
	owned, orphans := decodeRecorded(recs[WriterPods], slog.Default()), decodeRecorded(recs[WriterOrphans], slog.Default())
	mine := map[string]*podruntime.ContainerState{}
	for _, c := range cs {
		from := owned
		if obj.PodOwner(c.Labels[dockerx.LabelOwnerUID], c.Labels) == store.PodOrphan {
			from = orphans
		}
		if cst := from[c.ID]; cst != nil {
			mine[c.ID] = cst
		}
	}
	return podruntime.CurrentVerdicts(mine, cs, now)
}
