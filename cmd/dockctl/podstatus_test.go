package main

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
)

// TestPodSpecHostname: a pod object's spec.hostname is the hostname its
// containers have: its template's spec.hostname when it sets one (as
// Kubernetes keeps it in the pod), else the pod's name, which is what
// dockctl makes its hostname then; spec.subdomain is the template's.
func TestPodSpecHostname(t *testing.T) {
	for _, tc := range []struct {
		name, hostname, subdomain string
		want                      string
	}{
		{name: "a template without one: the pod's name", want: "web-5d8f7c9b6-0"},
		{name: "the template's spec.hostname", hostname: "front", subdomain: "web", want: "front"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := &manifests.PodTemplateSpec{Spec: manifests.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain,
				Containers: []manifests.Container{{Name: "app", Image: "img:1"}}}}
			e := &podEntry{PodView: podruntime.PodView{Name: "web-5d8f7c9b6-0"}, template: tmpl}
			spec, err := e.podSpec(&snapshot{host: &dockerx.HostInfo{Name: "node"}})
			if err != nil {
				t.Fatal(err)
			}
			if spec.Hostname != tc.want || spec.Subdomain != tc.subdomain {
				t.Errorf("spec.hostname %q subdomain %q, want %q %q", spec.Hostname, spec.Subdomain, tc.want, tc.subdomain)
			}
		})
	}
}
