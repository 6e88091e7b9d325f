package podruntime

import (
	"maps"
	"strings"
	"sync"

	"github.com/dockctl/dockctl/manifests"
)

// What the runtime keeps and tells of a holder pod's file volumes
// (docs/design.md §11): the hash of the payload last written into each
// pod, the downward identity its payload is planned for, and how a
// writer's failure is quoted.

// FilesMemory holds, per deployment (its key) and pod (its unit key), the
// hash of the payload last written into the pod. A sync (never the
// sweep's assessment) forgets the pods it no longer observes, and a
// deleted deployment's are forgotten with it.
type FilesMemory struct {
	mu      sync.Mutex
	written map[string]map[string]string
}

// Get is the hash last written into pod of owner dep ("": none known).
func (m *FilesMemory) Get(dep, pod string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.written[dep][pod]
}

// Set remembers the hash written into pod of owner dep.
func (m *FilesMemory) Set(dep, pod, hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		m.written = map[string]map[string]string{}
	}
	if m.written[dep] == nil {
		m.written[dep] = map[string]string{}
	}
	m.written[dep][pod] = hash
}

// Pods is how many pods of owner dep are remembered.
func (m *FilesMemory) Pods(dep string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.written[dep])
}

// Total is how many pods are remembered, of all owners.
func (m *FilesMemory) Total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, pods := range m.written {
		n += len(pods)
	}
	return n
}

// ForgetAll drops every pod: their files are written again.
func (m *FilesMemory) ForgetAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written = nil
}

// Forget drops the pods of deployment dep that are not in keep (all of
// them for a nil keep).
func (m *FilesMemory) Forget(dep string, keep map[string]*Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.written[dep] {
		if keep[k] == nil {
			delete(m.written[dep], k)
		}
	}
	if len(m.written[dep]) == 0 {
		delete(m.written, dep)
	}
}

// PodDownwardIdentity is what the downward API tells pod p of template t (of
// template hash hash): its labels carry pod-template-hash, as the
// Deployment controller labels its pods (and as its environment's
// fieldRef reads them: podIdentity in envctl.go).
func PodDownwardIdentity(ns, name, uid, hash string, t *manifests.PodTemplateSpec) DownwardIdentity {
	labels := maps.Clone(t.Metadata.Labels)
	if hash != "" {
		if labels == nil {
			labels = map[string]string{}
		}
		labels["pod-template-hash"] = hash
	}
	return DownwardIdentity{Name: name, Namespace: ns, UID: uid, Labels: labels, Annotations: t.Metadata.Annotations}
}

// FirstLine is the first line of a helper's trimmed output: what an error
// message quotes of it.
func FirstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}
