package main

import "testing"

// exec and port-forward: kubectl's "you must specify at least one
// command for the container" (ExecOptions.Validate), its usage error for
// a command without "--", and port-forward's usage error with its hint.
func TestReview12dExecPortForwardErrorsAsKubectl(t *testing.T) {
	review12dErrors(t, []review12dErrorCase{
		{situation: "exec without a command", args: []string{"exec", "web-0"},
			stderr: "error: you must specify at least one command for the container\n", code: 1},
		{situation: "exec without --", args: []string{"exec", "web-0", "ls"},
			stderr: "error: exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead\nSee 'dockctl exec -h' for help and examples\n", code: 1},
		{situation: "port-forward alone", args: []string{"port-forward"},
			stderr: "error: TYPE/NAME and list of ports are required for port-forward\nSee 'dockctl port-forward -h' for help and examples\n", code: 1},
	})
}
