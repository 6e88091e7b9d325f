package dockerx

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/go-connections/nat"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/manifests"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func ptr[T any](v T) *T { return &v }

func deployment(name string, mutate func(d *manifests.Deployment)) *manifests.Deployment {
	d := &manifests.Deployment{
		APIVersion: manifests.APIVersion,
		Kind:       manifests.Kind,
		Metadata:   manifests.ObjectMeta{Name: name},
		Spec: manifests.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: manifests.PodTemplateSpec{
				Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": name}},
				Spec: manifests.PodSpec{
					RestartPolicy: "Always",
					Containers: []manifests.Container{{
						Name:            name,
						Image:           "dockctl-workload:test",
						ImagePullPolicy: manifests.PullIfNotPresent,
					}},
				},
			},
		},
	}
	if mutate != nil {
		mutate(d)
	}
	return d
}

func request(d *manifests.Deployment) CreateRequest {
	return CreateRequest{
		Instance:     "default",
		Name:         ContainerName("default", d.Metadata.Name, "5d8f7c9b6", 0),
		TemplateHash: "5d8f7c9b6",
		Deployment:   d,
	}
}

func TestBuildConfigGolden(t *testing.T) {
	tests := []struct {
		name string
		d    *manifests.Deployment
	}{
		{"minimal", deployment("web", nil)},
		{"full", deployment("api", func(d *manifests.Deployment) {
			d.Spec.Template.Metadata.Labels["tier"] = "backend"
			// A template label may not override the ownership labels.
			d.Spec.Template.Metadata.Labels[LabelInstance] = "someone-else"
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "dockctl-net"}
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(5))
			d.Spec.Template.Spec.HostPID = true
			c := &d.Spec.Template.Spec.Containers[0]
			c.Command = []string{"/workload"}
			c.Args = []string{"--listen", ":8080", "--message", "hello"}
			c.WorkingDir = "/srv"
			c.Env = []manifests.EnvVar{{Name: "DOCKCTL_TEST_VALUE", Value: "42"}, {Name: "EMPTY"}}
			c.Ports = []manifests.ContainerPort{
				{Name: "http", ContainerPort: 8080, HostPort: 18080, HostIP: "127.0.0.1"},
				{Name: "metrics", ContainerPort: 9100},
				{Name: "dns", ContainerPort: 53, HostPort: 5353, Protocol: "UDP"},
			}
			c.Resources = manifests.ResourceRequirements{
				Limits:   manifests.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("128Mi")},
				Requests: manifests.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("64Mi")},
			}
			c.ReadinessProbe = &manifests.Probe{
				Exec:                &manifests.ExecAction{Command: []string{"/workload", "probe", "http://127.0.0.1:8080/readyz"}},
				InitialDelaySeconds: 2, PeriodSeconds: 3, TimeoutSeconds: 2, FailureThreshold: 4,
			}
			c.SecurityContext = &manifests.SecurityContext{
				Privileged:             ptr(false),
				ReadOnlyRootFilesystem: ptr(true),
				RunAsUser:              ptr(int64(65534)),
				Capabilities:           &manifests.Capabilities{Add: []string{"NET_BIND_SERVICE"}, Drop: []string{"ALL"}},
			}
		})},
		{"volumes", deployment("data", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Volumes = []manifests.Volume{
				{Name: "config", HostPath: &manifests.HostPathVolumeSource{Path: "/etc/data"}},
				{Name: "logs", HostPath: &manifests.HostPathVolumeSource{Path: "/var/log/data", Type: "DirectoryOrCreate"}},
				{Name: "scratch", EmptyDir: &manifests.EmptyDirVolumeSource{}},
				{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory", SizeLimit: ptr(resource.MustParse("64Mi"))}},
			}
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{
				{Name: "config", MountPath: "/config", ReadOnly: true},
				{Name: "logs", MountPath: "/logs"},
				{Name: "scratch", MountPath: "/scratch"},
				{Name: "cache", MountPath: "/cache"},
			}
		})},
		{"hostnetwork", deployment("edge", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.HostNetwork = true
			// hostNetwork wins over the network annotation.
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "ignored"}
			c := &d.Spec.Template.Spec.Containers[0]
			c.Ports = []manifests.ContainerPort{{ContainerPort: 8080}}
			// Only a limit: the request defaults to it, as in Kubernetes.
			c.Resources.Limits = manifests.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")}
			c.ReadinessProbe = &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"/workload", "probe", "http://127.0.0.1:8080/readyz"}}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, hc, nc, err := BuildConfig(request(tt.d))
			if err != nil {
				t.Fatalf("BuildConfig: %v", err)
			}
			got, err := json.MarshalIndent(map[string]any{"Config": cfg, "HostConfig": hc, "NetworkingConfig": nc}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "buildconfig-"+tt.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("BuildConfig output differs from %s (run with -update if intended):\n%s", path, got)
			}
		})
	}
}

func TestBuildConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		req     CreateRequest
		wantErr string
	}{
		{"nil deployment", CreateRequest{Name: "x"}, "no deployment"},
		{"no container", request(deployment("a", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers = nil
		})), "exactly one container"},
		{"unknown volume", request(deployment("b", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "nope", MountPath: "/x"}}
		})), `volumeMount "nope": no volume of that name`},
		{"volume without source", request(deployment("c", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "v"}}
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{{Name: "v", MountPath: "/x"}}
		})), `volume "v": no supported source`},
		{"bad protocol", request(deployment("d", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 1, Protocol: "t/cp"}}
		})), "port 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := BuildConfig(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("BuildConfig error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestCPUMapping(t *testing.T) {
	tests := []struct {
		limit, request     string
		wantQuota, wantShr int64
	}{
		{"", "", 0, 0},
		{"", "1", 0, 1024},
		{"", "1m", 0, 2}, // kubelet minimum shares
		{"2", "", 200000, 2048},
		{"1m", "", 1000, 2}, // kernel minimum quota
		{"250m", "100m", 25000, 102},
		{"", "300", 0, 262144}, // kubelet maximum shares
	}
	for _, tt := range tests {
		r := manifests.ResourceRequirements{Limits: manifests.ResourceList{}, Requests: manifests.ResourceList{}}
		if tt.limit != "" {
			r.Limits["cpu"] = resource.MustParse(tt.limit)
		}
		if tt.request != "" {
			r.Requests["cpu"] = resource.MustParse(tt.request)
		}
		d := deployment("cpu", func(d *manifests.Deployment) { d.Spec.Template.Spec.Containers[0].Resources = r })
		_, hc, _, err := BuildConfig(request(d))
		if err != nil {
			t.Fatal(err)
		}
		if hc.CPUQuota != tt.wantQuota || hc.CPUShares != tt.wantShr {
			t.Errorf("limit %q request %q: quota %d shares %d, want %d %d", tt.limit, tt.request, hc.CPUQuota, hc.CPUShares, tt.wantQuota, tt.wantShr)
		}
		if wantPeriod := map[bool]int64{true: 100000, false: 0}[tt.limit != ""]; hc.CPUPeriod != wantPeriod {
			t.Errorf("limit %q: period %d, want %d", tt.limit, hc.CPUPeriod, wantPeriod)
		}
	}
}

func TestHostnameTruncated(t *testing.T) {
	d := deployment(strings.Repeat("a", 63), nil)
	cfg, _, _, err := BuildConfig(request(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Hostname) != 63 || !strings.HasPrefix(cfg.Hostname, "default_aaa") {
		t.Errorf("hostname %q (len %d), want the 63-char prefix of the name", cfg.Hostname, len(cfg.Hostname))
	}
}

// Contract fields that the golden files also show, asserted one by one so
// that regenerating the goldens (-update) cannot accept a regression.
func TestBuildConfigContract(t *testing.T) {
	variants := map[string]*manifests.Deployment{
		"minimal": deployment("web", nil),
		"restartPolicy Always in the template": deployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.RestartPolicy = "Always"
		}),
		"hostNetwork": deployment("web", func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true }),
		"ports": deployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 8080, HostPort: 18080}}
		}),
	}
	for name, d := range variants {
		t.Run("restart policy no/"+name, func(t *testing.T) {
			_, hc, _, err := BuildConfig(request(d))
			if err != nil {
				t.Fatal(err)
			}
			// dockctl is the restart loop: Docker's own would race it.
			if hc.RestartPolicy.Name != "no" || hc.RestartPolicy.MaximumRetryCount != 0 {
				t.Fatalf("restart policy %+v, want {Name: no}", hc.RestartPolicy)
			}
		})
	}

	t.Run("ownership labels win over template labels", func(t *testing.T) {
		d := deployment("web", func(d *manifests.Deployment) {
			l := d.Spec.Template.Metadata.Labels
			l[LabelInstance], l[LabelDeployment], l[LabelTemplateHash] = "someone-else", "other", "0000000000"
			l["tier"] = "backend"
		})
		req := request(d)
		cfg, _, _, err := BuildConfig(req)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			LabelInstance: req.Instance, LabelDeployment: "web", LabelTemplateHash: req.TemplateHash,
			"app": "web", "tier": "backend",
		}
		if len(cfg.Labels) != len(want) {
			t.Fatalf("labels %v, want %v", cfg.Labels, want)
		}
		for k, v := range want {
			if cfg.Labels[k] != v {
				t.Fatalf("label %s = %q, want %q (all: %v)", k, cfg.Labels[k], v, cfg.Labels)
			}
		}
	})

	t.Run("containerPort alone publishes nothing", func(t *testing.T) {
		d := deployment("web", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{
				{Name: "http", ContainerPort: 8080},
				{ContainerPort: 53, Protocol: "UDP"},
				{ContainerPort: 9100, HostPort: 19100, HostIP: "127.0.0.1"},
			}
		})
		cfg, hc, _, err := BuildConfig(request(d))
		if err != nil {
			t.Fatal(err)
		}
		if hc.PublishAllPorts {
			t.Fatal("PublishAllPorts set: every exposed port would get a host port")
		}
		for _, p := range []string{"8080/tcp", "53/udp"} {
			if _, ok := cfg.ExposedPorts[nat.Port(p)]; !ok {
				t.Errorf("%s not exposed", p)
			}
			if b, ok := hc.PortBindings[nat.Port(p)]; ok {
				t.Errorf("%s published as %v; a containerPort alone must publish nothing", p, b)
			}
		}
		// Only the port with a hostPort is published, where it says.
		if len(hc.PortBindings) != 1 {
			t.Fatalf("port bindings %v, want only 9100/tcp", hc.PortBindings)
		}
		if b := hc.PortBindings["9100/tcp"]; len(b) != 1 || b[0].HostPort != "19100" || b[0].HostIP != "127.0.0.1" {
			t.Fatalf("9100/tcp bindings %v, want 127.0.0.1:19100", b)
		}
	})
}
