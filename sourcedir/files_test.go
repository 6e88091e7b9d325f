package sourcedir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/fsnotify/fsnotify"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// What a manifests directory may hold: a regular file, or a symbolic link
// to one that stays inside the directory. The controller reads DIR as its
// own user: a link out of DIR would read any file that user can (and
// apply it, or show it in an error), a named pipe or a device would block
// or never end. Such an entry is refused and named, as an invalid file
// is: its objects are kept, nothing is deleted, the rest is applied.
func TestManifestsDirRefusesWhatIsNotAFileInside(t *testing.T) {
	tests := []struct {
		name string
		// setup makes the entry under test in dir (root holds dir).
		setup func(t *testing.T, root, dir string) string
		// refused is the message's part that says why, "" when the
		// entry is read.
		refused string
		// leak is an object that must not be applied, "" for none.
		leak string
	}{
		{"a link to a file outside the directory", func(t *testing.T, root, dir string) string {
			write(t, filepath.Join(root, "outside", "leak.yaml"), deployment("leak", "leak:1"))
			return link(t, filepath.Join(root, "outside", "leak.yaml"), filepath.Join(dir, "leak.yaml"))
		}, "outside the directory DIR", "leak"},
		{"a relative link climbing out of the directory", func(t *testing.T, root, dir string) string {
			write(t, filepath.Join(root, "outside", "leak.yaml"), deployment("leak", "leak:1"))
			return link(t, "../outside/leak.yaml", filepath.Join(dir, "leak.yaml"))
		}, "outside the directory DIR", "leak"},
		{"a link to a device", func(t *testing.T, _, dir string) string {
			return link(t, "/dev/zero", filepath.Join(dir, "zero.yaml"))
		}, "outside the directory DIR", ""},
		{"a named pipe", func(t *testing.T, _, dir string) string {
			p := filepath.Join(dir, "pipe.yaml")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, "not a regular file", ""},
		{"a link to a named pipe inside the directory", func(t *testing.T, _, dir string) string {
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
			return link(t, "pipe", filepath.Join(dir, "pipe.yaml"))
		}, "not a regular file", ""},
		{"a link to a directory inside the directory", func(t *testing.T, _, dir string) string {
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			return link(t, "sub", filepath.Join(dir, "sub.yaml"))
		}, "not a regular file", ""},
		{"a file larger than the cap", func(t *testing.T, _, dir string) string {
			p := filepath.Join(dir, "big.yaml")
			write(t, p, deployment("big", "big:1")+"# "+strings.Repeat("x", manifests.MaxInputSize)+"\n")
			return p
		}, "limit", "big"},
		{"a link to a file inside the directory is read", func(t *testing.T, _, dir string) string {
			write(t, filepath.Join(dir, "base", "api.yaml.in"), deployment("api", "api:1"))
			return link(t, "base/api.yaml.in", filepath.Join(dir, "api.yaml"))
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "m")
			write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
			write(t, filepath.Join(dir, "old.yaml"), deployment("old", "old:1"))
			f := newFixture(t, Options{Paths: []string{dir}})
			f.sync()
			if err := os.Remove(filepath.Join(dir, "old.yaml")); err != nil {
				t.Fatal(err)
			}
			entry := tt.setup(t, root, dir)
			f.sync()
			live, st := f.live(), f.status()[0]
			if tt.leak != "" && live[tt.leak] != "" {
				t.Errorf("%s applied from %s: live %v", tt.leak, entry, live)
			}
			if live["web"] == "" {
				t.Errorf("web not applied beside the entry: live %v", live)
			}
			if tt.refused == "" {
				if !st.Ready || live["api"] == "" || live["old"] != "" {
					t.Errorf("a link inside the directory: status %+v, live %v", st, live)
				}
				return
			}
			why := strings.ReplaceAll(tt.refused, "DIR", dir)
			if st.Ready || st.Reason != "InvalidManifests" || !reflect.DeepEqual(st.Errors, []string{entry}) || !strings.Contains(st.Message, why) {
				t.Errorf("status %+v, want InvalidManifests naming %s and saying %q", st, entry, why)
			}
			if live["old"] == "" {
				t.Errorf("old deleted while %s is refused: live %v", entry, live)
			}
			if tt.leak != "" && strings.Contains(st.Message, "image") {
				t.Errorf("the refusal shows the file's content: %q", st.Message)
			}
		})
	}
}

// link makes a symbolic link at name to target and returns name.
func link(t *testing.T, target, name string) string {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// --manifests naming a named pipe (a file path, not a directory): opening
// it to read waits for a writer, which would stall every later sync. The
// writer here opens the pipe as soon as anyone reads it and writes a
// manifest once, so that a sync that does wait is released and applies it.
func TestManifestsPathThatIsANamedPipeIsRefused(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "web.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Paths: []string{pipe}})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// ENXIO until a reader has the pipe open.
			w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			_, _ = w.WriteString(deployment("web", "web:1"))
			_ = w.Close()
			return
		}
	}()
	_, err := f.s.Sync()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if live := f.live(); live["web"] != "" {
		t.Errorf("the sync read the named pipe (it waited for a writer): live %v", live)
	}
	if st := f.status()[0]; st.Ready || !reflect.DeepEqual(st.Errors, []string{pipe}) || !strings.Contains(st.Message, "not a regular file") {
		t.Errorf("status %+v, want the pipe refused as not a regular file", st)
	}
}

// A read that does not return (a file on a mount whose server is gone)
// is given up after the read timeout: the file is refused, the rest is
// applied, and the next sync does not start a second read of it while
// the first one still hangs.
func TestManifestsFileReadHasADeadline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(dir, "slow.yaml"), deployment("slow", "slow:1"))
	// Long enough for web.yaml's read on a loaded machine; slow.yaml's
	// never returns.
	f := newFixture(t, Options{Paths: []string{dir}, ReadTimeout: 2 * time.Second})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var mu sync.Mutex
	reads := 0
	f.s.files.readAll = func(file *os.File) ([]byte, error) {
		if filepath.Base(file.Name()) == "slow.yaml" {
			mu.Lock()
			reads++
			mu.Unlock()
			<-release
			return nil, errors.New("released")
		}
		return readCapped(file)
	}
	for i := range 2 {
		f.sync()
		slow := filepath.Join(dir, "slow.yaml")
		if st := f.status()[0]; st.Ready || !reflect.DeepEqual(st.Errors, []string{slow}) || !strings.Contains(st.Message, "read") {
			t.Errorf("sync %d: status %+v, want slow.yaml refused", i, st)
		}
		if got, want := f.live(), map[string]string{"web": "web:1 " + store.DirectoryManager(dir)}; !reflect.DeepEqual(got, want) {
			t.Errorf("sync %d: live %v, want %v", i, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if reads != 1 {
		t.Errorf("%d reads of the hanging file, want 1: a second sync must not pile up another", reads)
	}
}

// A link out of the directory is refused without the controller looking
// at what it names: resolving it (lstat on the way, as EvalSymlinks does)
// would stall the sync for every object on a mount that hangs (a dead NFS
// server, a FUSE server that does not answer), out of reach of the read
// deadline. The mount here is a FUSE file system whose server records
// every request and answers "no such file": any request is a place where
// a hung server would have stalled the sync.
func TestManifestsLinkOutIsRefusedWithoutLookingOutside(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	mnt := filepath.Join(root, "mnt")
	requests := mountRecordingFUSE(t, mnt)
	link(t, filepath.Join(mnt, "probe", "leak.yaml"), filepath.Join(dir, "leak.yaml"))
	link(t, "../mnt/probe/rel.yaml", filepath.Join(dir, "rel.yaml"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link(t, "../../mnt/probe", filepath.Join(dir, "sub", "out"))
	link(t, "sub/out/through.yaml", filepath.Join(dir, "through.yaml"))
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	f.s.rewatch(w)
	if got := requests(); len(got) > 0 {
		t.Errorf("the sync asked %v of a mount outside the directory", got)
	}
	st := f.status()[0]
	for _, name := range []string{"leak.yaml", "rel.yaml", "through.yaml"} {
		if !slices.Contains(st.Errors, filepath.Join(dir, name)) {
			t.Errorf("%s not refused: status %+v", name, st)
		}
	}
	if !strings.Contains(st.Message, "outside the directory") {
		t.Errorf("status %+v, want the links refused as leading outside the directory", st)
	}
	if live := f.live(); live["web"] == "" {
		t.Errorf("web not applied beside the links: live %v", live)
	}
}

// mountRecordingFUSE mounts at mnt a FUSE file system served here: it
// answers every request but its start with ENOENT and records it (a
// lookup with its name); the returned function lists them. Unmounted at
// the test's end.
func mountRecordingFUSE(t *testing.T, mnt string) func() []string {
	t.Helper()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no FUSE here (%v): needs root and /dev/fuse", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := syscall.Mount("dockctl-test", mnt, "fuse", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		_ = syscall.Close(fd)
		t.Skipf("cannot mount FUSE here (%v): needs root", err)
	}
	var mu sync.Mutex
	var names []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<17)
		for {
			n, err := syscall.Read(fd, buf)
			if err == syscall.EINTR || err == syscall.EAGAIN {
				continue
			}
			if err != nil || n < 40 {
				return // unmounted: ENODEV
			}
			// fuse_in_header: len, opcode, unique, nodeid, uid, gid, pid, padding.
			opcode := binary.LittleEndian.Uint32(buf[4:8])
			unique := binary.LittleEndian.Uint64(buf[8:16])
			const opLookup, opInit, opForget, opBatchForget = 1, 26, 2, 42
			var reply []byte
			switch opcode {
			case opForget, opBatchForget:
				continue // no reply
			case opInit:
				// fuse_out_header then the fuse_init_out of protocol 7.12
				// (major, minor, max_readahead, flags, max_background,
				// congestion_threshold, max_write).
				reply = make([]byte, 16+24)
				binary.LittleEndian.PutUint32(reply[16:], 7)
				binary.LittleEndian.PutUint32(reply[20:], 12)
				binary.LittleEndian.PutUint32(reply[36:], 4096)
			default:
				req := fmt.Sprintf("opcode %d", opcode)
				if opcode == opLookup {
					req = "lookup " + strings.TrimRight(string(buf[40:n]), "\x00")
				}
				mu.Lock()
				names = append(names, req)
				mu.Unlock()
				reply = make([]byte, 16)
				errno := -int32(syscall.ENOENT)
				binary.LittleEndian.PutUint32(reply[4:], uint32(errno))
			}
			binary.LittleEndian.PutUint32(reply[0:], uint32(len(reply)))
			binary.LittleEndian.PutUint64(reply[8:], unique)
			_, _ = syscall.Write(fd, reply)
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		<-done
		_ = syscall.Close(fd)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names)
	}
}

// A link that stays inside is read wherever its text points from: an
// absolute link into the directory, by its resolved path or by the path
// as given (git-sync's link above the checkout), and a relative one
// through a linked subdirectory that stays inside.
func TestManifestsLinkInsideIsRead(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "wt1", "base", "a.in"), deployment("a", "a:1"))
	write(t, filepath.Join(root, "wt1", "base", "b.in"), deployment("b", "b:1"))
	write(t, filepath.Join(root, "wt1", "base", "c.in"), deployment("c", "c:1"))
	link(t, "wt1", filepath.Join(root, "current"))
	link(t, "base", filepath.Join(root, "wt1", "lib"))
	link(t, filepath.Join(root, "wt1", "base", "a.in"), filepath.Join(root, "wt1", "a.yaml"))
	link(t, filepath.Join(root, "current", "base", "b.in"), filepath.Join(root, "wt1", "b.yaml"))
	link(t, "lib/../base/c.in", filepath.Join(root, "wt1", "c.yaml"))
	dir := filepath.Join(root, "current")
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	m := " " + store.DirectoryManager(dir)
	if got, want := f.live(), map[string]string{"a": "a:1" + m, "b": "b:1" + m, "c": "c:1" + m}; !reflect.DeepEqual(got, want) {
		t.Errorf("live %v, want %v (status %+v)", got, want, f.status()[0])
	}
}

// A manifest kept as a symbolic link (a shared base, an overlay made of
// links) whose target is missing for a moment — replaced by a checkout,
// or on a volume not mounted yet — is a file that cannot be read: the
// package doc and the README promise that while any file is refused,
// nothing is deleted. Skipping a dangling link silently would delete the
// object it declared. (The link stays inside the directory: a link out of
// it is refused whatever its target.)
func TestDanglingManifestLinkDeletesNothing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	shared := filepath.Join(dir, "shared")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(shared, "api.in"), deployment("api", "api:1"))
	if err := os.Symlink(filepath.Join(shared, "api.in"), filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Paths: []string{dir}})
	f.sync()
	mgr := store.DirectoryManager(dir)
	want := map[string]string{"web": "web:1 " + mgr, "api": "api:1 " + mgr}
	if got := f.live(); !reflect.DeepEqual(got, want) {
		t.Fatalf("live %v, want %v", got, want)
	}
	// The link's target goes away for a while (the link stays).
	if err := os.Rename(filepath.Join(shared, "api.in"), filepath.Join(shared, "api.in.moving")); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.live(); !reflect.DeepEqual(got, want) {
		t.Errorf("a dangling manifest link: live %v, want %v (an unreadable file must delete nothing)", got, want)
	}
	if st := f.status(); st[0].Ready {
		t.Errorf("status %+v: the unreadable link is not reported", st[0])
	}
}

// asUnprivileged runs fn on a thread without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH when the test runs as root, so that a mode 000
// directory is unreadable to it as it is to a controller that is not
// root. Capabilities are per thread on Linux: the thread is dropped
// afterwards (the goroutine exits locked).
func asUnprivileged(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		hdr := struct {
			version uint32
			pid     int32
		}{0x20080522, 0} // _LINUX_CAPABILITY_VERSION_3, this thread
		var data [2]struct{ effective, permitted, inheritable uint32 }
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			done <- e
			return
		}
		data[0].effective &^= 1<<1 | 1<<2 // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			done <- e
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("dropping capabilities: %v", err)
	}
}

// One subdirectory that cannot be read (permission denied: a checkout
// made by another user, a mount not ready) must not make the whole path
// "unreadable", the files found elsewhere in it thrown away: with
// --allow-empty, once that had lasted --allow-empty-after, the sync would
// delete every object of the path — including web, whose file is still
// there and readable. The README's --allow-empty is for a directory that
// is empty or unreadable, not for deleting what it visibly holds.
func TestUnreadableSubdirectoryKeepsTheReadableObjects(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	write(t, filepath.Join(dir, "web.yaml"), deployment("web", "web:1"))
	write(t, filepath.Join(dir, "team", "api.yaml"), deployment("api", "api:1"))
	f := newFixture(t, Options{Paths: []string{dir}, AllowEmpty: true, AllowEmptyAfter: time.Minute})
	f.sync()
	if n := len(f.live()); n != 2 {
		t.Fatalf("live %v", f.live())
	}
	if err := os.Chmod(filepath.Join(dir, "team"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "team"), 0o755) })
	var errs []error
	sync := func() {
		asUnprivileged(t, func() {
			if _, err := f.s.Sync(); err != nil {
				errs = append(errs, err)
			}
		})
	}
	sync()
	if st := f.status(); st[0].Ready {
		t.Fatalf("the unreadable subdirectory is not seen (status %+v): the test cannot show anything", st[0])
	}
	f.clock.Step(time.Minute + time.Second)
	sync()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := f.live(); got["web"] == "" {
		t.Errorf("web deleted though web.yaml is still in the directory and readable (only team/ is unreadable): live %v, status %+v", got, f.status()[0])
	}
}
