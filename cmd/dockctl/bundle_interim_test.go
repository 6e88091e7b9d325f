package main

import (
	"strings"
	"testing"
)

// TestApplyRefusesWhatTheStoreCannotHoldYet: manifests decodes Namespaces
// and Deployments of any namespace, but until the store is namespaced a
// Deployment outside default must be refused, not filed as default's, and
// a Namespace refused or skipped like any kind apply cannot apply.
// (Interim: the namespaced store replaces deploymentsOnly and this test.)
func TestApplyRefusesWhatTheStoreCannotHoldYet(t *testing.T) {
	dir := t.TempDir()
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
	inShop := strings.Replace(webYAML, "  name: web\n", "  name: web\n  namespace: shop\n", 1)

	_, _, err := run(t, ns+inShop, "--state-dir", dir, "apply", "-f", "-", "--skip-unsupported")
	if err == nil || !strings.Contains(err.Error(), `metadata.namespace: unsupported value "shop"`) {
		t.Fatalf("apply of a deployment in namespace shop: %v, want it refused", err)
	}
	out, errOut, err := run(t, ns+strings.Replace(webYAML, "  name: web\n", "  name: web\n  namespace: default\n", 1),
		"--state-dir", dir, "apply", "-f", "-", "--skip-unsupported")
	if err != nil || out != "deployment/web created\n" || !strings.Contains(errOut, `skipped Namespace "shop"`) {
		t.Fatalf("apply of a Namespace and a deployment in default: %v %q %q", err, out, errOut)
	}
}
