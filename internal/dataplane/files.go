package dataplane

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"

	"github.com/dockctl/dockctl/internal/atomicfiles"
	"github.com/dockctl/dockctl/internal/helperapi"
)

// maxFilesPayload bounds a `helper files` payload: a pod's file volumes,
// each source at most 1 MiB (the API server's limit), base64 in JSON.
const maxFilesPayload = 64 << 20

// runFiles is `helper files`, run by the controller in a writer container
// of its own (dockerx.RunFilesWriter), never in a namespace of the pod:
// it reads a helperapi.FilesPayload from stdin and writes each volume
// atomically under --root (helperapi.VolumesDir). It prints a
// helperapi.FilesResult. Its messages name volumes and paths, never a
// file's content (a payload may hold Secret values). With --check NAMES it
// reads nothing and only tells whether each of those volumes under --root
// holds a version (Written).
func runFiles(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("helper files", flag.ContinueOnError)
	root := fs.String("root", helperapi.VolumesDir, "where the pod's volumes are mounted")
	check := fs.String("check", "", "the file volumes (comma-separated): exit 0 if each holds a written version, 1 if not")
	var subPaths []string
	fs.Func("subpath", "VOLUME:SUBPATH (repeated): exit 0 if each resolves inside its volume, 1 if not", func(s string) error {
		subPaths = append(subPaths, s)
		return nil
	})
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if err := notDumpable(); err != nil {
		fmt.Fprintln(stderr, "error: making the writer non-dumpable:", err)
		return helperapi.ExitFailed
	}
	if len(subPaths) > 0 {
		var errs []error
		for _, vs := range subPaths {
			vol, sub, _ := strings.Cut(vs, ":")
			errs = append(errs, CheckSubPath(*root, vol, sub))
		}
		if err := errors.Join(errs...); err != nil {
			// On stdout: the controller names it in the pod's
			// ReplicaFailure (volumes and paths, never contents).
			fmt.Fprintln(stdout, strings.ReplaceAll(err.Error(), "\n", "; "))
			return helperapi.ExitFailed
		}
		return helperapi.ExitOK
	}
	if *check != "" {
		if !Written(*root, strings.Split(*check, ",")) {
			return helperapi.ExitFailed
		}
		return helperapi.ExitOK
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxFilesPayload+1))
	if err != nil || len(raw) > maxFilesPayload {
		fmt.Fprintln(stderr, "error: reading the payload from stdin:", cmp.Or(err, fmt.Errorf("over %d bytes", maxFilesPayload)))
		return helperapi.ExitUsage
	}
	var p helperapi.FilesPayload
	if err := decodeStrict(raw, &p); err != nil {
		// A JSON error may quote the input: say where it failed only.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			fmt.Fprintf(stderr, "error: the payload is not valid JSON (offset %d)\n", se.Offset)
		case errors.As(err, &te):
			fmt.Fprintf(stderr, "error: the payload's field %q has the wrong type\n", te.Field)
		default:
			fmt.Fprintln(stderr, "error: the payload is not a files payload")
		}
		return helperapi.ExitUsage
	}
	res, err := WriteFiles(*root, p)
	if err != nil {
		// On stdout too: the controller reads only that (it names
		// volumes and paths, never contents).
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		fmt.Fprintln(stderr, "error:", msg)
		fmt.Fprintln(stdout, "error:", msg)
		return helperapi.ExitFailed
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(out))
	return helperapi.ExitOK
}

// Written reports whether each of the file volumes under root holds a
// version an earlier write made (its "..data" link): what a restarted
// controller asks of a pod it did not write, so that a pod whose ConfigMap
// or Secret is gone since keeps its last files, as the kubelet keeps a
// mounted volume. The controller names the volumes: the holder mounts the
// pod's emptyDirs beside them, which the writer never writes.
func Written(root string, volumes []string) bool {
	if len(volumes) == 0 {
		return false
	}
	for _, v := range volumes {
		if v == "" || strings.ContainsAny(v, "/\x00") || strings.HasPrefix(v, ".") {
			return false
		}
		if _, err := os.Lstat(filepath.Join(root, v, atomicfiles.DataDirName)); err != nil {
			return false
		}
	}
	return true
}

// CheckSubPath tells whether subPath sub of the volume mounted at
// root/volume resolves inside it, as the daemon will resolve the bind of
// it: following every link on the way. It resolves sub twice — scoped to
// the volume, each link taken as if the volume were the root
// (securejoin, the kubelet's answer to CVE-2017-1002101), and as the
// kernel does — and any difference means a link leads out. Before that,
// any link that leaves the volume on the way is refused (leavesVolume):
// the daemon resolves the bind from the volume's path on the host, where
// a link that climbs out and comes back by the same names here leads to
// another tree. A path that does not exist is inside only when no link is
// on the way (Docker then makes it a directory there, as the kubelet
// does).
func CheckSubPath(root, volume, sub string) error {
	if volume == "" || strings.ContainsAny(volume, "/\x00") || strings.HasPrefix(volume, ".") {
		return fmt.Errorf("volume %q: not a volume name", volume)
	}
	if !filepath.IsLocal(sub) {
		return fmt.Errorf("subPath %q of volume %s leaves the volume", sub, volume)
	}
	dir := filepath.Join(root, volume)
	// Whatever lies above the volume is another tree for the daemon
	// (the volume's path on the host) than for this writer (its mount
	// under root): a link that leaves it — absolute, or climbing above it
	// — is refused even where it would come back in here.
	if leaves, err := leavesVolume(dir, sub); err != nil {
		return fmt.Errorf("subPath %q of volume %s: %w", sub, volume, err)
	} else if leaves {
		return fmt.Errorf("subPath %q of volume %s leads out of the volume through a link", sub, volume)
	}
	scoped, err := securejoin.SecureJoin(dir, sub)
	if err != nil {
		return fmt.Errorf("subPath %q of volume %s: %w", sub, volume, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, sub))
	switch {
	case err == nil && real == scoped:
		return nil
	case errors.Is(err, fs.ErrNotExist) && scoped == filepath.Join(dir, sub):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("subPath %q of volume %s: %w", sub, volume, err)
	}
	return fmt.Errorf("subPath %q of volume %s leads out of the volume through a link", sub, volume)
}

// maxLinks bounds the links one resolution follows, as the kernel's
// limit (40) and securejoin's (255) do.
const maxLinks = 255

// leavesVolume walks sub component by component from dir, following each
// link as the kernel does, and reports whether the walk ever leaves dir:
// a link with an absolute target, or a ".." at dir itself. It never
// depends on what lies above dir, so its answer is the daemon's on the
// host as much as the writer's. A missing component ends nothing (the
// daemon makes a missing bind source a directory).
func leavesVolume(dir, sub string) (bool, error) {
	cur, rest, links := "", sub, 0 // cur: relative to dir, free of links
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, "/")
		switch part {
		case "", ".":
			continue
		case "..":
			if cur == "" {
				return true, nil
			}
			if cur = filepath.Dir(cur); cur == "." {
				cur = ""
			}
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(filepath.Join(dir, next))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			cur = next
			continue
		case err != nil:
			return false, err
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return false, syscall.ELOOP
		}
		target, err := os.Readlink(filepath.Join(dir, next))
		if err != nil {
			return false, err
		}
		if filepath.IsAbs(target) {
			return true, nil
		}
		rest = target + "/" + rest
	}
	return false, nil
}

// WriteFiles writes every volume of p under root, each atomically. A
// volume's directory must exist (it is the volume's mount point): one that
// does not is an error, so that nothing is ever written into the holder's
// own writable layer in its stead.
func WriteFiles(root string, p helperapi.FilesPayload) (helperapi.FilesResult, error) {
	var res helperapi.FilesResult
	var errs []error
	for _, v := range p.Volumes {
		if v.Name == "" || strings.ContainsAny(v.Name, "/\x00") || strings.HasPrefix(v.Name, ".") {
			errs = append(errs, fmt.Errorf("volume %q: not a volume name", v.Name))
			continue
		}
		dir := filepath.Join(root, v.Name)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("volume %s: %s is not mounted", v.Name, dir))
			continue
		}
		files := make(map[string]atomicfiles.File, len(v.Files))
		for _, f := range v.Files {
			if _, dup := files[f.Path]; dup {
				errs = append(errs, fmt.Errorf("volume %s: path %q given twice", v.Name, f.Path))
				continue
			}
			files[f.Path] = atomicfiles.File{Data: f.Data, Mode: fs.FileMode(f.Mode) & fs.ModePerm}
		}
		w := &atomicfiles.Writer{Dir: dir, FSGroup: v.FSGroup}
		r, err := w.Write(files)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
			continue
		}
		res.Volumes = append(res.Volumes, helperapi.FilesVolumeResult{Name: v.Name, Changed: r.Changed, Version: r.Version})
	}
	return res, errors.Join(errs...)
}

// runHold is `helper hold`, the command of a pod's holder when the pod has
// file volumes (the assembled holder cannot run the writer): it keeps the
// pod's namespaces and volumes, reaps the children it inherits as PID 1
// (shareProcessNamespace), and exits 0 at once on SIGTERM or SIGINT.
func runHold(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("helper hold", flag.ContinueOnError)
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if err := notDumpable(); err != nil {
		fmt.Fprintln(stderr, "error: making the holder non-dumpable:", err)
		return helperapi.ExitFailed
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	reap()
	for {
		select {
		case <-ctx.Done():
			return helperapi.ExitOK
		case <-chld:
			reap()
		}
	}
}

// reap collects every exited child.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
