package podruntime

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// TestCreatePodIdentity: the pod's labels are the template's with
// pod-template-hash; its address is the network's, the host's on the
// host's network, and an address assigned before the create wins.
func TestCreatePodIdentity(t *testing.T) {
	tmpl := func(hostNet bool) *manifests.PodTemplateSpec {
		t := &manifests.PodTemplateSpec{}
		t.Metadata.Labels = map[string]string{"app": "web"}
		t.Spec.HostNetwork = hostNet
		return t
	}
	host := dockerx.HostInfo{Name: "node", CPUs: 2, Memory: 1 << 30}
	tests := []struct {
		name     string
		pod      CreatePod
		wantIP   string
		wantHash string
	}{
		{"network address", CreatePod{Hash: "h1", Template: tmpl(false), HostIP: "10.0.0.1", PodIP: "10.0.0.7"}, "10.0.0.7", "h1"},
		{"host network", CreatePod{Hash: "h1", Template: tmpl(true), HostIP: "10.0.0.1", PodIP: "10.0.0.7"}, "10.0.0.1", "h1"},
		{"assigned address wins", CreatePod{Hash: "h2", Template: tmpl(true), HostIP: "10.0.0.1", AssignedIP: "10.0.0.9"}, "10.0.0.9", "h2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pod.Host = host
			id := tt.pod.Identity()
			if id.PodIP != tt.wantIP || id.Labels["pod-template-hash"] != tt.wantHash || id.Labels["app"] != "web" {
				t.Fatalf("identity %+v; want address %s and labels app=web, pod-template-hash=%s", id, tt.wantIP, tt.wantHash)
			}
			if id.NodeName != "node" || id.NodeCPUs != 2 || id.NodeMemory != 1<<30 || id.ServiceAccountName != "default" {
				t.Fatalf("identity %+v; want the host's name and capacity and the default service account", id)
			}
			if tt.pod.Template.Metadata.Labels["pod-template-hash"] != "" {
				t.Fatal("the template's labels were changed")
			}
		})
	}
}
