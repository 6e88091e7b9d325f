// Command dockctl keeps Docker containers matching declared Kubernetes-style
// Deployments. The commands here only parse flags and call the packages that
// do the work: manifests (decoding), store (desired state), dockerx (the
// Docker Engine) and reconciler (the control loop).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	// The CronJob controller reads timeZone with time.LoadLocation: the
	// embedded database makes a zone mean the same on a host without
	// /usr/share/zoneinfo (internal/cronschedule).
	_ "time/tzdata"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(execute(newRootCommand(), os.Stderr))
}

// execute runs root on its arguments (os.Args unless set) and prints its
// error on stderr as kubectl's main does (cmdutil.CheckErr); it returns
// the exit status. main and the tests of the messages share it.
func execute(root *cobra.Command, stderr io.Writer) int {
	cmd, err := root.ExecuteC()
	if cmd == root && err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's, with its "Did you mean this?" lines after the first:
		// kubectl prints those as they are.
		first, rest, _ := strings.Cut(err.Error(), "\n")
		err = &hintError{err: errors.New(first), hint: strings.TrimSuffix(rest, "\n")}
	}
	return reportError(stderr, err)
}

// reportError prints err (nothing for nil) and returns the exit status:
// 0 without error, the code of an exitError, else 1.
func reportError(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	code := 1
	var ex *exitError
	if errors.As(err, &ex) {
		code, err = ex.code, ex.err
	}
	for _, line := range errorLines(err) {
		fmt.Fprintln(w, line)
	}
	return code
}

// errorLines words an error as kubectl prints it: an error of the API
// server (apiError) as "Error from server (REASON): MESSAGE", any other
// with "error: " before each of its lines (one line per problem: a
// manifest with five problems prints five lines), the errors of a join
// each in turn (kubectl's aggregate: delete of two missing objects prints
// two NotFound lines), and a hintError's lines after its error as they
// are.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	if h, ok := err.(*hintError); ok {
		lines := errorLines(h.err)
		if h.hint != "" {
			lines = append(lines, strings.Split(h.hint, "\n")...)
		}
		return lines
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range joined.Unwrap() {
			lines = append(lines, errorLines(e)...)
		}
		return lines
	}
	msg := err.Error()
	var api *apiError
	if errors.As(err, &api) && !strings.Contains(msg, "\n") {
		// Context added around it stays on the line, as kubectl's
		// AddSourceToErr keeps an API error one ("error when deleting …").
		return []string{fmt.Sprintf("Error from server (%s): %s", api.reason, msg)}
	}
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "error: ") {
			lines[i] = "error: " + l
		}
	}
	return lines
}

// exitError carries an exit status other than 1 (diff's "differences found"
// is 1 with no message; its errors are 2), or 1 with nothing to print
// (kubectl's cmdutil.ErrExit).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// hintError is an error followed by lines printed as they are, without
// "error: ": kubectl's "See 'kubectl get --help' for usage." after a flag
// error, the examples after "You must provide one or more resources…".
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string {
	if e.hint == "" {
		return e.err.Error()
	}
	return e.err.Error() + "\n" + e.hint
}

func (e *hintError) Unwrap() error { return e.err }

// apiError is an error kubectl gets from the API server for the same
// request (NotFound, AlreadyExists, BadRequest): printed as kubectl prints
// those, "Error from server (REASON): MESSAGE", with no "error: " before.
// notFoundIn and the other helpers of root.go make them.
type apiError struct {
	reason string
	msg    string
	err    error // what it stands for (store.ErrNotFound), for errors.Is
}

func (e *apiError) Error() string { return e.msg }

func (e *apiError) Unwrap() error { return e.err }
