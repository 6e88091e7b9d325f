package reconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// maxSeccompProfile bounds a Localhost profile read from the host (Docker's
// own default profile is about 20 KiB).
const maxSeccompProfile = 1 << 20

// createInputs fills what a create needs from outside the template: the
// image's user (setImageUser) and a Localhost seccomp profile's content,
// read where the controller runs from manifests.LocalhostProfilePath —
// which the privilege gate allowed (--allow-host-path), as a hostPath.
func (c *Controller) createInputs(ctx context.Context, req *dockerx.CreateRequest, op Op) error {
	if err := c.setImageUser(ctx, req, op); err != nil {
		return err
	}
	if op.Role == dockerx.RoleHolder || op.From == nil {
		return nil
	}
	ps := &op.From.Spec.Template.Spec
	ctr := ps.FindContainer(op.Container)
	if op.Container == "" && len(ps.Containers) > 0 {
		ctr = &ps.Containers[0]
	}
	if ctr == nil {
		return nil
	}
	p := dockerx.LocalhostProfile(ps, ctr)
	if p == "" {
		return nil
	}
	content, err := readProfile(profilePath(p))
	if err != nil {
		return fmt.Errorf("create %s: seccomp profile: %w", op.Name, err)
	}
	req.SeccompProfile = content
	return nil
}

// profilePath is manifests.LocalhostProfilePath; tests point it elsewhere.
var profilePath = manifests.LocalhostProfilePath

// readProfile reads a Localhost profile from the host, as the privilege
// gate judged it: its symbolic links resolved (the gate compared the
// resolved path with the --allow-host-path prefixes and the system
// paths), then opened without following a link swapped in since, and
// without blocking (a FIFO or a device there would hold the sync and its
// worker forever). Only a regular file of at most maxSeccompProfile
// bytes holding a JSON object is a profile: Docker reads any other
// "seccomp=" value as a keyword ("unconfined" turns the filter off), and
// kubelet's runtime refuses a profile that is not JSON.
func readProfile(path string) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", resolved, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", resolved, fi.Mode().Type())
	}
	if fi.Size() > maxSeccompProfile {
		return "", fmt.Errorf("%s is larger than %d bytes", resolved, maxSeccompProfile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSeccompProfile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", resolved, err)
	}
	if len(b) > maxSeccompProfile {
		return "", fmt.Errorf("%s is larger than %d bytes", resolved, maxSeccompProfile)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "", fmt.Errorf("%s is empty", resolved)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		// The content is not echoed: it is a host file the manifest's
		// author may not be allowed to read.
		return "", fmt.Errorf("%s is not a seccomp profile: not a JSON object", resolved)
	}
	return string(b), nil
}
