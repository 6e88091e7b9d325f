package manifests

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kubernetes' defaults for the fields dockctl supports.
const (
	DefaultReplicas                      = 1
	DefaultRevisionHistoryLimit          = 10
	DefaultProgressDeadlineSeconds       = 600
	DefaultTerminationGracePeriodSeconds = 30
	DefaultMaxSurge                      = "25%"
	DefaultMaxUnavailable                = "25%"
)

// MaxReplicasLimit is the hard upper bound of spec.replicas (and of a
// resolved maxSurge or maxUnavailable). Kubernetes accepts any int32, but
// one Docker host cannot run anywhere near that many containers (the
// default bridge network has 65534 addresses), and with this bound every
// sum the planner computes (replicas + maxSurge, revision sizes) stays far
// from int32 overflow. The controller's own cap (--max-replicas) is lower.
const MaxReplicasLimit = 100000

// SetDefaults fills unset fields the way the Kubernetes API server does, so
// that a defaulted Deployment (and so its template hash) means the same thing
// here and on a cluster. It is idempotent. The selector is deliberately not
// defaulted: apps/v1 requires it. The namespace is left as written.
func SetDefaults(d *Deployment) {
	s := &d.Spec
	if s.Replicas == nil {
		s.Replicas = ptr[int32](DefaultReplicas)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](DefaultRevisionHistoryLimit)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr[int32](DefaultProgressDeadlineSeconds)
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = StrategyRollingUpdate
	}
	if s.Strategy.Type == StrategyRollingUpdate {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &RollingUpdateDeployment{}
		}
		ru := s.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromString(DefaultMaxUnavailable))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr(intstr.FromString(DefaultMaxSurge))
		}
	}
	setPodSpecDefaults(&s.Template.Spec)
}

// setPodSpecDefaults defaults a pod spec as Kubernetes' SetDefaults_PodSpec
// and the container defaults do, for the template of any workload kind:
// one function, so that a template means, and hashes, the same whichever
// kind holds it.
func setPodSpecDefaults(ps *PodSpec) {
	if ps.RestartPolicy == "" {
		ps.RestartPolicy = "Always"
	}
	if ps.TerminationGracePeriodSeconds == nil {
		ps.TerminationGracePeriodSeconds = ptr[int64](DefaultTerminationGracePeriodSeconds)
	}
	// ClusterFirst is what every pod gets, and was dropped as an ignored
	// field by earlier releases: it is stored unset, so that a template
	// naming it keeps the hash those releases stored.
	if ps.DNSPolicy == DNSClusterFirst || ps.DNSPolicy == DNSClusterFirstWithHostNet && !ps.HostNetwork {
		ps.DNSPolicy = ""
	}
	// Kubernetes defaults every container alike (SetDefaults_Container,
	// SetDefaults_Probe…), init containers and sidecars included. A
	// container's restartPolicy has no default: unset is what makes an
	// init container run to completion.
	for _, c := range ps.AllContainers() {
		setContainerDefaults(c)
	}
}

func setContainerDefaults(c *Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	setLifecycleDefaults(c.Lifecycle)
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = "TCP"
		}
	}
	for _, p := range []*Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		setInt32(&p.TimeoutSeconds, 1)
		setInt32(&p.PeriodSeconds, 10)
		setInt32(&p.SuccessThreshold, 1)
		setInt32(&p.FailureThreshold, 3)
		if h := p.HTTPGet; h != nil {
			if h.Path == "" {
				h.Path = "/"
			}
			if h.Scheme == "" {
				h.Scheme = "HTTP"
			}
		}
	}
}

// DefaultPullPolicy is Kubernetes' rule: Always for the tag "latest" or no
// tag at all (which means latest), IfNotPresent otherwise, including for an
// image pinned by digest only.
func DefaultPullPolicy(image string) string {
	ref, _, hasDigest := strings.Cut(image, "@")
	tag := ""
	// The tag is after the last colon of the last path component; a colon
	// before the last slash belongs to a registry host:port.
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	if i := strings.LastIndexByte(last, ':'); i >= 0 {
		tag = last[i+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return PullAlways
	}
	return PullIfNotPresent
}

func setInt32(p *int32, v int32) {
	if *p == 0 {
		*p = v
	}
}

func ptr[T any](v T) *T { return &v }
