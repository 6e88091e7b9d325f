package manifests

import (
	"strings"
	"testing"
)

const bundleDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
`

// TestOtherKinds: a bundle's objects of other kinds (docs/manifests.md, Supported manifest subset) — the
// ones that grant nothing and mean nothing on one host are skipped with a
// warning naming them, in files and in Lists; any other kind refuses the
// whole input, naming the object, unless SkipUnsupported skips it too.
// Services and Namespaces are kinds of dockctl's own: never skipped.
func TestOtherKinds(t *testing.T) {
	rbac := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n---\n" +
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: web-read}\nroleRef: {kind: Role, name: r}\n---\n"
	pdb := "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec: {minAvailable: 1}\n---\n"
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n---\n"
	ing := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: web}\n---\n"
	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: autoscaling/v2\n  kind: HorizontalPodAutoscaler\n  metadata: {name: web}\n- apiVersion: networking.k8s.io/v1\n  kind: NetworkPolicy\n  metadata: {name: deny}\n---\n"
	tests := []struct {
		name    string
		in      string
		skip    bool
		docs    int
		skipped []string
		err     string
	}{
		{"rbac and pdb skipped", rbac + pdb + bundleDeployment, false, 1, []string{
			`b.yaml:1: skipped ServiceAccount "web": no API server on one host: nothing uses its credentials`,
			`b.yaml:5: skipped RoleBinding "web-read": no API server on one host: it grants nothing`,
			`b.yaml:10: skipped PodDisruptionBudget "web": no node drains on one host`,
		}, ""},
		{"a Service is decoded with the Deployment", svc + bundleDeployment, false, 2, nil, ""},
		{"a Service is decoded, not skipped, under --skip-unsupported", svc + bundleDeployment, true, 2, nil, ""},
		{"a NetworkPolicy refuses the input", ing + svc + bundleDeployment, false, 0, nil,
			`b.yaml:2: kind: unsupported kind "NetworkPolicy" (NetworkPolicy "web"): dockctl runs ConfigMap, CronJob, DaemonSet, Deployment, Gateway, GatewayClass, HTTPRoute, Ingress, IngressClass, Job, Namespace, PersistentVolumeClaim, Pod, ReferenceGrant, ReplicaSet, Secret, Service, StatefulSet; --skip-unsupported applies the rest without it`},
		{"a NetworkPolicy skipped on request", ing + svc + bundleDeployment, true, 2, []string{
			`b.yaml:1: skipped NetworkPolicy "web": not supported by dockctl (--skip-unsupported); the application may behave differently without it`,
		}, ""},
		{"in a List: the autoscaler skipped, the policy refused", list + bundleDeployment, false, 0, nil,
			`b.yaml:8: items[1].kind: unsupported kind "NetworkPolicy" (NetworkPolicy "deny"): dockctl runs ConfigMap, CronJob, DaemonSet, Deployment, Gateway, GatewayClass, HTTPRoute, Ingress, IngressClass, Job, Namespace, PersistentVolumeClaim, Pod, ReferenceGrant, ReplicaSet, Secret, Service, StatefulSet; --skip-unsupported applies the rest without it`},
		{"in a List, on request", list + bundleDeployment, true, 1, []string{
			`b.yaml:4: skipped HorizontalPodAutoscaler "web": dockctl does not autoscale: replicas are what the Deployment says`,
			`b.yaml:7: skipped NetworkPolicy "deny": not supported by dockctl (--skip-unsupported); the application may behave differently without it`,
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &decodeState{opts: LoadOptions{SkipUnsupported: tt.skip}}
			docs, errs := decodeFile("b.yaml", []byte(tt.in), st)
			if tt.err != "" {
				if errs == nil || errs.Error() != tt.err {
					t.Fatalf("errors %v, want %s", errs, tt.err)
				}
				return
			}
			if errs != nil || len(docs) != tt.docs {
				t.Fatalf("docs %d errors %v, want %d documents", len(docs), errs, tt.docs)
			}
			var got []string
			for _, s := range st.skipped {
				got = append(got, s.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.skipped, "\n") {
				t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.skipped, "\n"))
			}
		})
	}
}

// An object of an "ignored" kind is not skipped without any check of what
// it is: a ServiceAccount with no apiVersion, or with the apiVersion of
// another group, is refused by a cluster (kubectl: "apiVersion not set" /
// "no matches for kind ServiceAccount in version apps/v1"), and so is a
// RoleBinding in core v1. Warning that it "grants nothing" and applying
// the rest would let the bundle pass here and fail on the cluster it was
// written for.
func TestIgnoredKindNeedsItsAPIVersion(t *testing.T) {
	dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n"
	for _, tc := range []struct{ name, obj string }{
		{"no apiVersion", "kind: ServiceAccount\nmetadata: {name: web}\n"},
		{"foreign apiVersion", "apiVersion: apps/v1\nkind: ServiceAccount\nmetadata: {name: web}\n"},
		{"RoleBinding in v1", "apiVersion: v1\nkind: RoleBinding\nmetadata: {name: web}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, skipped, err := LoadAll([]string{"-"}, strings.NewReader(tc.obj+"---\n"+dep), LoadOptions{})
			if err == nil {
				t.Fatalf("accepted (%d docs, skipped %v); a cluster refuses %q", len(docs), skipped, tc.obj)
			}
		})
	}
}
