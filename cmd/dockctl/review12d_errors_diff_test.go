package main

import "testing"

// A flag error is kubectl's templater FlagErrorFunc everywhere: "See
// 'kubectl CMD --help' for usage." (root.go's flagError, and every other
// dockctl command). diff keeps its exit status 2 (DESIGN §5: errors of
// diff are >1), but words the hint as a usage error, "See 'dockctl diff
// -h' for help and examples", which kubectl diff never prints for a flag.
func TestReview12dDiffFlagErrorHint(t *testing.T) {
	review12dErrors(t, []review12dErrorCase{
		{situation: "diff with an unknown flag", args: []string{"diff", "--frob"},
			stderr: "error: unknown flag: --frob\nSee 'dockctl diff --help' for usage.\n", code: 2},
	})
}
