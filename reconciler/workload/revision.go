package workload

import "github.com/dockctl/dockctl/manifests"

// Revision is one revision of a workload's pod template, as a
// ControllerRevision records it for a StatefulSet or a DaemonSet: Name is
// OWNER-HASH (the ControllerRevision's name), Hash the template hash
// (docs/design.md §7), Template the template itself.
type Revision struct {
	Name     string
	Hash     string
	Template *manifests.PodTemplateSpec
}

// NewRevision is owner's revision of template t of hash h.
func NewRevision(owner string, t *manifests.PodTemplateSpec, h string) Revision {
	return Revision{Name: owner + "-" + h, Hash: h, Template: t}
}

// Find is the revision of history named name.
func Find(history []Revision, name string) (Revision, bool) {
	for _, r := range history {
		if r.Name == name {
			return r, true
		}
	}
	return Revision{}, false
}
