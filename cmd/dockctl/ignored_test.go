package main

import (
	"strings"
	"testing"
)

// Fields with no meaning on one host (docs/manifests.md): apply accepts
// them with ONE warning line naming them, whatever the number of objects
// and fields; they are never stored, so re-applying without them is
// "unchanged" and `get -o yaml` does not show them.
func TestApplyWarnsOnceAboutIgnoredFields(t *testing.T) {
	withIgnored := func(name string) string {
		src := strings.ReplaceAll(webYAML, "web", name)
		return strings.Replace(src, "    spec:\n      containers:", "    spec:\n      serviceAccountName: robot\n      nodeSelector: {disk: ssd}\n      tolerations: [{key: k, operator: Exists}]\n      dnsPolicy: ClusterFirst\n      containers:", 1)
	}
	dir := t.TempDir()
	controllerBeating(t, dir, "default")
	bundle := withIgnored("web") + "---\n" + withIgnored("api")
	out, errOut, err := run(t, bundle, "--state-dir", dir, "apply", "-f", "-")
	if err != nil || out != "deployment/web created\ndeployment/api created\n" {
		t.Fatalf("apply: %v out %q stderr %q", err, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := "Warning: fields with no meaning on one host are ignored: deployment/web (nodeSelector, serviceAccountName, tolerations); deployment/api (nodeSelector, serviceAccountName, tolerations)"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("stderr:\n%s\nwant exactly:\n%s", errOut, want)
	}
	// Never stored: the plain manifest is the same object.
	out, errOut, err = run(t, webYAML, "--state-dir", dir, "apply", "-f", "-")
	if err != nil || out != "deployment/web unchanged\n" || errOut != "" {
		t.Fatalf("re-apply without the fields: %v out %q stderr %q", err, out, errOut)
	}
	out, _, err = run(t, "", "--state-dir", dir, "get", "deployment", "web", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"serviceAccountName", "nodeSelector", "tolerations", "dnsPolicy"} {
		if strings.Contains(out, f) {
			t.Errorf("get -o yaml shows the ignored %s:\n%s", f, out)
		}
	}
	// diff warns as well, and sees no difference.
	_, errOut, err = run(t, withIgnored("web"), "--state-dir", dir, "diff", "-f", "-")
	if err != nil || strings.Count(errOut, "Warning:") != 1 {
		t.Fatalf("diff: %v stderr %q", err, errOut)
	}
}
