package explain

import (
	"slices"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// explain lists "exactly the fields dockctl accepts". Under a key the
// decoder skips whole (ignoredKeys: a status, metadata.managedFields)
// every key is accepted — the walk never looks inside — but explain lists
// the fields of dockctl's own output type there, a subset of Kubernetes':
// `dockctl explain deployment.status.collisionCount` says `field
// "collisionCount" does not exist` while `apply` takes a Deployment
// carrying it (what `kubectl get -o yaml` prints). Accepted but not
// listed: the manifests test (TestAcceptedFieldsAreWhatTheWalkTakes)
// recurses into decoded fields only, never into skipped ones.
func TestReview12dExplainListsWhatSkippedKeysAccept(t *testing.T) {
	for _, tc := range []struct {
		kind, doc string
		path      []string
		field     string
	}{
		{"Deployment", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web:1}]}
status: {collisionCount: 1}
`, []string{"status"}, "collisionCount"},
		{"Service", `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
status: {conditions: [{type: Ready, status: "True"}]}
`, []string{"status"}, "conditions"},
		{"Service", `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}
`, []string{"status", "loadBalancer", "ingress"}, "hostname"},
		{"Secret", `apiVersion: v1
kind: Secret
metadata:
  name: s
  managedFields: [{manager: kubectl, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {}}}]
stringData: {a: b}
`, []string{"metadata", "managedFields"}, "fieldsV1"},
	} {
		if _, err := manifests.Decode("x.yaml", []byte(tc.doc)); err != nil {
			t.Fatalf("%s: the decoder refuses %s: %v", tc.kind, tc.field, err)
		}
		fields, err := Fields(tc.kind, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(fields, tc.field) {
			t.Errorf("%s %v: apply accepts %s, explain lists only %v", tc.kind, tc.path, tc.field, fields)
		}
	}
}
