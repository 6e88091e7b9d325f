package main

import "testing"

// kubectl explain's own errors (ExplainOptions.Validate, and the REST
// mapper's for an unknown type), and the mapper's case-insensitive kinds
// (`kubectl explain Deployment` works: ResourceFor lower-cases the
// resource). dockctl words each differently, and refuses Deployment.
func TestReview12dExplainErrorsAsKubectl(t *testing.T) {
	review12dErrors(t, []review12dErrorCase{
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
