package reconciler

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// Orphans of a deployment (docs/design.md §17.1, store/orphans.go): a
// deletion with --cascade=orphan leaves its pods running ownerless, as
// Kubernetes orphans the Deployment's ReplicaSets, which keep their pods.
// There are no ReplicaSets here, so the pods themselves are what the
// deployment's record lists (store.Record.Orphaned), and
// store.StoredObject.PodOwner is the rule this controller shares with the
// commands and every other workload controller: a pod of the name that
// is nobody's (store.PodOrphan) is not observed here at all — neither
// kept nor stopped; the workload frame's orphan keeper of the name keeps
// it (restarts, probes, endpoints: workloads.DeploymentKind), asking the
// same StoredObject.ContainerOwner, so no container is both's — and its
// name is taken (a new pod gets the next free ordinal). A pod the
// deployment adopts (an orphan its selector matches) is observed as its
// own: one of the current template counts toward its replicas as it
// runs, one of another is an old revision's, rolled by its strategy (the
// planner adopts the sizes of revisions its status does not know). Any
// other pod of the name is observed as before deployments could orphan.

// ownedPods splits the containers and pod volumes listed for rec's name
// into those rec's sync observes and the names of the containers of the
// pods nobody owns (held: no create may take them). A record that lists
// no orphaned incarnation (every record written before deployments could
// orphan) owns all of them, as it always did.
func ownedPods(rec *store.Record, cs []dockerx.Container, vols []dockerx.Volume) (own []dockerx.Container, ownVols []dockerx.Volume, held map[string]bool) {
	if len(rec.Orphaned) == 0 || len(cs) == 0 {
		return cs, vols, nil
	}
	obj := rec.Stored()
	own = make([]dockerx.Container, 0, len(cs))
	var pods map[string]bool // pod uids of the orphans, whose volumes stay theirs
	for _, ct := range cs {
		if obj.ContainerOwner(ct.Labels[dockerx.LabelOwnerUID], ct.Created, ct.Labels) != store.PodOrphan {
			own = append(own, ct)
			continue
		}
		if held == nil {
			held, pods = map[string]bool{}, map[string]bool{}
		}
		held[ct.Name] = true
		if ct.PodUID != "" {
			pods[ct.PodUID] = true
		}
	}
	if len(pods) == 0 {
		return own, vols, held
	}
	for _, v := range vols {
		if v.PodUID == "" || !pods[v.PodUID] {
			ownVols = append(ownVols, v)
		}
	}
	return own, ownVols, held
}

// OwnedContainers are the containers of cs (listed for rec's name) that
// rec owns, as its sync observes them: for the commands that count or
// await a deployment's pods (get, describe, rollout status, wait), which
// must not count the orphans it does not own.
func OwnedContainers(rec *store.Record, cs []dockerx.Container) []dockerx.Container {
	own, _, _ := ownedPods(rec, cs, nil)
	return own
}
