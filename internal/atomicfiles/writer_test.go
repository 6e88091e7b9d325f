package atomicfiles

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/testenv"
)

// visible returns what a reader of dir sees: every path reachable through
// the visible names (following the symlinks), with its bytes and mode.
func visible(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root := filepath.Join(dir, e.Name())
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(real, p)
			name := filepath.ToSlash(filepath.Join(e.Name(), rel))
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			out[name] = fi.Mode().Perm().String() + " " + string(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// versions lists the writer's timestamped directories in dir.
func versions(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestWriteSequence(t *testing.T) {
	type step struct {
		payload map[string]File
		changed bool
		want    map[string]string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first write, modes and nested paths", []step{{
			payload: map[string]File{
				"a":          {Data: []byte("A"), Mode: 0o644},
				"secret":     {Data: []byte("s3"), Mode: 0o400},
				"conf/x.yml": {Data: []byte("x: 1"), Mode: 0o600},
				"conf/y/z":   {Data: []byte("z"), Mode: 0o755},
			},
			changed: true,
			want: map[string]string{
				"a": "-rw-r--r-- A", "secret": "-r-------- s3", "conf/x.yml": "-rw------- x: 1", "conf/y/z": "-rwxr-xr-x z",
			},
		}}},
		{"the same payload again changes nothing", []step{
			{payload: map[string]File{"a": {Data: []byte("A"), Mode: 0o644}}, changed: true, want: map[string]string{"a": "-rw-r--r-- A"}},
			{payload: map[string]File{"a": {Data: []byte("A"), Mode: 0o644}}, changed: false, want: map[string]string{"a": "-rw-r--r-- A"}},
		}},
		{"a mode change alone is a change", []step{
			{payload: map[string]File{"a": {Data: []byte("A"), Mode: 0o644}}, changed: true, want: map[string]string{"a": "-rw-r--r-- A"}},
			{payload: map[string]File{"a": {Data: []byte("A"), Mode: 0o400}}, changed: true, want: map[string]string{"a": "-r-------- A"}},
		}},
		{"keys that went are removed, new ones appear", []step{
			{payload: map[string]File{"a": {Data: []byte("A"), Mode: 0o644}, "d/b": {Data: []byte("B"), Mode: 0o644}}, changed: true,
				want: map[string]string{"a": "-rw-r--r-- A", "d/b": "-rw-r--r-- B"}},
			{payload: map[string]File{"c": {Data: []byte("C"), Mode: 0o644}}, changed: true,
				want: map[string]string{"c": "-rw-r--r-- C"}},
		}},
		{"an empty payload empties the volume", []step{
			{payload: map[string]File{"a": {Data: []byte("A"), Mode: 0o644}}, changed: true, want: map[string]string{"a": "-rw-r--r-- A"}},
			{payload: map[string]File{}, changed: true, want: map[string]string{}},
			{payload: map[string]File{}, changed: false, want: map[string]string{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w := &Writer{Dir: dir}
			for i, s := range tt.steps {
				res, err := w.Write(s.payload)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if res.Changed != s.changed {
					t.Errorf("step %d: changed %v, want %v", i, res.Changed, s.changed)
				}
				got := visible(t, dir)
				if len(got) != len(s.want) {
					t.Errorf("step %d: visible %v, want %v", i, got, s.want)
				}
				for k, v := range s.want {
					if got[k] != v {
						t.Errorf("step %d: %s = %q, want %q", i, k, got[k], v)
					}
				}
				// Exactly one version is kept, the one ..data names.
				vs := versions(t, dir)
				if len(vs) != 1 || vs[0] != res.Version {
					t.Errorf("step %d: versions %v, want only %q", i, vs, res.Version)
				}
				if target, err := os.Readlink(filepath.Join(dir, DataDirName)); err != nil || target != res.Version {
					t.Errorf("step %d: ..data -> %q (%v), want %q", i, target, err, res.Version)
				}
			}
		})
	}
}

func TestWriteRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../../x", "..data", "..x", "a/..", strings.Repeat("a", 256)} {
		dir := t.TempDir()
		w := &Writer{Dir: dir}
		if _, err := w.Write(map[string]File{p: {Data: []byte("x"), Mode: 0o644}}); err == nil {
			t.Errorf("path %q: accepted", p)
		}
		if vs := versions(t, dir); len(vs) != 0 {
			t.Errorf("path %q: a version was made: %v", p, vs)
		}
	}
	w := &Writer{Dir: t.TempDir()}
	if _, err := w.Write(map[string]File{"a": {Mode: 0o644}, "a/b": {Mode: 0o644}}); err == nil {
		t.Error("a path that is both a file and a directory: accepted")
	}
}

func TestWriteFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "chown to another group needs root")
	}
	dir := t.TempDir()
	gid := int64(2345)
	w := &Writer{Dir: dir, FSGroup: &gid}
	res, err := w.Write(map[string]File{"k": {Data: []byte("v"), Mode: 0o400}, "d/k": {Data: []byte("v"), Mode: 0o600}})
	if err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]fs.FileMode{"k": 0o440, "d/k": 0o640} {
		fi, err := os.Stat(filepath.Join(dir, res.Version, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode || fi.Sys().(*syscall.Stat_t).Gid != uint32(gid) {
			t.Errorf("%s: mode %v gid %d, want %v gid %d", p, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid, mode, gid)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, res.Version, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSetgid == 0 || fi.Sys().(*syscall.Stat_t).Gid != uint32(gid) {
		t.Errorf("d: mode %v gid %d, want setgid and gid %d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid, gid)
	}
	// Written again, the group and the widened modes are "the same".
	again, err := w.Write(map[string]File{"k": {Data: []byte("v"), Mode: 0o400}, "d/k": {Data: []byte("v"), Mode: 0o600}})
	if err != nil || again.Changed {
		t.Errorf("second write: changed %v, err %v; want no change", again.Changed, err)
	}
}

// TestNoTornRead has readers read a file, through its visible name, while
// the writer swaps between two versions of different sizes and bytes: a
// reader sees one version or the other, whole, every time — never a mix or
// a partial file. A lookup that had resolved `..data` to the version being
// removed may find no file (the package doc's window, the kubelet's too):
// read again at once, it must find a whole version.
func TestNoTornRead(t *testing.T) {
	dir := t.TempDir()
	w := &Writer{Dir: dir}
	a := bytes.Repeat([]byte("a"), 256<<10)
	b := bytes.Repeat([]byte("b"), 300<<10)
	payload := func(data []byte) map[string]File {
		return map[string]File{"cfg": {Data: data, Mode: 0o644}, "dir/cfg": {Data: data, Mode: 0o644}}
	}
	if _, err := w.Write(payload(a)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, torn atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		name := []string{"cfg", "dir/cfg"}[r%2]
		wg.Go(func() {
			for !stop.Load() {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if errors.Is(err, fs.ErrNotExist) {
					got, err = os.ReadFile(filepath.Join(dir, name))
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					torn.Add(1)
					continue
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					torn.Add(1)
				}
				reads.Add(1)
			}
		})
	}
	deadline := time.Now().Add(2 * time.Second)
	swaps := 0
	for ; swaps < 400 && time.Now().Before(deadline); swaps++ {
		data := a
		if swaps%2 == 0 {
			data = b
		}
		res, err := w.Write(payload(data))
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
		if !res.Changed {
			t.Fatalf("swap %d: no change", swaps)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() > 0 {
		t.Fatalf("%d of %d reads saw a torn or missing file (first error: %v) over %d swaps", torn.Load(), reads.Load(), firstErr.Load(), swaps)
	}
	if reads.Load() == 0 || swaps < 10 {
		t.Fatalf("the test did not exercise the swap: %d reads, %d swaps", reads.Load(), swaps)
	}
}
