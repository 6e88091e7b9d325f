package dockerfake

import (
	"context"
	"sync"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

func fakeDeployment(name string) *manifests.Deployment {
	return &manifests.Deployment{Metadata: manifests.ObjectMeta{Name: name}, Spec: manifests.DeploymentSpec{
		Template: manifests.PodTemplateSpec{Spec: manifests.PodSpec{Containers: []manifests.Container{{Name: name, Image: "img"}}}},
	}}
}

// StartFault applies its state and health as part of the start: no list
// between the start and the fault ever sees the container running and
// healthy, and the events say what happened.
func TestStartFaultIsAtomic(t *testing.T) {
	ctx := context.Background()
	e := New("img")
	e.StartFault = func(c dockerx.Container) (string, string) {
		switch c.Name {
		case "exits":
			return dockerx.StateExited, ""
		case "sick":
			return "", dockerx.HealthUnhealthy
		}
		return "", ""
	}
	for _, tc := range []struct{ name, state, health string }{
		{"exits", dockerx.StateExited, ""}, {"sick", dockerx.StateRunning, dockerx.HealthUnhealthy}, {"fine", dockerx.StateRunning, ""},
	} {
		id, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: tc.name, TemplateHash: "h", From: dockerx.TemplateOf(fakeDeployment("web"))})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		d, err := e.InspectContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != tc.state || d.Health != tc.health {
			t.Errorf("%s: %s/%s, want %s/%s", tc.name, d.State, d.Health, tc.state, tc.health)
		}
	}
}

// The peak is counted under the lock as each container lands, so
// concurrent creates cannot hide it; it is per deployment and resettable.
func TestPeakContainers(t *testing.T) {
	ctx := context.Background()
	e := New("img")
	var wg sync.WaitGroup
	ids := make([]string, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "web-" + string(rune('a'+i)), From: dockerx.TemplateOf(fakeDeployment("web"))})
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	if _, err := e.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "api-0", From: dockerx.TemplateOf(fakeDeployment("api"))}); err != nil {
		t.Fatal(err)
	}
	if p := e.PeakContainers("web"); p != 10 {
		t.Fatalf("peak %d, want 10", p)
	}
	for _, id := range ids[:4] {
		if err := e.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// A removal ends asynchronously, as Docker's does: finish those in
	// progress so that the reset counts from what is left.
	e.FinishRemovals()
	if p := e.PeakContainers("web"); p != 10 {
		t.Fatalf("peak %d after removals, want 10", p)
	}
	e.ResetPeak("web")
	if p, api := e.PeakContainers("web"), e.PeakContainers("api"); p != 6 || api != 1 {
		t.Fatalf("peaks after reset: web %d (want 6), api %d (want 1)", p, api)
	}
}
