package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validation of ConfigMaps, Secrets and PersistentVolumeClaims, following
// Kubernetes' ValidateConfigMap, ValidateSecret and
// ValidatePersistentVolumeClaim (pkg/apis/core/validation) and their
// Update variants. No message ever quotes a Secret's value: keys and sizes
// only.

const (
	// MaxConfigSize bounds the data of one ConfigMap or Secret, all
	// values together, as the API server's MaxSecretSize (1 MiB).
	MaxConfigSize = 1 << 20
	// MaxStoredNameLength bounds the names of ConfigMaps, Secrets and
	// claims. Kubernetes allows DNS-1123 subdomains of up to 253
	// characters; dockctl keeps each object in a file named after it, and
	// a file name (with its temporary variant) has at most 255 bytes.
	MaxStoredNameLength = 230

	// Keys of the typed Secrets, as Kubernetes names them.
	SecretTLSCertKey             = "tls.crt"
	SecretTLSPrivateKeyKey       = "tls.key"
	SecretBasicAuthUsername      = "username"
	SecretBasicAuthPassword      = "password"
	SecretSSHAuthPrivateKey      = "ssh-privatekey"
	SecretDockercfgKey           = ".dockercfg"
	SecretTypeServiceAccount     = "kubernetes.io/service-account-token"
	serviceAccountNameAnnotation = "kubernetes.io/service-account.name"

	// PVC access modes.
	ReadWriteOnce    = "ReadWriteOnce"
	ReadOnlyMany     = "ReadOnlyMany"
	ReadWriteMany    = "ReadWriteMany"
	ReadWriteOncePod = "ReadWriteOncePod"

	// ResourceStorage is the one resource a claim requests.
	ResourceStorage = "storage"

	immutableMsg = "field is immutable when `immutable` is set"
)

// ValidateConfigMap checks a ConfigMap built in code or read from the state
// directory with the rules Decode applies to files. The result is nil or
// an ErrorList.
func ValidateConfigMap(c *ConfigMap) error { return validateConfigMap(c, "", nil).Err() }

// ValidateSecret is ValidateConfigMap for a Secret; its errors never hold
// a value.
func ValidateSecret(s *Secret) error { return validateSecret(s, "", nil).Err() }

// ValidatePVC is ValidateConfigMap for a PersistentVolumeClaim.
func ValidatePVC(p *PersistentVolumeClaim) error { return validatePVC(p, "", nil).Err() }

// configMeta checks the metadata of a ConfigMap, Secret or claim: a name
// that is a DNS-1123 subdomain (Kubernetes' NameIsDNSSubdomain for these
// kinds) of at most MaxStoredNameLength characters, a namespace that is a
// DNS-1123 label, labels and annotations (no dockctl.io/ one).
func (v *validator) configMeta(p string, m *ObjectMeta, kind string) {
	np := child(p, "name")
	if v.requiredName(np, m.Name, validation.IsDNS1123Subdomain) && len(m.Name) > MaxStoredNameLength {
		v.add(np, "too long: dockctl keeps a %s in a file named after it, so its name has at most %d characters", kind, MaxStoredNameLength)
	}
	if m.Namespace != "" {
		v.dnsLabel(child(p, "namespace"), m.Namespace)
	}
	v.labels(child(p, "labels"), m.Labels)
	v.annotations(child(p, "annotations"), m.Annotations, kind)
}

// configKey checks one key of data, binaryData or stringData: a file name
// (Kubernetes' IsConfigMapKey).
func (v *validator) configKey(p, k string) {
	if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
		v.add(key(p, k), "invalid key %q: %s", k, strings.Join(msgs, "; "))
	}
}

func validateConfigMap(c *ConfigMap, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.configMeta(child(base, "metadata"), &c.Metadata, KindConfigMap)
	dp, bp := child(base, "data"), child(base, "binaryData")
	size := 0
	for _, k := range sortedKeys(c.Data) {
		v.configKey(dp, k)
		if _, dup := c.BinaryData[k]; dup {
			v.add(key(dp, k), "invalid key %q: duplicate of key present in binaryData", k)
		}
		size += len(c.Data[k])
	}
	for _, k := range sortedKeys(c.BinaryData) {
		v.configKey(bp, k)
		size += len(c.BinaryData[k])
	}
	if size > MaxConfigSize {
		v.add(base, "too long: data and binaryData hold %d bytes, at most %d are allowed", size, MaxConfigSize)
	}
	return v.errs
}

// validateSecret checks a Secret as written (data and stringData apart)
// or as stored (data only). The typed Secrets need their keys, as
// Kubernetes requires them; a key given in stringData counts.
func validateSecret(s *Secret, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.configMeta(child(base, "metadata"), &s.Metadata, KindSecret)
	dp, sp := child(base, "data"), child(base, "stringData")
	merged := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for _, k := range sortedKeys(s.Data) {
		v.configKey(dp, k)
		merged[k] = s.Data[k]
	}
	for _, k := range sortedKeys(s.StringData) {
		v.configKey(sp, k)
		merged[k] = []byte(s.StringData[k])
	}
	size := 0
	for _, val := range merged {
		size += len(val)
	}
	if size > MaxConfigSize {
		v.add(dp, "too long: the Secret holds %d bytes, at most %d are allowed", size, MaxConfigSize)
	}
	// Where a required key is reported: stringData when only it was
	// given, data otherwise (as the API server sees the merged data).
	at := dp
	if len(s.Data) == 0 && len(s.StringData) > 0 {
		at = sp
	}
	keyPath := func(k string) string {
		if _, ok := s.StringData[k]; ok {
			return key(sp, k)
		}
		return key(dp, k)
	}
	need := func(k string) bool {
		if _, ok := merged[k]; !ok {
			v.add(key(at, k), "required for a Secret of type %q", s.Type)
			return false
		}
		return true
	}
	switch s.Type {
	case "", SecretTypeOpaque:
	case SecretTypeServiceAccount:
		if s.Metadata.Annotations[serviceAccountNameAnnotation] == "" {
			v.add(key(child(base, "metadata.annotations"), serviceAccountNameAnnotation), "required for a Secret of type %q", s.Type)
		}
	case SecretTypeDockercfg, SecretTypeDockerConfigJSON:
		k := SecretDockercfgKey
		if s.Type == SecretTypeDockerConfigJSON {
			k = DockerConfigJSONKey
		}
		if need(k) {
			if msg := jsonProblem(merged[k]); msg != "" {
				v.add(keyPath(k), "<secret contents redacted>: %s", msg)
			}
		}
	case SecretTypeBasicAuth:
		_, user := merged[SecretBasicAuthUsername]
		_, pass := merged[SecretBasicAuthPassword]
		if !user && !pass {
			// Either may be empty, but one must be there.
			v.add(key(at, SecretBasicAuthUsername), "required for a Secret of type %q (or %s)", s.Type, SecretBasicAuthPassword)
			v.add(key(at, SecretBasicAuthPassword), "required for a Secret of type %q (or %s)", s.Type, SecretBasicAuthUsername)
		}
	case SecretTypeSSHAuth:
		if len(merged[SecretSSHAuthPrivateKey]) == 0 {
			v.add(key(at, SecretSSHAuthPrivateKey), "required for a Secret of type %q", s.Type)
		}
	case SecretTypeTLS:
		need(SecretTLSCertKey)
		need(SecretTLSPrivateKeyKey)
	default:
		// Kubernetes accepts any other type as opaque data; so does
		// dockctl. A type is a path-like name, at most 253 characters.
		if len(s.Type) > 253 {
			v.add(child(base, "type"), "too long: must have at most 253 characters")
		}
	}
	return v.errs
}

// jsonProblem tells what is wrong with a JSON object without quoting any
// of it ("" when it is a valid JSON object).
func jsonProblem(b []byte) string {
	var m map[string]any
	err := json.Unmarshal(b, &m)
	if err == nil {
		return ""
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON (syntax error at byte %d)", se.Offset)
	case errors.As(err, &te):
		return "not a JSON object"
	}
	return "not valid JSON"
}

func validatePVC(c *PersistentVolumeClaim, base string, lines map[string]int) ErrorList {
	v := &validator{lines: lines}
	v.configMeta(child(base, "metadata"), &c.Metadata, KindPersistentVolumeClaim)
	p := child(base, "spec")
	sp := &c.Spec
	amp := child(p, "accessModes")
	if len(sp.AccessModes) == 0 {
		v.add(amp, "at least 1 access mode is required")
	}
	oncePod := false
	for i, m := range sp.AccessModes {
		switch m {
		case ReadWriteOnce, ReadOnlyMany, ReadWriteMany:
		case ReadWriteOncePod:
			oncePod = true
		default:
			v.add(index(amp, i), "unsupported value %q: must be %q, %q, %q or %q", m, ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod)
		}
	}
	if oncePod && len(sp.AccessModes) > 1 {
		v.add(amp, "may not use ReadWriteOncePod with other access modes")
	}
	rp := child(p, "resources")
	for _, k := range sortedKeys(sp.Resources.Requests) {
		if k != ResourceStorage {
			v.add(key(child(rp, "requests"), k), "unsupported resource %q: a claim requests %q only", k, ResourceStorage)
		}
	}
	for _, k := range sortedKeys(sp.Resources.Limits) {
		if k != ResourceStorage {
			v.add(key(child(rp, "limits"), k), "unsupported resource %q: a claim limits %q only", k, ResourceStorage)
		}
	}
	if q, ok := sp.Resources.Requests[ResourceStorage]; !ok {
		v.add(key(child(rp, "requests"), ResourceStorage), "required")
	} else if q.Sign() <= 0 {
		v.add(key(child(rp, "requests"), ResourceStorage), "must be greater than zero")
	}
	if l, ok := sp.Resources.Limits[ResourceStorage]; ok {
		if q, ok := sp.Resources.Requests[ResourceStorage]; ok && l.Cmp(q) < 0 {
			v.add(key(child(rp, "limits"), ResourceStorage), "must be greater than or equal to the request (%s)", q.String())
		}
	}
	if sc := sp.StorageClassName; sc != nil && *sc != "" {
		// Accepted (ignored: every claim is a local Docker volume), as
		// long as a cluster would accept the name.
		if msgs := validation.IsDNS1123Subdomain(*sc); len(msgs) > 0 {
			v.add(child(p, "storageClassName"), "invalid value %q: %s", *sc, strings.Join(msgs, "; "))
		}
	}
	if vm := sp.VolumeMode; vm != nil {
		switch *vm {
		case PVCVolumeModeFilesystem:
		case "Block":
			v.add(child(p, "volumeMode"), `unsupported value "Block": a claim is a Docker volume, a file system`)
		default:
			v.add(child(p, "volumeMode"), `unsupported value %q: must be "Filesystem"`, *vm)
		}
	}
	if sel := sp.Selector; sel != nil && len(sel.MatchLabels) > 0 {
		v.add(child(p, "selector"), "selecting a PersistentVolume is not supported: dockctl provisions one Docker volume per claim")
	}
	// volumeName (the PersistentVolume a cluster bound the claim to, as
	// `kubectl get -o yaml` prints it) is accepted and ignored: the
	// claim's volume is named by dockctl.
	return v.errs
}

// ValidateConfigMapUpdate checks that storing next over live (both valid)
// is allowed: an immutable ConfigMap stays immutable and keeps its data,
// as Kubernetes' ValidateConfigMapUpdate says.
func ValidateConfigMapUpdate(next, live *ConfigMap) error {
	if live.Immutable == nil || !*live.Immutable {
		return nil
	}
	v := &validator{}
	if next.Immutable == nil || !*next.Immutable {
		v.add("immutable", immutableMsg)
	}
	if !sameStrings(next.Data, live.Data) {
		v.add("data", immutableMsg)
	}
	if !sameBytes(next.BinaryData, live.BinaryData) {
		v.add("binaryData", immutableMsg)
	}
	return v.errs.Err()
}

// ValidateSecretUpdate is ValidateConfigMapUpdate for a Secret, whose type
// never changes, immutable or not.
func ValidateSecretUpdate(next, live *Secret) error {
	v := &validator{}
	if secretTypeOrOpaque(next.Type) != secretTypeOrOpaque(live.Type) {
		v.add("type", "field is immutable (it is %q)", secretTypeOrOpaque(live.Type))
	}
	if live.Immutable != nil && *live.Immutable {
		if next.Immutable == nil || !*next.Immutable {
			v.add("immutable", immutableMsg)
		}
		if !sameBytes(next.Data, live.Data) {
			v.add("data", immutableMsg)
		}
	}
	return v.errs.Err()
}

// ValidatePVCUpdate checks that storing next over live is allowed: as
// Kubernetes, a claim's spec is immutable after creation except
// resources.requests, whose storage may grow but not shrink. volumeName
// is ignored (dockctl names the volume). A claim created without
// storageClassName may gain one (Kubernetes' RetroactiveDefaultStorageClass,
// GA in 1.28: validateStorageClassUpgradeFromNil), or the one its beta
// annotation names (validateStorageClassUpgradeFromAnnotation).
func ValidatePVCUpdate(next, live *PersistentVolumeClaim) error {
	v := &validator{}
	a, b := next.Spec, live.Spec
	a.Resources.Requests, b.Resources.Requests = nil, nil
	a.VolumeName, b.VolumeName = "", ""
	if b.StorageClassName == nil && a.StorageClassName != nil {
		ann, annotated := live.Metadata.Annotations[betaStorageClassAnnotation]
		if !annotated || *a.StorageClassName == ann {
			a.StorageClassName = nil
		}
	}
	if !sameJSON(a, b) {
		v.add("spec", "spec is immutable after creation except resources.requests")
	}
	nq, nok := next.Spec.Resources.Requests[ResourceStorage]
	lq, lok := live.Spec.Resources.Requests[ResourceStorage]
	if nok && lok && nq.Cmp(lq) < 0 {
		v.add(key("spec.resources.requests", ResourceStorage), "field can not be less than previous value (%s)", lq.String())
	}
	return v.errs.Err()
}

// betaStorageClassAnnotation is the storage class of a claim before
// spec.storageClassName existed.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// ClaimStorage returns the storage a claim requests (zero when none).
func (p *PersistentVolumeClaim) ClaimStorage() resource.Quantity {
	return p.Spec.Resources.Requests[ResourceStorage]
}

func secretTypeOrOpaque(t string) string {
	if t == "" {
		return SecretTypeOpaque
	}
	return t
}

func sameStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sameBytes(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(w, v) {
			return false
		}
	}
	return true
}
