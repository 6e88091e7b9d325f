package podruntime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// MaxSeccompProfile bounds a Localhost profile read from the host (Docker's
// own default profile is about 20 KiB).
const MaxSeccompProfile = 1 << 20

// ReadSeccompProfile reads a Localhost profile from the host, as the privilege
// gate judged it: its symbolic links resolved (the gate compared the
// resolved path with the --allow-host-path prefixes and the system
// paths), then opened without following a link swapped in since, and
// without blocking (a FIFO or a device there would hold the sync and its
// worker forever). Only a regular file of at most MaxSeccompProfile
// bytes holding a JSON object is a profile: Docker reads any other
// "seccomp=" value as a keyword ("unconfined" turns the filter off), and
// kubelet's runtime refuses a profile that is not JSON.
func ReadSeccompProfile(path string) (string, error) {
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
	if fi.Size() > MaxSeccompProfile {
		return "", fmt.Errorf("%s is larger than %d bytes", resolved, MaxSeccompProfile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSeccompProfile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", resolved, err)
	}
	if len(b) > MaxSeccompProfile {
		return "", fmt.Errorf("%s is larger than %d bytes", resolved, MaxSeccompProfile)
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
