package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

const (
	instanceFile       = "instance"
	writeLockFile      = ".lock"
	controllerLockFile = "controller.lock"

	dirPerm  fs.FileMode = 0o700
	filePerm fs.FileMode = 0o600

	// formatVersion is written into every JSON file so that an older binary
	// refuses a file written in a newer format rather than misreading it.
	formatVersion = 1
)

var (
	// ErrNotFound is returned (wrapped) for a deployment that has no live
	// record: never known, or deleted (tombstoned).
	ErrNotFound = errors.New("not found")
	// ErrCorrupt is returned (wrapped) for a state file that cannot be
	// decoded. Atomic writes make this unexpected; it means outside damage.
	ErrCorrupt = errors.New("corrupt")
	// ErrReadOnly is returned by write methods of a store opened with
	// OpenReadOnly.
	ErrReadOnly = errors.New("state directory opened read-only")
)

// lockTimeout bounds the wait for the write lock. Write transactions last
// milliseconds, so a long wait means a stuck process: better a clear error
// than a command hanging forever. A variable so that tests can shorten it.
var lockTimeout = 30 * time.Second

// Store is an open state directory. Its methods are safe for concurrent use
// by several goroutines, and several processes may open the same directory.
type Store struct {
	dir      string
	instance string
	readOnly bool

	// mu serialises the write transactions of this process before they
	// contend for the flock, so that in-process writers queue instead of
	// polling. Other processes (and other Store values) are serialised by
	// the flock alone.
	mu sync.Mutex
}

// DefaultDir returns the default state directory: /var/lib/dockctl for root,
// otherwise $XDG_STATE_HOME/dockctl or ~/.local/state/dockctl. The
// --state-dir flag and DOCKCTL_STATE_DIR are the caller's business.
func DefaultDir() string {
	home, _ := os.UserHomeDir()
	return defaultDir(os.Geteuid(), os.Getenv("XDG_STATE_HOME"), home)
}

func defaultDir(euid int, xdgStateHome, home string) string {
	if euid == 0 {
		return "/var/lib/dockctl"
	}
	// The XDG spec says relative values are invalid and must be ignored.
	if xdgStateHome != "" && filepath.IsAbs(xdgStateHome) {
		return filepath.Join(xdgStateHome, "dockctl")
	}
	if home != "" {
		return filepath.Join(home, ".local", "state", "dockctl")
	}
	// No home directory: fall back to the system location; Open then
	// reports clearly that it is not writable, and --state-dir fixes it.
	return "/var/lib/dockctl"
}

// Open opens the state directory dir for instance, creating it (0700) if
// missing. The first Open records the instance; a later Open with another
// instance fails. It also checks that the directory is writable, so that a
// command fails up front with one clear line rather than halfway.
func Open(dir, instance string) (*Store, error) {
	if err := checkInstanceName(instance); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("state directory: empty path")
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, notWritable(dir, err)
	}
	// Whoever can write the state directory decides what the controller
	// runs: check it is private before reading anything from it.
	if err := checkPrivate(dir); err != nil {
		return nil, err
	}
	// Check ownership before touching anything else in the directory, so
	// a mistaken --instance leaves another instance's directory untouched.
	if err := checkOwner(dir, instance); err != nil {
		return nil, err
	}
	if err := probeWritable(dir); err != nil {
		return nil, notWritable(dir, err)
	}
	s := &Store{dir: dir, instance: instance}
	err := s.transaction(func() error {
		// Re-check under the lock: two first Opens racing with different
		// instances must not both succeed.
		owner, err := readOwner(dir)
		if err != nil {
			return err
		}
		if owner == "" {
			if err := writeFileAtomic(dir, instanceFile, []byte(instance+"\n")); err != nil {
				return fmt.Errorf("state directory %s: recording instance: %w", dir, err)
			}
		} else if owner != instance {
			return mismatch(dir, owner, instance)
		}
		// The directories of the default namespace, and namespaces/: a
		// directory of an earlier release gains the ones it lacks, and
		// keeps every file where it is.
		for _, sub := range append(subdirsOf(""), namespacesDir) {
			if err := os.Mkdir(filepath.Join(dir, sub), dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
				return notWritable(dir, err)
			}
		}
		dirs, err := s.stateDirs()
		if err != nil {
			return err
		}
		for _, d := range dirs[1:] { // the state directory itself was checked above
			if err := checkPrivateDir(filepath.Join(dir, d), !strings.HasPrefix(d, namespacesDir+string(filepath.Separator))); err != nil {
				return err
			}
		}
		// Under the write lock no temporary file belongs to a live writer,
		// so any left over is from a crashed one.
		for _, d := range dirs {
			if err := removeTempFiles(filepath.Join(dir, d)); err != nil {
				return fmt.Errorf("state directory %s: %w", dir, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens dir for reading only (get, describe, diff). A missing
// directory is an empty store, not an error: nothing has been applied yet.
// An instance mismatch is still an error. Write methods return ErrReadOnly.
func OpenReadOnly(dir, instance string) (*Store, error) {
	if err := checkInstanceName(instance); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("state directory: empty path")
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Store{dir: dir, instance: instance, readOnly: true}, nil
	case err != nil:
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("state directory %s: not a directory", dir)
	}
	if err := checkOwner(dir, instance); err != nil {
		return nil, err
	}
	return &Store{dir: dir, instance: instance, readOnly: true}, nil
}

// Dir returns the state directory's path.
func (s *Store) Dir() string { return s.dir }

// Instance returns the instance the store belongs to.
func (s *Store) Instance() string { return s.instance }

func checkInstanceName(instance string) error {
	if instance == "" {
		return errors.New("instance name: empty")
	}
	if strings.TrimSpace(instance) != instance || strings.ContainsAny(instance, "\n\r\x00/") {
		return fmt.Errorf("instance name %q: contains whitespace, '/' or control characters", instance)
	}
	return nil
}

// readOwner returns the recorded instance, or "" if none is recorded yet.
func readOwner(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, instanceFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("state directory %s: reading instance: %w", dir, err)
	}
	owner := strings.TrimSpace(string(b))
	if owner == "" {
		return "", fmt.Errorf("state directory %s: %w: %s is empty", dir, ErrCorrupt, instanceFile)
	}
	return owner, nil
}

func checkOwner(dir, instance string) error {
	owner, err := readOwner(dir)
	if err != nil {
		return err
	}
	if owner != "" && owner != instance {
		return mismatch(dir, owner, instance)
	}
	return nil
}

func mismatch(dir, owner, instance string) error {
	return fmt.Errorf("state directory %s belongs to instance %q, not %q", dir, owner, instance)
}

// geteuid is os.Geteuid; tests replace it to play another user.
var geteuid = os.Geteuid

// checkPrivate refuses a directory of the state that another user owns, and
// makes one of ours that others may write to private again (0700, as it is
// created): a record planted there would be run by the controller with its
// privileges. A shared directory (sticky bit, as /tmp) is refused rather
// than changed.
func checkPrivate(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state directory %s: not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := geteuid(); int(st.Uid) != uid {
			return fmt.Errorf("state directory %s is owned by uid %d, not by this user (uid %d): refusing to use it, since its owner decides what the controller runs (run dockctl as that user, or use another --state-dir)",
				dir, st.Uid, uid)
		}
	}
	mode := fi.Mode()
	if mode.Perm()&0o022 == 0 {
		return nil
	}
	if mode&fs.ModeSticky != 0 {
		return fmt.Errorf("state directory %s is a shared directory (mode %v): refusing to use it; use a directory of its own", dir, mode)
	}
	if err := os.Chmod(dir, dirPerm); err != nil {
		return fmt.Errorf("state directory %s is writable by other users (mode %v) and cannot be made private: %w", dir, mode.Perm(), err)
	}
	return nil
}

func notWritable(dir string, err error) error {
	return fmt.Errorf("state directory %s is not writable: %w", dir, err)
}

// probeWritable creates and removes a file: permission bits alone do not
// tell (root, ACLs, read-only mounts).
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	return errors.Join(cerr, rerr)
}

// transaction runs fn holding the store's write lock (in-process mutex, then
// the flock on .lock).
func (s *Store) transaction(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	lk := flock.New(filepath.Join(s.dir, writeLockFile), flock.SetPermissions(filePerm))
	if err := lockPolling(lk, lockTimeout); err != nil {
		return fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	defer func() { _ = lk.Unlock() }() // closing the fd releases the lock anyway
	return fn()
}

// lockPolling takes lk, polling with a short capped backoff. Polling rather
// than a blocking flock(2) keeps the wait bounded; transactions are short, so
// the added latency is a few milliseconds at most.
func lockPolling(lk *flock.Flock, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	delay := time.Millisecond
	for {
		ok, err := lk.TryLock()
		if err != nil {
			return fmt.Errorf("locking %s: %w", filepath.Base(lk.Path()), err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("locked by another dockctl process: gave up after %s", timeout)
		case <-time.After(delay):
		}
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}

// readFile reads a state file. A store that writes (the controller, apply)
// reads only regular files of its own user, never through a symbolic link:
// a file another user planted while a directory was open to them (Open
// makes it private again, but what is already there stays) is theirs to
// rewrite, and must not decide what the controller runs.
func (s *Store) readFile(rel string) ([]byte, error) {
	path := filepath.Join(s.dir, rel)
	if s.readOnly {
		return os.ReadFile(path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("a symbolic link: refusing to follow it (state files are written by dockctl, never links)")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (mode %v)", fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := geteuid(); int(st.Uid) != uid {
			return nil, fmt.Errorf("owned by uid %d, not by this user (uid %d): refusing it, since its owner could decide what the controller runs", st.Uid, uid)
		}
	}
	return io.ReadAll(f)
}

// storeNow is the clock of the records' and statuses' time stamps: a
// variable so that a test can make the state directory's bytes
// reproducible (the layout golden test).
var storeNow = func() time.Time { return time.Now().UTC() }
