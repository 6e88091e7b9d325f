package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The tests run the command line in-process: cliCommand builds the root
// command as main does, and every helper below (and every test that needs
// the command running in the background, with a context) goes through it.

// cliCommand is the dockctl root command for args, reading stdin and
// writing its output to out and its errors to errOut.
func cliCommand(stdin io.Reader, out, errOut io.Writer, args ...string) *cobra.Command {
	cmd := newRootCommand()
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	cmd.SetIn(stdin)
	cmd.SetArgs(args)
	return cmd
}

// run executes the command line with stdin, and returns its standard
// output, its standard error and the error main would print.
func run(t testing.TB, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cliCommand(strings.NewReader(stdin), &out, &errOut, args...).Execute()
	return out.String(), errOut.String(), err
}

// runMain runs the command line as main does (the error printed on
// stderr, as main prints it), and returns the exit status, stdout and
// stderr.
func runMain(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(cliCommand(strings.NewReader(stdin), &out, &errOut, args...), &errOut)
	return code, out.String(), errOut.String()
}

// runArgs is run of the base flags and args, with no stdin.
func runArgs(t *testing.T, base []string, args ...string) (string, string, error) {
	t.Helper()
	return run(t, "", append(base, args...)...)
}

// runner returns a function that runs the command with the base flags and
// stdin, and fails the test on an error.
func runner(t testing.TB, base []string) func(stdin string, args ...string) string {
	return func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, err := run(t, stdin, append(base, args...)...)
		if err != nil {
			t.Fatalf("%v: %v %s", args, err, errOut)
		}
		return out
	}
}

// runCLI runs the command line args against state directory dir (instance
// "rev") and returns its standard output followed by its standard error.
func runCLI(t *testing.T, dir string, stdin string, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := run(t, stdin, append([]string{"--state-dir", dir, "--instance", "rev"}, args...)...)
	return out + errOut, err
}
