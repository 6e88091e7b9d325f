package main

import (
	"strings"
	"testing"
)

// top is a group (top pods, top deployments): kubectl's top runs
// DefaultSubCommandRun(ErrOut), its help on stderr and exit 1 alone, and
// kubectl's "unknown command" usage error for anything else (`kubectl top
// nodes` has its own subcommand; `dockctl top nodes` has none). dockctl's
// top has no Run: cobra prints the help on stdout and exits 0 either way,
// `top nodes` and `top foo` included, so a script sees success.
func TestReview12dTopGroupAsKubectl(t *testing.T) {
	_, help, _ := runMain(t, "", "top", "--help")
	// The help up to its global flags: --state-dir's default shown there
	// is DOCKCTL_STATE_DIR, which review12dErrors sets after this.
	help = help[:strings.Index(help, "Global Flags:")]
	review12dErrors(t, []review12dErrorCase{
		{situation: "top alone: its help on stderr, exit 1", args: []string{"top"}, stderr: help, prefix: true, code: 1},
		{situation: "top of an unknown kind", args: []string{"top", "foo"},
			stderr: "error: unknown command \"foo\"\nSee 'dockctl top -h' for help and examples\n", code: 1},
		{situation: "top nodes, which dockctl has not", args: []string{"top", "nodes"},
			stderr: "error: unknown command \"nodes\"\nSee 'dockctl top -h' for help and examples\n", code: 1},
	})
}
