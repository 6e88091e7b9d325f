package podruntime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"

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
// fieldRef reads them: CreatePod.Identity).
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

// podFiles is where a running pod's files stand: the payload it should
// have, from the ConfigStore, and the one this runtime last wrote.
func (r *Runtime) podFiles(ctx context.Context, d HolderDocker, in SyncInput, hp holderPod) PodFiles {
	if !manifests.NeedsWriter(&hp.t.Spec) {
		return PodFiles{}
	}
	pf := PodFiles{Pod: hp.spec.Name, Have: r.files.Get(in.Key, hp.pod.Key)}
	payload, missing := r.filesPayload(in, hp.t, hp.spec.Name, hp.pod.UID, hp.spec.TemplateHash)
	if len(missing) > 0 {
		pf.Missing = MissingVolumesError(missing).Error()
	}
	if len(payload.Volumes) > 0 {
		pf.Want = PayloadHash(payload)
	}
	return pf
}

// filesPayload plans the files of a pod's volumes from the ConfigStore.
func (r *Runtime) filesPayload(in SyncInput, t *manifests.PodTemplateSpec, name, uid, hash string) (helperapi.FilesPayload, []VolumeMissing) {
	ns := OrDefaultNamespace(in.Namespace)
	objs := FileObjects{ConfigMaps: map[string]*manifests.ConfigMap{}, Secrets: map[string]*manifests.Secret{}}
	cms, ss := FileRefs(&t.Spec)
	// The owner's config store, as its environment's (configOf): the
	// workload frame hands its own in SyncInput.Config.
	config := r.configOf(in)
	for _, n := range cms {
		if config == nil {
			break
		}
		if cm, err := config.LookupConfigMap(ns, n); err == nil {
			objs.ConfigMaps[n] = cm
		}
	}
	for _, n := range ss {
		if config == nil {
			break
		}
		if s, err := config.LookupSecret(ns, n); err == nil {
			objs.Secrets[n] = s
		}
	}
	return PlanVolumes(&t.Spec, PodDownwardIdentity(ns, name, uid, hash, t), objs, HostResources{})
}

// writeFiles carries out an OpWriteFiles of a Sync (WritePodFiles), the
// hash written kept.
func (r *Runtime) writeFiles(ctx context.Context, d HolderDocker, in SyncInput, hp holderPod, op Op) error {
	payload, missing := r.filesPayload(in, hp.t, op.Pod.Name, op.Pod.UID, op.Hash)
	image := func(ctx context.Context) (string, error) { return helperImage(ctx, d, in.Instance) }
	run := FilesRun{Instance: in.Instance, From: op.From, Hash: op.Hash, Pod: *op.Pod}
	hash, err := WritePodFiles(ctx, d, run, image, op.Reason, payload, missing)
	if hash != "" {
		r.files.Set(in.Key, PodKeyPrefix+op.Pod.Holder+"/"+op.Pod.UID, hash)
	}
	return err
}

// filesTimeout bounds one run of the files writer.
const filesTimeout = 30 * time.Second

// FilesWriter runs the files writer of a pod (dockerx.RunFilesWriter).
type FilesWriter interface {
	RunFilesWriter(ctx context.Context, req dockerx.FilesWriterRequest, stdin []byte, timeout time.Duration) (exit int, stdout []byte, err error)
}

// FilesRun names the pod a run of the files writer is for, and the
// image it runs (the helper image).
type FilesRun struct {
	Instance, Image string
	From            *dockerx.PodTemplate
	Hash            string
	Pod             dockerx.PodRef
}

// RunFilesWriter runs `helper files ARGS` for the pod in a writer
// container of its own, never in a namespace of the pod (docs/design.md
// §11): read-only for a check.
func RunFilesWriter(ctx context.Context, d FilesWriter, run FilesRun, args []string, readOnly bool, stdin []byte) (int, []byte, error) {
	ref := run.Pod
	req := dockerx.FilesWriterRequest{Args: args, ReadOnly: readOnly, Pod: dockerx.CreateRequest{
		Instance: run.Instance, Namespace: run.From.NamespaceOrDefault(), From: run.From, TemplateHash: run.Hash, Pod: &ref, Image: run.Image}}
	return d.RunFilesWriter(ctx, req, stdin, filesTimeout)
}

// WritePodFiles carries out an OpWriteFiles (reason: its Reason) of
// payload, in a writer of the image image gives (the helper image), planned from the objects as they are now, with the volumes that
// cannot be made (missing). It returns the hash of what it wrote ("":
// nothing). A pod that may never have got its files (any reason but
// ReasonFilesChanged) gets nothing until every volume can be made, as the
// kubelet starts no container before all of a pod's volumes are mounted;
// else the volumes that cannot be made keep their last files.
func WritePodFiles(ctx context.Context, d FilesWriter, run FilesRun, image func(context.Context) (string, error), reason OpReason,
	payload helperapi.FilesPayload, missing []VolumeMissing) (string, error) {
	name := run.Pod.Name
	if len(missing) > 0 && reason != ReasonFilesChanged {
		return "", fmt.Errorf("pod %s: %w", name, MissingVolumesError(missing))
	}
	if len(payload.Volumes) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("write files of pod %s: encode", name)
	}
	if run.Image, err = image(ctx); err != nil {
		return "", fmt.Errorf("write files of pod %s: %w", name, err)
	}
	code, out, err := RunFilesWriter(ctx, d, run, nil, false, raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("write files of pod %s: %w", name, err)
	case code != helperapi.ExitOK:
		return "", fmt.Errorf("write files of pod %s: the writer exited %d: %s", name, code, FirstLine(out))
	}
	return PayloadHash(payload), nil
}

// SubPathError is a container whose subPath bind would lead out of its
// volume: refused.
type SubPathError struct{ msg string }

func (e *SubPathError) Error() string { return e.msg }

// CheckSubPaths resolves, in a read-only writer (d; nil: none), each
// subPath of a file volume that container name of the pod of run binds
// (dockerx/convert_files.go): the daemon follows links in a bind's source
// on the host, so one that leads out of the volume — whatever put it
// there — must never reach a create or a start, as the kubelet refuses
// such a subPath (CVE-2017-1002101). Only a container that has such a
// bind costs a run.
func CheckSubPaths(ctx context.Context, d FilesWriter, run FilesRun, image func(context.Context) (string, error), name string) error {
	ps := &run.From.Template.Spec
	tc := ps.FindContainer(name)
	if tc == nil {
		return nil
	}
	var args []string
	for _, vm := range tc.VolumeMounts {
		if vm.SubPath == "" {
			continue
		}
		for i := range ps.Volumes {
			if v := &ps.Volumes[i]; v.Name == vm.Name && v.IsFileVolume() {
				args = append(args, "--subpath", vm.Name+":"+vm.SubPath)
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	ref := run.Pod
	if d == nil {
		return fmt.Errorf("container %q of pod %s: its subPath mounts cannot be checked: this controller has no writer (Options.FilesDocker)", name, ref.Name)
	}
	img, err := image(ctx)
	if err != nil {
		return fmt.Errorf("container %q of pod %s: checking its subPath mounts: %w", name, ref.Name, err)
	}
	run.Image = img
	code, out, err := RunFilesWriter(ctx, d, run, args, true, nil)
	switch {
	case err != nil:
		return fmt.Errorf("container %q of pod %s: checking its subPath mounts: %w", name, ref.Name, err)
	case code != helperapi.ExitOK:
		return &SubPathError{msg: fmt.Sprintf("container %q of pod %s: refused: %s", name, ref.Name, FirstLine(out))}
	}
	return nil
}
