package sourcedir

import (
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

	"github.com/dockctl/dockctl/manifests"
)

// DefaultReadTimeout bounds the read of one manifest file: a file that
// blocks (on a mount whose server is gone) must not stall the sync of
// every other object.
const DefaultReadTimeout = 10 * time.Second

// A manifests path is read with the controller's own rights, which are not
// the rights of whoever writes the checkout. So a directory yields only
// what it holds: its regular files, and symbolic links to regular files
// that stay inside it (a link is resolved inside the directory, never
// through a link out of it: a file of the host would otherwise be read,
// applied, or quoted in an error). Anything else that has a manifest's
// name — a link out, a named pipe, a device, a socket, a link to a
// directory — is refused and named, as an invalid file is: its objects
// are kept and nothing is deleted while it is there. Each file is read
// with apply's size cap and a deadline.

// manifestFile is a file list found.
type manifestFile struct {
	at     string // its path under the path as resolved
	target string // at with its link resolved: the file to open
}

// list returns the manifest files of real, the path as resolved (a
// directory, searched recursively in lexical order, or a file), the
// entries it refuses and the directories below it that cannot be listed,
// each by its path under real; err when real itself cannot be listed.
// path is the path as given, for the messages.
func list(path, real string) (files []manifestFile, refused, unreadable map[string]error, err error) {
	fi, err := os.Stat(real)
	if err != nil {
		return nil, nil, nil, err
	}
	if !fi.IsDir() {
		return []manifestFile{{real, real}}, nil, nil, nil // its type is judged when it is opened
	}
	refused, unreadable = map[string]error{}, map[string]error{}
	// WalkDir follows no link to a directory: what it lists is inside.
	_ = filepath.WalkDir(real, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			if p == real {
				err = fmt.Errorf("%s: %w", path, bare(werr))
			} else {
				unreadable[p] = bare(werr)
			}
			return nil
		}
		if d.IsDir() || !manifests.IsManifestName(p) {
			return nil
		}
		target := p
		if d.Type()&fs.ModeSymlink != 0 {
			var terr error
			target, _, terr = resolveInside(path, real, p)
			var out *outsideError
			switch {
			case errors.As(terr, &out):
				refused[p] = fmt.Errorf("symbolic link to %s, outside the directory %s: refused (a manifest may link only to a file inside it)", out.to, path)
				return nil
			case terr != nil && strings.HasPrefix(d.Name(), ".#"):
				return nil // an Emacs lock link, dangling by design
			case terr != nil:
				// Dangling: refused, as kubectl fails on it, rather than
				// its objects silently missing.
				to, _ := os.Readlink(p)
				refused[p] = fmt.Errorf("symbolic link to %s: %w", to, bare(terr))
				return nil
			}
		} else if !d.Type().IsRegular() {
			refused[p] = notRegular(d.Type())
			return nil
		}
		files = append(files, manifestFile{p, target})
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return files, refused, unreadable, nil
}

// outsideError: a link leads out of the directory, to to.
type outsideError struct{ to string }

func (e *outsideError) Error() string { return "symbolic link to " + e.to + ", outside the directory" }

// resolveInside resolves p, a path under real (the directory path given
// as resolved), as the kernel would, following each link, but looking at
// nothing outside real: a link that leads out is refused from its text
// alone. EvalSymlinks would lstat where it leads, and on a mount that
// hangs (a dead NFS server, a FUSE server that does not answer) that
// stalls the sync, out of reach of the read deadline. An absolute link
// into path as given counts as one into real. It returns the resolved
// path and the links met on the way, p first when it is one; all are
// under real, which has no link in it.
func resolveInside(path, real, p string) (string, []string, error) {
	path = filepath.Clean(path)
	under := func(q string) ([]string, bool) {
		for _, base := range []string{real, path} {
			if rel, err := filepath.Rel(base, q); err == nil && manifests.Within(q, base) {
				return strings.Split(rel, "/"), true
			}
		}
		return nil, false
	}
	// outside names the way out: p's link, and the one leading out if
	// another.
	outside := func(l, to string) error {
		first, _ := os.Readlink(p)
		if l != p {
			first += " (" + l + " -> " + to + ")"
		}
		return &outsideError{to: first}
	}
	todo, ok := under(filepath.Clean(p))
	if !ok {
		return "", nil, outside(p, p)
	}
	var links []string
	cur := real
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			// cur holds no link: its parent is its lexical parent.
			if cur == real {
				l := p
				if len(links) > 0 {
					l = links[len(links)-1]
				}
				to, _ := os.Readlink(l)
				return "", nil, outside(l, to)
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if len(links) >= 40 { // the kernel's limit
			return "", nil, &fs.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		links = append(links, next)
		to, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		if filepath.IsAbs(to) {
			parts, ok := under(filepath.Clean(to))
			if !ok {
				return "", nil, outside(next, to)
			}
			cur, todo = real, append(parts, todo...)
		} else {
			todo = append(strings.Split(to, "/"), todo...)
		}
	}
	return cur, links, nil
}

// notRegular is the refusal of a file of type mode.
func notRegular(mode fs.FileMode) error {
	what := "a " + mode.Type().String()
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode.IsDir():
		what = "a directory"
	}
	return fmt.Errorf("not a regular file (%s): refused", what)
}

// bare drops the operation and path of an *fs.PathError: the message
// names the file already.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileReader reads manifest files with a size cap and a deadline.
type fileReader struct {
	timeout time.Duration
	// readAll reads an open file: readCapped (tests make it hang).
	readAll func(*os.File) ([]byte, error)
	mu      sync.Mutex
	// busy are the files whose read has not returned yet: a read given
	// up on is never started again while the first one still hangs, so
	// a file that blocks holds one goroutine, not one per sync.
	busy map[string]bool
}

func newFileReader(timeout time.Duration) *fileReader {
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	return &fileReader{timeout: timeout, readAll: readCapped, busy: map[string]bool{}}
}

// read opens name inside root, without following a link out of it, and
// reads it if it is a regular file. The open does not block (a named pipe
// without writer, a terminal), and open and read together are given up
// after the timeout. key names the file among the ones in flight.
func (r *fileReader) read(root *os.Root, name, key string) ([]byte, error) {
	r.mu.Lock()
	if r.busy[key] {
		r.mu.Unlock()
		return nil, errors.New("an earlier read of it has not returned yet: refused")
	}
	r.busy[key] = true
	r.mu.Unlock()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := r.open(root, name)
		r.mu.Lock()
		delete(r.busy, key)
		r.mu.Unlock()
		done <- result{data, err}
	}()
	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case res := <-done:
		return res.data, res.err
	case <-t.C:
		return nil, fmt.Errorf("its read did not finish within %v: refused (a file that blocks, on a mount that hangs?)", r.timeout)
	}
}

func (r *fileReader) open(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, bare(err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, bare(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi.Mode())
	}
	return r.readAll(f)
}

// readCapped reads f whole, refusing more than apply's cap
// (manifests.MaxInputSize).
func readCapped(f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, manifests.MaxInputSize+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", bare(err))
	}
	if len(data) > manifests.MaxInputSize {
		return nil, fmt.Errorf("larger than the %d MiB limit: refused", manifests.MaxInputSize>>20)
	}
	return data, nil
}
