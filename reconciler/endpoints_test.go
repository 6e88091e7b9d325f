package reconciler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

func TestPodEndpointsFromAssessment(t *testing.T) {
	d := deployment(2)
	d.Spec.Template.Metadata.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	rec := recordOf(d)
	const H = "aaaa"
	c0, c1, c2 := ctr(H, 0, "running", 0), ctr(H, 1, "running", 0), ctr(H, 2, "running", 0)
	c0.Networks = map[string]string{"dockctl_i": "10.0.0.2", "bridge": "172.17.0.2"}
	c1.Networks = map[string]string{"dockctl_i": "10.0.0.3"}
	in := PlanInput{Name: "web", Containers: []dockerx.Container{c0, c1, c2}, Terminating: map[string]time.Time{c1.ID: {}}, Stopping: map[string]bool{}}
	pods := podEndpoints("i", "", rec, in, map[string]bool{c0.ID: true, c1.ID: true}, templateLookup(d, H, nil), false)
	var got []string
	for _, p := range pods {
		got = append(got, fmt.Sprintf("%s/%s ip=%s ready=%v terminating=%v app=%s ports=%d", p.Namespace, p.Pod, p.IP, p.Ready, p.Terminating, p.Labels["app"], len(p.Containers[0].Ports)))
	}
	want := []string{
		"default/web-aaaa-0 ip=10.0.0.2 ready=true terminating=false app=web ports=1",
		"default/web-aaaa-1 ip=10.0.0.3 ready=true terminating=true app=web ports=1",
		"default/web-aaaa-2 ip= ready=false terminating=false app=web ports=1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pods:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	deleted := podEndpoints("i", "", rec, in, nil, templateLookup(nil, "", nil), true)
	for _, p := range deleted {
		if p.Ready || !p.Terminating {
			t.Errorf("deleted deployment's pod %s: ready %v terminating %v", p.Pod, p.Ready, p.Terminating)
		}
	}
}

// TestDeploymentPodEndpointsCarryTheirHostname: a Deployment's pod whose
// template names its hostname and subdomain is an endpoint with both, read
// from its container's labels (docs/design.md §4), so that a headless
// Service named by the subdomain gives it a DNS name; one without has
// neither.
func TestDeploymentPodEndpointsCarryTheirHostname(t *testing.T) {
	d := deployment(2)
	d.Spec.Template.Metadata.Labels = map[string]string{"app": "web"}
	rec := recordOf(d)
	const H = "aaaa"
	c0, c1 := ctr(H, 0, "running", 0), ctr(H, 1, "running", 0)
	c0.Labels = map[string]string{"app": "web", dockerx.LabelHostname: "front", dockerx.LabelSubdomain: "web"}
	in := PlanInput{Name: "web", Containers: []dockerx.Container{c0, c1}, Terminating: map[string]time.Time{}, Stopping: map[string]bool{}}
	pods := podEndpoints("i", "", rec, in, map[string]bool{c0.ID: true, c1.ID: true}, templateLookup(d, H, nil), false)
	var got []string
	for _, p := range pods {
		got = append(got, fmt.Sprintf("%s host=%s sub=%s", p.Pod, p.Hostname, p.Subdomain))
	}
	if want := "web-aaaa-0 host=front sub=web|web-aaaa-1 host= sub="; strings.Join(got, "|") != want {
		t.Errorf("endpoints %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestHostNetworkPodIsAnEndpointAtTheGateway: a ready hostNetwork pod
// selected by a Service gets no address on the instance network, yet it
// must be a ready endpoint, or the Service silently has no backend and
// `get endpoints` drops it. In Kubernetes a hostNetwork pod is an endpoint
// at its node's address; here the host is reachable from the proxies at
// the instance network's gateway.
func TestHostNetworkPodIsAnEndpointAtTheGateway(t *testing.T) {
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

// TestForceDeletedPodLeavesEndpointsFirst: a pod deleted with
// --grace-period=0 --force is stopped at once, and the sync that stops it
// must hand the Services' tracker its endpoint as terminating, not ready
// (feedTracker runs before execute), or the Service keeps routing to a
// killed pod until a later sync. Kubernetes takes a deleted pod out of its
// endpoints as soon as it is deleted (terminating, not ready) - a
// force-deleted one at once, its object gone - and the kubelet still
// sends the stop signal with a 2 s minimum grace.
func TestForceDeletedPodLeavesEndpointsFirst(t *testing.T) {
	d := deployment(2)
	d.Spec.Template.Metadata.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{Name: "http", ContainerPort: 8080}}
	rec := recordOf(d)
	h := manifests.TemplateHash(&d.Spec.Template)
	c0, c1 := ctr(h, 0, "running", 0), ctr(h, 1, "running", 0)
	c0.Networks = map[string]string{"dockctl_i": "10.0.0.2"}
	c1.Networks = map[string]string{"dockctl_i": "10.0.0.3"}
	zero := int64(0)
	in := PlanInput{Instance: "i", Name: "web", Desired: d, Hash: h, Now: t0, Containers: []dockerx.Container{c0, c1},
		Deletions: []store.PodDeletion{{Pod: "web-x-1", Containers: []string{c1.ID}, GracePeriodSeconds: &zero, RequestedAt: t0}}}
	n := d.Replicas()
	in.State = RolloutState{Sizes: map[string]int32{h: n}, DesiredReplicas: &n}
	in.Available = availableIfRunning(in.Containers)
	plan := ComputePlan(in)
	// A forced delete is no bare rm -f but, as the kubelet's, a stop with
	// the least grace period of 2 s.
	stopped := false
	for _, op := range plan.Ops {
		if op.Kind == OpRemove && op.ContainerID == c1.ID && op.Grace == podruntime.MinPodGrace {
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("the force-deleted pod is not stopped with the kubelet's least grace period of 2s:\n%s", plan)
	}
	for _, p := range podEndpoints("i", "", rec, in, map[string]bool{c0.ID: true, c1.ID: true}, templateLookup(d, h, nil), false) {
		if p.UnitID == c1.ID && !p.Terminating {
			t.Errorf("the sync that kills pod %s at once publishes it ready=%v terminating=%v to its Services", p.Pod, p.Ready, p.Terminating)
		}
	}
}
