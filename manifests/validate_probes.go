package manifests

// Validation of the probe and hook fields, as Kubernetes' validateProbe,
// validateLifecycle and validateSleepAction (pkg/apis/core/validation): a
// grpc probe handler, startupProbe (checked as a liveness probe:
// successThreshold must be 1), and lifecycle postStart/preStop handlers
// (exactly one of exec, httpGet, tcpSocket, sleep). An init container that
// runs to completion may have no lifecycle, as no probes; a sidecar may.

// grpcProbe checks a probe's grpc handler and returns how many handlers
// it counts (0 or 1).
func (v *validator) grpcProbe(p string, g *GRPCAction) int {
	if g == nil {
		return 0
	}
	// Kubernetes: validatePortNumOrName(intstr.FromInt32(port)); a gRPC
	// probe names no container port, only a number.
	v.portNumber(child(p, "port"), g.Port)
	return 1
}

// lifecycle checks a container's lifecycle hooks. allowed: the container
// keeps running (an app container or a sidecar); grace: the pod's
// terminationGracePeriodSeconds, which bounds a sleep.
func (v *validator) lifecycle(p string, c *Container, allowed bool, grace *int64) {
	lc := c.Lifecycle
	if lc == nil {
		return
	}
	if !allowed {
		v.add(p, "may not be set for init containers without restartPolicy=Always")
		return
	}
	if lc.PostStart != nil {
		v.lifecycleHandler(child(p, "postStart"), lc.PostStart, c, grace)
	}
	if lc.PreStop != nil {
		v.lifecycleHandler(child(p, "preStop"), lc.PreStop, c, grace)
	}
}

func (v *validator) lifecycleHandler(p string, h *LifecycleHandler, c *Container, grace *int64) {
	handlers := v.handlers(p, h.Exec, h.HTTPGet, h.TCPSocket, c)
	if s := h.Sleep; s != nil {
		handlers++
		// Kubernetes 1.34 (PodLifecycleSleepActionAllowZero, on by
		// default): 0 ≤ seconds ≤ terminationGracePeriodSeconds, which
		// the API server has defaulted before it validates.
		g := int64(DefaultTerminationGracePeriodSeconds)
		if grace != nil {
			g = *grace
		}
		if s.Seconds < 0 || s.Seconds > g {
			v.add(child(p, "sleep.seconds"), "must be non-negative and less than terminationGracePeriodSeconds (%d)", g)
		}
	}
	switch {
	case handlers == 0:
		v.add(p, "must specify a handler type (exec, httpGet, tcpSocket or sleep)")
	case handlers > 1:
		v.add(p, "may not specify more than one handler type")
	}
}

// setLifecycleDefaults defaults a hook's httpGet as a probe's
// (Kubernetes' SetDefaults_HTTPGetAction applies to both).
func setLifecycleDefaults(lc *Lifecycle) {
	if lc == nil {
		return
	}
	for _, h := range []*LifecycleHandler{lc.PostStart, lc.PreStop} {
		if h == nil || h.HTTPGet == nil {
			continue
		}
		if h.HTTPGet.Path == "" {
			h.HTTPGet.Path = "/"
		}
		if h.HTTPGet.Scheme == "" {
			h.HTTPGet.Scheme = "HTTP"
		}
	}
}
