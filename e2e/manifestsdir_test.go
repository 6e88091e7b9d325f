//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/dockctl/dockctl/manifests"
)

// The controller keeps a manifests directory applied, mounted read-only as
// a git checkout would be: a changed file rolls its deployment out, a
// removed file takes its containers away, and apply's objects stay.
func TestManifestsDirectory(t *testing.T) {
	independent(t)
	e := newEnv(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		// As git checkout writes: a new file renamed over the old one.
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	one := webManifest(2, "one")
	write("web.yaml", one)
	// An object of apply's, which the directory must never delete.
	e.apply(testDeployment{name: "cli", replicas: 1, value: "cli"}.manifest())

	e.startControllerWith(func(req *testcontainers.ContainerRequest) {
		prev := req.HostConfigModifier
		req.HostConfigModifier = func(hc *container.HostConfig) {
			prev(hc)
			hc.Binds = append(hc.Binds, dir+":/manifests:ro")
		}
	}, "--manifests", "/manifests", settleFast)

	e.waitRunning("web", 2, hashOf(t, one))
	e.waitRunning("cli", 1, "")

	two := webManifest(2, "two")
	start := time.Now()
	write("web.yaml", two)
	e.waitRunning("web", 2, hashOf(t, two))
	t.Logf("file change to the new revision running: %v", time.Since(start))
	if out := e.mustDockctl("", "describe", "deployment", "web"); !strings.Contains(out, "Managed-By:        manifests:/manifests\n") {
		t.Errorf("describe:\n%s", out)
	}

	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	// The directory is empty now: nothing is deleted without --allow-empty.
	eventually(t, 30*time.Second, "the empty directory reported", func() (bool, string) {
		out, _ := e.dockctl("", "get", "manifests")
		return strings.Contains(out, "Empty"), out
	})
	if n := len(e.deploymentContainers("web")); n != 2 {
		t.Fatalf("an empty directory deleted web: %d containers", n)
	}
	write("other.yaml", testDeployment{name: "other", replicas: 1, value: "o"}.manifest())
	e.waitRunning("other", 1, "")
	e.waitRunning("web", 0, "")
	if n := len(e.deploymentContainers("cli")); n != 1 {
		t.Errorf("apply's deployment cli has %d containers, want 1", n)
	}
}

// hashOf is the template hash of a one-deployment manifest.
func hashOf(t testing.TB, manifest string) string {
	t.Helper()
	docs, err := manifests.Decode("m.yaml", []byte(manifest))
	if err != nil || len(docs) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	return docs[0].Deployment.TemplateHash()
}
