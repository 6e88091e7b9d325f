package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// TestApplyBundleOfOtherKinds: apply, diff and delete -f take a bundle as
// kubectl users ship it. Objects that grant nothing on one host are
// skipped with one warning line each and the rest applies; a kind dockctl
// does not support refuses the whole input, naming the object, unless
// --skip-unsupported skips it with a warning; a Service is applied and
// deleted with the rest.
func TestApplyBundleOfOtherKinds(t *testing.T) {
	sa := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n---\n"
	ing := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec: {defaultBackend: {service: {name: web, port: {number: 80}}}}\n---\n"
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n---\n"
	dir := t.TempDir()

	out, errOut, err := run(t, sa+webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err != nil || out != "deployment/web created\n" || strings.TrimSpace(errOut) != `Warning: <stdin>:1: skipped ServiceAccount "web": no API server on one host: nothing uses its credentials` {
		t.Fatalf("apply with a ServiceAccount: %v %q %q", err, out, errOut)
	}

	_, errOut, err = run(t, ing+svc+webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `unsupported kind "Ingress" (Ingress "web")`) || !strings.Contains(err.Error(), "--skip-unsupported") {
		t.Fatalf("apply with an Ingress: %v %q, want the Ingress refused by name", err, errOut)
	}

	out, errOut, err = run(t, ing+svc+webYAML, "--state-dir", dir, "apply", "-f", "-", "--skip-unsupported")
	if err != nil || out != "service/web created\ndeployment/web unchanged\n" || !strings.Contains(errOut, `Warning: <stdin>:1: skipped Ingress "web": not supported by dockctl (--skip-unsupported)`) {
		t.Fatalf("apply --skip-unsupported: %v %q %q", err, out, errOut)
	}

	out, _, err = run(t, ing+svc+webYAML, "--state-dir", dir, "diff", "-f", "-", "--skip-unsupported")
	if err != nil || out != "" {
		t.Fatalf("diff --skip-unsupported of what is applied: %v %q", err, out)
	}

	out, _, err = run(t, sa+ing+svc+webYAML, "--state-dir", dir, "delete", "-f", "-", "--skip-unsupported")
	if err != nil || out != "deployment/web deleted\nservice/web deleted\n" {
		t.Fatalf("delete -f --skip-unsupported: %v %q", err, out)
	}
	st, err := store.OpenReadOnly(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := st.LookupService("", "web"); err != nil || !rec.Deleted {
		t.Fatalf("service web after delete -f: %+v %v, want a tombstone", rec, err)
	}
}
