package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// bundle is what a set of manifest files declares, as apply, diff and
// delete -f take it: Namespaces, ConfigMaps, Secrets,
// PersistentVolumeClaims, Services and Deployments, every namespaced
// object in its namespace (its own, else -n's; "" for
// default, as the store keeps it).
type bundle struct {
	store.Bundle
	// keepPaused names (by store.Key) the deployments whose manifest left
	// spec.paused unset: as with spec.replicas, apply keeps the live value.
	keepPaused map[string]bool
	// ignored is the warning about fields with no meaning on one host
	// (manifests.IgnoredWarning), "" for none: apply and diff print it.
	ignored string
	// docs are the documents read, for the warning of a filtered bundle.
	docs []*manifests.Document
}

// empty reports whether the bundle holds no object.
func (b *bundle) empty() bool {
	return b.Len() == 0
}

// cmdRef is how a command names deployment name of namespace ns in a hint:
// deployment/NAME, with -n NS outside the default namespace.
func cmdRef(ns, name string) string {
	if ns == "" || ns == manifests.DefaultNamespace {
		return "deployment/" + name
	}
	return "deployment/" + name + " -n " + ns
}

// loadManifests reads manifest files; a variable so that tests can hand
// the commands documents as the decoder makes them.
var loadManifests = loadFiles

// loadFiles is manifests.LoadAll, but that a path that is not there is
// refused first in the words of kubectl's resource builder.
func loadFiles(paths []string, stdin io.Reader, opts manifests.LoadOptions) ([]*manifests.Document, []manifests.Skipped, error) {
	var missing []error
	for _, p := range paths {
		if _, err := os.Stat(p); p != "-" && errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, fmt.Errorf("the path %q does not exist", p))
		}
	}
	if len(missing) > 0 {
		return nil, nil, errors.Join(missing...)
	}
	if err := kustomizationHint(paths); err != nil {
		return nil, nil, err
	}
	return manifests.LoadAll(paths, stdin, opts)
}

// loadBundle loads the objects of in. Every object skipped is named on
// warn, one line each, as kubectl warns. An object that names a namespace
// other than the one -n gives explicitly is an error, as kubectl's.
func (g *globalOptions) loadBundle(in *input, stdin io.Reader, skip bool, warn io.Writer) (*bundle, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	docs, skipped, err := in.load(stdin, manifests.LoadOptions{SkipUnsupported: skip})
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		fmt.Fprintf(warn, "Warning: %s\n", s)
	}
	b, err := g.bundleOf(docs)
	if err != nil {
		return nil, err
	}
	if b.empty() {
		return nil, fmt.Errorf("no objects found in %v", in)
	}
	return b, nil
}

// bundleOf makes the bundle of decoded documents, each namespaced object
// placed in its namespace (sourcedir.Place), as apply stores them.
func (g *globalOptions) bundleOf(docs []*manifests.Document) (*bundle, error) {
	p, err := sourcedir.Place(docs, g.namespace, g.nsExplicit())
	if err != nil {
		return nil, err
	}
	return &bundle{Bundle: p.Bundle, keepPaused: p.KeepPaused, docs: docs, ignored: manifests.IgnoredWarning(docs)}, nil
}

// placeObject puts a namespaced object of a file in its namespace: its own,
// or -n's when it names none.
func (g *globalOptions) placeObject(d *manifests.Document, m *manifests.ObjectMeta) error {
	return sourcedir.PlaceObject(d, m, g.namespace, g.nsExplicit())
}

// filter keeps the objects whose metadata.labels match sel, as kubectl
// apply -l applies only those of the files.
func (b *bundle) filter(sel labels.Selector) {
	b.Filter(func(_ string, m *manifests.ObjectMeta) bool { return sel.Matches(labels.Set(m.Labels)) })
	// The warning names only what is applied.
	b.docs = keep(b.docs, func(d *manifests.Document) bool { return sel.Matches(labels.Set(d.Meta().Labels)) })
	b.ignored = manifests.IgnoredWarning(b.docs)
}

func keep[T any](in []T, ok func(T) bool) []T {
	out := in[:0]
	for _, v := range in {
		if ok(v) {
			out = append(out, v)
		}
	}
	return out
}
