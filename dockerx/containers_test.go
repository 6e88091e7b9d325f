package dockerx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

func TestParseHealth(t *testing.T) {
	tests := map[string]string{
		"Up 3 minutes (healthy)":           HealthHealthy,
		"Up 3 seconds (health: starting)":  HealthStarting,
		"Up About a minute (unhealthy)":    HealthUnhealthy,
		"Up 3 minutes":                     HealthNone,
		"Exited (1) 2 seconds ago":         HealthNone,
		"Up 2 minutes (Paused)":            HealthNone,
		"Created":                          HealthNone,
		"Up 1 second (healthy) (whatever)": HealthNone,
	}
	for status, want := range tests {
		if got := parseHealth(status); got != want {
			t.Errorf("parseHealth(%q) = %q, want %q", status, got, want)
		}
	}
}

func TestFromSummary(t *testing.T) {
	replica := container.Summary{
		ID:      "id1",
		Names:   []string{"/other/alias", "/default_web-abc-0"},
		Image:   "img:1",
		ImageID: "sha256:1",
		Created: 1700000000,
		Labels:  map[string]string{LabelInstance: "default", LabelDeployment: "web", LabelTemplateHash: "abc", "app": "web"},
		State:   "running",
		Status:  "Up 5 seconds (health: starting)",
		Ports:   []container.Port{{IP: "0.0.0.0", PrivatePort: 8080, PublicPort: 18080, Type: "tcp"}},
	}
	proxy := container.Summary{
		ID: "id2", Names: []string{"/i_web.shop_svc"}, Image: "dockctl-helper:i-abc", Created: 1700000000,
		Labels: map[string]string{LabelInstance: "i", LabelNamespace: "shop", LabelRole: RoleProxy, LabelService: "web", LabelConfigHash: "c0ffee"},
		State:  "created", Status: "Created",
		NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{
			"dockctl_i": {IPAddress: ""}, "extra": {IPAddress: "172.20.0.3"}, "broken": nil,
		}},
	}
	// Running, after a refused connect that Docker left in its
	// configuration: that network is not reported.
	stale := container.Summary{ID: "id3", Names: []string{"/i_web-abc-1"}, Created: 1700000000, State: "running", Status: "Up 1 second",
		Labels: map[string]string{LabelInstance: "i", LabelNamespace: "default"},
		HostConfig: struct {
			NetworkMode string            `json:",omitempty"`
			Annotations map[string]string `json:",omitempty"`
		}{NetworkMode: "dockctl_i"},
		NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{
			"bridge": {IPAddress: "172.17.0.2", EndpointID: "e1"}, "dockctl_i": {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.8.5"}},
		}},
	}
	for _, tt := range []struct {
		name string
		s    container.Summary
		want Container
	}{
		{"running, a refused connect left in its configuration", stale, Container{
			ID: "id3", Name: "i_web-abc-1", Labels: stale.Labels, Instance: "i", Role: RoleReplica, Namespace: "default",
			Networks: map[string]string{"bridge": "172.17.0.2"}, NetworkMode: "dockctl_i", State: StateRunning, Status: "Up 1 second", Created: time.Unix(1700000000, 0),
			// Its static address is still configured: a pod address
			// is never picked over it (StaticIPv4).
			StaticIPv4: map[string]string{"dockctl_i": "10.222.8.5"},
		}},
		{"replica of an earlier release: default namespace, no networks reported", replica, Container{
			ID: "id1", Name: "default_web-abc-0", Image: "img:1", ImageID: "sha256:1", Labels: replica.Labels,
			Instance: "default", Deployment: "web", TemplateHash: "abc", Role: RoleReplica, Namespace: "default",
			State: StateRunning, Health: HealthStarting, Status: replica.Status, Created: time.Unix(1700000000, 0),
			Ports: []Port{{HostIP: "0.0.0.0", HostPort: 18080, ContainerPort: 8080, Protocol: "tcp"}},
		}},
		{"proxy helper: namespace, service, config hash, networks", proxy, Container{
			ID: "id2", Name: "i_web.shop_svc", Image: "dockctl-helper:i-abc", Labels: proxy.Labels,
			Instance: "i", Role: RoleProxy, Namespace: "shop", Service: "web", ConfigHash: "c0ffee",
			Networks: map[string]string{"dockctl_i": "", "extra": "172.20.0.3", "broken": ""},
			State:    StateCreated, Status: "Created", Created: time.Unix(1700000000, 0),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromSummary(tt.s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fromSummary =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestFromInspect(t *testing.T) {
	r := container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID: "id1", Name: "/n", RestartCount: 2,
			State: &container.State{
				Status: "exited", ExitCode: 137, OOMKilled: true, Pid: 0,
				StartedAt:  "2024-01-02T03:04:05.123456789Z",
				FinishedAt: "0001-01-01T00:00:00Z",
				Health:     &container.Health{Status: "unhealthy", FailingStreak: 3},
			},
		},
		Config: &container.Config{Image: "img", Labels: map[string]string{"a": "b"}},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{
			"dockctl_i": {IPAddress: "10.222.3.4"}, "extra": {IPAddress: "172.20.0.3"},
		}},
	}
	want := ContainerDetails{
		IPAddress: "10.222.3.4", Networks: map[string]string{"dockctl_i": "10.222.3.4", "extra": "172.20.0.3"},
		ID: "id1", Name: "n", Image: "img", Labels: map[string]string{"a": "b"}, State: StateExited,
		ExitCode: 137, OOMKilled: true, RestartCount: 2,
		StartedAt: time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC),
		Health:    HealthUnhealthy, FailingStreak: 3,
	}
	if got := fromInspect(r); !reflect.DeepEqual(got, want) {
		t.Errorf("fromInspect =\n%+v\nwant\n%+v", got, want)
	}
}

func TestErrorMapping(t *testing.T) {
	refused := fmt.Errorf("wrapped: %w", client.ErrorConnectionFailed("unix:///x.sock"))
	tests := []struct {
		name string
		err  error
		want []error
		not  []error
	}{
		{"not found", cerrdefs.ErrNotFound.WithMessage("No such container: x"), []error{ErrNotFound}, []error{ErrConflict, ErrUnreachable}},
		{"conflict", cerrdefs.ErrConflict.WithMessage("name in use"), []error{ErrConflict}, []error{ErrNotFound}},
		{"unreachable", refused, []error{ErrUnreachable}, []error{ErrNotFound, ErrConflict}},
		{"other", errors.New("boom"), nil, []error{ErrNotFound, ErrConflict, ErrUnreachable}},
		{"deadline", context.DeadlineExceeded, []error{context.DeadlineExceeded}, []error{ErrUnreachable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mapErr("op x", tt.err)
			if got.Error() != "op x: "+tt.err.Error() {
				t.Errorf("message %q, want the operation then the daemon's message", got)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("original error lost from the chain")
			}
			for _, w := range tt.want {
				if !errors.Is(got, w) {
					t.Errorf("errors.Is(%v, %v) = false", got, w)
				}
			}
			for _, w := range tt.not {
				if errors.Is(got, w) {
					t.Errorf("errors.Is(%v, %v) = true", got, w)
				}
			}
		})
	}
	if mapErr("op", nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

func TestCreateConflict(t *testing.T) {
	c := newFakeClient(&fakeAPI{createErr: cerrdefs.ErrConflict.WithMessage(`Conflict. The container name "/x" is already in use`)})
	_, err := c.CreateContainer(context.Background(), request(deployment("web", nil)))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("CreateContainer error %v, want ErrConflict", err)
	}
	if want := "create container default_web-5d8f7c9b6-0: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q lacks context %q", err, want)
	}
}

func TestRemoveIdempotent(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantNil bool
	}{
		{"ok", nil, true},
		{"missing", cerrdefs.ErrNotFound.WithMessage("No such container: x"), true},
		{"in progress", cerrdefs.ErrConflict.WithMessage("removal of container x is already in progress"), true},
		{"other conflict", cerrdefs.ErrConflict.WithMessage("something else"), false},
		{"internal", errors.New("driver failed"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newFakeClient(&fakeAPI{removeErr: tt.err}).RemoveContainer(context.Background(), "x")
			if (err == nil) != tt.wantNil {
				t.Errorf("RemoveContainer = %v, want nil: %v", err, tt.wantNil)
			}
		})
	}
}

func TestPingUnreachable(t *testing.T) {
	c, err := NewClient(WithHost("unix:///nonexistent/dockctl-test.sock"), WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Ping(context.Background())
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Ping = %v, want ErrUnreachable", err)
	}
	for _, want := range []string{"unix:///nonexistent/dockctl-test.sock", "DOCKER_HOST"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ping error %q does not mention %q", err, want)
		}
	}
	if _, err := c.ListContainers(context.Background(), "x"); !errors.Is(err, ErrUnreachable) {
		t.Errorf("ListContainers = %v, want ErrUnreachable", err)
	}
}

// CreateContainer gives replicas the client's log rotation for the
// daemon's default driver, reading that driver once rather than per create.
func TestCreateContainerLogRotation(t *testing.T) {
	tests := []struct {
		driver   string
		opts     []Option
		wantType string
		wantOpts map[string]string
	}{
		{"json-file", nil, "json-file", map[string]string{"max-size": "10485760", "max-file": "5"}},
		{"json-file", []Option{WithContainerLogs(20<<20, 3)}, "json-file", map[string]string{"max-size": "20971520", "max-file": "3"}},
		{"json-file", []Option{WithContainerLogs(0, 0)}, "", nil},
		{"journald", nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.driver, func(t *testing.T) {
			f := &fakeAPI{loggingDriver: tt.driver}
			c := newFakeClient(f)
			c.logMaxSize, c.logMaxFiles = DefaultContainerLogMaxSize, DefaultContainerLogMaxFiles
			for _, o := range tt.opts {
				o(c)
			}
			for range 2 {
				if _, err := c.CreateContainer(context.Background(), request(deployment("web", nil))); err != nil {
					t.Fatal(err)
				}
			}
			if f.created.LogConfig.Type != tt.wantType || !maps.Equal(f.created.LogConfig.Config, tt.wantOpts) {
				t.Errorf("LogConfig %+v, want %q %v", f.created.LogConfig, tt.wantType, tt.wantOpts)
			}
			if f.infoCalls > 1 {
				t.Errorf("%d Info calls for two creates, want at most 1", f.infoCalls)
			}
		})
	}
}

// logsAPI records the options of each logs request.
type logsAPI struct {
	dockerAPI
	got []container.LogsOptions
}

func (f *logsAPI) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{Config: &container.Config{Tty: true}}, nil
}

func (f *logsAPI) ContainerLogs(_ context.Context, _ string, o container.LogsOptions) (io.ReadCloser, error) {
	f.got = append(f.got, o)
	return io.NopCloser(strings.NewReader("")), nil
}

// LogsWith hands since and until to the Engine as Unix seconds with
// nanoseconds (logs --since and --previous), and leaves them out unset.
func TestLogsWithPassesSinceAndUntil(t *testing.T) {
	api := &logsAPI{}
	c := &Client{api: api, timeout: time.Second, leaves: leaveGate{decided: true}}
	at := time.Unix(1700000000, 5)
	for _, o := range []LogsOptions{{Since: at, Until: at.Add(time.Second)}, {}} {
		rc, err := c.LogsWith(context.Background(), "id", o)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, rc)
		rc.Close()
	}
	if g := api.got[0]; g.Since != "1700000000.000000005" || g.Until != "1700000001.000000005" {
		t.Errorf("since %q until %q", g.Since, g.Until)
	}
	if g := api.got[1]; g.Since != "" || g.Until != "" {
		t.Errorf("unset: since %q until %q", g.Since, g.Until)
	}
}
