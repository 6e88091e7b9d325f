package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// The harness's manifests must be what dockctl accepts: decoded as
// `dockctl apply` decodes them, with the fields the measurements rely on.
func TestManifestsDecode(t *testing.T) {
	e := &env{runID: "b0", image: "dockctl-workload:bench-b0"}
	t.Run("deployment", func(t *testing.T) {
		docs, err := manifests.Decode("bench.yaml", []byte(e.manifestWith("web", 20, "v2", "25%", "0")))
		if err != nil {
			t.Fatal(err)
		}
		d := docs[0].Deployment
		if d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 20 {
			t.Fatalf("decoded %+v, want a deployment of 20", docs[0])
		}
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Env) != 1 || c.Env[0].Value != "v2" || d.Spec.Strategy.RollingUpdate == nil {
			t.Errorf("env %+v strategy %+v, want GREETING=v2 and a rolling update", c.Env, d.Spec.Strategy)
		}
		if d.Spec.Template.Metadata.Labels[benchLabel] != "b0" {
			t.Errorf("template labels %v lack the run label", d.Spec.Template.Metadata.Labels)
		}
	})
	t.Run("service bundle", func(t *testing.T) {
		b := e.serviceBundle("svcweb", 1, 40123)
		// The Deployment half decodes on its own whatever this dockctl
		// knows of Services.
		dep := b[strings.Index(b, "---\n")+4:]
		docs, err := manifests.Decode("bench.yaml", []byte(dep))
		if err != nil {
			t.Fatal(err)
		}
		c := docs[0].Deployment.Spec.Template.Spec.Containers[0]
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("readinessProbe %+v, want httpGet /readyz", c.ReadinessProbe)
		}
		// The whole bundle: before Services the decoder refuses the kind
		// (the harness reports that as "no Services yet"); once it
		// decodes, the Service must be the one the measurements expect.
		docs, err = manifests.Decode("bench.yaml", []byte(b))
		if err != nil {
			if !strings.Contains(err.Error(), `kind "Service"`) {
				t.Fatalf("the bundle is refused for another reason than the Service kind: %v", err)
			}
			return
		}
		var svc *manifests.Service
		for _, d := range docs {
			if d.Service != nil {
				svc = d.Service
			}
		}
		if svc == nil || svc.Spec.Type != manifests.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 1 ||
			svc.Spec.Ports[0].Port != 40123 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 || svc.Spec.Selector["app"] != "svcweb" {
			t.Errorf("service %+v, want a LoadBalancer on 40123 → 8080 selecting app=svcweb", svc)
		}
	})
	t.Run("gateway bundle", func(t *testing.T) {
		// The harness's requests say "Host: dockbench": the Ingress must
		// route every host's / to the Service, port 80 → the replica's 8080.
		docs, err := manifests.Decode("bench.yaml", []byte(e.gatewayBackendBundle("gwweb")+"---\n"+gatewayIngress("gwweb")))
		if err != nil {
			t.Fatal(err)
		}
		var svc *manifests.Service
		var ing *manifests.Ingress
		for _, d := range docs {
			if d.Service != nil {
				svc = d.Service
			}
			if d.Ingress != nil {
				ing = d.Ingress
			}
		}
		if svc == nil || svc.Spec.Type == manifests.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 1 ||
			svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 || svc.Spec.Selector["app"] != "gwweb" {
			t.Errorf("service %+v, want a ClusterIP Service 80 → 8080 selecting app=gwweb", svc)
		}
		if ing == nil || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "" || ing.Spec.Rules[0].HTTP == nil ||
			len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
			t.Fatalf("ingress %+v, want one rule of any host with one path", ing)
		}
		p := ing.Spec.Rules[0].HTTP.Paths[0]
		if p.Path != "/" || p.PathType != "Prefix" || p.Backend.Service == nil || p.Backend.Service.Name != "gwweb" || p.Backend.Service.Port.Number != 80 {
			t.Errorf("ingress path %+v, want Prefix / → gwweb:80", p)
		}
	})
}
