package main

import (
	"testing"

	"github.com/dockctl/dockctl/store"
)

// Removing spec.paused from a paused deployment — a merge patch's null,
// a JSON patch's remove, or deleting the line in `edit` — means paused
// false, as the API server defaults it (kubectl unpauses). storeEdited
// stores the result as `apply -f` of it would, and apply keeps the live
// paused when the manifest leaves it unset (KeepPaused): the patch
// reports "patched (no change)" and the deployment stays paused.
func TestReview12bPatchRemovingPausedIsIgnored(t *testing.T) {
	for _, tc := range []struct{ typ, patch string }{
		{"merge", `{"spec":{"paused":null}}`},
		{"json", `[{"op":"remove","path":"/spec/paused"}]`},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			dir := t.TempDir()
			base := []string{"--state-dir", dir, "--instance", "t1"}
			for _, args := range [][]string{
				{"apply", "-f", "-"},
				{"rollout", "pause", "deployment/web"},
				{"patch", "deployment", "web", "--type", tc.typ, "-p", tc.patch},
			} {
				out, errOut, err := run(t, webYAML, append(base, args...)...)
				if err != nil {
					t.Fatalf("%v: %v %s", args, err, errOut)
				}
				t.Logf("%v: %s", args, out)
			}
			st, err := store.OpenReadOnly(dir, "t1")
			if err != nil {
				t.Fatal(err)
			}
			r, err := st.Get("", "web")
			if err != nil {
				t.Fatal(err)
			}
			if r.Deployment.Spec.Paused {
				t.Errorf("patch --type %s %s left deployment web paused (kubectl's leaves it unpaused)", tc.typ, tc.patch)
			}
		})
	}
}
