package reconciler

import (
	"sort"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/store"
)

// The deployments' side of the endpoints tracker (services.Tracker): every
// sync hands it the pods it judged, with the readiness its status counts.

// podEndpoints turns one deployment's assessed units into the tracker's
// pods. ready is the readiness status counts (nil: none ready, for a
// deleted deployment, whose pods are all terminating). hostIP is the
// host's address on the instance network (its gateway; "" none): a pod on
// the host's network is an endpoint there, as Kubernetes uses the node's
// address.
func podEndpoints(instance, hostIP string, rec *store.Record, in PlanInput, ready map[string]bool, templates func(string) *manifests.PodTemplateSpec, deleted bool) []services.PodEndpoint {
	ns := rec.NamespaceOrDefault()
	network := dockerx.NetworkName(instance)
	out := make([]services.PodEndpoint, 0, len(in.Containers))
	requested := in.deleted() // a user's delete: out of the endpoints before its stop begins
	for i := range in.Containers {
		u := &in.Containers[i]
		owner, name := u, ""
		if p := in.Pods[u.ID]; p != nil {
			owner, name = p.Holder, p.Name
		} else {
			name = podName(rec.Name, u)
		}
		_, terminating := in.Terminating[u.ID]
		ep := services.PodEndpoint{
			Namespace: ns, Deployment: rec.Name, Pod: name, UnitID: u.ID,
			Ready:       ready[u.ID],
			Terminating: deleted || requested[u.ID] || terminating || in.Stopping[u.ID] || u.State == dockerx.StateRemoving,
		}
		if owner != nil {
			ep.IP = owner.Networks[network]
			if services.OnHostNetwork(owner) {
				ep.IP = hostIP
			}
			ep.Hostname, ep.Subdomain = owner.Labels[dockerx.LabelHostname], owner.Labels[dockerx.LabelSubdomain]
		}
		if t := templates(u.TemplateHash); t != nil {
			ep.Labels, ep.Containers = t.Metadata.Labels, t.Spec.ServingContainers()
		} else if owner != nil {
			ep.Labels = services.PodLabels(owner.Labels)
		}
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// feedTracker hands the tracker a live deployment's pods as assessed:
// from a sync (which lists after any earlier feed) it replaces them, from
// the sweep's snapshot (seed) it only fills what is not known yet.
func (c *Controller) feedTracker(a *assessment, seed bool) {
	pods := podEndpoints(c.opts.Instance, c.hostAddress(), a.rec, a.in, a.ready, templateLookup(a.d, a.in.Hash, a.rec.Revisions), false)
	if seed {
		c.tracker.Seed(a.rec.Key(), pods)
		return
	}
	c.tracker.Update(a.rec.Key(), pods)
}

// Endpoints is the Services' endpoints tracker, which the controllers of
// the other workload kinds feed with their pods (docs/design.md §17.1).
func (c *Controller) Endpoints() *services.Tracker { return c.tracker }

// HostAddress is the host's address on the instance network ("" while
// none is known): a host-network pod's endpoint address.
func (c *Controller) HostAddress() string { return c.hostAddress() }
