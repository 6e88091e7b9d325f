package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/dockerx"
)

// cp copies files and directories between a pod's container and the
// local filesystem, as kubectl cp, through the Engine's archive endpoints
// (dockerx.CopyFrom, CopyTo) rather than a tar run in the container: no
// tar is needed in the image. Where kubectl and docker cp differ on a
// destination that is an existing directory, dockctl does as docker cp:
// the source is copied into it, under its own name.
//
// An archive read from a container is written by a process the user may
// not trust: extraction (untar) goes through an os.Root of the
// destination, so that no entry — an absolute name, a "..", or a path
// through a symbolic link, one already there or one of the archive —
// writes outside it; links of the archive are skipped, as kubectl skips
// them.

// cpSpec is one side of cp: a local path, or a path in pod of namespace.
type cpSpec struct {
	namespace, pod, path string
}

func (s cpSpec) remote() bool { return s.pod != "" }

// parseCpSpec reads kubectl's [NAMESPACE/]POD:PATH, or a local path (no
// colon).
func parseCpSpec(arg string) (cpSpec, error) {
	i := strings.Index(arg, ":")
	if i < 0 {
		return cpSpec{path: arg}, nil
	}
	pod, p := arg[:i], arg[i+1:]
	if p == "" {
		return cpSpec{}, errors.New("filepath can not be empty") // kubectl's words
	}
	s := cpSpec{pod: pod, path: p}
	if ns, name, ok := strings.Cut(pod, "/"); ok {
		if ns == "" || name == "" || strings.Contains(name, "/") {
			return cpSpec{}, fmt.Errorf("invalid pod %q: [NAMESPACE/]POD:PATH", pod)
		}
		s.namespace, s.pod = ns, name
	}
	return s, nil
}

func newCpCommand(g *globalOptions) *cobra.Command {
	var container string
	cmd := &cobra.Command{
		Use:   "cp [NAMESPACE/]POD:SRC DEST | SRC [NAMESPACE/]POD:DEST [-c CONTAINER]",
		Short: "Copy files and directories to and from a pod's container",
		Long: "Copy a file or a directory between a container of a pod and the local filesystem, as kubectl cp, through\n" +
			"Docker's archive API (no tar is needed in the image). A destination that is an existing directory receives\n" +
			"the source under its own name (as docker cp); any other destination is the copy's new name. Symbolic links\n" +
			"of a copy out of a container are skipped with a warning, and no entry is written outside the destination.",
		Example: `  # Copy /etc/nginx/nginx.conf of a pod to the current directory
  dockctl cp web-5d8f9c7b6a-0:/etc/nginx/nginx.conf ./nginx.conf

  # Copy a local directory into container sidecar of a pod of namespace team
  dockctl cp ./config team/web-5d8f9c7b6a-0:/etc/app -c sidecar`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf(cmd, "source and destination are required")
			}
			src, err := parseCpSpec(args[0])
			if err != nil {
				return err
			}
			dst, err := parseCpSpec(args[1])
			if err != nil {
				return err
			}
			switch {
			case src.remote() && dst.remote():
				return errors.New("one of src or dest must be a local file specification")
			case !src.remote() && !dst.remote():
				return errors.New("one of src or dest must be a remote file specification")
			}
			remote := src
			if dst.remote() {
				remote = dst
			}
			pg := *g
			if remote.namespace != "" {
				pg.namespace = remote.namespace
			}
			ctx := cmd.Context()
			st, cli, err := pg.openLive(ctx, false)
			if err != nil {
				return err
			}
			defer cli.Close()
			pod, _, err := pg.attachablePod(ctx, st, cli, podTarget{kind: kindPod, name: remote.pod}, 0)
			if err != nil {
				return err
			}
			pc, notice, err := runningContainer(pod, container)
			if notice != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), notice)
			}
			if err != nil {
				return err
			}
			if src.remote() {
				return copyFromContainer(ctx, cli, pc.Container.ID, src.path, dst.path, cmd.ErrOrStderr())
			}
			return copyToContainer(ctx, cli, pc.Container.ID, src.path, dst.path)
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container of the pod (default: as exec picks it)")
	return cmd
}

// copyFromContainer copies path of container id to local dest.
func copyFromContainer(ctx context.Context, cli *dockerx.Client, id, src, dest string, warn io.Writer) error {
	rc, stat, err := cli.CopyFrom(ctx, id, src)
	if errors.Is(err, dockerx.ErrNotFound) {
		return fmt.Errorf("%s: no such file or directory", src)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	// Into an existing directory: under the source's name. Else dest is
	// the copy's name: the archive's first component (the source's base
	// name) becomes dest's.
	dir, rename := dest, ""
	if fi, err := os.Stat(dest); err != nil || !fi.IsDir() {
		dir, rename = filepath.Dir(dest), filepath.Base(dest)
	}
	return untar(rc, dir, stat.Name, rename, warn)
}

// untar extracts the tar stream r into directory dir, renaming its first
// path component from to rename ("": kept). No entry is written outside
// dir: an absolute or ".." name is skipped with kubectl's warning, a
// link of the archive too, and os.Root refuses any path that resolves
// outside dir through a link already there.
func untar(r io.Reader, dir, from, rename string, warn io.Writer) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening the destination: %w", err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		if h.Typeflag == tar.TypeDir && path.Clean(h.Name) == "." {
			continue // the archive's root ("./", as tar -C DIR . writes it): the destination itself
		}
		name, ok := entryName(h.Name, from, rename)
		if !ok {
			fmt.Fprintf(warn, "warning: file %q is outside target destination, skipping\n", h.Name)
			continue
		}
		if !inCopiedPath(h.Name, from) {
			// The Engine's archive of a path holds that path's name and
			// what is under it, nothing else: another entry would land
			// beside the copy (~/.bashrc of cp POD:/data ~). kubectl
			// refuses such an archive whole.
			return fmt.Errorf("tar contents corrupted: %q is not under %q", h.Name, from)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, mode|0o700); err != nil {
				return fmt.Errorf("extracting %s: %w", h.Name, err)
			}
		case tar.TypeReg:
			if d := path.Dir(name); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("extracting %s: %w", h.Name, err)
				}
			}
			if err := writeEntry(root, name, mode, tr); err != nil {
				return fmt.Errorf("extracting %s: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			fmt.Fprintf(warn, "warning: skipping symlink: %q -> %q\n", name, h.Linkname) // kubectl's words
		default:
			fmt.Fprintf(warn, "warning: skipping %q: not a regular file or a directory\n", name)
		}
	}
}

// writeEntry writes a regular file of the archive, replacing a file (not
// following a link: os.Root refuses one that leads outside).
func writeEntry(root *os.Root, name string, mode fs.FileMode, r io.Reader) error {
	f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// entryName is the name an archive entry is extracted under, relative to
// the destination, with its first component from renamed; false for a
// name that is absolute or leaves the destination.
func entryName(name, from, rename string) (string, bool) {
	if name == "" || path.IsAbs(name) || strings.Contains(name, `\`) {
		return "", false
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	if rename != "" {
		first, rest, _ := strings.Cut(clean, "/")
		if first == from || from == "" {
			first = rename
		}
		clean = path.Join(first, rest)
	}
	if clean == "." {
		return "", false
	}
	return clean, true
}

// inCopiedPath tells whether archive entry name (one entryName took) is
// the copied path from or under it; any is when from names no single
// entry ("", "." or "/": the archive of a root).
func inCopiedPath(name, from string) bool {
	if from == "" || from == "." || from == "/" {
		return true
	}
	first, _, _ := strings.Cut(path.Clean(name), "/")
	return first == from
}

// copyToContainer copies local src to path dest of container id: into
// dest when it is a directory there, else as dest.
func copyToContainer(ctx context.Context, cli *dockerx.Client, id, src, dest string) error {
	if _, err := os.Lstat(src); err != nil {
		return fmt.Errorf("%s doesn't exist in local filesystem", src) // kubectl's words
	}
	dir, name := dest, filepath.Base(src)
	if s, err := cli.StatPath(ctx, id, dest); err != nil || !s.Mode.IsDir() {
		if err != nil && !errors.Is(err, dockerx.ErrNotFound) {
			return err
		}
		dir, name = path.Dir(dest), path.Base(dest)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarPath(pw, src, name)) }()
	err := cli.CopyTo(ctx, id, dir, pr)
	pr.Close()
	if errors.Is(err, dockerx.ErrNotFound) {
		return fmt.Errorf("%s: no such directory in the container", dir)
	}
	return err
}

// tarPath writes src (a file, a directory and what is under it, links as
// links) as a tar stream whose first component is name.
func tarPath(w io.Writer, src, name string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = path.Join(name, filepath.ToSlash(rel))
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.ModTime = "", "", fi.ModTime().Truncate(time.Second)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	return tw.Close()
}
