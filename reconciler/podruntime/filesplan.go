package podruntime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// The files of a pod's file volumes (configMap, secret, projected,
// downwardAPI), planned as pure data: what the kubelet's volume plugins
// would project for the pod, given the objects it refers to. The
// controller looks the objects up (reconciler's files.go), this plans the
// payload, and the writer in the pod's holder makes it the volumes'
// content atomically (`dockctl helper files`, package atomicfiles).

// DownwardIdentity is what the downward API tells a pod about itself.
type DownwardIdentity struct {
	Name, Namespace, UID string
	Labels, Annotations  map[string]string
}

// FileObjects are the ConfigMaps and Secrets of one namespace a pod's
// volumes refer to, by name; a name mapped to nil does not exist.
type FileObjects struct {
	ConfigMaps map[string]*manifests.ConfigMap
	Secrets    map[string]*manifests.Secret
}

// HostResources is the host's capacity: what a resourceFieldRef to a limit
// the container does not set reports (Kubernetes reports the node's
// allocatable). Zero: unknown, reported as 0.
type HostResources struct {
	MilliCPU    int64
	MemoryBytes int64
}

// VolumeRefsError says what a pod's volumes refer to that does not exist.
// Its message names objects and keys, never a value.
type VolumeRefsError struct{ what []string }

func (e *VolumeRefsError) Error() string {
	return "MountVolume.SetUp failed: " + strings.Join(e.what, "; ")
}

// PlanFiles returns the payload of every file volume of ps for the pod id,
// in the volumes' order, or a *VolumeRefsError naming every non-optional
// reference that does not resolve (as the kubelet fails a pod's mount).
func PlanFiles(ps *manifests.PodSpec, id DownwardIdentity, objs FileObjects, host HostResources) (helperapi.FilesPayload, error) {
	p, missing := PlanVolumes(ps, id, objs, host)
	if len(missing) > 0 {
		return helperapi.FilesPayload{}, MissingVolumesError(missing)
	}
	return p, nil
}

// MissingVolumesError names every reason of every volume that cannot be made.
func MissingVolumesError(missing []VolumeMissing) *VolumeRefsError {
	var what []string
	for _, m := range missing {
		for _, r := range m.Reasons {
			what = append(what, fmt.Sprintf("volume %s: %s", m.Volume, r))
		}
	}
	return &VolumeRefsError{what: what}
}

// VolumeMissing is a file volume that cannot be made now, and why (names
// of objects and keys, never a value).
type VolumeMissing struct {
	Volume  string
	Reasons []string
}

// Message is the kubelet's message of the FailedMount event of the volume
// (its operation generator's "MountVolume.SetUp failed for volume %q : err").
func (m VolumeMissing) Message() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s", m.Volume, strings.Join(m.Reasons, "; "))
}

// PlanVolumes plans each file volume of ps on its own, as the kubelet sets
// up each volume of a pod on its own: the payload of the volumes that can
// be made, in the volumes' order, and the volumes that cannot (a
// non-optional reference that does not resolve), which it leaves out.
func PlanVolumes(ps *manifests.PodSpec, id DownwardIdentity, objs FileObjects, host HostResources) (helperapi.FilesPayload, []VolumeMissing) {
	var p helperapi.FilesPayload
	var missing []VolumeMissing
	for i := range ps.Volumes {
		v := &ps.Volumes[i]
		if !v.IsFileVolume() {
			continue
		}
		var reasons []string
		miss := func(format string, args ...any) { reasons = append(reasons, fmt.Sprintf(format, args...)) }
		files := map[string]helperapi.FileItem{}
		add := func(p string, mode int32, data []byte) {
			// By the cleaned path, as the kubelet's AtomicWriter: a later
			// source's "./a" replaces an earlier one's "a".
			p = path.Clean(p)
			files[p] = helperapi.FileItem{Path: p, Mode: mode, Data: data}
		}
		switch {
		case v.ConfigMap != nil:
			s := v.ConfigMap
			configMapFiles(s.Name, s.Items, s.DefaultMode, isTrue(s.Optional), objs, add, miss)
		case v.Secret != nil:
			s := v.Secret
			secretFiles(s.SecretName, s.Items, s.DefaultMode, isTrue(s.Optional), objs, add, miss)
		case v.DownwardAPI != nil:
			for _, item := range v.DownwardAPI.Items {
				data, err := downwardAPIValue(item, ps, id, host)
				if err != nil {
					miss("%v", err)
					continue
				}
				add(item.Path, manifests.FileMode(item.Mode, v.DownwardAPI.DefaultMode), data)
			}
		case v.Projected != nil:
			def := v.Projected.DefaultMode
			for _, src := range v.Projected.Sources {
				switch {
				case src.ConfigMap != nil:
					configMapFiles(src.ConfigMap.Name, src.ConfigMap.Items, def, isTrue(src.ConfigMap.Optional), objs, add, miss)
				case src.Secret != nil:
					secretFiles(src.Secret.Name, src.Secret.Items, def, isTrue(src.Secret.Optional), objs, add, miss)
				case src.DownwardAPI != nil:
					for _, item := range src.DownwardAPI.Items {
						data, err := downwardAPIValue(item, ps, id, host)
						if err != nil {
							miss("%v", err)
							continue
						}
						add(item.Path, manifests.FileMode(item.Mode, def), data)
					}
				}
			}
		}
		if len(reasons) > 0 {
			missing = append(missing, VolumeMissing{Volume: v.Name, Reasons: reasons})
			continue
		}
		fv := helperapi.FilesVolume{Name: v.Name, Files: make([]helperapi.FileItem, 0, len(files))}
		for _, path := range slices.Sorted(mapKeys(files)) {
			fv.Files = append(fv.Files, files[path])
		}
		if sc := ps.SecurityContext; sc != nil && sc.FSGroup != nil {
			g := *sc.FSGroup
			fv.FSGroup = &g
		}
		p.Volumes = append(p.Volumes, fv)
	}
	return p, missing
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// configMapFiles projects a ConfigMap as the kubelet's configMap volume
// (and projected source) does: every key of data and binaryData without
// items, else the listed keys; a missing object or key is an error unless
// optional.
func configMapFiles(name string, items []manifests.KeyToPath, defMode *int32, optional bool, objs FileObjects,
	add func(string, int32, []byte), miss func(string, ...any)) {
	cm := objs.ConfigMaps[name]
	if cm == nil {
		if !optional {
			miss("configmap %q not found", name)
		}
		return
	}
	value := func(key string) ([]byte, bool) {
		if s, ok := cm.Data[key]; ok {
			return []byte(s), true
		}
		b, ok := cm.BinaryData[key]
		return b, ok
	}
	if len(items) == 0 {
		keys := slices.Collect(mapKeys(cm.Data))
		keys = append(keys, slices.Collect(mapKeys(cm.BinaryData))...)
		for _, k := range keys {
			b, _ := value(k)
			add(k, manifests.FileMode(nil, defMode), b)
		}
		return
	}
	for _, it := range items {
		b, ok := value(it.Key)
		if !ok {
			if !optional {
				miss("configmap %q has no key %q", name, it.Key)
			}
			continue
		}
		add(it.Path, manifests.FileMode(it.Mode, defMode), b)
	}
}

// secretFiles is configMapFiles for a Secret (data only: stringData was
// merged into it when the Secret was decoded).
func secretFiles(name string, items []manifests.KeyToPath, defMode *int32, optional bool, objs FileObjects,
	add func(string, int32, []byte), miss func(string, ...any)) {
	s := objs.Secrets[name]
	if s == nil {
		if !optional {
			miss("secret %q not found", name)
		}
		return
	}
	if len(items) == 0 {
		for k, b := range s.Data {
			add(k, manifests.FileMode(nil, defMode), b)
		}
		return
	}
	for _, it := range items {
		b, ok := s.Data[it.Key]
		if !ok {
			if !optional {
				miss("secret %q has no key %q", name, it.Key)
			}
			continue
		}
		add(it.Path, manifests.FileMode(it.Mode, defMode), b)
	}
}

// downwardAPIValue is one downward API file's content, as the kubelet
// writes it: labels and annotations as sorted key="value" lines.
func downwardAPIValue(f manifests.DownwardAPIVolumeFile, ps *manifests.PodSpec, id DownwardIdentity, host HostResources) ([]byte, error) {
	if r := f.FieldRef; r != nil {
		if field, key, ok := manifests.SplitFieldPath(r.FieldPath); ok {
			m := id.Labels
			if field == manifests.FieldMetadataAnnotations {
				m = id.Annotations
			}
			return []byte(m[key]), nil
		}
		switch r.FieldPath {
		case "metadata.name":
			return []byte(id.Name), nil
		case "metadata.namespace":
			return []byte(id.Namespace), nil
		case "metadata.uid":
			return []byte(id.UID), nil
		case "metadata.labels":
			return []byte(formatMap(id.Labels)), nil
		case "metadata.annotations":
			return []byte(formatMap(id.Annotations)), nil
		}
		return nil, fmt.Errorf("unsupported fieldPath %q", r.FieldPath)
	}
	if r := f.ResourceFieldRef; r != nil {
		c := ps.FindContainer(r.ContainerName)
		if c == nil {
			return nil, fmt.Errorf("resourceFieldRef: no container %q", r.ContainerName)
		}
		s, err := resourceValue(c, r.Resource, r.Divisor, host)
		if err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	return nil, fmt.Errorf("item %q: no fieldRef or resourceFieldRef", f.Path)
}

// formatMap renders labels or annotations as the kubelet's FormatMap:
// key="value" lines, sorted, the value quoted as Go quotes it.
func formatMap(m map[string]string) string {
	keys := slices.Collect(mapKeys(m))
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%s", k, strconv.Quote(m[k]))
	}
	return b.String()
}

// resourceValue is the kubelet's ExtractContainerResourceValue: a limit
// the container does not set is the host's capacity; a request it does
// not set is its limit when set (the API server's defaulting), else 0;
// the value is divided by the divisor (default 1) and rounded up.
func resourceValue(c *manifests.Container, res string, divisor *resource.Quantity, host HostResources) (string, error) {
	div := resource.MustParse("1")
	if divisor != nil && divisor.Sign() > 0 {
		div = *divisor
	}
	get := func(m map[string]resource.Quantity, name string) (resource.Quantity, bool) {
		q, ok := m[name]
		return q, ok
	}
	cpu := func(q resource.Quantity) string {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(max(div.MilliValue(), 1)))), 10)
	}
	bytes := func(q resource.Quantity) string {
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(max(div.Value(), 1)))), 10)
	}
	switch res {
	case "limits.cpu":
		if q, ok := get(c.Resources.Limits, "cpu"); ok {
			return cpu(q), nil
		}
		return cpu(*resource.NewMilliQuantity(host.MilliCPU, resource.DecimalSI)), nil
	case "limits.memory":
		if q, ok := get(c.Resources.Limits, "memory"); ok {
			return bytes(q), nil
		}
		return bytes(*resource.NewQuantity(host.MemoryBytes, resource.BinarySI)), nil
	case "requests.cpu":
		if q, ok := get(c.Resources.Requests, "cpu"); ok {
			return cpu(q), nil
		}
		q, _ := get(c.Resources.Limits, "cpu")
		return cpu(q), nil
	case "requests.memory":
		if q, ok := get(c.Resources.Requests, "memory"); ok {
			return bytes(q), nil
		}
		q, _ := get(c.Resources.Limits, "memory")
		return bytes(q), nil
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		name := strings.TrimPrefix(strings.TrimPrefix(res, "limits."), "requests.")
		m := c.Resources.Limits
		if strings.HasPrefix(res, "requests.") {
			if q, ok := get(c.Resources.Requests, name); ok {
				return bytes(q), nil
			}
		}
		q, _ := get(m, name)
		return bytes(q), nil
	}
	return "", fmt.Errorf("unsupported resource %q", res)
}

// PayloadHash identifies a payload's content, to tell whether a pod's
// volumes hold it without reading them back. It is kept in memory only:
// it is derived from Secret values.
func PayloadHash(p helperapi.FilesPayload) string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FileRefs lists the ConfigMaps and Secrets the pod's file volumes refer
// to, each once, sorted.
func FileRefs(ps *manifests.PodSpec) (configMaps, secrets []string) {
	cms, ss := map[string]bool{}, map[string]bool{}
	for i := range ps.Volumes {
		v := &ps.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			cms[v.ConfigMap.Name] = true
		case v.Secret != nil:
			ss[v.Secret.SecretName] = true
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					cms[src.ConfigMap.Name] = true
				}
				if src.Secret != nil {
					ss[src.Secret.Name] = true
				}
			}
		}
	}
	return slices.Sorted(mapKeys(cms)), slices.Sorted(mapKeys(ss))
}

func isTrue(b *bool) bool { return b != nil && *b }
