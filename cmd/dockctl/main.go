// Command dockctl keeps Docker containers matching declared Kubernetes-style
// Deployments. The commands here only parse flags and call the packages that
// do the work: manifests (decoding), store (desired state), dockerx (the
// Docker Engine) and reconciler (the control loop).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	err := newRootCommand().Execute()
	if err == nil {
		return
	}
	code := 1
	var ex *exitError
	if errors.As(err, &ex) {
		code, err = ex.code, ex.err
	}
	if err != nil {
		// One line per error, as kubectl does: a manifest with five problems
		// prints five lines.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "error:", line)
		}
	}
	os.Exit(code)
}

// exitError carries an exit status other than 1 (diff's "differences found"
// is 1 with no message; its errors are 2).
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
