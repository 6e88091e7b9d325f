package podruntime

import "github.com/dockctl/dockctl/manifests"

// ControllerProbes returns the probes of a template container that the
// controller runs (as opposed to the HEALTHCHECK that Docker runs). A nil
// container (a holder, or unknown) has none. A startup probe is always
// the controller's (package reconciler's startup.go today): until it succeeds the container is not
// ready, whatever its HEALTHCHECK says, and its liveness probe does not run.
// A postStart hook is the controller's too (hooks.go there): the container is
// not ready until it has run.
func ControllerProbes(c *manifests.Container) Probes {
	if c == nil {
		return Probes{}
	}
	out := Probes{Liveness: c.LivenessProbe, Startup: c.StartupProbe}
	if p := c.ReadinessProbe; p != nil && p.Exec == nil {
		out.Readiness = p
	}
	if lc := c.Lifecycle; lc != nil {
		out.PostStart = lc.PostStart
	}
	return out
}

// Probes are the probes of one container the runtime runs, and its
// postStart hook.
type Probes struct {
	Readiness, Liveness, Startup *manifests.Probe
	PostStart                    *manifests.LifecycleHandler
}

// None: the runtime runs nothing for the container.
func (c Probes) None() bool {
	return c.Readiness == nil && c.Liveness == nil && c.Startup == nil && c.PostStart == nil
}

// GatesReadiness: the runtime judges the container's readiness (its
// readiness probe, its startup probe, its postStart hook).
func (c Probes) GatesReadiness() bool {
	return c.Readiness != nil || c.Startup != nil || c.PostStart != nil
}
