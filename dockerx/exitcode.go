package dockerx

import (
	"strconv"
	"strings"
)

// parseExitCode reads the exit code from Docker's status of an exited
// container, "Exited (137) 2 minutes ago"; anything else gives 0. The list
// API has no exit code of its own, and an init container's success is
// decided by it without inspecting every container at every sync.
func parseExitCode(status string) int {
	rest, ok := strings.CutPrefix(status, "Exited (")
	if !ok {
		return 0
	}
	code, _, ok := strings.Cut(rest, ")")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(code)
	if err != nil {
		return 0
	}
	return n
}
