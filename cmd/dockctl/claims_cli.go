package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// get, describe and delete of PersistentVolumeClaims (docs/design.md §12).
// The claim is read from the state directory, its binding from Docker: a
// claim is Bound when the instance's labelled volume of it exists, Pending
// when it does not (yet, or because a volume of its name that dockctl did
// not make is in the way), and Terminating when it was deleted and its
// volume is still there (kept while containers use it: pvc-protection).

// Claim phases, as Kubernetes names them (Terminating is what kubectl
// shows for a claim being deleted).
const (
	claimPending     = "Pending"
	claimBound       = "Bound"
	claimTerminating = "Terminating"
)

// claimRow is one claim as get and describe show it.
type claimRow struct {
	rec    *store.ClaimRecord
	phase  string
	volume string // the bound volume's name, "" while Pending
}

// claimRows reads the claims in scope (named name, matching sel) with their
// binding: the live claims, and the deleted ones whose volume is still
// there.
func claimRows(ctx context.Context, cmd *cobra.Command, g *globalOptions, inScope func(ns string) bool, name string, sel labels.Selector) ([]claimRow, error) {
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	recs, errs := st.ListClaims()
	for _, err := range errs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	cli, err := g.docker(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	vols, err := cli.ListVolumes(ctx, g.instance)
	if err != nil {
		return nil, err
	}
	return bindRows(g.instance, recs, vols, func(m *manifests.ObjectMeta) bool {
		return inScope(m.NamespaceOrDefault()) && (name == "" || m.Name == name) && sel.Matches(labels.Set(m.Labels))
	}), nil
}

// bindRows joins claim records with the instance's volumes (pure).
func bindRows(instance string, recs []*store.ClaimRecord, vols []dockerx.Volume, keep func(*manifests.ObjectMeta) bool) []claimRow {
	var out []claimRow
	for _, r := range recs {
		m := &r.Object.Metadata
		if !keep(m) {
			continue
		}
		req := dockerx.ClaimVolumeRequest{Instance: instance, Namespace: m.NamespaceOrDefault(), Claim: m.Name}
		bound := false
		for _, v := range vols {
			if v.Name == req.Name() && dockerx.IsClaimVolumeOf(v.Labels, req) {
				bound = true
			}
		}
		row := claimRow{rec: r, phase: claimPending}
		switch {
		case r.Deleted && !bound:
			continue // deleted and released: gone
		case r.Deleted:
			row.phase, row.volume = claimTerminating, req.Name()
		case bound:
			row.phase, row.volume = claimBound, req.Name()
		}
		out = append(out, row)
	}
	return out
}

func getClaims(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, err := parseSelector(o.selector)
	if err != nil {
		return err
	}
	rows, err := claimRows(cmd.Context(), cmd, g, func(ns string) bool { return o.inScope(g, ns) }, name, sel)
	if err != nil {
		return err
	}
	if done, err := o.noConfig(cmd, g, store.KindPersistentVolumeClaim, "persistentvolumeclaims", name, len(rows)); done {
		return err
	}
	return renderClaims(cmd.OutOrStdout(), time.Now(), rows, o.printer, name != "", o.allNamespaces)
}

// renderClaims prints claims as kubectl does (golden-tested): NAME STATUS
// VOLUME CAPACITY ACCESS MODES STORAGECLASS AGE, -o wide adding
// VOLUMEMODE, -o name persistentvolumeclaim/NAME, -o json|yaml the objects
// with their status and, once bound, spec.volumeName.
func renderClaims(out io.Writer, now time.Time, rows []claimRow, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "persistentvolumeclaim", columns: []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"},
		wide: []string{"VOLUMEMODE"}}
	for _, r := range rows {
		c := &r.rec.Object
		capacity, modes := "", ""
		if r.volume != "" {
			capacity, modes = claimCapacity(c), accessModes(c.Spec.AccessModes)
		}
		mode := "<unset>" // as kubectl words a claim without one
		if c.Spec.VolumeMode != nil {
			mode = *c.Spec.VolumeMode
		}
		t.rows = append(t.rows, row{namespace: c.Metadata.NamespaceOrDefault(), name: c.Metadata.Name, labels: c.Metadata.Labels, id: createdID(r.rec.Created),
			cells:  []string{c.Metadata.Name, r.phase, r.volume, capacity, modes, deref(c.Spec.StorageClassName), age(now.Sub(r.rec.Created))},
			wide:   []string{mode},
			object: func() (any, error) { return claimObject(r), nil }})
	}
	return p.print(out, t, single, allNamespaces)
}

// claimObject is the claim as the API server would return it: status
// phase, and once bound spec.volumeName, the access modes and capacity.
func claimObject(r claimRow) *manifests.PersistentVolumeClaim {
	c := r.rec.Object
	c.Metadata.Namespace = c.Metadata.NamespaceOrDefault()
	c.Status = &manifests.PersistentVolumeClaimState{Phase: r.phase}
	if r.phase == claimTerminating {
		c.Status.Phase = claimBound // Kubernetes' phase; Terminating is kubectl's word for the deletion
	}
	if r.volume != "" {
		c.Spec.VolumeName = r.volume
		c.Status.AccessModes = c.Spec.AccessModes
		if q, ok := c.Spec.Resources.Requests["storage"]; ok {
			c.Status.Capacity = map[string]resource.Quantity{"storage": q}
		}
	}
	return &c
}

// claimCapacity is the storage request: a local volume has no size of its
// own, and Kubernetes' local provisioners report the request too.
func claimCapacity(c *manifests.PersistentVolumeClaim) string {
	if q, ok := c.Spec.Resources.Requests["storage"]; ok {
		return q.String()
	}
	return ""
}

// accessModes abbreviates as kubectl does.
func accessModes(modes []string) string {
	short := map[string]string{"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
	out := make([]string, 0, len(modes))
	for _, m := range modes {
		if s, ok := short[m]; ok {
			out = append(out, s)
		} else {
			out = append(out, m)
		}
	}
	return strings.Join(out, ",")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// describeClaim runs describe pvc NAME: the claim, its binding, and the
// containers that use its volume — every container Docker knows, since
// any of them keeps the volume (pvc-protection).
func describeClaim(cmd *cobra.Command, g *globalOptions, name string) error {
	ctx := cmd.Context()
	rows, err := claimRows(ctx, cmd, g, func(ns string) bool { return ns == g.namespace }, name, labels.Everything())
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return notFoundIn(g, store.KindPersistentVolumeClaim, g.namespace, name, store.ErrNotFound)
	}
	var users []string
	if v := rows[0].volume; v != "" {
		cli, err := g.docker(ctx)
		if err != nil {
			return err
		}
		defer cli.Close()
		if users, err = cli.VolumeUsers(ctx, v); err != nil {
			return err
		}
	}
	st, err := g.readStore()
	if err != nil {
		return err
	}
	deps, _ := st.List() // a courtesy: an unreadable record is left out
	describeClaimRow(cmd.OutOrStdout(), g.instance, rows[0], users, claimDeployments(deps, g.namespace, name))
	return nil
}

// describeClaimRow prints a claim as kubectl's describe does (golden-tested).
func describeClaimRow(w io.Writer, instance string, r claimRow, users, deployments []string) {
	c := &r.rec.Object
	describeHeader(w, instance, &c.Metadata)
	// Aligned with describeHeader's column (its longest key is
	// "Annotations:").
	p := func(k, v string) { fmt.Fprintf(w, "%-14s%s\n", k+":", v) }
	p("StorageClass", deref(c.Spec.StorageClassName))
	p("Status", r.phase)
	p("Volume", r.volume)
	capacity, modes := "", ""
	if r.volume != "" {
		capacity, modes = claimCapacity(c), accessModes(c.Spec.AccessModes)
	}
	p("Capacity", capacity)
	p("Access Modes", modes)
	mode := deref(c.Spec.VolumeMode)
	if mode == "" {
		mode = "Filesystem"
	}
	p("VolumeMode", mode)
	// Used By: the containers Docker says mount the volume (any of them
	// keeps it); Deployments: the templates that name the claim.
	p("Used By", joinOrNone(users))
	p("Deployments", joinOrNone(deployments))
}

// claimDeployments names the live deployments of namespace ns whose pod
// template mounts claim name.
func claimDeployments(deps []*store.Record, ns, name string) []string {
	var out []string
	for _, r := range deps {
		if r.NamespaceOrDefault() != ns {
			continue
		}
		for _, v := range r.Deployment.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
				out = append(out, "deployment/"+r.Name)
				break
			}
		}
	}
	return out
}
