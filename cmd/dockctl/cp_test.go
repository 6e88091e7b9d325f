package main

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// cpPod is the fake Engine with deployment shop's pod 0 (containers web
// and log running, init container migrate done), web's and log's files
// set; it returns the pod's name and the containers' Docker names.
func cpPod(t *testing.T) (api *dockerAPI, base []string, pod string, names map[string]string) {
	api, base, d := shopApplied(t)
	pod = dockerx.Hostname("shop", manifests.TemplateHash(&d.Spec.Template), 0)
	names = map[string]string{}
	for _, c := range testPod("t1", d, 0, time.Minute, false,
		member{name: "migrate", state: "exited:0"}, member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}) {
		api.add(c.Name, c.State, c.Labels)
		names[c.ContainerName] = c.Name
	}
	api.setFiles(names["web"], map[string]string{"/etc/app.conf": "port=80\n", "/srv/site/index.html": "<h1>hi</h1>", "/srv/site/css/a.css": "a{}", "/data/": ""})
	api.setFiles(names["log"], map[string]string{"/etc/app.conf": "log's\n", "/data/": ""})
	return api, base, pod, names
}

// readTree is the files, directories and links under dir, by slash path
// (directories end with /), with the files' contents and the links'
// targets ("-> TARGET"), links not followed.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if fi.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// cp out of a container, as kubectl cp (docker cp for an existing
// directory): a file to a new name or into a directory, a directory to a
// new name or into one, the default container or -c's, [NS/]POD:PATH.
func TestCpFromContainer(t *testing.T) {
	_, base, pod, _ := cpPod(t)
	notice := `Defaulted container "web" out of: web, log, migrate (init)` + "\n"
	for _, tt := range []struct {
		situation string
		src       string
		dest      string // under the test's directory, which exists
		flags     []string
		stderr    string
		want      map[string]string
	}{
		{"a file to a new name", pod + ":/etc/app.conf", "copy.conf", nil, notice, map[string]string{"copy.conf": "port=80\n"}},
		{"a file into a directory", pod + ":/etc/app.conf", ".", []string{"-c", "web"}, "", map[string]string{"app.conf": "port=80\n"}},
		{"a file of container log", pod + ":/etc/app.conf", "x", []string{"-c", "log"}, "", map[string]string{"x": "log's\n"}},
		{"a directory to a new name", pod + ":/srv/site", "out", []string{"-c", "web"}, "",
			map[string]string{"out/": "", "out/index.html": "<h1>hi</h1>", "out/css/": "", "out/css/a.css": "a{}"}},
		{"a directory into a directory", "default/" + pod + ":/srv/site", ".", []string{"-c", "web"}, "",
			map[string]string{"site/": "", "site/index.html": "<h1>hi</h1>", "site/css/": "", "site/css/a.css": "a{}"}},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			dir := t.TempDir()
			_, errOut, err := runArgs(t, base, append([]string{"cp", tt.src, filepath.Join(dir, tt.dest)}, tt.flags...)...)
			if err != nil || errOut != tt.stderr {
				t.Fatalf("%v, stderr %q (want %q)", err, errOut, tt.stderr)
			}
			if got := readTree(t, dir); !sameTree(got, tt.want) {
				t.Errorf("copied %v, want %v", got, tt.want)
			}
		})
	}
}

// cp into a container: a file or a directory into a directory there, or
// to a new name.
func TestCpToContainer(t *testing.T) {
	local := t.TempDir()
	if err := os.MkdirAll(filepath.Join(local, "conf", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"f.txt": "F", "conf/a": "A", "conf/sub/b": "B"} {
		if err := os.WriteFile(filepath.Join(local, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		situation, src, dest string
		want                 []string // paths added to web's files
	}{
		{"a file into a directory", "f.txt", "/data", []string{"/data/f.txt=F"}},
		{"a file to a new name", "f.txt", "/data/g.txt", []string{"/data/g.txt=F"}},
		{"a directory into a directory", "conf", "/data", []string{"/data/conf/", "/data/conf/a=A", "/data/conf/sub/", "/data/conf/sub/b=B"}},
		{"a directory to a new name", "conf", "/data/new", []string{"/data/new/", "/data/new/a=A", "/data/new/sub/", "/data/new/sub/b=B"}},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			api, base, pod, names := cpPod(t)
			before := api.filesOf(names["web"])
			if _, errOut, err := runArgs(t, base, "cp", filepath.Join(local, tt.src), pod+":"+tt.dest, "-c", "web"); err != nil {
				t.Fatalf("%v %s", err, errOut)
			}
			var added []string
			for p, c := range api.filesOf(names["web"]) {
				if _, ok := before[p]; !ok {
					if strings.HasSuffix(p, "/") {
						added = append(added, p)
					} else {
						added = append(added, p+"="+c)
					}
				}
			}
			sort.Strings(added)
			if strings.Join(added, " ") != strings.Join(tt.want, " ") {
				t.Errorf("added %v, want %v", added, tt.want)
			}
		})
	}
}

// cp's mistakes are kubectl's errors (or say which path is missing).
func TestCpErrors(t *testing.T) {
	_, base, pod, _ := cpPod(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"a", "b"}, "one of src or dest must be a remote file specification"},
		{[]string{pod + ":/a", pod + ":/b"}, "one of src or dest must be a local file specification"},
		{[]string{pod + ":", dir}, "filepath can not be empty"},
		{[]string{pod + ":/nope", dir, "-c", "web"}, "/nope: no such file or directory"},
		{[]string{filepath.Join(dir, "nope"), pod + ":/data", "-c", "web"}, filepath.Join(dir, "nope") + " doesn't exist in local filesystem"},
		{[]string{dir, pod + ":/nope/x", "-c", "web"}, "/nope: no such directory in the container"},
		{[]string{"nope-0:/etc/app.conf", dir}, `pods "nope-0" not found`},
		{[]string{pod + ":/etc/app.conf", dir, "-c", "migrate"}, `container "migrate" in pod "` + pod + `" is not running`},
		{[]string{"a"}, "source and destination are required"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := runArgs(t, base, append([]string{"cp"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// maliciousArchive is a tar a hostile container could answer: entries
// that name paths outside the destination (absolute, .., through a link
// of the archive, through a link already in the destination), a hard
// link to a file outside, and one good file.
func maliciousArchive(t *testing.T, outside string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			tw.Write([]byte(body))
		}
	}
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "site/ok.txt"}, "fine")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "../escaped-dotdot"}, "x")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "site/../../escaped-inner"}, "x")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.Join(outside, "escaped-absolute")}, "x")
	add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "site/link", Linkname: outside}, "")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "site/link/escaped-via-archive-link"}, "x")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "site/pre/escaped-via-existing-link"}, "x")
	add(&tar.Header{Typeflag: tar.TypeLink, Name: "site/hard", Linkname: filepath.Join(outside, "victim")}, "")
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// No entry of a hostile archive writes outside the destination, whatever
// its name or the links it makes or meets; the good entries are
// extracted, the others skipped with a warning or refused. Run through
// the real command against the fake Engine, and on untar directly.
func TestCpArchiveCannotEscapeDestination(t *testing.T) {
	api, base, pod, names := cpPod(t)
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	dest := filepath.Join(root, "dest")
	for _, d := range []string{outside, dest} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link already in the destination, pointing outside.
	if err := os.MkdirAll(filepath.Join(dest, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dest, "site", "pre")); err != nil {
		t.Fatal(err)
	}
	api.setArchive(names["web"], maliciousArchive(t, outside))
	_, errOut, err := runArgs(t, base, "cp", pod+":/srv/site", dest, "-c", "web")
	// The entry through the existing link is refused by os.Root: an error
	// after the good entry, never a write outside.
	if err == nil || !strings.Contains(err.Error(), "escaped-via-existing-link") {
		t.Errorf("cp of a hostile archive: %v, want the entry through the existing link refused", err)
	}
	for _, w := range []string{
		`warning: file "../escaped-dotdot" is outside target destination, skipping`,
		`warning: file "site/../../escaped-inner" is outside target destination, skipping`,
		`warning: file "` + filepath.Join(outside, "escaped-absolute") + `" is outside target destination, skipping`,
		`warning: skipping symlink: "site/link" -> "` + outside + `"`,
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if got := readTree(t, outside); !sameTree(got, map[string]string{"victim": "untouched"}) {
		t.Errorf("the archive wrote outside the destination: %v", got)
	}
	if got := readTree(t, root); got["escaped-dotdot"] != "" || got["escaped-inner"] != "" {
		t.Errorf("the archive wrote beside the destination: %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "site", "ok.txt")); err != nil || string(b) != "fine" {
		t.Errorf("the good entry: %q %v", b, err)
	}

	// untar itself, each hostile entry alone: skipped or refused, nothing
	// outside.
	for _, tt := range []struct {
		situation string
		name      string
		typ       byte
		link      string
		refused   bool
	}{
		{"dot-dot", "../x", tar.TypeReg, "", false},
		{"dot-dot inside", "a/../../x", tar.TypeReg, "", false},
		{"absolute", "/tmp/x", tar.TypeReg, "", false},
		{"backslashes", `..\x`, tar.TypeReg, "", false},
		{"symlink out", "l", tar.TypeSymlink, outside, false},
		{"hard link out", "h", tar.TypeLink, filepath.Join(outside, "victim"), false},
		{"through a link already there", "pre/x", tar.TypeReg, "", true},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			d := t.TempDir()
			if err := os.Symlink(outside, filepath.Join(d, "pre")); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(&tar.Header{Typeflag: tt.typ, Name: tt.name, Linkname: tt.link, Mode: 0o644, Size: map[bool]int64{true: 1}[tt.typ == tar.TypeReg]})
			if tt.typ == tar.TypeReg {
				tw.Write([]byte("x"))
			}
			tw.Close()
			var warn bytes.Buffer
			err := untar(&buf, d, "", "", &warn)
			if (err != nil) != tt.refused || (!tt.refused && warn.Len() == 0) {
				t.Errorf("untar: %v, warnings %q; want refused %v, else a warning", err, warn.String(), tt.refused)
			}
			if got := readTree(t, outside); !sameTree(got, map[string]string{"victim": "untouched"}) {
				t.Errorf("wrote outside: %v", got)
			}
			if got := readTree(t, d); !sameTree(got, map[string]string{"pre": "-> " + outside}) {
				t.Errorf("extracted %v, want nothing", got)
			}
		})
	}
}

// Odd but legitimate archive entries extract as tar(1) extracts them.
func TestUntarTakesOddButLegitimateEntries(t *testing.T) {
	long := strings.Repeat("d", 120) + "/" + strings.Repeat("f", 200)
	type ent struct {
		name string
		typ  byte
		body string
	}
	for _, tt := range []struct {
		name    string
		entries []ent
		want    map[string]string // file -> content
	}{
		{"old-style regular file (TypeRegA)", []ent{{"a", '\x00', "x"}}, map[string]string{"a": "x"}},
		{"duplicate entry: last wins", []ent{{"a", tar.TypeReg, "1"}, {"a", tar.TypeReg, "2"}}, map[string]string{"a": "2"}},
		{"long name", []ent{{long, tar.TypeReg, "x"}}, map[string]string{long: "x"}},
		{"dot directory entry then file", []ent{{"./", tar.TypeDir, ""}, {"./a", tar.TypeReg, "x"}}, map[string]string{"a": "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, e := range tt.entries {
				if err := tw.WriteHeader(&tar.Header{Typeflag: e.typ, Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Format: tar.FormatPAX}); err != nil {
					t.Fatal(err)
				}
				tw.Write([]byte(e.body))
			}
			tw.Close()
			d := t.TempDir()
			var warn bytes.Buffer
			if err := untar(&buf, d, "", "", &warn); err != nil {
				t.Fatalf("untar: %v", err)
			}
			if warn.Len() != 0 {
				t.Errorf("warnings %q", warn.String())
			}
			for f, want := range tt.want {
				b, err := os.ReadFile(filepath.Join(d, f))
				if err != nil || string(b) != want {
					t.Errorf("%s: %q %v, want %q", f, b, err, want)
				}
			}
		})
	}
}

// Every entry of an archive of a copied path starts with that path's
// name (the Engine's archive of /srv/site holds site/…): an entry that
// does not is kubectl's "tar contents corrupted", refused before it
// lands beside the copy (cp POD:/srv/site ~ must never write ~/.bashrc).
func TestUntarRefusesEntriesOutsideTheCopiedPath(t *testing.T) {
	for _, tt := range []struct {
		situation    string
		from, rename string
		names        []string
	}{
		{"into a directory: a file beside the copy", "site", "", []string{"site/ok", ".bashrc"}},
		{"into a directory: a directory beside the copy", "site", "", []string{"site/ok", "other/evil"}},
		{"to a new name: a file beside the copy", "site", "out", []string{"site/ok", "evil"}},
		{"to a new name: a directory beside the copy", "site", "out", []string{"site/ok", "other/evil"}},
		{"a name that only starts like the copy's", "site", "out", []string{"site/ok", "site2/evil"}},
		{"a file copied to a new name, then another", "app.conf", "copy.conf", []string{"app.conf", "evil"}},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, n := range tt.names {
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: 1}); err != nil {
					t.Fatal(err)
				}
				tw.Write([]byte("x"))
			}
			tw.Close()
			d := t.TempDir()
			var warn bytes.Buffer
			err := untar(&buf, d, tt.from, tt.rename, &warn)
			if err == nil || !strings.Contains(err.Error(), "tar contents corrupted") {
				t.Errorf("untar: %v, want kubectl's tar contents corrupted", err)
			}
			copied := tt.rename
			if copied == "" {
				copied = tt.from
			}
			for f := range readTree(t, d) {
				if f != copied && !strings.HasPrefix(f, copied+"/") {
					t.Errorf("wrote %s beside the copy %s", f, copied)
				}
			}
		})
	}
}
