package manifests

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image, want string
	}{
		{"nginx", PullAlways},
		{"nginx:latest", PullAlways},
		{"nginx:1.25", PullIfNotPresent},
		{"dockctl-workload:dev", PullIfNotPresent},
		{"registry.local:5000/team/app", PullAlways},
		{"registry.local:5000/team/app:2", PullIfNotPresent},
		{"registry.local:5000/team/app:latest", PullAlways},
		{"app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", PullIfNotPresent},
		{"app:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", PullAlways},
		{"localhost:5000/app", PullAlways},
	}
	for _, tt := range tests {
		if got := DefaultPullPolicy(tt.image); got != tt.want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name  string
		in    Deployment
		check func(t *testing.T, d *Deployment)
	}{
		{"empty deployment gets Kubernetes' defaults", Deployment{
			Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{Containers: []Container{{
				Name: "c", Image: "img:1",
				Ports:          []ContainerPort{{ContainerPort: 80}},
				ReadinessProbe: &Probe{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(80)}},
			}}}}},
		}, func(t *testing.T, d *Deployment) {
			s := d.Spec
			ru := s.Strategy.RollingUpdate
			if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
				t.Errorf("spec counters = %d %d %d", *s.Replicas, *s.RevisionHistoryLimit, *s.ProgressDeadlineSeconds)
			}
			if s.Strategy.Type != StrategyRollingUpdate || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" {
				t.Errorf("strategy = %+v", s.Strategy)
			}
			if s.Selector != nil {
				t.Errorf("selector was defaulted to %+v; apps/v1 requires it", s.Selector)
			}
			ps := s.Template.Spec
			if ps.RestartPolicy != "Always" || *ps.TerminationGracePeriodSeconds != 30 {
				t.Errorf("pod spec = %+v", ps)
			}
			c := ps.Containers[0]
			p := c.ReadinessProbe
			if c.ImagePullPolicy != PullIfNotPresent || c.Ports[0].Protocol != "TCP" {
				t.Errorf("container = %+v", c)
			}
			if p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 ||
				p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != "HTTP" {
				t.Errorf("probe = %+v %+v", p, p.HTTPGet)
			}
		}},
		{"explicit values are kept", Deployment{
			Metadata: ObjectMeta{Namespace: "default"},
			Spec: DeploymentSpec{
				Replicas: ptr[int32](0),
				Strategy: DeploymentStrategy{Type: StrategyRollingUpdate, RollingUpdate: &RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(0))}},
				Template: PodTemplateSpec{Spec: PodSpec{
					TerminationGracePeriodSeconds: ptr[int64](0),
					Containers: []Container{{Image: "img", ImagePullPolicy: PullNever,
						LivenessProbe: &Probe{Exec: &ExecAction{Command: []string{"true"}}, PeriodSeconds: 3}}},
				}},
			},
		}, func(t *testing.T, d *Deployment) {
			ru := d.Spec.Strategy.RollingUpdate
			if *d.Spec.Replicas != 0 || ru.MaxSurge.String() != "0" || ru.MaxUnavailable.String() != "25%" {
				t.Errorf("spec = %+v, rollingUpdate = %+v", d.Spec, ru)
			}
			if d.Metadata.Namespace != "default" || *d.Spec.Template.Spec.TerminationGracePeriodSeconds != 0 {
				t.Errorf("namespace %q grace %d", d.Metadata.Namespace, *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
			}
			if c := d.Container(); c.ImagePullPolicy != PullNever || c.LivenessProbe.PeriodSeconds != 3 {
				t.Errorf("container = %+v", c)
			}
		}},
		{"every container of a pod is defaulted as a single one is", Deployment{
			Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{
				InitContainers: []Container{
					{Name: "init", Image: "init:1", Ports: []ContainerPort{{ContainerPort: 9000}}},
					{Name: "proxy", Image: "proxy", RestartPolicy: ContainerRestartPolicyAlways,
						ReadinessProbe: &Probe{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(8443)}}},
				},
				Containers: []Container{
					{Name: "app", Image: "app:1"},
					{Name: "metrics", Image: "metrics:latest", LivenessProbe: &Probe{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(9100)}}},
				},
			}}},
		}, func(t *testing.T, d *Deployment) {
			ps := &d.Spec.Template.Spec
			init, proxy, metrics := ps.InitContainers[0], ps.InitContainers[1], ps.Containers[1]
			if init.ImagePullPolicy != PullIfNotPresent || init.Ports[0].Protocol != "TCP" || init.RestartPolicy != "" {
				t.Errorf("init container = %+v", init)
			}
			if p := proxy.ReadinessProbe; proxy.ImagePullPolicy != PullAlways || p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 ||
				p.SuccessThreshold != 1 || p.FailureThreshold != 3 || p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != "HTTP" {
				t.Errorf("sidecar = %+v, probe %+v", proxy, p)
			}
			if p := metrics.LivenessProbe; metrics.ImagePullPolicy != PullAlways || p.PeriodSeconds != 10 || p.FailureThreshold != 3 {
				t.Errorf("second app container = %+v, probe %+v", metrics, p)
			}
			if ps.Containers[0].ImagePullPolicy != PullIfNotPresent {
				t.Errorf("first app container = %+v", ps.Containers[0])
			}
		}},
		{"Recreate gets no rollingUpdate", Deployment{Spec: DeploymentSpec{Strategy: DeploymentStrategy{Type: StrategyRecreate}}},
			func(t *testing.T, d *Deployment) {
				if d.Spec.Strategy.RollingUpdate != nil {
					t.Errorf("rollingUpdate = %+v", d.Spec.Strategy.RollingUpdate)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.in
			SetDefaults(&d)
			tt.check(t, &d)
			// Defaulting twice changes nothing.
			once, err := Marshal(&d, "json")
			if err != nil {
				t.Fatal(err)
			}
			SetDefaults(&d)
			twice, err := Marshal(&d, "json")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(once, twice) {
				t.Errorf("SetDefaults is not idempotent:\n%s\n%s", once, twice)
			}
		})
	}
}
