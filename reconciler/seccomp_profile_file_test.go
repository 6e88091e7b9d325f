package reconciler

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A Localhost seccomp profile that is a FIFO (anything a hostPath volume
// allowed under the same --allow-host-path prefix can create in the
// seccomp directory) must not hang the create: podruntime.ReadSeccompProfile
// opens it with a blocking open(2), which waits for a writer forever,
// holding the deployment's sync and its worker. A profile must be a
// regular file.
func TestLocalhostProfileFIFOIsRefused(t *testing.T) {
	root := t.TempDir()
	old := profilePath
	profilePath = func(p string) string { return filepath.Join(root, filepath.Clean("/"+p)) }
	t.Cleanup(func() { profilePath = old })
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "fifo.json"
	d := testDeployment("web", 1, "v1")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{
		SeccompProfile: &manifests.SeccompProfile{Type: manifests.SeccompLocalhost, LocalhostProfile: &name}}
	c := &Controller{}
	done := make(chan error, 1)
	go func() {
		var req dockerx.CreateRequest
		done <- c.createInputs(t.Context(), &req, Op{Kind: OpCreate, Name: "web-1", From: dockerx.TemplateOf(d)})
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was accepted as a seccomp profile")
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test process can end.
		if f, err := openWriter(filepath.Join(root, "fifo.json")); err == nil {
			f()
			<-done
		}
		t.Fatal("createInputs still blocked after 10s opening a FIFO as the Localhost seccomp profile: the sync hangs")
	}
}

func openWriter(p string) (func(), error) {
	fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return func() { syscall.Close(fd) }, nil
}

// Docker reads "seccomp=<value>" as a profile's JSON, except the keyword
// "unconfined" (and, on newer engines, "builtin"). createInputs hands the
// file's bytes over unchecked, so a Localhost profile file whose content
// is the word "unconfined" runs the container with no seccomp filter —
// what type Unconfined gives only with --allow-privileged — where
// kubelet's runtime would refuse a profile that is not JSON.
func TestLocalhostProfileKeywordIsNotUnconfined(t *testing.T) {
	root := t.TempDir()
	old := profilePath
	profilePath = func(p string) string { return filepath.Join(root, filepath.Clean("/"+p)) }
	t.Cleanup(func() { profilePath = old })
	if err := os.WriteFile(filepath.Join(root, "word.json"), []byte("unconfined"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "word.json"
	d := testDeployment("web", 1, "v1")
	d.Spec.Template.Spec.Containers[0].SecurityContext = &manifests.SecurityContext{
		SeccompProfile: &manifests.SeccompProfile{Type: manifests.SeccompLocalhost, LocalhostProfile: &name}}
	c := &Controller{}
	req := dockerx.CreateRequest{Instance: "t", Name: "web-1", TemplateHash: "v1", From: dockerx.TemplateOf(d)}
	if err := c.createInputs(t.Context(), &req, Op{Kind: OpCreate, Name: "web-1", From: dockerx.TemplateOf(d)}); err != nil {
		return // refused: fine
	}
	_, hc, _, err := dockerx.BuildConfig(req)
	if err != nil {
		return
	}
	if slices.Contains(hc.SecurityOpt, "seccomp=unconfined") {
		t.Errorf("a Localhost profile file reading %q became SecurityOpt %q: seccomp off without --allow-privileged", "unconfined", hc.SecurityOpt)
	}
}
