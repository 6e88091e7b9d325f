package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/internal/testenv"
	"github.com/dockctl/dockctl/manifests"
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

// A file volume is a tmpfs of manifests.FileVolumeSize bytes. A ConfigMap
// the validator accepts (1000 keys of 1000 bytes: under Kubernetes' 1 MiB
// limit) must fit, and so must its update (the writer holds two versions
// at once). tmpfs charges a page per non-empty file, so the size must
// count a page per key, not the bytes alone.
func TestFilesTmpfsSizeFitsAValidConfigMap(t *testing.T) {
	for _, tc := range []struct{ keys, size int }{{1000, 1000}, {600, 1700}} {
		t.Run(fmt.Sprintf("%dx%d", tc.keys, tc.size), func(t *testing.T) {
			cm := &manifests.ConfigMap{APIVersion: "v1", Kind: manifests.KindConfigMap, Metadata: manifests.ObjectMeta{Name: "big"}, Data: map[string]string{}}
			for i := 0; i < tc.keys; i++ {
				cm.Data[fmt.Sprintf("k%04d", i)] = strings.Repeat("x", tc.size)
			}
			if err := manifests.ValidateConfigMap(cm); err != nil {
				t.Fatalf("the ConfigMap is invalid: %v", err)
			}
			vol := manifests.Volume{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "big"}}
			root := t.TempDir()
			dir := filepath.Join(root, "cfg")
			os.Mkdir(dir, 0o755)
			size := manifests.FileVolumeSize(&vol)
			if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
				testenv.Unavailable(t, "cannot mount a tmpfs here: %v", err)
			}
			defer syscall.Unmount(dir, 0)
			payload := func(v string) helperapi.FilesPayload {
				fv := helperapi.FilesVolume{Name: "cfg"}
				for k, val := range cm.Data {
					fv.Files = append(fv.Files, helperapi.FileItem{Path: k, Mode: 0o644, Data: []byte(v + val[len(v):])})
				}
				return helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{fv}}
			}
			if _, err := WriteFiles(root, payload("a")); err != nil {
				t.Fatalf("first write into a %d-byte tmpfs: %v", size, err)
			}
			if _, err := WriteFiles(root, payload("b")); err != nil {
				t.Fatalf("update into a %d-byte tmpfs: %v", size, err)
			}
		})
	}
}

// A writer holder mounts the pod's emptyDirs under helperapi.VolumesDir too
// (dockerx buildHolder: "/volumes/"+name, to keep them mounted), next to
// its file volumes, and the writer never writes a "..data" into an
// emptyDir. Written (`helper files --check`) must look at the file
// volumes it is given only: demanding a "..data" in every directory there
// would leave a pod with an emptyDir and a configMap volume "never
// written" for ever, so after a controller restart with its ConfigMap
// deleted it would be blocked for ever — the case --check was added for.
func TestWrittenWithAnEmptyDir(t *testing.T) {
	d := &manifests.Deployment{APIVersion: manifests.APIVersion, Kind: manifests.Kind, Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.DeploymentSpec{Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: manifests.PodTemplateSpec{Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "web"}},
				Spec: manifests.PodSpec{
					Volumes: []manifests.Volume{
						{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
						{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}},
					},
					Containers: []manifests.Container{{Name: "web", Image: "nginx", VolumeMounts: []manifests.VolumeMount{
						{Name: "cfg", MountPath: "/etc/app"}, {Name: "cache", MountPath: "/cache"}}}},
				}}}}
	manifests.SetDefaults(d)
	holder := dockerx.ContainerName("i", "", "web", "abc", 0)
	req := dockerx.CreateRequest{Instance: "i", Name: holder, TemplateHash: "abc", From: dockerx.TemplateOf(d), Role: dockerx.RoleHolder,
		Image: "helper:1", Pod: &dockerx.PodRef{Name: "web-abc-0", UID: "0123abcd", Holder: holder}}
	_, hc, _, err := dockerx.BuildConfig(req)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir() // the holder's helperapi.VolumesDir
	var under []string
	for _, m := range hc.Mounts {
		if rel, ok := strings.CutPrefix(m.Target, helperapi.VolumesDir+"/"); ok {
			under = append(under, rel)
			if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil { // the mountpoint Docker makes
				t.Fatal(err)
			}
		}
	}
	// The controller's payload covers the file volumes only (planFiles).
	if _, err := WriteFiles(root, helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{{Name: "cfg",
		Files: []helperapi.FileItem{{Path: "k", Mode: 0o644, Data: []byte("v")}}}}}); err != nil {
		t.Fatal(err)
	}
	if !Written(root, []string{"cfg"}) {
		t.Errorf("the holder's %s holds %v; its one file volume was written, yet Written (--check) says not written", helperapi.VolumesDir, under)
	}
}
