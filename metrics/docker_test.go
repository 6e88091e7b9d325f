package metrics

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
)

const testImage = "img:1"

func testDeployment(name string, replicas int32) *manifests.Deployment {
	d := &manifests.Deployment{
		APIVersion: manifests.APIVersion, Kind: manifests.Kind,
		Metadata: manifests.ObjectMeta{Name: name},
		Spec: manifests.DeploymentSpec{
			Replicas: &replicas,
			Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: manifests.PodTemplateSpec{
				Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": name}},
				Spec: manifests.PodSpec{Containers: []manifests.Container{{
					Name: name, Image: testImage,
				}}},
			},
		},
	}
	manifests.SetDefaults(d)
	return d
}

// addContainer puts a container of instance "i" into the fake, bypassing
// the decorator, so that a call under test has something to act on.
func addContainer(t *testing.T, e *dockerfake.Engine, name, state string) string {
	t.Helper()
	id, err := e.Add(dockerx.Container{Name: name, State: state, Labels: map[string]string{
		dockerx.LabelInstance: "i", dockerx.LabelDeployment: "web"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// dockerCalls maps each reconciler.Docker method to the operation it is
// counted under; "" marks a pass-through.
var dockerCalls = map[string]string{
	"ListContainers":           OpList,
	"ListDeploymentContainers": OpList,
	"CreateContainer":          OpCreate,
	"StartContainer":           OpStart,
	"UnpauseContainer":         OpUnpause,
	"RemoveContainer":          OpRemove,
	"EnsureImage":              OpImage,
	"ImageUser":                OpImage,
	"InspectContainer":         OpInspect,
	"Exec":                     OpExec,
	"StopContainer":            OpStop,
	"Events":                   "",
	"EnsureHolderImage":        OpImage,
	"ListHelperImages":         OpList,
	"RemoveImage":              OpImageRemove,
	"CreateVolume":             OpVolume,
	"ListVolumes":              OpList,
	"RemoveVolume":             OpVolume,
	"CreateClaimVolume":        OpVolume,
}

// The decorator embeds reconciler.Docker so that the interface can grow
// without breaking the build; this test is what makes a new method get
// instrumented (or consciously passed through) instead of silently escaping
// dockctl_docker_api_calls_total.
func TestInstrumentDockerCoversInterface(t *testing.T) {
	it := reflect.TypeFor[reconciler.Docker]()
	for i := range it.NumMethod() {
		name := it.Method(i).Name
		if _, ok := dockerCalls[name]; !ok {
			t.Errorf("reconciler.Docker.%s is not instrumented: add it to instrumentedDocker and dockerCalls", name)
		}
	}
	if len(dockerCalls) != it.NumMethod() {
		t.Errorf("dockerCalls lists %d methods, reconciler.Docker has %d", len(dockerCalls), it.NumMethod())
	}
}

func TestInstrumentDocker(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		method  string
		setup   func(t *testing.T, e *dockerfake.Engine) string // returns an ID to act on
		call    func(d reconciler.Docker, id string) error
		wantErr bool
	}{
		{
			name: "list", method: "ListContainers",
			call: func(d reconciler.Docker, _ string) error { _, err := d.ListContainers(ctx, "i"); return err },
		},
		{
			name: "create", method: "CreateContainer",
			call: func(d reconciler.Docker, _ string) error {
				_, err := d.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "i_web-1", From: dockerx.TemplateOf(testDeployment("web", 1))})
				return err
			},
		},
		{
			name: "create with a taken name is a counted error", method: "CreateContainer",
			setup: func(t *testing.T, e *dockerfake.Engine) string {
				return addContainer(t, e, "i_web-1", dockerx.StateRunning)
			},
			call: func(d reconciler.Docker, _ string) error {
				_, err := d.CreateContainer(ctx, dockerx.CreateRequest{Instance: "i", Name: "i_web-1", From: dockerx.TemplateOf(testDeployment("web", 1))})
				return err
			},
			wantErr: true,
		},
		{
			name: "start", method: "StartContainer",
			setup: func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StateCreated) },
			call:  func(d reconciler.Docker, id string) error { return d.StartContainer(ctx, id) },
		},
		{
			name: "start of a missing container", method: "StartContainer",
			call:    func(d reconciler.Docker, _ string) error { return d.StartContainer(ctx, "0123456789ab") },
			wantErr: true,
		},
		{
			name: "unpause", method: "UnpauseContainer",
			setup: func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StatePaused) },
			call:  func(d reconciler.Docker, id string) error { return d.UnpauseContainer(ctx, id) },
		},
		{
			name: "unpause of a running container", method: "UnpauseContainer",
			setup:   func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StateRunning) },
			call:    func(d reconciler.Docker, id string) error { return d.UnpauseContainer(ctx, id) },
			wantErr: true,
		},
		{
			name: "remove", method: "RemoveContainer",
			setup: func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StateRunning) },
			call:  func(d reconciler.Docker, id string) error { return d.RemoveContainer(ctx, id) },
		},
		{
			name: "image present", method: "EnsureImage",
			call: func(d reconciler.Docker, _ string) error { return d.EnsureImage(ctx, testImage, "IfNotPresent", nil) },
		},
		{
			name: "list one deployment", method: "ListDeploymentContainers",
			call: func(d reconciler.Docker, _ string) error {
				_, err := d.ListDeploymentContainers(ctx, "i", "web")
				return err
			},
		},
		{
			name: "inspect", method: "InspectContainer",
			setup: func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StateRunning) },
			call:  func(d reconciler.Docker, id string) error { _, err := d.InspectContainer(ctx, id); return err },
		},
		{
			name: "exec", method: "Exec",
			setup: func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StateRunning) },
			call: func(d reconciler.Docker, id string) error {
				_, err := d.Exec(ctx, id, []string{"true"}, time.Second)
				return err
			},
		},
		{
			name: "stop", method: "StopContainer",
			setup: func(t *testing.T, e *dockerfake.Engine) string { return addContainer(t, e, "c", dockerx.StateRunning) },
			call:  func(d reconciler.Docker, id string) error { return d.StopContainer(ctx, id, time.Second) },
		},
		{
			name: "image absent", method: "EnsureImage",
			call:    func(d reconciler.Docker, _ string) error { return d.EnsureImage(ctx, "absent:1", "IfNotPresent", nil) },
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			engine := dockerfake.New(testImage)
			var id string
			if tt.setup != nil {
				id = tt.setup(t, engine)
			}
			m := New()
			err := tt.call(m.InstrumentDocker(engine), id)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}

			op := dockerCalls[tt.method]
			wantErrors := 0.0
			if tt.wantErr {
				wantErrors = 1
			}
			for _, other := range operations {
				want, wantE := 0.0, 0.0
				if other == op {
					want, wantE = 1, wantErrors
				}
				if got := testutil.ToFloat64(m.docker.calls.WithLabelValues(other)); got != want {
					t.Errorf("dockctl_docker_api_calls_total{operation=%q} = %v, want %v", other, got, want)
				}
				if got := testutil.ToFloat64(m.docker.errors.WithLabelValues(other)); got != wantE {
					t.Errorf("dockctl_docker_api_errors_total{operation=%q} = %v, want %v", other, got, wantE)
				}
				if got := m.DockerCalls()[other]; float64(got) != want {
					t.Errorf("DockerCalls()[%q] = %d, want %v", other, got, want)
				}
			}
			checkSeries(t, scrape(t, m), map[string]float64{
				`dockctl_docker_api_call_duration_seconds_count{operation="` + op + `"}`: 1,
			}, nil)

			// The decorator counts exactly what reaches the engine.
			if got, want := m.DockerCalls()[op], uint64(engine.Calls()[op]); got != want {
				t.Errorf("decorator counted %d %s calls, the engine saw %d", got, op, want)
			}
			if got, want := m.DockerWriteCalls(), uint64(engine.WriteCalls()); got != want {
				t.Errorf("DockerWriteCalls() = %d, engine.WriteCalls() = %d", got, want)
			}
		})
	}
}

// Every operation is exported at 0 before any call, so that a scrape of an
// idle controller reads "0 writes" instead of finding no series.
func TestDockerSeriesExistFromTheStart(t *testing.T) {
	want := map[string]float64{}
	for _, op := range operations {
		want[`dockctl_docker_api_calls_total{operation="`+op+`"}`] = 0
		want[`dockctl_docker_api_errors_total{operation="`+op+`"}`] = 0
		want[`dockctl_docker_api_call_duration_seconds_count{operation="`+op+`"}`] = 0
	}
	checkSeries(t, scrape(t, New()), want, nil)
}

// Events is one long-lived subscription: it passes through and is not an
// API call in the counts.
func TestInstrumentDockerEventsPassThrough(t *testing.T) {
	m := New()
	engine := dockerfake.New(testImage)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := m.InstrumentDocker(engine).Events(ctx, "i")
	select {
	case ev := <-events:
		if !ev.Gap {
			t.Fatalf("first event %+v, want the subscription's initial gap", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event through the decorator")
	}
	addContainer(t, engine, "c", dockerx.StateRunning)
	select {
	case ev := <-events:
		if ev.Action != "create" || ev.Name != "c" {
			t.Fatalf("event %+v, want the create of c", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the engine's event did not pass through")
	}
	for op, n := range m.DockerCalls() {
		if n != 0 {
			t.Errorf("subscribing counted %d %s calls", n, op)
		}
	}
}
