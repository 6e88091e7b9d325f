package main

import (
	"strings"
	"testing"
)

// Review of kubectl's errors and exit codes (issue 12 item 5) for the
// commands added since (top, explain, logs -l, exec, port-forward): the
// central wording (root.go's usageErrorf, subcommandsOnly, noResources,
// unknownResourceType) is what kubectl prints for the same situation;
// these commands print their own. Each case is kubectl's stderr and exit
// status, dockctl for kubectl in the command's name (kubectl's sources:
// staging/src/k8s.io/kubectl/pkg/cmd/{top,explain,logs,exec,portforward},
// cmdutil.UsageErrorf and DefaultSubCommandRun).

// review12dErrorCase is one situation: the arguments, kubectl's stderr (in
// full, or its first lines with prefix) and exit status.
type review12dErrorCase struct {
	situation string
	args      []string
	stderr    string
	prefix    bool
	code      int
}

func review12dErrors(t *testing.T, cases []review12dErrorCase) {
	t.Helper()
	startFakeDaemon(t)
	t.Setenv("DOCKCTL_STATE_DIR", t.TempDir())
	t.Setenv("DOCKCTL_INSTANCE", "")
	if code, out, errOut := runMain(t, errorsFixture, "apply", "-f", "-"); code != 0 {
		t.Fatalf("fixture: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range cases {
		t.Run(c.situation, func(t *testing.T) {
			code, out, errOut := runMain(t, "", c.args...)
			ok := errOut == c.stderr || c.prefix && strings.HasPrefix(errOut, c.stderr)
			if !ok || code != c.code || (c.code != 0 && out != "") {
				t.Errorf("dockctl %s:\n--- stdout\n%s--- stderr\n%s--- exit %d\nwant kubectl's:\n--- stderr\n%s--- exit %d",
					strings.Join(c.args, " "), out, errOut, code, c.stderr, c.code)
			}
		})
	}
}
