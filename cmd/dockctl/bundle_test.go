package main

import (
	"strings"
	"testing"
)

// TestApplyBundleOfOtherKinds: apply, diff and delete -f take a bundle as
// kubectl users ship it. Objects that grant nothing on one host are
// skipped with one warning line each and the Deployment applies; a kind
// dockctl does not support refuses the whole input, naming the object,
// unless --skip-unsupported skips it with a warning.
func TestApplyBundleOfOtherKinds(t *testing.T) {
	sa := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n---\n"
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n---\n"
	dir := t.TempDir()

	out, errOut, err := run(t, sa+webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err != nil || out != "deployment/web created\n" || strings.TrimSpace(errOut) != `Warning: <stdin>:1: skipped ServiceAccount "web": no API server on one host: nothing uses its credentials` {
		t.Fatalf("apply with a ServiceAccount: %v %q %q", err, out, errOut)
	}

	_, errOut, err = run(t, svc+webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `unsupported kind "Service" (Service "web")`) || !strings.Contains(err.Error(), "--skip-unsupported") {
		t.Fatalf("apply with a Service: %v %q, want the Service refused by name", err, errOut)
	}

	out, errOut, err = run(t, svc+webYAML, "--state-dir", dir, "apply", "-f", "-", "--skip-unsupported")
	if err != nil || out != "deployment/web unchanged\n" || !strings.Contains(errOut, `Warning: <stdin>:1: skipped Service "web": not supported by dockctl (--skip-unsupported)`) {
		t.Fatalf("apply --skip-unsupported: %v %q %q", err, out, errOut)
	}

	out, _, err = run(t, svc+webYAML, "--state-dir", dir, "diff", "-f", "-", "--skip-unsupported")
	if err != nil || out != "" {
		t.Fatalf("diff --skip-unsupported of what is applied: %v %q", err, out)
	}

	out, _, err = run(t, sa+svc+webYAML, "--state-dir", dir, "delete", "-f", "-", "--skip-unsupported")
	if err != nil || !strings.Contains(out, "deployment/web deleted") {
		t.Fatalf("delete -f --skip-unsupported: %v %q", err, out)
	}
}
