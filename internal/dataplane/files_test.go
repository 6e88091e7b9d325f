package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

func TestHelperFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	payload := helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{{Name: "cfg", Files: []helperapi.FileItem{
		{Path: "app.conf", Mode: 0o644, Data: []byte("port=80\n")},
		{Path: "keys/token", Mode: 0o400, Data: []byte("TOPSECRET")},
	}}}}
	raw, _ := json.Marshal(payload)
	runFilesCmd := func(stdin []byte) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{helperapi.ModeFiles, "--root", root}, bytes.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := runFilesCmd(raw)
	if code != helperapi.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res helperapi.FilesResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Volumes) != 1 || !res.Volumes[0].Changed {
		t.Fatalf("result %q (%v): want one changed volume", out, err)
	}
	b, err := os.ReadFile(filepath.Join(root, "cfg", "keys", "token"))
	if err != nil || string(b) != "TOPSECRET" {
		t.Fatalf("keys/token = %q, %v", b, err)
	}
	fi, _ := os.Stat(filepath.Join(root, "cfg", "keys", "token"))
	if fi.Mode().Perm() != 0o400 {
		t.Errorf("keys/token mode %v, want 0400", fi.Mode().Perm())
	}
	// Again: nothing changes.
	if code, out, _ := runFilesCmd(raw); code != 0 || !strings.Contains(out, `"changed":false`) {
		t.Errorf("second write: exit %d, %s; want unchanged", code, out)
	}

	// A volume that is not mounted is refused: nothing lands in the
	// holder's own filesystem instead.
	missing := helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{{Name: "gone", Files: []helperapi.FileItem{{Path: "k", Mode: 0o644, Data: []byte("TOPSECRET")}}}}}
	raw, _ = json.Marshal(missing)
	code, _, errs = runFilesCmd(raw)
	if code != helperapi.ExitFailed || !strings.Contains(errs, "not mounted") {
		t.Errorf("unmounted volume: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "gone")); err == nil {
		t.Error("an unmounted volume's directory was made")
	}
	// Errors never quote the payload.
	for _, bad := range []string{`{"volumes":[{"name":"cfg","files":[{"path":"k","mode":420,"data":"VE9QU0VDUkVU"}]}],"x":1}`,
		`{"volumes":[{"name":"cfg","files":[{"path":"../k","mode":420,"data":"VE9QU0VDUkVU"}]}]}`, `TOPSECRET`, `{"volumes":"TOPSECRET"}`} {
		code, out, errs := runFilesCmd([]byte(bad))
		if code == helperapi.ExitOK {
			t.Errorf("%s: accepted", bad)
		}
		if strings.Contains(errs+out, "TOPSECRET") || strings.Contains(errs+out, "VE9QU0VDUkVU") {
			t.Errorf("%s: the output quotes the payload: %s%s", bad, out, errs)
		}
	}
}

func TestHelperHoldStopsOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var out, errb bytes.Buffer
		done <- run(ctx, []string{helperapi.ModeHold}, nil, &out, &errb)
	}()
	select {
	case code := <-done:
		t.Fatalf("hold returned %d before its stop", code)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case code := <-done:
		if code != helperapi.ExitOK {
			t.Errorf("exit %d, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hold did not stop")
	}
}

// Written tells a restarted controller whether a pod's volumes hold files
// an earlier write made: every volume must have its "..data".
func TestWritten(t *testing.T) {
	root := t.TempDir()
	both := []string{"a", "b"}
	if Written(root, both) || Written(root, nil) {
		t.Error("no volume: written")
	}
	for _, v := range append(both, "cache") {
		if err := os.Mkdir(filepath.Join(root, v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if Written(root, both) {
		t.Error("two empty volumes: written")
	}
	if _, err := WriteFiles(root, helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{{Name: "a", Files: []helperapi.FileItem{{Path: "k", Mode: 0o644, Data: []byte("v")}}}}}); err != nil {
		t.Fatal(err)
	}
	if Written(root, both) {
		t.Error("one of two volumes written: written")
	}
	if _, err := WriteFiles(root, helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{{Name: "b"}}}); err != nil {
		t.Fatal(err)
	}
	// The emptyDir "cache" beside them is never written, and not asked of.
	if !Written(root, both) {
		t.Error("both volumes written (one empty): not written")
	}
	if Written(root, []string{"../a"}) || Written(root, []string{"a", ".."}) {
		t.Error("a name that leaves root: written")
	}
	var out, errOut strings.Builder
	if code := runFiles([]string{"--root", root, "--check", "a,b"}, strings.NewReader(""), &out, &errOut); code != helperapi.ExitOK || out.Len()+errOut.Len() != 0 {
		t.Errorf("--check a,b: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if code := runFiles([]string{"--root", root, "--check", "a,cache"}, strings.NewReader(""), &out, &errOut); code != helperapi.ExitFailed {
		t.Errorf("--check a,cache: exit %d, want %d", code, helperapi.ExitFailed)
	}
}

// TestCheckSubPath: a subPath is bound only when it resolves inside its
// volume, whatever links the volume holds — the kubelet's rule since
// CVE-2017-1002101 (a subPath must not follow a link out of its volume).
// The links stand in for any write primitive a pod might gain on its
// read-only volume; the writer's own ..data links stay inside.
func TestCheckSubPath(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(root, "cfg")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	// What the writer makes: key -> ..data/key, ..data -> the version.
	code := run(context.Background(), []string{helperapi.ModeFiles, "--root", root},
		strings.NewReader(`{"volumes":[{"name":"cfg","files":[{"path":"app.conf","data":"YQ=="},{"path":"sub/x","data":"Yg=="}]}]}`), &bytes.Buffer{}, &bytes.Buffer{})
	if code != helperapi.ExitOK {
		t.Fatalf("writing the volume: exit %d", code)
	}
	links := map[string]string{
		"abs-file":   filepath.Join(outside, "secret"),
		"abs-dir":    outside,
		"rel-out":    "../../../../../../../../" + strings.TrimPrefix(outside, "/"),
		"dotdot":     "..",
		"in-chain":   "app.conf",
		"dangling":   "/nonexistent-dockctl-test",
		"sub-escape": "sub/../../..",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		sub    string
		inside bool
	}{
		{"app.conf", true},         // the key's link through ..data
		{"..data/app.conf", true},  // through the version's link
		{"sub/x", true},            // a nested key
		{"in-chain", true},         // a link to a link inside
		{"missing", true},          // made a directory by Docker, inside
		{".", true},                // the volume itself
		{"abs-file", false},        // an absolute link to a host file
		{"abs-dir", false},         // and to a host directory
		{"abs-dir/secret", false},  // a path through it
		{"rel-out", false},         // a relative link climbing out
		{"dotdot", false},          // the volume's parent
		{"dangling", false},        // a link to nothing, outside
		{"dangling/deeper", false}, // a missing path behind a link
		{"sub-escape", false},      // .. after a directory, out
		{"../cfg/app.conf", false}, // a subPath that climbs is never local
		{"/etc/passwd", false},     // nor an absolute one
		{"abs-dir/../cfg", false},  // .. after a link is the link's parent
	} {
		err := CheckSubPath(root, "cfg", tc.sub)
		if (err == nil) != tc.inside {
			t.Errorf("CheckSubPath(%q): %v, want inside %v", tc.sub, err, tc.inside)
		}
	}
	// The command form the controller runs: exit 1 and the reason on
	// stdout, naming the subPath.
	var out bytes.Buffer
	code = run(context.Background(), []string{helperapi.ModeFiles, "--root", root, "--subpath", "cfg:app.conf", "--subpath", "cfg:abs-file"}, strings.NewReader(""), &out, &bytes.Buffer{})
	if code != helperapi.ExitFailed || !strings.Contains(out.String(), `subPath "abs-file" of volume cfg leads out`) {
		t.Errorf("helper files --subpath: exit %d, %q", code, out.String())
	}
	out.Reset()
	code = run(context.Background(), []string{helperapi.ModeFiles, "--root", root, "--subpath", "cfg:app.conf"}, strings.NewReader(""), &out, &bytes.Buffer{})
	if code != helperapi.ExitOK {
		t.Errorf("helper files --subpath cfg:app.conf: exit %d, %q", code, out.String())
	}
}

// TestCheckSubPathRefusesLinksThatLeaveAndComeBack: the daemon resolves a
// subPath bind from the volume's path on the host
// (/var/lib/docker/volumes/NAME/_data), the check from the writer's mount
// of it (/volumes/VOLUME), and what lies above the volume differs. So a
// link that leaves the volume — by an absolute target, or by climbing
// above it — is refused even where, in the writer's view, it comes back
// in: from a writer, "../../../volumes/db/_data" re-enters volume db
// through links "volumes" and "db" to "."; from the host it is the data of
// the host's Docker volume named db. The kubelet resolves a subPath
// component by component inside the volume and never leaves it on the way
// (CVE-2017-1002101). Here the test's own view stands in for the writer's:
// the volume's name and each component of its absolute path are links to
// "." inside it.
func TestCheckSubPathRefusesLinksThatLeaveAndComeBack(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "db")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	code := run(context.Background(), []string{helperapi.ModeFiles, "--root", root},
		strings.NewReader(`{"volumes":[{"name":"db","files":[{"path":"app.conf","data":"YQ=="},{"path":"d/x","data":"Yg=="}]}]}`), &bytes.Buffer{}, &bytes.Buffer{})
	if code != helperapi.ExitOK {
		t.Fatalf("writing the volume: exit %d", code)
	}
	links := map[string]string{
		"climb-back":   "../db/app.conf",
		"climb-back-d": "../db/d",
		"abs-back":     filepath.Join(vol, "app.conf"),
		"dot":          ".",
		"dot-climb":    "dot/../db/app.conf",
		"in-dir":       "d/x",
	}
	for _, c := range strings.Split(strings.TrimPrefix(vol, "/"), "/") {
		links[c] = "."
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		sub    string
		inside bool
	}{
		{"climb-back", false},     // climbs above the volume, back in by its name
		{"climb-back-d/x", false}, // and a path through such a link
		{"abs-back", false},       // an absolute link, back in by the volume's path
		{"dot-climb", false},      // .. after a link to "." climbs above the volume
		{"dot/app.conf", true},    // a link to "." stays inside
		{"dot/dot/d/x", true},     // twice
		{"in-dir", true},          // a relative link down
		{"app.conf", true},        // the writer's own links
	} {
		err := CheckSubPath(root, "db", tc.sub)
		if (err == nil) != tc.inside {
			t.Errorf("CheckSubPath(%q): %v, want inside %v", tc.sub, err, tc.inside)
		}
	}
}
