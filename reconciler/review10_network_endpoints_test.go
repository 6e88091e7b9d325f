package reconciler

import (
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// TestReview10HostNetworkPodIsNoEndpoint: a ready hostNetwork pod
// selected by a Service gets no address (it is not on the instance
// network), so it is never a ready endpoint: the Service silently has no
// backend, and `get endpoints` drops it (no IP) instead of listing it. In
// Kubernetes a hostNetwork pod is an endpoint at its node's address; here
// the host is reachable from the proxies at the instance network's
// gateway.
func TestReview10HostNetworkPodIsNoEndpoint(t *testing.T) {
	d := deployment(1)
	d.Spec.Template.Metadata.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.HostNetwork = true
	d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	rec := recordOf(d)
	const H = "aaaa"
	c0 := ctr(H, 0, "running", 0)
	c0.Networks = map[string]string{"host": ""}
	in := PlanInput{Name: "web", Containers: []dockerx.Container{c0}, Terminating: map[string]time.Time{}, Stopping: map[string]bool{}}
	const gateway = "10.222.0.1" // the host on the instance network
	pods := podEndpoints("i", gateway, rec, in, map[string]bool{c0.ID: true}, templateLookup(d, H, nil), false)
	if len(pods) != 1 || pods[0].IP != gateway || !pods[0].Ready {
		t.Fatalf("a ready hostNetwork pod: %+v; want a ready endpoint with an address the proxies reach (the host's on the instance network)", pods)
	}
}

// TestReview10InstanceNetworkLeftWhenEverythingIsDeleted: once the last
// deployment is deleted the controller removes every container (the DNS
// server too: "so that deleting everything leaves the host as it was",
// dnsctl.go) and collects its images, but the instance network it made
// stays for good: nothing calls RemoveNetwork.
func TestReview10InstanceNetworkLeftWhenEverythingIsDeleted(t *testing.T) {
	h := newHarness(t, Options{ResyncPeriod: 50 * time.Millisecond})
	h.apply(testDeployment("web", 1, "x"))
	h.start()
	h.waitReplicas("web", 1)
	if h.network("dockctl_i") == nil {
		t.Fatal("no instance network made")
	}
	if err := h.store.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("every container of the instance gone and its images collected", func() bool {
		for _, c := range h.engine.Snapshot() {
			if c.Instance == "i" {
				return false
			}
		}
		return len(h.engine.HelperImages()) == 0
	})
	h.waitFor("the instance network removed", func() bool { return h.network("dockctl_i") == nil })
}
