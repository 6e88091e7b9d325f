package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// scale (and rollout undo) refuse several replicas of a pod that publishes
// a hostPort in any of its containers, a sidecar's or an init
// container's too.
func TestHostPortConflictLooksAtEveryContainer(t *testing.T) {
	for _, where := range []string{"app", "sidecar", "init"} {
		t.Run(where, func(t *testing.T) {
			d := mustDecode(t, jobsYAML)
			port := manifests.ContainerPort{ContainerPort: 80, HostPort: 18080, Protocol: "TCP"}
			one := int32(1)
			d.Spec.Replicas = &one
			switch where {
			case "app":
				d.Spec.Template.Spec.Containers[1].Ports = append(d.Spec.Template.Spec.Containers[1].Ports, port)
			case "sidecar":
				d.Spec.Template.Spec.InitContainers[1].Ports = append(d.Spec.Template.Spec.InitContainers[1].Ports, port)
			case "init":
				d.Spec.Template.Spec.InitContainers[0].Ports = append(d.Spec.Template.Spec.InitContainers[0].Ports, port)
			}
			if err := hostPortConflict(d); err != nil {
				t.Fatalf("one replica: %v", err)
			}
			two := int32(2)
			d.Spec.Replicas = &two
			if err := hostPortConflict(d); err == nil || !strings.Contains(err.Error(), "hostPort 18080") {
				t.Fatalf("two replicas: err %v, want a hostPort refusal", err)
			}
		})
	}
}
