package manifests

import (
	"strings"
	"testing"
)

// An object of an "ignored" kind is skipped without any check of what it
// is: a ServiceAccount with no apiVersion, or with the apiVersion of another
// group, is refused by a cluster (kubectl: "apiVersion not set" / "no
// matches for kind ServiceAccount in version apps/v1"), and so is a
// RoleBinding in core v1. dockctl warns it "grants nothing" and applies the
// rest: the bundle passes here and fails on the cluster it was written for.
func TestReviewIgnoredKindNeedsItsAPIVersion(t *testing.T) {
	dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n"
	for _, tc := range []struct{ name, obj string }{
		{"no apiVersion", "kind: ServiceAccount\nmetadata: {name: web}\n"},
		{"foreign apiVersion", "apiVersion: apps/v1\nkind: ServiceAccount\nmetadata: {name: web}\n"},
		{"RoleBinding in v1", "apiVersion: v1\nkind: RoleBinding\nmetadata: {name: web}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, skipped, err := LoadAll([]string{"-"}, strings.NewReader(tc.obj+"---\n"+dep), LoadOptions{})
			if err == nil {
				t.Fatalf("accepted (%d docs, skipped %v); a cluster refuses %q", len(docs), skipped, tc.obj)
			}
		})
	}
}
