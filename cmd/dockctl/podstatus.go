package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// What a pod shows beyond its containers' list entries, as kubectl shows
// a pod: its node (the Docker host), its address and the host's, its spec
// as the API server shows it, and when its containers started. The host's
// name and the start times cost a Docker call each (Info, an inspect per
// container), so only the formats that show them ask: the node for -o
// wide, both for the object formats (json, yaml, jsonpath, custom columns,
// --sort-by) and describe; a plain table asks nothing.

// dockerDetails are the Docker calls a snapshot's details make.
type dockerDetails interface {
	HostInfo(ctx context.Context) (dockerx.HostInfo, error)
	InspectContainer(ctx context.Context, id string) (dockerx.ContainerDetails, error)
}

// nodeName is the pods' spec.nodeName: the Docker host's name, as the
// controller gives spec.nodeName to the downward API; "" when Docker
// cannot tell (shown as kubectl shows an unscheduled pod's).
func (s *snapshot) nodeName() string {
	if s.host == nil {
		s.host = &dockerx.HostInfo{}
		if s.details != nil {
			_ = s.details(func(ctx context.Context, d dockerDetails) error {
				h, err := d.HostInfo(ctx)
				if err == nil {
					s.host = &h
				}
				return err
			})
		}
	}
	return s.host.Name
}

// inspect asks Docker for the details of the pods' containers it has not
// asked about yet, on one client. A container gone since the listing, or
// a Docker that does not answer, leaves its times unknown (null, as the
// API server shows a time it has not).
func (s *snapshot) inspect(pods []podEntry) {
	var ids []string
	for _, e := range pods {
		for _, pc := range e.Containers {
			if c := pc.Container; c != nil {
				if _, ok := s.started[c.ID]; !ok {
					ids = append(ids, c.ID)
				}
			}
		}
	}
	if s.started == nil {
		s.started = map[string]dockerx.ContainerDetails{}
	}
	if len(ids) == 0 || s.details == nil {
		return
	}
	_ = s.details(func(ctx context.Context, d dockerDetails) error {
		for _, id := range ids {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			cd, err := d.InspectContainer(ctx, id)
			switch {
			case err == nil:
				// In the listing clock's zone, as the creation times the
				// list gives: describe prints them alike.
				cd.StartedAt, cd.FinishedAt = cd.StartedAt.In(s.now.Location()), cd.FinishedAt.In(s.now.Location())
				s.started[id] = cd
			case !errors.Is(err, dockerx.ErrNotFound):
				return err // Docker gone: the others would fail alike
			}
		}
		return nil
	})
}

// containerTimes fills the times of a container's state and last state
// from what inspect said of it (d nil: unknown, left null): when its
// current run started and, for one that exited, when it finished.
func containerTimes(state, last *corev1.ContainerState, d *dockerx.ContainerDetails) {
	if d == nil {
		return
	}
	// A zero time (never started, never stopped) prints as null.
	started, finished := metav1.NewTime(d.StartedAt), metav1.NewTime(d.FinishedAt)
	switch {
	case state.Running != nil:
		state.Running.StartedAt = started
	case state.Terminated != nil:
		state.Terminated.StartedAt, state.Terminated.FinishedAt = started, finished
	}
	if last.Terminated != nil { // a container waiting to restart: its exited run
		last.Terminated.StartedAt, last.Terminated.FinishedAt = started, finished
	}
}

// details returns what inspect said of c, nil when unknown.
func (s *snapshot) containerDetails(c *dockerx.Container) *dockerx.ContainerDetails {
	if c == nil {
		return nil
	}
	if d, ok := s.started[c.ID]; ok {
		return &d
	}
	return nil
}

// podIP is the pod's address (status.podIP), what the list says of its
// network owner (podtarget.go): its address on the instance network — the static one
// dockctl gave it (a pod that reads status.podIP), kept while it is
// stopped, or Docker's — else on the first of its other networks that
// gives it one (a pod made before the instance network); the host's on
// the host's network, as a hostNetwork pod has the node's; "" while it
// has none (not running).
func (e *podEntry) podIP(s *snapshot) string {
	c := e.networkOwner()
	if c == nil {
		return ""
	}
	if e.template != nil && e.template.Spec.HostNetwork || c.NetworkMode == "host" {
		return s.hostIP
	}
	network := dockerx.NetworkName(s.instance)
	if ip := c.Networks[network]; ip != "" {
		return ip
	}
	if ip := c.StaticIPv4[network]; ip != "" {
		return ip
	}
	names := make([]string, 0, len(c.Networks))
	for n := range c.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ip := c.Networks[n]; ip != "" {
			return ip
		}
	}
	return ""
}

// podSpec is the pod's spec as the API server shows a pod's: its
// template's (containers with their resources, probes, ports, env as
// written — valueFrom references, never a Secret's value — and volume
// mounts; the pod's volumes and settings), each container the pod has
// in its order, one no template names (an orphan's) with its image.
func (e *podEntry) podSpec(s *snapshot) (corev1.PodSpec, error) {
	var spec corev1.PodSpec
	if e.template != nil {
		if err := kubeObject(&e.template.Spec, &spec); err != nil {
			return spec, fmt.Errorf("pod %s: %w", e.Name, err)
		}
	}
	byName := map[string]corev1.Container{}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		byName[c.Name] = c
	}
	spec.InitContainers, spec.Containers = nil, nil
	for _, pc := range e.Containers {
		c, ok := byName[pc.DisplayName()]
		if !ok {
			c = corev1.Container{Name: pc.DisplayName()}
			if pc.Container != nil {
				c.Image = pc.Container.Image
			}
		}
		if pc.Init {
			spec.InitContainers = append(spec.InitContainers, c)
		} else {
			spec.Containers = append(spec.Containers, c)
		}
	}
	if spec.Hostname == "" {
		// The hostname dockctl gives a pod whose template names none
		// (a template's spec.hostname is its containers' hostname).
		spec.Hostname = e.Name
	}
	spec.NodeName = s.nodeName()
	spec.RestartPolicy = corev1.RestartPolicyAlways // a deployment's pods always restart their containers
	return spec, nil
}

// kubeObject converts a manifests type into its Kubernetes type: the
// manifests types are written to decode strictly into them, so their JSON
// is the Kubernetes type's.
func kubeObject(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// templateKube is a template container as a Kubernetes container, for
// describe's lines that kubectl computes from one (resources, probes).
func templateKube(c *manifests.Container) corev1.Container {
	var out corev1.Container
	if err := kubeObject(c, &out); err != nil {
		// Never: a stored container always marshals. Its name and image
		// still describe it.
		return corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}
