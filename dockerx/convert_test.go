package dockerx

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

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

// Hostnames are DNS labels NAME-HASH-N (no instance, no "_"), at most 63
// characters, and a long name is cut, never the -HASH-N that tells the
// replicas apart (issue 8 item 14).
func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := []struct {
		instance, deployment, hash string
		ordinal                    int
		want                       string
	}{
		{"default", "web", "5d8f7c9b6", 0, "web-5d8f7c9b6-0"},
		{"my_instance", "web", "5d8f7c9b6a", 12, "web-5d8f7c9b6a-12"},
		{"default", long, "5d8f7c9b6a", 0, strings.Repeat("a", 63-len("-5d8f7c9b6a-0")) + "-5d8f7c9b6a-0"},
		{"default", long, "5d8f7c9b6a", 1, strings.Repeat("a", 63-len("-5d8f7c9b6a-1")) + "-5d8f7c9b6a-1"},
		{"default", long, "5d8f7c9b6a", 1000, strings.Repeat("a", 63-len("-5d8f7c9b6a-1000")) + "-5d8f7c9b6a-1000"},
		// A cut that would end the name part in "-" drops the dash.
		{"default", strings.Repeat("a", 49) + "-" + strings.Repeat("b", 13), "5d8f7c9b6a", 3, strings.Repeat("a", 49) + "-5d8f7c9b6a-3"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		d := deployment(tt.deployment, nil)
		req := CreateRequest{Instance: tt.instance, Name: ContainerName(tt.instance, tt.deployment, tt.hash, tt.ordinal), TemplateHash: tt.hash, Deployment: d}
		cfg, _, _, err := BuildConfig(req)
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.Hostname
		if got != tt.want {
			t.Errorf("%s: hostname %q, want %q", req.Name, got, tt.want)
		}
		if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 {
			t.Errorf("hostname %q is not a DNS label: %v", got, msgs)
		}
		if seen[got] {
			t.Errorf("hostname %q given to two replicas", got)
		}
		seen[got] = true
	}
	// In the host's network namespace Docker takes no hostname.
	d := deployment("edge", func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true })
	if cfg, _, _, err := BuildConfig(request(d)); err != nil || cfg.Hostname != "" {
		t.Errorf("hostNetwork: hostname %q, err %v; want none", cfg.Hostname, err)
	}
}
