package main

import (
	"strings"
	"testing"
)

// Several kinds share one snapshot of Docker (getOptions.snap), but only
// once one was taken: when Docker cannot be reached, each kind tries
// again and fails again, and `get all` says the same error three times
// (and with a daemon that hangs, waits out the ping's timeout three
// times). kubectl says once that the server cannot be reached; DESIGN §5:
// "one line per error".
func TestReview12fGetAllDockerDownSaidOnce(t *testing.T) {
	_, base, _ := waitInstance(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/review12f/docker.sock")
	for _, args := range [][]string{{"get", "all"}, {"get", "pods,deployments", "-o", "name"}} {
		_, _, err := runArgs(t, base, args...)
		if err == nil {
			t.Fatalf("%v: no error without Docker", args)
		}
		if n := strings.Count(err.Error(), "cannot reach the Docker daemon"); n != 1 {
			t.Errorf("%v: the Docker error said %d times, want once:\n%v", args, n, err)
		}
	}
}
