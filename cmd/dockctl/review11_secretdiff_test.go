package main

import (
	"strings"
	"testing"
)

// Review 11: diff masks a Secret's data but prints its annotations, and a
// Secret exported with `kubectl get secret -o yaml` (a shape the issue's
// corpus names) carries kubectl.kubernetes.io/last-applied-configuration
// with every value in it. describe already leaves that annotation out for
// this reason (configs_cli.go lastApplied); diff, whose doc says it shows
// "which keys change and never what they hold", prints it in full.
func TestReview11DiffShowsSecretValuesThroughLastApplied(t *testing.T) {
	dir := t.TempDir()
	secret := func(value string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  annotations:\n" +
			"    kubectl.kubernetes.io/last-applied-configuration: '{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"db\"},\"stringData\":{\"password\":\"" + value + "\"}}'\n" +
			"stringData: {password: " + value + "}\n"
	}
	if _, _, err := run(t, secret(cliSecret), "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	// A change of the value: the diff prints both sides of the annotation.
	out, _, _ := run(t, secret("new-"+cliSecret), "--state-dir", dir, "diff", "-f", "-")
	if !strings.Contains(out, "secret/db") {
		t.Fatalf("no diff of the secret:\n%s", out)
	}
	if strings.Contains(out, cliSecret) {
		t.Errorf("diff shows the Secret's value:\n%s", out)
	}
}

// diff of a change of an immutable Secret's data is the error apply gives
// (kubectl diff's server-side dry run), and names no value.
func TestDiffOfAnImmutableSecretChangeIsRefused(t *testing.T) {
	dir := t.TempDir()
	secret := func(value string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nimmutable: true\nstringData: {password: " + value + "}\n"
	}
	if _, _, err := run(t, secret(cliSecret), "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, secret(cliSecret), "--state-dir", dir, "diff", "-f", "-"); err != nil || out != "" {
		t.Fatalf("diff of what is applied: %v %q", err, out)
	}
	out, _, err := run(t, secret("new-"+cliSecret), "--state-dir", dir, "diff", "-f", "-")
	if exitCode(err) != 2 || out != "" || !strings.Contains(err.Error(), "apply would refuse it") ||
		!strings.Contains(err.Error(), "data: field is immutable when `immutable` is set") {
		t.Fatalf("diff of an immutable secret's change: %v %q, want exit 2 naming the refusal", err, out)
	}
	if strings.Contains(err.Error(), cliSecret) {
		t.Errorf("the error shows the value: %v", err)
	}
}
