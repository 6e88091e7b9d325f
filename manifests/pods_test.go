package manifests

import (
	"strings"
	"testing"
)

func TestAllContainersAndFindContainer(t *testing.T) {
	ps := &PodSpec{
		InitContainers: []Container{{Name: "migrate"}, {Name: "proxy", RestartPolicy: ContainerRestartPolicyAlways}},
		Containers:     []Container{{Name: "app"}, {Name: "metrics"}},
	}
	var names []string
	for _, c := range ps.AllContainers() {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, " "), "migrate proxy app metrics"; got != want {
		t.Errorf("AllContainers = %q, want %q (init containers first, each list in order)", got, want)
	}
	// The pointers are into the spec: defaults and edits through them stick.
	ps.AllContainers()[1].Image = "proxy:2"
	if ps.InitContainers[1].Image != "proxy:2" {
		t.Errorf("AllContainers returned copies: %+v", ps.InitContainers[1])
	}
	for _, tt := range []struct {
		name string
		want *Container
	}{
		{"migrate", &ps.InitContainers[0]},
		{"proxy", &ps.InitContainers[1]},
		{"app", &ps.Containers[0]},
		{"metrics", &ps.Containers[1]},
		{"missing", nil},
		{"", nil},
	} {
		if got := ps.FindContainer(tt.name); got != tt.want {
			t.Errorf("FindContainer(%q) = %p, want %p", tt.name, got, tt.want)
		}
	}
	if !ps.InitContainers[1].IsSidecar() || ps.InitContainers[0].IsSidecar() {
		t.Errorf("IsSidecar: proxy %v, migrate %v", ps.InitContainers[1].IsSidecar(), ps.InitContainers[0].IsSidecar())
	}
	if got := (&PodSpec{}).AllContainers(); len(got) != 0 {
		t.Errorf("AllContainers of an empty spec = %v", got)
	}
	d := &Deployment{Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: *ps}}}
	if d.Container() != &d.Spec.Template.Spec.Containers[0] {
		t.Errorf("Container() is not the first app container")
	}
}
