package sourcedir

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

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
// made by another user, a mount not ready) makes the whole path
// "unreadable", the files found elsewhere in it thrown away. With
// --allow-empty, once that has lasted --allow-empty-after, the sync
// deletes every object of the path — including web, whose file is still
// there and readable. The README's --allow-empty is for a directory that
// is empty or unreadable, not for deleting what it visibly holds.
func TestReview12bUnreadableSubdirectoryDeletesReadableObjects(t *testing.T) {
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
