package workloads

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/reconciler/services"
	"github.com/dockctl/dockctl/reconciler/workload"
)

// Endpoints is the Services' endpoints tracker (services.Tracker) as the
// frame feeds it: after every sync, the owner's pods as the sync observed
// and judged them, keyed services.OwnerKey; an owner gone is deleted (its
// pods leave every Service), as the endpoints controller drops the pods of
// a deleted owner (docs/design.md §17.1).
type Endpoints interface {
	Update(ownerKey string, pods []services.PodEndpoint)
	Delete(ownerKey string)
}

// feedEndpoints hands the tracker the owner's listed pods (pods[i] is the
// pod whose holder, or one container, is cts[i]) with the readiness the decision judged, a pod the
// decision deletes terminating. A pod created by this sync is fed by the
// next one, which the Docker event of its start queues.
func (c *Controller) feedEndpoints(in podruntime.SyncInput, cts []dockerx.Container, pods []workload.ObservedPod, deleting map[string]bool) {
	c.feedEndpointsAs(ownerKey(in), in, cts, pods, deleting)
}

// feedEndpointsAs is feedEndpoints under the tracker's key key: an
// orphan keeper's pods are fed under its own key (OrphansKey), beside
// those of the object of its name.
func (c *Controller) feedEndpointsAs(key string, in podruntime.SyncInput, cts []dockerx.Container, pods []workload.ObservedPod, deleting map[string]bool) {
	if c.cfg.Endpoints == nil {
		return
	}
	templates := map[string]*podruntime.PodSpec{}
	for i := range in.Pods {
		templates[in.Pods[i].Name] = &in.Pods[i]
	}
	owned := make([]services.OwnedPod, len(pods))
	for i := range pods {
		p := &pods[i]
		owned[i] = services.OwnedPod{Namespace: in.Namespace, Name: p.Name, Container: &cts[i],
			Ready: p.Ready(), Terminating: p.Terminating() || deleting[p.Name]}
		if s := templates[p.Name]; s != nil {
			owned[i].Template = s.Template
		}
	}
	c.cfg.Endpoints.Update(key, services.OwnedPodEndpoints(c.cfg.Instance, c.hostIP(), owned))
}

// dropEndpoints removes a deleted owner's pods from the tracker.
func (c *Controller) dropEndpoints(in podruntime.SyncInput) { c.dropEndpointsKey(ownerKey(in)) }

// dropEndpointsKey removes the pods fed under the tracker's key key.
func (c *Controller) dropEndpointsKey(key string) {
	if c.cfg.Endpoints != nil {
		c.cfg.Endpoints.Delete(key)
	}
}

func ownerKey(in podruntime.SyncInput) string {
	return services.OwnerKey(in.Owner.Kind, in.Namespace, in.Owner.Name)
}

// hostIP is the host's address on the instance network: a host-network
// pod's endpoint address.
func (c *Controller) hostIP() string {
	if c.cfg.HostIP == nil {
		return ""
	}
	return c.cfg.HostIP()
}
