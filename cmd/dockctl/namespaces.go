package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/store"
)

// namespaceEntry is one namespace as `get namespaces` shows it. A deleted
// namespace is shown Terminating while containers of it remain, as
// Kubernetes keeps a namespace until its content is gone, and not at all
// afterwards.
type namespaceEntry struct {
	rec   *store.NamespaceRecord
	phase corev1.NamespacePhase
}

// listNamespaces returns the namespaces to show, sorted by name.
func (s *snapshot) listNamespaces() []namespaceEntry {
	left := map[string]bool{}
	// A Service's proxy is content of its namespace too.
	for _, c := range append(slices.Clip(s.containers), s.helpers...) {
		left[containerNamespace(c)] = true
	}
	var out []namespaceEntry
	for _, r := range s.namespaces {
		switch {
		case !r.Deleted:
			out = append(out, namespaceEntry{r, corev1.NamespaceActive})
		case left[r.Namespace.Metadata.Name]:
			out = append(out, namespaceEntry{r, corev1.NamespaceTerminating})
		}
	}
	return out
}

func getNamespaces(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseSelector)
	if err != nil {
		return err
	}
	var list []namespaceEntry
	for _, e := range snap.listNamespaces() {
		if (name == "" || e.rec.Namespace.Metadata.Name == name) && sel.Matches(labels.Set(e.rec.Namespace.Metadata.Labels)) {
			list = append(list, e)
		}
	}
	if name != "" && len(list) == 0 {
		return notFoundIn(g, store.KindNamespace, "", name, store.ErrNotFound)
	}
	if len(list) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		o.noResources(cmd.ErrOrStderr(), g, false)
		return nil
	}
	return renderNamespaces(cmd.OutOrStdout(), snap, list, o.printer, name != "")
}

// renderNamespaces prints namespaces as kubectl does: NAME STATUS AGE (-o
// wide adds nothing, as kubectl's), or v1 Namespaces.
func renderNamespaces(out io.Writer, snap *snapshot, list []namespaceEntry, p *printer, single bool) error {
	t := &table{kind: "namespace", columns: []string{"NAME", "STATUS", "AGE"}}
	for _, e := range list {
		m := e.rec.Namespace.Metadata
		t.rows = append(t.rows, row{name: m.Name, labels: m.Labels, id: createdID(e.rec.Created),
			cells: []string{m.Name, string(e.phase), age(snap.now.Sub(e.rec.Created))},
			object: func() (any, error) {
				ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
				ns.Name, ns.Labels, ns.Annotations = m.Name, m.Labels, m.Annotations
				ns.CreationTimestamp = metav1.NewTime(e.rec.Created)
				ns.Status.Phase = e.phase
				return ns, nil
			}})
	}
	return p.print(out, t, single, false)
}

// describeNamespace prints a namespace as kubectl's NamespaceDescriber
// does: its name, labels, annotations and phase (dockctl has no resource
// quotas or limit ranges, as a server that serves none; kubectl shows no
// events of a namespace).
func describeNamespace(w io.Writer, snap *snapshot, e namespaceEntry) {
	m := e.rec.Namespace.Metadata
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", m.Name)
	fmt.Fprintf(tw, "Instance:\t%s\n", snap.instance)
	multiline(tw, "Labels", m.Labels)
	annotationsMultiline(tw, m.Annotations)
	fmt.Fprintf(tw, "Status:\t%s\n", e.phase)
	tw.Flush()
}
