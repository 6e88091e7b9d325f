package main

import (
	"bytes"
	"strings"
	"testing"
)

// kubectl describe pod shows each container's Environment (a Secret's
// variable as "<set to the key 'password' in secret 'db'>", never its
// value) and "Environment Variables from", then the pod's Volumes (a
// Secret volume by its SecretName). describe deployment shows them for the
// template (describeEnv); describe pod shows neither the environment nor
// the volumes, so a user cannot see from the pod where its variables and
// files come from.
func TestReview12fDescribePodEnvironmentAndVolumes(t *testing.T) {
	snap, _ := storeFixture(t)
	var buf bytes.Buffer
	describePod(&buf, snap, snap.allPods()[0])
	out := buf.String()
	for _, want := range []string{
		"    Environment:",
		"<set to the key 'password' in secret 'db'>",
		"Volumes:",
		"SecretName:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pod has no %q (kubectl's describe pod has):\n%s", want, out)
		}
	}
}
