package services

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Host ports between Services and deployments: the older claim keeps a
// host port. A Service's nodePort is claimed from when it began to
// publish it (store.NodePortStatus.Since); a deployment's hostPort from
// when its history began to declare it without a break (the revisions'
// creation times). A deployment whose hostPort a Service claimed first
// creates no replica of that revision until the Service gives it up: it
// waits, with a ReplicaFailure that says why, as a pod whose host port is
// taken is never scheduled on a Kubernetes node ("didn't have free ports
// for the requested pod ports").

// templateHostPorts are the host ports a pod template binds: its
// hostPorts, or with hostNetwork its containerPorts.
func templateHostPorts(ps *manifests.PodSpec) []hostPort {
	var out []hostPort
	for _, c := range ps.AllContainers() {
		for _, p := range c.Ports {
			port := p.HostPort
			if ps.HostNetwork {
				port = p.ContainerPort
			}
			if port != 0 {
				out = append(out, hostPort{IP: p.HostIP, Port: port, Protocol: protocolOr(p.Protocol)})
			}
		}
	}
	return out
}

// hostPortSince is when the history up to the revision of hash began to
// declare hp without a break: the creation of the earliest revision of
// that run. Zero when it cannot be dated (no such revision, or one of an
// earlier release with no time): an undated claim is taken as the older.
func hostPortSince(revs []store.Revision, hash string, hp hostPort) time.Time {
	i := slices.IndexFunc(revs, func(r store.Revision) bool { return r.Hash == hash })
	if i < 0 {
		return time.Time{}
	}
	var since time.Time
	for ; i >= 0; i-- {
		declares := slices.ContainsFunc(templateHostPorts(&revs[i].Template.Spec), func(h hostPort) bool { return h.overlaps(hp) })
		if !declares {
			break
		}
		since = revs[i].CreatedAt
	}
	return since
}

// claimsOf are the dated nodePorts of a status, published on address.
func claimsOf(nps []store.NodePortStatus, address string) []portClaim {
	var out []portClaim
	for _, np := range nps {
		if !np.Since.IsZero() {
			out = append(out, portClaim{Port: hostPort{IP: address, Port: np.NodePort, Protocol: np.Protocol}, Since: np.Since})
		}
	}
	return out
}

// releasesClaims reports whether going from old to next gives up a dated
// nodePort.
func releasesClaims(old, next serviceAllocation) bool {
	for _, c := range old.Claims {
		if !slices.ContainsFunc(next.Claims, func(n portClaim) bool { return n.Port == c.Port }) {
			return true
		}
	}
	return false
}

// takePortWaitersLocked returns and forgets the deployments waiting for a
// host port.
func (a *allocator) takePortWaitersLocked() []string {
	out := make([]string, 0, len(a.portWaiters))
	for k := range a.portWaiters {
		out = append(out, k)
	}
	clear(a.portWaiters)
	slices.Sort(out)
	return out
}

// HostPortWaits adds to waiting (template hash → why) the revisions of a
// deployment that declare a host port a Service claimed first; the
// deployment is queued again (Config.QueueDeployment) when such a Service
// gives one up.
func (s *Controller) HostPortWaits(rec *store.Record, waiting map[string]string) map[string]string {
	a := &s.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(s.store)
	keys := make([]string, 0, len(a.held))
	for k, h := range a.held {
		if len(h.Claims) > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	blocked := false
	for i := range rec.Revisions {
		r := &rec.Revisions[i]
		var why []string
		for _, hp := range templateHostPorts(&r.Template.Spec) {
			since := hostPortSince(rec.Revisions, r.Hash, hp)
			for _, k := range keys {
				for _, cl := range a.held[k].Claims {
					if cl.Port.overlaps(hp) && claimedBefore(cl.Since, since) {
						why = append(why, fmt.Sprintf("host port %s is the nodePort of service %s, published since %s, before this deployment declared it: the older claim keeps it",
							hp, k, cl.Since.UTC().Format(time.RFC3339)))
					}
				}
			}
		}
		if len(why) == 0 {
			continue
		}
		blocked = true
		if waiting == nil {
			waiting = map[string]string{}
		}
		msg := fmt.Sprintf("revision %s: %s", r.Hash, strings.Join(why, "; "))
		if w := waiting[r.Hash]; w != "" {
			msg = w + "; " + strings.Join(why, "; ")
		}
		waiting[r.Hash] = msg
	}
	if a.portWaiters == nil {
		a.portWaiters = map[string]bool{}
	}
	if blocked {
		a.portWaiters[rec.Key()] = true
	} else {
		delete(a.portWaiters, rec.Key())
	}
	return waiting
}
