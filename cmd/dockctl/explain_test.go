package main

import (
	"strings"
	"testing"
)

// explain's output is kubectl explain's layout (golden): the header, a
// field's type and description with Kubernetes' documentation and
// dockctl's notes, the fields dockctl accepts; --recursive the tree.
func TestExplainGolden(t *testing.T) {
	for _, tc := range []struct{ golden, args string }{
		{"deployment", "deployments"},
		{"service", "svc"},
		{"configmap", "cm"},
		{"secret", "secret"},
		{"pvc", "pvc"},
		{"namespace", "ns"},
		// A deep path, through two lists.
		{"readinessprobe", "deployment.spec.template.spec.containers.readinessProbe"},
		// A leaf with a note, a field skipped on input, one ignored.
		{"replicas", "deploy.spec.replicas"},
		{"metadata", "deployment.metadata"},
		{"tolerations", "deployment.spec.template.spec.tolerations"},
		{"recursive-strategy", "deployments.apps.spec.strategy --recursive"},
		{"recursive-ports", "service.spec.ports --recursive"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, err := run(t, "", append([]string{"explain"}, strings.Fields(tc.args)...)...)
			if err != nil || errOut != "" {
				t.Fatalf("%v %q", err, errOut)
			}
			golden(t, "explain-"+tc.golden, []byte(out))
		})
	}
}

func TestExplainErrors(t *testing.T) {
	kinds := "deployments, services, namespaces, configmaps, secrets, persistentvolumeclaims, daemonsets, replicasets, statefulsets, cronjobs, jobs, ingresses, ingressclasses, gatewayclasses, gateways, httproutes, referencegrants"
	for _, tc := range []struct{ args, err string }{
		{"deployment.spec.nope", `field "nope" does not exist`},
		{"deployment.spec.replicas.x", `field "x" does not exist`},
		// A field Kubernetes has and dockctl does not accept is not listed.
		{"deployment.spec.template.spec.runtimeClassName", `field "runtimeClassName" does not exist`},
		{"pods", "explain covers the kinds of manifests (" + kinds + "), not pods"},
		{"po.spec", "explain covers the kinds of manifests (" + kinds + "), not po"},
		{"widgets", `the server doesn't have a resource type "widgets"`},
		{"Widgets.spec", `the server doesn't have a resource type "Widgets"`},
		{"deployment..spec", `invalid field path "deployment..spec": a field name is empty`},
		{"", `You must specify the type of resource to explain. Use "dockctl explain --help" for a complete list of supported resources.`},
		{"deployments services", "We accept only this format: explain RESOURCE"},
	} {
		out, _, err := run(t, "", append([]string{"explain"}, strings.Fields(tc.args)...)...)
		if err == nil || err.Error() != tc.err || out != "" {
			t.Errorf("explain %s: %v (stdout %q), want %q", tc.args, err, out, tc.err)
		}
	}
}

// kubectl explain's own errors (ExplainOptions.Validate, and the REST
// mapper's for an unknown type), and the mapper's case-insensitive kinds
// (`kubectl explain Deployment` works: ResourceFor lower-cases the
// resource).
func TestExplainErrorsAsKubectl(t *testing.T) {
	checkKubectlErrors(t, []kubectlErrorCase{
		{situation: "explain alone", args: []string{"explain"},
			stderr: "error: You must specify the type of resource to explain. ", prefix: true, code: 1},
		{situation: "explain of two", args: []string{"explain", "deployments", "services"},
			stderr: "error: We accept only this format: explain RESOURCE\n", code: 1},
		{situation: "explain of an unknown type", args: []string{"explain", "foo"},
			stderr: "error: the server doesn't have a resource type \"foo\"\n", code: 1},
		{situation: "explain of a kind spelled as kubectl's Kind", args: []string{"explain", "Deployment.spec.replicas"},
			stderr: "", code: 0},
		{situation: "get of a kind spelled as kubectl's Kind", args: []string{"get", "Deployments", "web", "-o", "name"},
			stderr: "", code: 0},
	})
}
