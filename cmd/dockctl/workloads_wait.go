package main

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/store"
)

// workloadWait is how wait finds and judges the stored workloads of v's
// kind (a Job's Complete or Failed, any jsonpath of a StatefulSet…): the
// object with the status its controller wrote, as get -o json prints it
// (docs/design.md §17.1). A workload is gone once its record is deleted
// or replaced by another object of its name (deleted and applied again),
// as kubectl's wait --for=delete is met by the first object's deletion;
// its pods go after it, as the garbage collector's background cascade.
func workloadWait(v *workloadView) *waitOps {
	kind := v.kind
	lookup := func(w *waiter, t waitTarget) (*store.StoredObject, error) {
		if w.st == nil {
			return nil, store.ErrNotFound
		}
		o, err := w.st.LookupObject(store.ObjectRef{Kind: kind, Namespace: t.namespace, Name: t.name})
		if err != nil {
			return nil, err
		}
		if o.Deleted {
			return nil, store.ErrNotFound
		}
		return o, nil
	}
	return &waitOps{
		selected: func(w *waiter, req waitRequest, inScope func(ns string) bool) []waitTarget {
			if w.st == nil {
				return nil
			}
			objs, _ := w.st.ListObjects(kind) // an unreadable record is get's warning, not wait's
			var out []waitTarget
			for _, o := range objs {
				ns := o.Meta.NamespaceOrDefault()
				if o.Deleted || !inScope(ns) || !req.sel.Matches(labels.Set(o.Meta.Labels)) {
					continue
				}
				out = append(out, waitTarget{kind: kindByStore(kind).name, namespace: ns, name: o.Meta.Name, created: o.Created})
			}
			return out
		},
		present: func(w *waiter, t *waitTarget) (bool, error) {
			o, err := lookup(w, *t)
			if errors.Is(err, store.ErrNotFound) {
				if w.cond.delete {
					return false, nil
				}
				return false, notFoundIn(w.g, strings.ToLower(kind), t.namespace, t.name, err)
			}
			if err != nil {
				return false, err
			}
			if t.created.IsZero() {
				t.created = o.Created
			}
			return true, nil
		},
		object: func(w *waiter, t waitTarget) (any, bool, error) {
			o, err := lookup(w, t)
			if errors.Is(err, store.ErrNotFound) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			s := v.status()
			if _, err := w.st.ReadWorkloadStatus(store.ObjectRef{Kind: kind, Namespace: t.namespace, Name: t.name}, o.Created, s); err != nil {
				return nil, false, err
			}
			obj, err := objectWithStatus(workloadItem{obj: o, status: s})
			return obj, err == nil, err
		},
		gone: func(snap *snapshot, t waitTarget) bool {
			if snap.st == nil {
				return true
			}
			o, err := snap.st.LookupObject(store.ObjectRef{Kind: kind, Namespace: t.namespace, Name: t.name})
			if err != nil || o.Deleted {
				return true
			}
			return !t.created.IsZero() && !o.Created.Equal(t.created)
		},
	}
}
