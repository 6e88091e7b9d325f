package main

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
)

// TestBundleAndComposeAreTheSameServices: the compared bundle decodes as
// `dockctl apply` decodes it, into a Deployment with the readiness probe
// and a LoadBalancer Service per port, and its Compose file has, per
// port, a service of the same image and arguments publishing that port
// on 127.0.0.1, with the same check as its healthcheck and the run's
// label (the harness's cleanup).
func TestBundleAndComposeAreTheSameServices(t *testing.T) {
	e := &env{runID: "b0", image: "dockctl-workload:bench-b0"}
	ports := []int{40001, 40002}
	docs, err := manifests.Decode("bundle.yaml", []byte(e.bundleYAML(ports)))
	if err != nil {
		t.Fatal(err)
	}
	deps, svcs := map[string]*manifests.Deployment{}, map[string]*manifests.Service{}
	for _, d := range docs {
		if d.Deployment != nil {
			deps[d.Deployment.Metadata.Name] = d.Deployment
		}
		if d.Service != nil {
			svcs[d.Service.Metadata.Name] = d.Service
		}
	}
	var compose struct {
		Services map[string]struct {
			Image       string
			Command     []string
			Ports       []string
			Labels      map[string]string
			Healthcheck struct {
				Test     []string
				Interval string
			}
		}
	}
	if err := yaml.Unmarshal([]byte(e.bundleCompose(ports)), &compose); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		name, published string
		port            int32
	}{{"svc0", "127.0.0.1:40001:8080", 40001}, {"svc1", "127.0.0.1:40002:8080", 40002}} {
		d, s := deps[want.name], svcs[want.name]
		if d == nil || s == nil {
			t.Fatalf("service %d: deployment %v, Service %v, want both named %s", i, d != nil, s != nil, want.name)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != bundleProbePath || p.PeriodSeconds != bundleProbePeriod {
			t.Errorf("%s: readinessProbe %+v, want httpGet %s every %d s", want.name, p, bundleProbePath, bundleProbePeriod)
		}
		if s.Spec.Type != manifests.ServiceTypeLoadBalancer || s.Spec.Ports[0].Port != want.port {
			t.Errorf("%s: Service %s port %d, want a LoadBalancer on %d", want.name, s.Spec.Type, s.Spec.Ports[0].Port, want.port)
		}
		cs, ok := compose.Services[want.name]
		if !ok {
			t.Fatalf("compose file has no service %s: %+v", want.name, compose.Services)
		}
		if cs.Image != c.Image || len(cs.Command) != 1 || len(c.Args) != 1 || cs.Command[0] != c.Args[0] {
			t.Errorf("%s: compose runs %s %v, dockctl %s %v", want.name, cs.Image, cs.Command, c.Image, c.Args)
		}
		if len(cs.Ports) != 1 || cs.Ports[0] != want.published {
			t.Errorf("%s: compose publishes %v, want %s", want.name, cs.Ports, want.published)
		}
		if cs.Labels[benchLabel] != "b0" || cs.Healthcheck.Interval != "10s" ||
			len(cs.Healthcheck.Test) != 4 || cs.Healthcheck.Test[3] != "http://127.0.0.1:8080"+bundleProbePath {
			t.Errorf("%s: compose labels %v healthcheck %+v, want the run label and GET %s every 10s", want.name, cs.Labels, cs.Healthcheck, bundleProbePath)
		}
	}
}
