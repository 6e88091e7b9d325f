package manifests

import (
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
)

// Decoding of the kinds that feed file volumes and claims (docs/design.md
// §11, §12): ConfigMap, Secret and PersistentVolumeClaim. As the API server:
// a Secret's data and a ConfigMap's binaryData are base64 in the manifest, a
// Secret's stringData is merged into data (a key in both takes stringData's
// value) and dropped, an unset Secret type is Opaque and an unset claim
// volumeMode Filesystem.

var (
	configMapType = reflect.TypeOf(ConfigMap{})
	secretType    = reflect.TypeOf(Secret{})
	pvcType       = reflect.TypeOf(PersistentVolumeClaim{})
	k8sConfigMap  = reflect.TypeOf(corev1.ConfigMap{})
	k8sSecret     = reflect.TypeOf(corev1.Secret{})
	k8sPVC        = reflect.TypeOf(corev1.PersistentVolumeClaim{})
)

func init() {
	// A claim's status is the controller's (Pending/Bound); a printed
	// ConfigMap or Secret has none, but `kubectl get -o yaml` of a claim
	// does, and applies again.
	for _, t := range []reflect.Type{configMapType, secretType, pvcType} {
		ignoredKeys[t] = map[string]bool{"status": true}
	}
}

// PVCVolumeModeFilesystem is the only claim volumeMode a Docker volume
// has (and Kubernetes' default).
const PVCVolumeModeFilesystem = "Filesystem"

func decodeConfigMap(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	cm := &ConfigMap{}
	w, errs := decodeInto(file, n, base, cm, k8sConfigMap, func(lines map[string]int) ErrorList {
		return validateConfigMap(cm, base, lines)
	})
	if len(errs) > 0 {
		return nil, errs
	}
	return &Document{File: file, Line: n.Line, ConfigMap: cm, Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}

// decodeSecret decodes a Secret; every error about a value of data or
// stringData names the key and the problem, never the value.
func decodeSecret(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	sec := &Secret{}
	w := &walker{file: file, lines: map[string]int{base: n.Line},
		redact: []string{child(base, "data"), child(base, "stringData")}}
	w.walk(n, reflect.ValueOf(sec).Elem(), k8sSecret, base)
	errs := w.errs
	for _, fe := range validateSecret(sec, base, w.lines) {
		if !w.overlapsBad(fe.Path) {
			fe.File = file
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	SetSecretDefaults(sec)
	return &Document{File: file, Line: n.Line, Secret: sec, Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}

func decodePVC(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	pvc := &PersistentVolumeClaim{}
	w, errs := decodeInto(file, n, base, pvc, k8sPVC, func(lines map[string]int) ErrorList {
		return validatePVC(pvc, base, lines)
	})
	if len(errs) > 0 {
		return nil, errs
	}
	pvc.Status = nil
	SetPVCDefaults(pvc)
	return &Document{File: file, Line: n.Line, PVC: pvc, Ignored: ignoredClaimFields(pvc, base), Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}

// ignoredClaimFields names the fields of a claim that are kept but mean
// nothing on one host, for apply's warning: a storage class (every claim
// is a local Docker volume) and a volume to bind to — unless it is the
// one dockctl binds the claim to, as `get pvc -o yaml` prints it
// ("…_pvc_NAMESPACE.NAME", dockerx.ClaimVolumeName), so that its output
// applies again without a warning.
func ignoredClaimFields(pvc *PersistentVolumeClaim, base string) []string {
	var out []string
	if sc := pvc.Spec.StorageClassName; sc != nil && *sc != "" {
		out = append(out, child(base, "spec.storageClassName"))
	}
	own := "_pvc_" + pvc.Metadata.NamespaceOrDefault() + "." + pvc.Metadata.Name
	if vn := pvc.Spec.VolumeName; vn != "" && !strings.HasSuffix(vn, own) {
		out = append(out, child(base, "spec.volumeName"))
	}
	return out
}

// SetSecretDefaults does what the API server does to a Secret it stores:
// stringData merged into data (stringData wins) and cleared, an unset type
// Opaque. It is idempotent.
func SetSecretDefaults(s *Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = SecretTypeOpaque
	}
}

// SetPVCDefaults defaults an unset volumeMode to Filesystem, as
// Kubernetes does. It is idempotent.
func SetPVCDefaults(p *PersistentVolumeClaim) {
	if p.Spec.VolumeMode == nil {
		m := PVCVolumeModeFilesystem
		p.Spec.VolumeMode = &m
	}
}

// configKind is Document.Kind for the kinds of this file.
func (d *Document) configKind() string {
	switch {
	case d.ConfigMap != nil:
		return KindConfigMap
	case d.Secret != nil:
		return KindSecret
	}
	return KindPersistentVolumeClaim
}

// configMeta is Document.Meta for the kinds of this file.
func (d *Document) configMeta() *ObjectMeta {
	switch {
	case d.ConfigMap != nil:
		return &d.ConfigMap.Metadata
	case d.Secret != nil:
		return &d.Secret.Metadata
	}
	return &d.PVC.Metadata
}

// DeepCopy returns a copy that shares no memory with c.
func (c *ConfigMap) DeepCopy() *ConfigMap {
	if c == nil {
		return nil
	}
	out := &ConfigMap{}
	jsonCopy(c, out, "configmap", c.Metadata.Name)
	return out
}

// DeepCopy returns a copy that shares no memory with s.
func (s *Secret) DeepCopy() *Secret {
	if s == nil {
		return nil
	}
	out := &Secret{}
	jsonCopy(s, out, "secret", s.Metadata.Name)
	return out
}

// DeepCopy returns a copy that shares no memory with p.
func (p *PersistentVolumeClaim) DeepCopy() *PersistentVolumeClaim {
	if p == nil {
		return nil
	}
	out := &PersistentVolumeClaim{}
	jsonCopy(p, out, "persistentvolumeclaim", p.Metadata.Name)
	return out
}

// MarshalConfigMap renders c as Marshal renders a Deployment.
func MarshalConfigMap(c *ConfigMap, format string) ([]byte, error) {
	return marshal(c, "configmap", c.Metadata.Name, format)
}

// MarshalSecret renders s as Marshal renders a Deployment: data values
// base64, as kubectl prints them. Only an explicit request for the object
// (get -o yaml|json) may print it.
func MarshalSecret(s *Secret, format string) ([]byte, error) {
	return marshal(s, "secret", s.Metadata.Name, format)
}

// MarshalPVC renders p as Marshal renders a Deployment.
func MarshalPVC(p *PersistentVolumeClaim, format string) ([]byte, error) {
	return marshal(p, "persistentvolumeclaim", p.Metadata.Name, format)
}
