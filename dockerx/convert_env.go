package dockerx

import (
	"errors"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/dockctl/dockctl/manifests"
)

// setEnv gives a template container its environment — req.Env, resolved
// by the controller, or the template's literal values when the template
// needs no resolving — and expands $(VAR) references to it in command and
// args, as the kubelet does (manifests.ExpandVars).
func setEnv(req CreateRequest, c *manifests.Container, cfg *container.Config) {
	env := req.Env
	if env == nil {
		for _, e := range c.Env {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	cfg.Env = env
	if len(c.Command) == 0 && len(c.Args) == 0 {
		return
	}
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	expand := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = manifests.ExpandVars(s, lookup)
		}
		return out
	}
	cfg.Entrypoint, cfg.Cmd = expand(c.Command), expand(c.Args)
}

// checkEnv refuses to build a template container whose environment needs
// resolving (valueFrom, envFrom) from a request that does not carry it:
// the variables would silently be empty.
func checkEnv(req CreateRequest) error {
	if req.Env != nil || req.Role == RoleHolder || req.From == nil {
		return nil
	}
	ps := &req.From.Template.Spec
	var c *manifests.Container
	switch {
	case req.Container != "":
		c = findContainer(ps, req.Container)
	case len(ps.Containers) > 0:
		c = &ps.Containers[0]
	}
	if c != nil && NeedsEnvResolution(c) {
		return errors.New("container " + c.Name + ": its environment refers to ConfigMaps, Secrets or the pod, and the request carries no resolved environment")
	}
	return nil
}

// NeedsEnvResolution reports whether c's environment takes anything from
// outside its template: an envFrom, or an env valueFrom.
func NeedsEnvResolution(c *manifests.Container) bool {
	if len(c.EnvFrom) > 0 {
		return true
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return true
		}
	}
	return false
}

// PodName is the name of the pod the request's container belongs to, as
// Kubernetes' metadata.name (the pod's hostname too unless its template
// sets spec.hostname): its PodRef's for a pod with a holder, else the
// replica's name.
func (req CreateRequest) PodName() string {
	if req.Pod != nil {
		return req.Pod.Name
	}
	return replicaName(req)
}
