package manifests

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"
)

// ParseMaxSurgeUnavailable resolves the rolling-update bounds against the
// desired replica count with Kubernetes' rounding: surge rounds up,
// unavailable rounds down, and when both come to 0 unavailable becomes 1 so
// that a rollout can always make progress. Unset bounds count as their 25%
// defaults. For Recreate it returns surge 0 and unavailable = replicas: every
// old container goes before a new one starts.
func ParseMaxSurgeUnavailable(d *Deployment) (surge, unavailable int32, err error) {
	replicas := d.Replicas()
	if d.Spec.Strategy.Type == StrategyRecreate {
		return 0, replicas, nil
	}
	ms, mu := intstr.FromString(DefaultMaxSurge), intstr.FromString(DefaultMaxUnavailable)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			ms = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(&ms, int(replicas), true)
	if err != nil {
		return 0, 0, fmt.Errorf("deployment %q: maxSurge: %w", d.Metadata.Name, err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&mu, int(replicas), false)
	if err != nil {
		return 0, 0, fmt.Errorf("deployment %q: maxUnavailable: %w", d.Metadata.Name, err)
	}
	if s < 0 || u < 0 {
		return 0, 0, fmt.Errorf("deployment %q: maxSurge and maxUnavailable must not be negative", d.Metadata.Name)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	// A value beyond MaxReplicasLimit means the same as MaxReplicasLimit
	// (replicas never exceed it), and bounding it keeps replicas + maxSurge
	// inside int32 whatever the manifest or a percent of it says.
	return int32(min(s, MaxReplicasLimit)), int32(min(u, MaxReplicasLimit)), nil
}

// DeepCopy returns a copy that shares no memory with d. The JSON round trip
// is exact for these types: every field is exported and tagged, and empty
// maps and slices, the only thing it does not preserve, mean the same as nil
// everywhere in dockctl.
func (d *Deployment) DeepCopy() *Deployment {
	if d == nil {
		return nil
	}
	out := &Deployment{}
	jsonCopy(d, out, "deployment", d.Metadata.Name)
	return out
}

// jsonCopy copies in into out (a pointer to a zero value of the same
// type) through JSON; kind and name name the object in the panic that a type
// JSON cannot carry would cause (a bug, never input).
func jsonCopy(in, out any, kind, name string) {
	b, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("manifests: deep copy of %s %q: %v", kind, name, err))
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("manifests: deep copy of %s %q: %v", kind, name, err))
	}
}

// Marshal renders d as "json" (indented, trailing newline) or "yaml", with
// Kubernetes' field names and order, so that the output can be applied again
// and read by kubectl.
func Marshal(d *Deployment, format string) ([]byte, error) {
	return marshal(d, "deployment", d.Metadata.Name, format)
}

// marshal renders obj, one of dockctl's kinds, named in errors by kind
// and name.
func marshal(obj any, kind, name, format string) ([]byte, error) {
	switch format {
	case "json":
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("marshal %s %q as JSON: %w", kind, name, err)
		}
		return append(b, '\n'), nil
	case "yaml":
		b, err := sigsyaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("marshal %s %q as YAML: %w", kind, name, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unsupported output format %q (want json or yaml)", format)
}
