package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/testenv"
)

// A state directory that others could write to is made private again by
// Open, but what they planted while it was open stays: a record owned by
// another user (who may still hold it open and rewrite it), or a symbolic
// link to a file of theirs. Its owner, not this user, decided it: the
// store must not hand it to the controller as desired state.
func TestRecordPlantedByAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "chown needs root")
	}
	for _, how := range []string{"owned by another user", "a link to another user's file"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			s, err := Open(dir, "default")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Apply(deps(dep("web")), ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			deployments := filepath.Join(dir, deploymentsDir)
			chmod(t, deployments, 0o777) // a mistake, or an older release
			path := filepath.Join(deployments, "web.json")
			if how == "owned by another user" {
				if err := os.Chown(path, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			} else {
				theirs := filepath.Join(t.TempDir(), "theirs.json")
				if err := os.Rename(path, theirs); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(theirs, 4242, 4242); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(theirs, path); err != nil {
					t.Fatal(err)
				}
			}
			s, err = Open(dir, "default") // makes deployments/ private again
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := s.Lookup("", "web"); err == nil {
				t.Fatalf("a record planted by uid 4242 was read as desired state: %s", rec.Name)
			} else if !strings.Contains(err.Error(), "web.json") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			if recs, _ := s.ListAll(); len(recs) != 0 {
				t.Fatalf("ListAll returned the planted record")
			}
		})
	}
}
