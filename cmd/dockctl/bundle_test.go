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
	ing := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: web}\nspec: {defaultBackend: {service: {name: web, port: {number: 80}}}}\n---\n"
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n---\n"
	dir := t.TempDir()
	controllerBeating(t, dir, "default")

	out, errOut, err := run(t, sa+webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err != nil || out != "deployment/web created\n" || strings.TrimSpace(errOut) != `Warning: <stdin>:1: skipped ServiceAccount "web": no API server on one host: nothing uses its credentials` {
		t.Fatalf("apply with a ServiceAccount: %v %q %q", err, out, errOut)
	}

	_, errOut, err = run(t, ing+svc+webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `unsupported kind "NetworkPolicy" (NetworkPolicy "web")`) || !strings.Contains(err.Error(), "--skip-unsupported") {
		t.Fatalf("apply with a NetworkPolicy: %v %q, want the Ingress refused by name", err, errOut)
	}

	out, errOut, err = run(t, ing+svc+webYAML, "--state-dir", dir, "apply", "-f", "-", "--skip-unsupported")
	if err != nil || out != "service/web created\ndeployment/web unchanged\n" || !strings.Contains(errOut, `Warning: <stdin>:1: skipped NetworkPolicy "web": not supported by dockctl (--skip-unsupported)`) {
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

// applyThenPruneAll applies web and api, then applies stdin with
// --skip-unsupported --prune --all and returns the live deployments left.
func applyThenPruneAll(t *testing.T, stdin string) (left, out, errOut string, err error) {
	t.Helper()
	api := strings.ReplaceAll(webYAML, "web", "api")
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	if _, e, err := run(t, webYAML+"---\n"+api, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, e)
	}
	out, errOut, err = run(t, stdin, append(base, "apply", "-f", "-", "--skip-unsupported", "--prune", "--all")...)
	st := openForTest(t, base)
	recs, lerr := st.List()
	if lerr != nil {
		t.Fatal(lerr)
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
	}
	return strings.Join(names, " "), out, errOut, err
}

// A Deployment whose kind is miscased ("deployment") is not an object of
// an unsupported kind: kubectl refuses it (no matches for kind
// "deployment" in apps/v1). --skip-unsupported must not skip it as "not
// supported", for --prune would then delete the live deployment the file
// still declares.
func TestPruneKeepsMiscasedDeployment(t *testing.T) {
	api := strings.Replace(strings.ReplaceAll(webYAML, "web", "api"), "kind: Deployment", "kind: deployment", 1)
	left, out, errOut, err := applyThenPruneAll(t, webYAML+"---\n"+api)
	if !strings.Contains(left, "api") {
		t.Fatalf("deployment api, declared in the file with kind %q, was pruned: out %q stderr %q err %v; left %q",
			"deployment", out, errOut, err, left)
	}
}

// A List inside a List (or a typed DeploymentList, which kubectl apply
// flattens as a list) holds Deployments: --skip-unsupported must not skip
// the whole inner list as "unsupported", for --prune would then delete the
// Deployments it carries.
func TestPruneKeepsDeploymentsOfNestedLists(t *testing.T) {
	indent := func(s string) string {
		return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
	}
	api := strings.ReplaceAll(webYAML, "web", "api")
	for _, tc := range []struct{ name, stdin string }{
		{"List in List", webYAML + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  -" + indent(indent(api))[3:] + "\n"},
		{"DeploymentList", webYAML + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: DeploymentList\n  items:\n  -" + indent(indent(api))[3:] + "\n"},
		{"top-level DeploymentList", webYAML + "---\napiVersion: apps/v1\nkind: DeploymentList\nitems:\n-" + indent(api)[1:] + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, out, errOut, err := applyThenPruneAll(t, tc.stdin)
			if !strings.Contains(left, "api") {
				t.Fatalf("deployment api, declared inside a %s, was pruned: out %q stderr %q err %v; left %q\ninput:\n%s",
					tc.name, out, errOut, err, left, tc.stdin)
			}
		})
	}
}
