package main

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
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
	return len(b.Namespaces)+len(b.Services)+len(b.Deployments)+len(b.ConfigMaps)+len(b.Secrets)+len(b.Claims) == 0
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
var loadManifests = manifests.LoadAll

// loadBundle loads the objects of paths. Every object skipped is named on
// warn, one line each, as kubectl warns. An object that names a namespace
// other than the one -n gives explicitly is an error, as kubectl's.
func (g *globalOptions) loadBundle(paths []string, stdin io.Reader, skip bool, warn io.Writer) (*bundle, error) {
	docs, skipped, err := loadManifests(paths, stdin, manifests.LoadOptions{SkipUnsupported: skip})
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
		return nil, fmt.Errorf("no objects found in %v", paths)
	}
	return b, nil
}

// bundleOf makes the bundle of decoded documents, each namespaced object
// placed in its namespace (placeObject), as apply stores them.
func (g *globalOptions) bundleOf(docs []*manifests.Document) (*bundle, error) {
	b := &bundle{keepPaused: map[string]bool{}}
	for _, d := range docs {
		switch {
		case d.Namespace != nil:
			b.Namespaces = append(b.Namespaces, d.Namespace)
		case d.ConfigMap != nil || d.Secret != nil || d.PVC != nil:
			if err := g.placeObject(d, d.Meta()); err != nil {
				return nil, err
			}
			b.addConfig(d)
		case d.Service != nil:
			if err := g.placeObject(d, &d.Service.Metadata); err != nil {
				return nil, err
			}
			b.Services = append(b.Services, d.Service)
		case d.Deployment != nil:
			if err := g.placeObject(d, &d.Deployment.Metadata); err != nil {
				return nil, err
			}
			if !d.ReplicasSet {
				// Unset tells the store to keep the live count (1 on create).
				d.Deployment.Spec.Replicas = nil
			}
			if !d.PausedSet {
				b.keepPaused[store.Key(d.Deployment.Metadata.Namespace, d.Deployment.Metadata.Name)] = true
			}
			b.Deployments = append(b.Deployments, d.Deployment)
		}
	}
	b.docs = docs
	b.ignored = manifests.IgnoredWarning(docs)
	return b, nil
}

// placeObject puts a namespaced object of a file in its namespace: its own,
// or -n's when it names none.
func (g *globalOptions) placeObject(d *manifests.Document, m *manifests.ObjectMeta) error {
	ns := m.Namespace
	switch {
	case ns == "":
		ns = g.namespace
	case g.nsExplicit() && ns != g.namespace:
		return fmt.Errorf("%s: the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.",
			d.Source(), ns, g.namespace, ns)
	}
	if ns == manifests.DefaultNamespace {
		ns = "" // as the store keeps it, and every earlier release wrote it
	}
	m.Namespace = ns
	return nil
}

// filter keeps the objects whose metadata.labels match sel, as kubectl
// apply -l applies only those of the files.
func (b *bundle) filter(sel labels.Selector) {
	b.Namespaces = keep(b.Namespaces, func(n *manifests.Namespace) bool { return sel.Matches(labels.Set(n.Metadata.Labels)) })
	b.filterConfig(sel)
	b.Services = keep(b.Services, func(s *manifests.Service) bool { return sel.Matches(labels.Set(s.Metadata.Labels)) })
	b.Deployments = keep(b.Deployments, func(d *manifests.Deployment) bool { return sel.Matches(labels.Set(d.Metadata.Labels)) })
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

// refs names the bundle's objects for a deletion: what is in a namespace
// before the namespace, so that each is reported as deleted by its own
// line rather than with its namespace.
func (b *bundle) refs() []store.ObjectRef {
	var out []store.ObjectRef
	for _, d := range b.Deployments {
		out = append(out, store.ObjectRef{Kind: store.KindDeployment, Namespace: d.Metadata.Namespace, Name: d.Metadata.Name})
	}
	for _, s := range b.Services {
		out = append(out, store.ObjectRef{Kind: store.KindService, Namespace: s.Metadata.Namespace, Name: s.Metadata.Name})
	}
	out = append(out, b.configRefs()...)
	for _, n := range b.Namespaces {
		out = append(out, store.ObjectRef{Kind: store.KindNamespace, Name: n.Metadata.Name})
	}
	return out
}
