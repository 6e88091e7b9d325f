// Package kustomize renders a kustomization directory as `kubectl
// kustomize DIR` does (kustomize's krusty, with kubectl's defaults: the
// load restrictor LoadRestrictionsRootOnly, no plugins, no Helm), for
// `dockctl kustomize`, `apply|diff|delete -k` and a manifests directory
// that holds a kustomization (docs/design.md §14).
//
// Invariants:
//   - Local only. Nothing is fetched: a remote base, component or file (a
//     git URL, an http(s) URL) is refused before kustomize would try to
//     clone or download it, with a message that names it.
//   - Read-only. Building never writes under the directory.
package kustomize

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// File is the kustomization file of dir (kustomization.yaml,
// kustomization.yml or Kustomization, as kustomize looks for them), ""
// when dir holds none or is not a directory.
func File(dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Build renders dir as `kubectl kustomize dir`: the YAML stream of every
// object, generators run (ConfigMaps and Secrets with their hash
// suffixes, and the references to them rewritten), transformers applied.
func Build(dir string) ([]byte, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("kustomize %s: not a directory (give the directory holding kustomization.yaml)", dir)
	}
	if File(dir) == "" {
		return nil, fmt.Errorf("kustomize %s: no kustomization file (%s) in the directory", dir, strings.Join(konfig.RecognizedKustomizationFileNames(), ", "))
	}
	if err := checkLocal(dir, map[string]bool{}); err != nil {
		return nil, err
	}
	// kubectl kustomize's defaults: files only from below the
	// kustomization's root, no exec or container plugins, no Helm, and
	// its --reorder=legacy (namespaces, then configmaps and secrets, ...,
	// then workloads), so that the output is the same.
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	k := krusty.MakeKustomizer(opts)
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return out, nil
}

// ErrRemote is the error of a kustomization that refers to something
// that would have to be fetched.
var ErrRemote = errors.New("dockctl builds kustomizations from local files only")

// checkLocal refuses a kustomization (dir's, and those of the local
// directories it refers to) that names a remote resource, base, component
// or file. kustomize tries an entry as a local path first and only then
// as a URL, so an entry that exists on disk is local whatever it looks
// like.
func checkLocal(dir string, seen map[string]bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if seen[abs] {
		return nil
	}
	seen[abs] = true
	file := File(dir)
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("kustomize %s: %w", dir, err)
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		// kustomize's own error is the better one.
		return nil
	}
	k.FixKustomization()
	refs := append(append(append([]string{}, k.Resources...), k.Components...), k.Crds...)
	for _, r := range refs {
		p := r
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, r)
		}
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			if err := checkLocal(p, seen); err != nil {
				return err
			}
		case err == nil:
		case errors.Is(err, fs.ErrNotExist) && remote(r):
			return remoteError(file, r)
		}
	}
	var files []string
	for _, p := range k.Patches {
		files = append(files, p.Path)
	}
	for _, g := range k.ConfigMapGenerator {
		files = append(files, g.FileSources...)
		files = append(files, g.EnvSources...)
	}
	for _, g := range k.SecretGenerator {
		files = append(files, g.FileSources...)
		files = append(files, g.EnvSources...)
	}
	for _, f := range files {
		// A file source may be KEY=PATH.
		if _, path, ok := strings.Cut(f, "="); ok && !strings.Contains(f[:strings.Index(f, "=")], "/") {
			f = path
		}
		if httpURL(f) {
			return remoteError(file, f)
		}
	}
	return nil
}

func remoteError(file, ref string) error {
	return fmt.Errorf("kustomize %s: %q is remote and cannot be fetched: %w (copy it into the directory and refer to it by its path)", file, ref, ErrRemote)
}

// remote is whether a resource entry is one kustomize would clone or
// download: a URL, a git SSH address, or a host/org/repo path of a git
// host, as kustomize's repo spec parser takes them.
func remote(ref string) bool {
	switch {
	case strings.Contains(ref, "://"), strings.HasPrefix(ref, "git@"),
		strings.Contains(ref, "?ref="), strings.Contains(ref, "?version="), strings.Contains(ref, ".git/"), strings.HasSuffix(ref, ".git"):
		return true
	}
	for _, host := range []string{"github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(ref, host) {
			return true
		}
	}
	return false
}

func httpURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}
