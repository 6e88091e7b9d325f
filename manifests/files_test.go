package manifests

import (
	"strings"
	"testing"
)

// filesBase is a Deployment whose pod has file volumes; tests append
// volumes and mounts.
const filesBase = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        volumeMounts:
        - {name: v, mountPath: /etc/v, subPath: SUBPATH}
      volumes:
      - name: v
`

func TestFileVolumeValidation(t *testing.T) {
	tests := []struct {
		name, subPath, volume string
		want                  []string // substrings of the error, in order; none: valid
	}{
		{"configMap with items and modes", "", "        configMap: {name: cfg, defaultMode: 0400, items: [{key: a.conf, path: conf/a, mode: 0600}]}\n", nil},
		{"secret, optional", "", "        secret: {secretName: tls, optional: true}\n", nil},
		{"projected of three kinds", "", "        projected:\n          sources:\n          - configMap: {name: c}\n          - secret: {name: s, items: [{key: k, path: s/k}]}\n          - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}\n", nil},
		{"downwardAPI fields and resources", "", "        downwardAPI:\n          items:\n          - {path: name, fieldRef: {fieldPath: metadata.name}}\n          - {path: tier, fieldRef: {fieldPath: \"metadata.labels['tier']\"}}\n          - {path: mem, resourceFieldRef: {containerName: web, resource: limits.memory, divisor: 1Mi}}\n", nil},
		{"subPath of a configMap", "a.conf", "        configMap: {name: cfg}\n", nil},
		{"configMap without name", "", "        configMap: {items: [{key: a, path: b}]}\n", []string{"volumes[0].configMap.name: required"}},
		{"mode out of range", "", "        configMap: {name: c, defaultMode: 01000}\n", []string{"configMap.defaultMode: invalid value 512"}},
		{"item path escapes", "", "        secret: {secretName: s, items: [{key: k, path: ../x}]}\n", []string{"secret.items[0].path: invalid value \"../x\": must not contain '..'"}},
		{"item path absolute", "", "        secret: {secretName: s, items: [{key: k, path: /x}]}\n", []string{"must be a relative path"}},
		{"item path reserved", "", "        secret: {secretName: s, items: [{key: k, path: ..data}]}\n", []string{"must not start with '..'"}},
		{"bad key", "", "        configMap: {name: c, items: [{key: 'a b', path: x}]}\n", []string{"configMap.items[0].key: invalid value \"a b\""}},
		{"projected duplicate paths", "", "        projected:\n          sources:\n          - configMap: {name: c, items: [{key: k, path: p}]}\n          - secret: {name: s, items: [{key: k, path: p}]}\n", []string{"conflicting duplicate paths \"p\""}},
		{"projected source with two kinds", "", "        projected:\n          sources:\n          - {configMap: {name: c}, secret: {name: s}}\n", []string{"sources[0]: exactly one of configMap, secret or downwardAPI is required"}},
		{"downwardAPI unsupported field", "", "        downwardAPI: {items: [{path: ip, fieldRef: {fieldPath: status.podIP}}]}\n", []string{"fieldRef.fieldPath: unsupported value \"status.podIP\""}},
		{"downwardAPI resource of no container", "", "        downwardAPI: {items: [{path: m, resourceFieldRef: {containerName: nope, resource: limits.memory}}]}\n", []string{"no container named \"nope\""}},
		{"downwardAPI without source", "", "        downwardAPI: {items: [{path: m}]}\n", []string{"one of fieldRef or resourceFieldRef is required"}},
		{"two volume types", "", "        configMap: {name: c}\n        secret: {secretName: s}\n", []string{"may not specify more than 1 volume type"}},
		{"subPath escapes", "../etc", "        configMap: {name: c}\n", []string{"volumeMounts[0].subPath: invalid value \"../etc\": must not contain '..'"}},
		{"subPath absolute", "/etc", "        configMap: {name: c}\n", []string{"volumeMounts[0].subPath: invalid value \"/etc\": must be a relative path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filesBase + tt.volume
			if tt.subPath == "" {
				in = strings.Replace(in, ", subPath: SUBPATH", "", 1)
			} else {
				in = strings.Replace(in, "SUBPATH", tt.subPath, 1)
			}
			docs, err := Decode("t.yaml", []byte(in))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !NeedsHolder(&docs[0].Deployment.Spec.Template.Spec) {
					t.Error("a pod with a file volume needs no holder")
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestNeedsHolderAndWriter(t *testing.T) {
	one := []Container{{Name: "a"}}
	tests := []struct {
		name           string
		ps             PodSpec
		holder, writer bool
	}{
		{"one container: today's replica", PodSpec{Containers: one}, false, false},
		{"one container with emptyDir and hostPath", PodSpec{Containers: []Container{{Name: "a", VolumeMounts: []VolumeMount{{Name: "e"}, {Name: "h"}}}},
			Volumes: []Volume{{Name: "e", EmptyDir: &EmptyDirVolumeSource{}}, {Name: "h", HostPath: &HostPathVolumeSource{Path: "/x"}}}}, false, false},
		{"two containers", PodSpec{Containers: []Container{{Name: "a"}, {Name: "b"}}}, true, false},
		{"a configMap volume", PodSpec{Containers: one, Volumes: []Volume{{Name: "c", ConfigMap: &ConfigMapVolumeSource{Name: "c"}}}}, true, true},
		{"a downwardAPI volume", PodSpec{Containers: one, Volumes: []Volume{{Name: "d", DownwardAPI: &DownwardAPIVolumeSource{}}}}, true, true},
	}
	for _, tt := range tests {
		if got := NeedsHolder(&tt.ps); got != tt.holder {
			t.Errorf("%s: NeedsHolder %v, want %v", tt.name, got, tt.holder)
		}
		if got := NeedsWriter(&tt.ps); got != tt.writer {
			t.Errorf("%s: NeedsWriter %v, want %v", tt.name, got, tt.writer)
		}
	}
}

// A downwardAPI volume file's resourceFieldRef.divisor is checked as
// Kubernetes' validateDownwardAPIVolumeFile does, with
// validateContainerResourceDivisor as for env (validate_env.go): cpu takes
// 1m or 1, memory and ephemeral-storage 1, 1k..1E, 1Ki..1Ei ("only
// divisor's values 1m and 1 are supported with the cpu resource"), not
// merely "> 0": a cluster refuses these manifests, so dockctl does. The
// same in a projected volume's downwardAPI source.
func TestDownwardAPIVolumeDivisorIsCheckedAsKubernetes(t *testing.T) {
	for _, item := range []string{
		"{path: c, resourceFieldRef: {containerName: web, resource: limits.cpu, divisor: 2}}",
		"{path: c, resourceFieldRef: {containerName: web, resource: requests.cpu, divisor: 1Mi}}",
		"{path: m, resourceFieldRef: {containerName: web, resource: limits.memory, divisor: 3Mi}}",
		"{path: m, resourceFieldRef: {containerName: web, resource: limits.memory, divisor: 1m}}",
		"{path: m, resourceFieldRef: {containerName: web, resource: requests.memory, divisor: 1e100}}",
		"{path: e, resourceFieldRef: {containerName: web, resource: limits.ephemeral-storage, divisor: 7}}",
	} {
		for _, shape := range []string{
			"        downwardAPI: {items: [ITEM]}\n",
			"        projected: {sources: [{downwardAPI: {items: [ITEM]}}]}\n",
		} {
			in := strings.Replace(filesBase, ", subPath: SUBPATH", "", 1) + strings.Replace(shape, "ITEM", item, 1)
			if _, err := Decode("t.yaml", []byte(in)); err == nil {
				t.Errorf("accepted %s (%s), which Kubernetes' validateContainerResourceDivisor refuses", item, strings.Fields(shape)[0])
			}
		}
	}
}

// A downwardAPI volume's fieldRef metadata.labels['KEY'] checks KEY as
// Kubernetes' validateObjectFieldSelector does, which lowercases
// annotation keys only: a label key is checked as written
// (ValidateQualifiedName(subscript)), so a prefix that is not a lowercase
// DNS subdomain is refused, in the volume as on the env path
// (validate_env.go fieldRef).
func TestDownwardAPIVolumeLabelSubscriptIsCheckedAsKubernetes(t *testing.T) {
	in := strings.Replace(filesBase, ", subPath: SUBPATH", "", 1) +
		"        downwardAPI: {items: [{path: l, fieldRef: {fieldPath: \"metadata.labels['Example.COM/app']\"}}]}\n"
	if _, err := Decode("t.yaml", []byte(in)); err == nil {
		t.Errorf("accepted metadata.labels['Example.COM/app'] in a downwardAPI volume: a cluster refuses the label key (prefix not a lowercase DNS subdomain)")
	}
	// The env path refuses it, as a cluster does.
	env := strings.Replace(strings.Replace(filesBase, ", subPath: SUBPATH", "", 1), "        image: nginx\n",
		"        image: nginx\n        env: [{name: L, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['Example.COM/app']\"}}}]\n", 1) +
		"        emptyDir: {}\n"
	if _, err := Decode("t.yaml", []byte(env)); err == nil {
		t.Errorf("precondition: the env path accepts it too")
	}
}
