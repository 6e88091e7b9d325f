package manifests

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Review 11 (manifests): mapping keys that are not plain strings. kubectl
// converts YAML to JSON with a YAML 1.1 reader (goyaml.v2 through
// sigs.k8s.io/yaml), which resolves a plain key such as 1.0, 0x1F, 1e3 or
// True to a number or boolean and then names it by that value ("1",
// "31", "1000", "true"). dockctl's walker (walker.mapping) takes the key's
// source text (k.Value) whatever its tag, so the same ConfigMap gives a
// container a different file name (or variable, through envFrom) than a
// cluster does, or a cluster refuses a key dockctl accepted.
func TestReview11NonStringMappingKeysMeanTheSameAsOnACluster(t *testing.T) {
	for _, key := range []string{"True", "FALSE", "1.0", "0x1F", "1e3", "010", "+1", ".5", "1_000"} {
		t.Run(key, func(t *testing.T) {
			in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  " + key + ": \"v\"\n"
			docs, err := Decode("x.yaml", []byte(in))
			if err != nil {
				return // refusing it is fine
			}
			j, err := utilyaml.ToJSON([]byte(in))
			if err != nil {
				t.Fatalf("dockctl accepts a file kubectl cannot convert: %v", err)
			}
			var k8s corev1.ConfigMap
			if err := json.Unmarshal(j, &k8s); err != nil {
				t.Fatalf("dockctl accepts a ConfigMap a cluster refuses: %v", err)
			}
			var want, got []string
			for k := range k8s.Data {
				want = append(want, k)
			}
			for k := range docs[0].ConfigMap.Data {
				got = append(got, k)
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(want, ",") != strings.Join(got, ",") {
				t.Errorf("key written %s: a cluster stores key(s) %q, dockctl stores %q", key, want, got)
			}
		})
	}
}

// Review 11 (manifests): a downwardAPI volume file's resourceFieldRef.divisor
// gets only "> 0" (files.go downwardAPIFile), where Kubernetes'
// validateDownwardAPIVolumeFile runs validateContainerResourceDivisor as
// for env: cpu takes 1m or 1, memory and ephemeral-storage 1, 1k..1E,
// 1Ki..1Ei ("only divisor's values 1m and 1 are supported with the cpu
// resource"). The env path (validate_env.go) has the rule; the volume path
// does not, so these manifests apply here and are refused by a cluster.
// The same in a projected volume's downwardAPI source.
func TestReview11DownwardAPIVolumeDivisorAsKubernetes(t *testing.T) {
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

// Review 11 (manifests): a downwardAPI volume's fieldRef
// metadata.labels['KEY'] checks KEY lowercased (files.go
// downwardAPIFile), but Kubernetes' validateObjectFieldSelector lowercases
// annotation keys only: a label key is checked as written
// (ValidateQualifiedName(subscript)), so a prefix that is not a lowercase
// DNS subdomain is refused. The env path (validate_env.go fieldRef) is
// right; the volume path accepts what a cluster refuses.
func TestReview11DownwardAPIVolumeLabelSubscriptAsKubernetes(t *testing.T) {
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

// Review 11 (manifests): a claim's storageClassName and volumeName are,
// as the README says, "accepted, ignored" (every claim is a local Docker
// volume, named by dockctl), yet decodePVC records no ignored path, so
// apply and diff print no warning: a claim asking for `fast-ssd` storage
// silently gets a plain local volume. The rule for fields accepted only
// to be ignored (DESIGN §8, the README's "never silently") is one Warning
// line per apply naming them.
func TestReview11IgnoredClaimFieldsAreWarnedAbout(t *testing.T) {
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
