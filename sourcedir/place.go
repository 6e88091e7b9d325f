package sourcedir

import (
	"fmt"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Placed is what a set of decoded documents declares, as apply stores it.
type Placed struct {
	store.Bundle
	// KeepPaused names (by store.Key) the deployments whose manifest left
	// spec.paused unset: as with spec.replicas, apply keeps the live value.
	KeepPaused map[string]bool
}

// Place makes the bundle of decoded documents, each namespaced object in
// its namespace: its own, else namespace's ("" for default, as the store
// keeps it). With explicit (-n given), an object naming another namespace
// is an error, as kubectl's.
func Place(docs []*manifests.Document, namespace string, explicit bool) (*Placed, error) {
	b := &Placed{KeepPaused: map[string]bool{}}
	for _, d := range docs {
		switch {
		case d.Namespace != nil:
			b.Namespaces = append(b.Namespaces, d.Namespace)
		case d.ConfigMap != nil || d.Secret != nil || d.PVC != nil:
			if err := PlaceObject(d, d.Meta(), namespace, explicit); err != nil {
				return nil, err
			}
			switch {
			case d.ConfigMap != nil:
				b.ConfigMaps = append(b.ConfigMaps, d.ConfigMap)
			case d.Secret != nil:
				b.Secrets = append(b.Secrets, d.Secret)
			default:
				b.Claims = append(b.Claims, d.PVC)
			}
		case d.Service != nil:
			if err := PlaceObject(d, &d.Service.Metadata, namespace, explicit); err != nil {
				return nil, err
			}
			b.Services = append(b.Services, d.Service)
		case d.Deployment != nil:
			if err := PlaceObject(d, &d.Deployment.Metadata, namespace, explicit); err != nil {
				return nil, err
			}
			if !d.ReplicasSet {
				// Unset tells the store to keep the live count (1 on create).
				d.Deployment.Spec.Replicas = nil
			}
			if !d.PausedSet {
				b.KeepPaused[store.Key(d.Deployment.Metadata.Namespace, d.Deployment.Metadata.Name)] = true
			}
			b.Deployments = append(b.Deployments, d.Deployment)
		case d.Job != nil || d.CronJob != nil || d.Pod != nil || d.ReplicaSet != nil || d.DaemonSet != nil || d.StatefulSet != nil:
			if err := PlaceObject(d, d.Meta(), namespace, explicit); err != nil {
				return nil, err
			}
			placeWorkload(&b.Bundle, d)
		default:
			if err := placeRouting(&b.Bundle, d, namespace, explicit); err != nil {
				return nil, err
			}
		}
		if len(d.Zeros) > 0 {
			m := d.Meta()
			ref := store.ObjectRef{Kind: d.Kind(), Namespace: m.NamespaceOrDefault(), Name: m.Name}
			if manifests.ClusterScoped(d.Kind()) {
				ref.Namespace = ""
			}
			if b.Zeros == nil {
				b.Zeros = map[store.ObjectRef]map[string]any{}
			}
			b.Zeros[ref] = d.Zeros
		}
	}
	return b, nil
}

// PlaceObject puts a namespaced object of a file in its namespace (see
// Place).
func PlaceObject(d *manifests.Document, m *manifests.ObjectMeta, namespace string, explicit bool) error {
	ns := m.Namespace
	switch {
	case ns == "":
		ns = namespace
	case explicit && ns != namespace:
		return fmt.Errorf("%s: the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.",
			d.Source(), ns, namespace, ns)
	}
	if ns == manifests.DefaultNamespace {
		ns = "" // as the store keeps it, and every earlier release wrote it
	}
	m.Namespace = ns
	return nil
}

// Add appends o's objects to b.
func (b *Placed) Add(o *Placed) {
	b.Namespaces = append(b.Namespaces, o.Namespaces...)
	b.ConfigMaps = append(b.ConfigMaps, o.ConfigMaps...)
	b.Secrets = append(b.Secrets, o.Secrets...)
	b.Claims = append(b.Claims, o.Claims...)
	b.Services = append(b.Services, o.Services...)
	b.Deployments = append(b.Deployments, o.Deployments...)
	for k, v := range o.KeepPaused {
		b.KeepPaused[k] = v
	}
	for ref, z := range o.Zeros {
		if b.Zeros == nil {
			b.Zeros = map[store.ObjectRef]map[string]any{}
		}
		b.Zeros[ref] = z
	}
}

// placeWorkload adds the object of a workload kind of d to b.
func placeWorkload(b *store.Bundle, d *manifests.Document) {
	switch {
	case d.Job != nil:
		b.Jobs = append(b.Jobs, d.Job)
	case d.CronJob != nil:
		b.CronJobs = append(b.CronJobs, d.CronJob)
	case d.Pod != nil:
		b.Pods = append(b.Pods, d.Pod)
	case d.ReplicaSet != nil:
		b.ReplicaSets = append(b.ReplicaSets, d.ReplicaSet)
	case d.DaemonSet != nil:
		b.DaemonSets = append(b.DaemonSets, d.DaemonSet)
	case d.StatefulSet != nil:
		b.StatefulSets = append(b.StatefulSets, d.StatefulSet)
	}
}
