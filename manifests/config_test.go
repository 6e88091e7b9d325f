package manifests

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"
)

// secretValue is a value no error or printed message may contain.
const secretValue = "hunter2-s3cr3t"

var b64 = base64.StdEncoding.EncodeToString

func TestDecodeConfigKindsValid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, d *Document)
	}{
		{"configmap with data and binaryData", `apiVersion: v1
kind: ConfigMap
metadata: {name: app.config, namespace: shop, labels: {app: web}}
immutable: true
data:
  nginx.conf: |
    server {}
  LOG_LEVEL: debug
binaryData:
  logo.png: ` + b64([]byte{0x89, 'P', 'N', 'G', 0}) + `
`, func(t *testing.T, d *Document) {
			c := d.ConfigMap
			if d.Kind() != KindConfigMap || d.Meta().Name != "app.config" || d.Meta().Namespace != "shop" {
				t.Fatalf("kind %s meta %+v", d.Kind(), d.Meta())
			}
			if c.Data["nginx.conf"] != "server {}\n" || c.Data["LOG_LEVEL"] != "debug" {
				t.Errorf("data %q", c.Data)
			}
			if got := c.BinaryData["logo.png"]; string(got) != "\x89PNG\x00" {
				t.Errorf("binaryData %q, want the decoded bytes", got)
			}
			if c.Immutable == nil || !*c.Immutable {
				t.Errorf("immutable lost")
			}
		}},
		{"secret: stringData merged into data, wins, and is dropped; type defaulted", `apiVersion: v1
kind: Secret
metadata: {name: db}
data:
  user: ` + b64([]byte("admin")) + `
  password: ` + b64([]byte("old")) + `
stringData:
  password: ` + secretValue + `
  port: "5432"
`, func(t *testing.T, d *Document) {
			s := d.Secret
			if d.Kind() != KindSecret || s.Type != SecretTypeOpaque {
				t.Fatalf("kind %s type %q", d.Kind(), s.Type)
			}
			if s.StringData != nil {
				t.Errorf("stringData kept: %v", len(s.StringData))
			}
			want := map[string]string{"user": "admin", "password": secretValue, "port": "5432"}
			if len(s.Data) != len(want) {
				t.Fatalf("data has %d keys, want %d", len(s.Data), len(want))
			}
			for k, v := range want {
				if string(s.Data[k]) != v {
					t.Errorf("data[%s] wrong", k)
				}
			}
		}},
		{"tls secret with its keys", `apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
data: {tls.crt: ` + b64([]byte("CERT")) + `, tls.key: ` + b64([]byte("KEY")) + `}
`, func(t *testing.T, d *Document) {
			if d.Secret.Type != SecretTypeTLS || string(d.Secret.Data["tls.key"]) != "KEY" {
				t.Errorf("secret %q", d.Secret.Type)
			}
		}},
		{"dockerconfigjson from stringData", `apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths":{"127.0.0.1:5000":{"auth":"dTpw"}}}'
`, func(t *testing.T, d *Document) {
			if !strings.Contains(string(d.Secret.Data[DockerConfigJSONKey]), "auths") {
				t.Errorf("data not merged")
			}
		}},
		{"basic-auth with a password only", `apiVersion: v1
kind: Secret
metadata: {name: ba}
type: kubernetes.io/basic-auth
stringData: {password: ""}
`, nil},
		{"a custom type is opaque data", `apiVersion: v1
kind: Secret
metadata: {name: custom}
type: example.com/thing
`, nil},
		{"claim as kubectl get -o yaml prints it, status and volumeName included", `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  uid: 5d2c
  resourceVersion: "7"
  creationTimestamp: "2024-01-01T00:00:00Z"
  annotations: {pv.kubernetes.io/bind-completed: "yes"}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  storageClassName: standard
  volumeName: pvc-5d2c
status:
  phase: Bound
  capacity: {storage: 1Gi}
`, func(t *testing.T, d *Document) {
			p := d.PVC
			if d.Kind() != KindPersistentVolumeClaim || p.Status != nil {
				t.Fatalf("kind %s status %+v", d.Kind(), p.Status)
			}
			if p.Spec.VolumeMode == nil || *p.Spec.VolumeMode != PVCVolumeModeFilesystem {
				t.Errorf("volumeMode not defaulted")
			}
			if q := p.ClaimStorage(); q.String() != "1Gi" {
				t.Errorf("storage %s", q.String())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			d := one(t, docs)
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func TestDecodeConfigKindsInvalid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"configmap keys and sizes", `apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name}
data:
  ok: x
  bad/key: v
  both: z
  port: 8080
binaryData:
  both: ` + b64([]byte("z")) + `
  bin: "!!notbase64"
`, []string{
			`t.yaml:3: metadata.name: invalid value "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`t.yaml:6: data[bad/key]: invalid key "bad/key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
			`t.yaml:7: data[both]: invalid key "both": duplicate of key present in binaryData`,
			`t.yaml:8: data[port]: expected a string, got integer 8080`,
			`t.yaml:11: binaryData[bin]: invalid base64 data at byte 0 (values of data and binaryData are base64; stringData takes plain text)`,
		}},
		{"configmap over 1 MiB", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  a: " + strings.Repeat("x", MaxConfigSize/2) + "\n  b: " + strings.Repeat("y", MaxConfigSize/2+1) + "\n",
			[]string{`t.yaml:1: too long: data and binaryData hold 1048577 bytes, at most 1048576 are allowed`}},
		{"dockctl.io annotation and unknown field", `apiVersion: v1
kind: ConfigMap
metadata: {name: c, annotations: {dockctl.io/network: x}}
dataz: {}
`, []string{
			`t.yaml:3: metadata.annotations[dockctl.io/network]: unknown dockctl.io annotation: dockctl defines none on a ConfigMap`,
			`t.yaml:4: unknown field "dataz"`,
		}},
		{"typed secrets need their keys", `apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
data: {tls.crt: ` + b64([]byte("C")) + `}
---
apiVersion: v1
kind: Secret
metadata: {name: ba}
type: kubernetes.io/basic-auth
stringData: {other: x}
---
apiVersion: v1
kind: Secret
metadata: {name: ssh}
type: kubernetes.io/ssh-auth
`, []string{
			`t.yaml:5: data[tls.key]: required for a Secret of type "kubernetes.io/tls"`,
			`t.yaml:11: stringData[username]: required for a Secret of type "kubernetes.io/basic-auth" (or password)`,
			`t.yaml:11: stringData[password]: required for a Secret of type "kubernetes.io/basic-auth" (or username)`,
			`t.yaml:13: data[ssh-privatekey]: required for a Secret of type "kubernetes.io/ssh-auth"`,
		}},
		{"secret values never quoted", `apiVersion: v1
kind: Secret
metadata: {name: s}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ` + b64([]byte(`{"auths": `+secretValue+`}`)) + `
  token: ` + secretValue + `!
stringData:
  pin: 123456789
  flag: true
  list: [` + secretValue + `]
`, []string{
			`t.yaml:6: data[.dockerconfigjson]: <secret contents redacted>: not valid JSON (syntax error at byte 11)`,
			`t.yaml:7: data[token]: invalid base64 data at byte 7 (values of data and binaryData are base64; stringData takes plain text)`,
			`t.yaml:9: stringData[pin]: expected a string, got an integer`,
			`t.yaml:10: stringData[flag]: expected a string, got a boolean`,
			`t.yaml:11: stringData[list]: expected a string, got a list`,
		}},
		{"claim: modes, storage, block, selector", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOncePod, Sometimes]
  resources: {requests: {cpu: "1"}, limits: {storage: 1Gi}}
  storageClassName: Not_A_Class
  volumeMode: Block
  selector: {matchLabels: {disk: ssd}}
`, []string{
			`t.yaml:5: spec.accessModes[1]: unsupported value "Sometimes": must be "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany" or "ReadWriteOncePod"`,
			`t.yaml:5: spec.accessModes: may not use ReadWriteOncePod with other access modes`,
			`t.yaml:6: spec.resources.requests[cpu]: unsupported resource "cpu": a claim requests "storage" only`,
			`t.yaml:6: spec.resources.requests[storage]: required`,
			`t.yaml:7: spec.storageClassName: invalid value "Not_A_Class": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`t.yaml:8: spec.volumeMode: unsupported value "Block": a claim is a Docker volume, a file system`,
			`t.yaml:9: spec.selector: selecting a PersistentVolume is not supported: dockctl provisions one Docker volume per claim`,
		}},
		{"claim without modes, zero storage, unknown field", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  resources: {requests: {storage: "0"}}
  dataSource: {kind: VolumeSnapshot, name: snap}
`, []string{
			`t.yaml:4: spec.accessModes: at least 1 access mode is required`,
			`t.yaml:5: spec.resources.requests[storage]: must be greater than zero`,
			`t.yaml:6: spec.dataSource: unsupported by dockctl`,
		}},
		{"duplicate names per kind", `apiVersion: v1
kind: ConfigMap
metadata: {name: x}
---
apiVersion: v1
kind: Secret
metadata: {name: x}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: x}
`, []string{`t.yaml:11: metadata.name: duplicate configmap "x" (first defined at t.yaml:3)`}},
		{"a name too long for a file", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + strings.Repeat("a", MaxStoredNameLength+1) + "}\n",
			[]string{`t.yaml:3: metadata.name: too long: dockctl keeps a ConfigMap in a file named after it, so its name has at most 230 characters`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if err == nil {
				t.Fatalf("Decode succeeded with %d documents", len(docs))
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, want ErrorList", err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
			if strings.Contains(err.Error(), secretValue) {
				t.Errorf("an error holds a secret value: %s", err)
			}
		})
	}
}

func TestConfigKindsOrder(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
`
	docs, err := Decode("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range docs {
		kinds = append(kinds, d.Kind())
	}
	if got, want := strings.Join(kinds, ","), "Namespace,ConfigMap,Secret,PersistentVolumeClaim,Service,Deployment"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// TestConfigKindsKubernetesRoundTrip holds that what dockctl accepts a
// cluster accepts: each object, printed as dockctl prints it, decodes
// strictly into its k8s.io/api type, with the same data.
func TestConfigKindsKubernetesRoundTrip(t *testing.T) {
	in := `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: b}
binaryData: {bin: ` + b64([]byte{1, 2, 3}) + `}
---
apiVersion: v1
kind: Secret
metadata: {name: s}
type: kubernetes.io/basic-auth
stringData: {username: u, password: ` + secretValue + `}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, storageClassName: local}
`
	docs, err := Decode("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		var b []byte
		var into any
		switch {
		case d.ConfigMap != nil:
			b, err = MarshalConfigMap(d.ConfigMap, "yaml")
			into = &corev1.ConfigMap{}
		case d.Secret != nil:
			b, err = MarshalSecret(d.Secret, "yaml")
			into = &corev1.Secret{}
		case d.PVC != nil:
			b, err = MarshalPVC(d.PVC, "yaml")
			into = &corev1.PersistentVolumeClaim{}
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sigsyaml.UnmarshalStrict(b, into); err != nil {
			t.Fatalf("%s: %v\n%s", d.Kind(), err, b)
		}
		switch o := into.(type) {
		case *corev1.ConfigMap:
			if o.Data["a"] != "b" || string(o.BinaryData["bin"]) != "\x01\x02\x03" {
				t.Errorf("configmap %v", o)
			}
		case *corev1.Secret:
			if string(o.Data["password"]) != secretValue || o.Type != corev1.SecretTypeBasicAuth {
				t.Errorf("secret type %s", o.Type)
			}
		case *corev1.PersistentVolumeClaim:
			if o.Spec.Resources.Requests.Storage().String() != "1Gi" {
				t.Errorf("claim %v", o.Spec)
			}
		}
		// Printed again, it decodes to the same object.
		again, err := Decode("again.yaml", b)
		if err != nil {
			t.Fatalf("%s printed does not decode: %v", d.Kind(), err)
		}
		if c, ok := into.(*corev1.Secret); ok && string(again[0].Secret.Data["username"]) != string(c.Data["username"]) {
			t.Errorf("secret changed through print and decode")
		}
	}
}

func TestConfigUpdates(t *testing.T) {
	yes, no := true, false
	cm := func(imm *bool, data map[string]string) *ConfigMap {
		return &ConfigMap{Metadata: ObjectMeta{Name: "c"}, Immutable: imm, Data: data}
	}
	sec := func(typ string, imm *bool, v string) *Secret {
		return &Secret{Metadata: ObjectMeta{Name: "s"}, Type: typ, Immutable: imm, Data: map[string][]byte{"k": []byte(v)}}
	}
	claim := func(storage, class string) *PersistentVolumeClaim {
		p := &PersistentVolumeClaim{Metadata: ObjectMeta{Name: "p"}}
		docs, err := Decode("p.yaml", []byte(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: p}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: `+storage+`}}, storageClassName: `+class+`}
`))
		if err != nil {
			t.Fatal(err)
		}
		p = docs[0].PVC
		return p
	}
	unclassed := func(annotations map[string]string) *PersistentVolumeClaim {
		p := claim("1Gi", "x")
		p.Spec.StorageClassName = nil
		p.Metadata.Annotations = annotations
		return p
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"mutable configmap changes", ValidateConfigMapUpdate(cm(nil, map[string]string{"a": "2"}), cm(nil, map[string]string{"a": "1"})), ""},
		{"immutable configmap, same data, labels may change", ValidateConfigMapUpdate(cm(&yes, map[string]string{"a": "1"}), cm(&yes, map[string]string{"a": "1"})), ""},
		{"immutable configmap, data changed", ValidateConfigMapUpdate(cm(&yes, map[string]string{"a": "2"}), cm(&yes, map[string]string{"a": "1"})),
			"data: field is immutable when `immutable` is set"},
		{"immutable configmap made mutable", ValidateConfigMapUpdate(cm(&no, map[string]string{"a": "1"}), cm(&yes, map[string]string{"a": "1"})),
			"immutable: field is immutable when `immutable` is set"},
		{"mutable configmap made immutable", ValidateConfigMapUpdate(cm(&yes, nil), cm(nil, nil)), ""},
		{"secret type changes", ValidateSecretUpdate(sec(SecretTypeTLS, nil, "a"), sec("", nil, "a")), `type: field is immutable (it is "Opaque")`},
		{"immutable secret data changes", ValidateSecretUpdate(sec("", &yes, secretValue), sec(SecretTypeOpaque, &yes, "old")),
			"data: field is immutable when `immutable` is set"},
		{"claim grows", ValidatePVCUpdate(claim("2Gi", "a"), claim("1Gi", "a")), ""},
		{"claim shrinks", ValidatePVCUpdate(claim("1Gi", "a"), claim("2Gi", "a")), "spec.resources.requests[storage]: field can not be less than previous value (2Gi)"},
		{"claim class changes", ValidatePVCUpdate(claim("1Gi", "b"), claim("1Gi", "a")), "spec: spec is immutable after creation except resources.requests"},
		{"claim gains a class", ValidatePVCUpdate(claim("1Gi", "a"), unclassed(nil)), ""},
		{"claim loses its class", ValidatePVCUpdate(unclassed(nil), claim("1Gi", "a")), "spec: spec is immutable after creation except resources.requests"},
		{"claim gains the class of its beta annotation", ValidatePVCUpdate(claim("1Gi", "a"), unclassed(map[string]string{betaStorageClassAnnotation: "a"})), ""},
		{"claim gains another class than its beta annotation's", ValidatePVCUpdate(claim("1Gi", "b"), unclassed(map[string]string{betaStorageClassAnnotation: "a"})),
			"spec: spec is immutable after creation except resources.requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if tt.err != nil {
				got = tt.err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if strings.Contains(got, secretValue) {
				t.Errorf("a secret value in %q", got)
			}
		})
	}
}

func TestValidateConfigBuiltInCode(t *testing.T) {
	if err := ValidateSecret(&Secret{Metadata: ObjectMeta{Name: "s"}, Type: SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}); err == nil ||
		err.Error() != `data[tls.key]: required for a Secret of type "kubernetes.io/tls"` {
		t.Errorf("ValidateSecret: %v", err)
	}
	if err := ValidateConfigMap(&ConfigMap{Metadata: ObjectMeta{Name: "c"}, Data: map[string]string{"a": "b"}}); err != nil {
		t.Errorf("ValidateConfigMap: %v", err)
	}
	if err := ValidatePVC(&PersistentVolumeClaim{Metadata: ObjectMeta{Name: "p"}}); err == nil {
		t.Errorf("ValidatePVC accepted a claim without spec")
	}
}

// A claim's storageClassName and volumeName are, as the README says,
// "accepted, ignored" (every claim is a local Docker volume, named by
// dockctl): decodePVC records them as ignored paths, so that apply and
// diff warn, and a claim asking for `fast-ssd` storage does not silently
// get a plain local volume. The rule for fields accepted only to be
// ignored (docs/design.md §1, the README's "never silently") is one Warning line
// per apply naming them.
func TestIgnoredClaimFieldsAreWarnedAbout(t *testing.T) {
	in := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n" +
		"spec: {accessModes: [ReadWriteOnce], storageClassName: fast-ssd, volumeName: pv-0042, resources: {requests: {storage: 5Gi}}}\n"
	docs, err := Decode("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	w := IgnoredWarning(docs)
	for _, f := range []string{"storageClassName", "volumeName"} {
		if !strings.Contains(w, f) {
			t.Errorf("no warning names the ignored %s (warning: %q)", f, w)
		}
	}
}

// Kubernetes' ValidatePersistentVolumeClaimUpdate lets a claim created
// without spec.storageClassName gain one later
// (validateStorageClassUpgradeFromNil, RetroactiveDefaultStorageClass, GA
// in 1.28): "kubectl apply" of the same claim with storageClassName added
// succeeds on a cluster, so it must not be refused here as "spec is
// immutable", for a field dockctl ignores anyway (every claim is a local
// Docker volume).
func TestClaimMayGainAStorageClass(t *testing.T) {
	claim := func(sc *string) *PersistentVolumeClaim {
		p := &PersistentVolumeClaim{APIVersion: "v1", Kind: KindPersistentVolumeClaim,
			Metadata: ObjectMeta{Name: "data"},
			Spec: PersistentVolumeClaimSpec{AccessModes: []string{ReadWriteOnce}, StorageClassName: sc,
				Resources: VolumeResourceRequirements{Requests: map[string]resource.Quantity{ResourceStorage: resource.MustParse("1Gi")}}}}
		SetPVCDefaults(p)
		return p
	}
	sc := "local-path"
	live, next := claim(nil), claim(&sc)
	if err := ValidatePVC(next); err != nil {
		t.Fatalf("precondition: %v", err)
	}
	if err := ValidatePVCUpdate(next, live); err != nil {
		t.Errorf("adding storageClassName to a claim that had none: %v (Kubernetes allows it)", err)
	}
}
