package main

import "testing"

// kubectl logs' usage errors are cmdutil.UsageErrorf: one "error: " before
// the message (its second line as it is), then "See 'kubectl logs -h' for
// help and examples". dockctl's errorLines puts "error: " before each
// line of a plain error and no hint. A selector matching no pod is
// kubectl's "No resources found in default namespace." (the central
// noResources); dockctl says "No resources found in instance "default"."
// instead, which greps for the namespace do not find.
func TestReview12dLogsErrorsAsKubectl(t *testing.T) {
	review12dErrors(t, []review12dErrorCase{
		{situation: "logs alone", args: []string{"logs"},
			stderr: "error: expected '" + logsUsage + "'.\nPOD or TYPE/NAME is a required argument for the logs command\nSee 'dockctl logs -h' for help and examples\n", code: 1},
		{situation: "logs of a pod and a selector", args: []string{"logs", "web-0", "-l", "app=web"},
			stderr: "error: only a selector (-l) or a POD name is allowed\nSee 'dockctl logs -h' for help and examples\n", code: 1},
		{situation: "logs of a selector matching no pod", args: []string{"logs", "-l", "app=nope"},
			stderr: "No resources found in default namespace.\n", code: 0},
	})
}
