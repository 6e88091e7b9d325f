package reconciler

import (
	"context"
	"fmt"
	"strings"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// The controller's side of environment from configuration: a revision whose
// environment refers to a ConfigMap or Secret (or a key of one) that does
// not exist, and is not optional, gets no new container — the plan names the
// reference as a ReplicaFailure, as a cluster leaves such pods pending — and
// a change to a referenced ConfigMap or Secret requeues the deployments that
// refer to it (an index, as controller-runtime maps a child's event to its
// owner), so that a waiting revision proceeds at once. A create's
// environment is the pod runtime's (podruntime.CreateEnv): this file only
// names the pod it belongs to, as the Deployment controller names and
// labels its pods.

// waitingRevisions maps the hash of each template of the deployment (the
// current one and the recorded revisions) whose pods cannot be made yet
// to why, naming the references only: its environment, its file volumes
// or its claims refer to something that does not exist (or a claim being
// deleted). The plan then creates nothing of that revision — no holder, no
// pod volume, no container — as a cluster leaves such pods pending.
func (c *Controller) waitingRevisions(cache *lookupCache, ns string, d *manifests.Deployment, hash string, revisions []store.Revision) map[string]string {
	var out map[string]string
	check := func(h string, t *manifests.PodTemplateSpec) {
		if msg := c.missingRefs(ns, t, cache); msg != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[h] = fmt.Sprintf("revision %s: %s", h, msg)
		}
	}
	if d != nil {
		check(hash, &d.Spec.Template)
	}
	for i := range revisions {
		if r := &revisions[i]; r.Hash != hash {
			check(r.Hash, &r.Template)
		}
	}
	return out
}

// missingRefs says which non-optional references of the pod template
// cannot be resolved ("" when all can), or why the store could not tell:
// of its environments (podruntime.EnvMissingRefs), its file volumes (podruntime.PlanFiles, as
// the kubelet fails a mount) and its claims.
func (c *Controller) missingRefs(ns string, t *manifests.PodTemplateSpec, cache *lookupCache) string {
	var parts []string
	if msg := podruntime.EnvMissingRefs(ns, &t.Spec, c.opts.Config); msg != "" {
		parts = append(parts, msg)
	}
	if manifests.NeedsWriter(&t.Spec) {
		objs, err := c.fileObjectsFor(ns, t, cache)
		if err == nil {
			_, err = podruntime.PlanFiles(&t.Spec, identityOf(ns, "", "", "", t), objs, podruntime.HostResources{})
		}
		if err != nil {
			parts = append(parts, err.Error())
		}
	}
	for _, claim := range podruntime.TemplateClaims(&t.Spec) {
		if err := c.claimUsable(ns, claim); err != nil {
			parts = append(parts, err.Error())
		}
	}
	return strings.Join(parts, "; ")
}

// resolveEnv resolves the environment of the template container op
// creates (nil for a holder, which runs none): podruntime.CreateEnv, with
// the pod op belongs to (createPod).
func (c *Controller) resolveEnv(ctx context.Context, in PlanInput, op Op, req dockerx.CreateRequest, podIP string, services map[string]string) ([]string, error) {
	if op.Role == dockerx.RoleHolder || op.From == nil {
		return nil, nil
	}
	// The container first, as before the move to the runtime: the host is
	// asked (createPod) only for a create the template allows.
	if _, err := podruntime.CreateContainer(&op.From.Template.Spec, op.Container); err != nil {
		return nil, fmt.Errorf("create %s: %w", op.Name, err)
	}
	p := c.createPod(ctx, in, op, req)
	p.AssignedIP = podIP
	env, err := podruntime.CreateEnv(p, op.Container, c.opts.Config, services, c.opts.Recorder, opPodRef(in, op))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", op.Name, err)
	}
	return env, nil
}

// createPod is the pod op belongs to, as the Deployment controller names
// and labels it.
func (c *Controller) createPod(ctx context.Context, in PlanInput, op Op, req dockerx.CreateRequest) podruntime.CreatePod {
	p := podruntime.CreatePod{Name: req.PodName(), Namespace: in.namespace(), Hash: op.Hash, Template: op.From.Template,
		HostIP: c.hostAddress(), Host: c.hostInfo(ctx)}
	if op.Pod != nil {
		p.UID = op.Pod.UID
	} else {
		p.UID = podUID(op.Name, in.Now)
	}
	if req.Network != nil {
		p.PodIP = req.Network.IPv4
	}
	return p
}

// hostInfo returns the Docker host's name and capacity, asked once
// (podruntime.HostInfoCache).
func (c *Controller) hostInfo(ctx context.Context) dockerx.HostInfo {
	return c.refs.host.Get(ctx, c.docker, c.log)
}

// configRefs is the controller's index of the ConfigMaps and Secrets its
// deployments refer to (podruntime.ConfigRefs, by deployment key) and its
// memory of the Docker host's name and capacity.
type configRefs struct {
	podruntime.ConfigRefs
	host podruntime.HostInfoCache
}

// indexRefs records what the deployment's templates refer to.
func (c *Controller) indexRefs(rec *store.Record, d *manifests.Deployment) {
	ts := []*manifests.PodTemplateSpec{}
	if d != nil && !rec.Deleted {
		ts = append(ts, &d.Spec.Template)
		for i := range rec.Revisions {
			ts = append(ts, &rec.Revisions[i].Template)
		}
	}
	c.refs.Set(rec.Key(), podruntime.ConfigWatchKeys(rec.Namespace, ts...))
}

// configChanged queues every deployment that refers to the ConfigMap or
// Secret of watch key wk.
func (c *Controller) configChanged(wk string) {
	for _, key := range c.refs.Referrers(wk) {
		c.queue.Add(key)
	}
}
