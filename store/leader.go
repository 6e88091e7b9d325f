package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// controllerLockRetry is how often a standby controller retries the leader
// lock: the takeover delay after the leader dies. A variable for tests.
var controllerLockRetry = 500 * time.Millisecond

// AcquireControllerLock makes this process the instance's only active
// controller by taking an exclusive flock on controller.lock. If another
// holds it, onWait (may be nil) is called once and the lock is retried every
// controllerLockRetry until it is obtained or ctx ends (ctx's error is then
// returned). The kernel drops a flock when its holder exits, however it
// exits, so no stale lock can outlive a crashed leader.
//
// release frees the lock; it is safe to call more than once.
func (s *Store) AcquireControllerLock(ctx context.Context, onWait func()) (release func(), err error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	lk := flock.New(filepath.Join(s.dir, controllerLockFile), flock.SetPermissions(filePerm))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("state directory %s: locking %s: %w", s.dir, controllerLockFile, err)
	}
	if !ok {
		if onWait != nil {
			onWait()
		}
		ok, err = lk.TryLockContext(ctx, controllerLockRetry)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("state directory %s: locking %s: %w", s.dir, controllerLockFile, err)
		}
		if !ok {
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(func() { _ = lk.Unlock() }) }, nil
}

// ControllerRunning reports whether some process holds the controller lock
// of this state directory, so that get can mark controller-only fields as
// possibly stale when no controller runs. It is a snapshot: the answer may
// change right after.
func (s *Store) ControllerRunning() (bool, error) {
	path := filepath.Join(s.dir, controllerLockFile)
	// Do not create the file: a read-only caller must not write, and a
	// missing file means no controller ever ran here.
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	lk := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := lk.TryLock()
	if err != nil {
		return false, fmt.Errorf("state directory %s: probing %s: %w", s.dir, controllerLockFile, err)
	}
	if ok {
		_ = lk.Unlock()
		return false, nil
	}
	return true, nil
}
