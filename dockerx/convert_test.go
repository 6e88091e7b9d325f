package dockerx

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/go-connections/nat"
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
		Name:         ContainerName("default", "", d.Metadata.Name, "5d8f7c9b6", 0),
		TemplateHash: "5d8f7c9b6",
		From:         TemplateOf(d),
	}
}

// goldenCase is one BuildConfig golden file: testdata/buildconfig-NAME.golden.json.
type goldenCase struct {
	name string
	req  CreateRequest
	logs ContainerLogs
}

func TestBuildConfigGolden(t *testing.T) {
	tests := []goldenCase{
		{"minimal", request(deployment("web", nil)), ContainerLogs{}},
		{"full", request(deployment("api", func(d *manifests.Deployment) {
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
		})), ContainerLogs{Driver: "json-file", MaxSize: DefaultContainerLogMaxSize, MaxFiles: DefaultContainerLogMaxFiles}},
		{"volumes", request(deployment("data", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.Volumes = []manifests.Volume{
				{Name: "config", HostPath: &manifests.HostPathVolumeSource{Path: "/etc/data"}},
				{Name: "logs", HostPath: &manifests.HostPathVolumeSource{Path: "/var/log/data", Type: "DirectoryOrCreate"}},
				{Name: "scratch", EmptyDir: &manifests.EmptyDirVolumeSource{}},
				{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory", SizeLimit: ptr(resource.MustParse("32Mi"))}},
				{Name: "shm", EmptyDir: &manifests.EmptyDirVolumeSource{Medium: "Memory"}},
			}
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []manifests.VolumeMount{
				{Name: "config", MountPath: "/config", ReadOnly: true},
				{Name: "logs", MountPath: "/logs"},
				{Name: "scratch", MountPath: "/scratch"},
				{Name: "cache", MountPath: "/cache"},
				{Name: "shm", MountPath: "/dev/shm"},
			}
		})), ContainerLogs{Driver: "journald", MaxSize: DefaultContainerLogMaxSize, MaxFiles: DefaultContainerLogMaxFiles}},
		{"hostnetwork", request(deployment("edge", func(d *manifests.Deployment) {
			d.Spec.Template.Spec.HostNetwork = true
			// hostNetwork wins over the network annotation.
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "ignored"}
			c := &d.Spec.Template.Spec.Containers[0]
			c.Ports = []manifests.ContainerPort{{ContainerPort: 8080}}
			// Only a limit: the request defaults to it, as in Kubernetes.
			c.Resources.Limits = manifests.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")}
			c.ReadinessProbe = &manifests.Probe{Exec: &manifests.ExecAction{Command: []string{"/workload", "probe", "http://127.0.0.1:8080/readyz"}}}
		})), ContainerLogs{}},
	}
	tests = append(tests, podGoldenCases()...)
	tests = append(tests, networkGoldenCases()...)
	tests = append(tests, securityGoldenCases()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Logs = tt.logs
			cfg, hc, nc, err := BuildConfig(req)
			if err != nil {
				t.Fatalf("BuildConfig: %v", err)
			}
			got, err := json.MarshalIndent(map[string]any{"Config": cfg, "HostConfig": hc, "NetworkingConfig": nc}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, "BuildConfig", filepath.Join("testdata", "buildconfig-"+tt.name+".golden.json"), append(got, '\n'))
		})
	}
}

// compareGolden compares what produced with the golden file at path,
// rewriting it first with -update.
func compareGolden(t *testing.T, what, path string, got []byte) {
	t.Helper()
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
		t.Errorf("%s output differs from %s (run with -update if intended):\n%s", what, path, got)
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
// replicas apart (docs/design.md §3).
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
		req := CreateRequest{Instance: tt.instance, Name: ContainerName(tt.instance, "", tt.deployment, tt.hash, tt.ordinal), TemplateHash: tt.hash, From: TemplateOf(d)}
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

// Replicas get json-file (or local) rotation as kubelet gives containers
// (10 MiB × 5 files by default), only when that is the daemon's default
// driver: a journald or syslog user keeps the daemon's driver untouched
// (docs/cli.md, --container-log-max-size). The setting is applied at conversion, not stored in
// the template, so hashes do not change.
func TestBuildConfigLogRotation(t *testing.T) {
	tests := []struct {
		name     string
		logs     ContainerLogs
		wantType string
		wantOpts map[string]string
	}{
		{"default with json-file", ContainerLogs{Driver: "json-file", MaxSize: DefaultContainerLogMaxSize, MaxFiles: DefaultContainerLogMaxFiles},
			"json-file", map[string]string{"max-size": "10485760", "max-file": "5"}},
		{"local", ContainerLogs{Driver: "local", MaxSize: 1 << 20, MaxFiles: 2},
			"local", map[string]string{"max-size": "1048576", "max-file": "2"}},
		{"journald is left alone", ContainerLogs{Driver: "journald", MaxSize: DefaultContainerLogMaxSize, MaxFiles: DefaultContainerLogMaxFiles}, "", nil},
		{"driver unknown", ContainerLogs{MaxSize: DefaultContainerLogMaxSize, MaxFiles: DefaultContainerLogMaxFiles}, "", nil},
		{"rotation disabled", ContainerLogs{Driver: "json-file"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("web", nil)
			hashBefore := d.TemplateHash()
			req := request(d)
			req.Logs = tt.logs
			_, hc, _, err := BuildConfig(req)
			if err != nil {
				t.Fatal(err)
			}
			if hc.LogConfig.Type != tt.wantType || !maps.Equal(hc.LogConfig.Config, tt.wantOpts) {
				t.Errorf("LogConfig %+v, want type %q options %v", hc.LogConfig, tt.wantType, tt.wantOpts)
			}
			if d.TemplateHash() != hashBefore {
				t.Error("conversion changed the template hash")
			}
		})
	}
}

// A memory emptyDir without sizeLimit gets a bounded tmpfs: the container's
// memory limit when it has one (as Kubernetes sizes it), otherwise
// DefaultMemoryEmptyDirSize (docs/manifests.md, emptyDir). Not stored in the template.
func TestMemoryEmptyDirDefaultSize(t *testing.T) {
	tests := []struct {
		name      string
		sizeLimit string
		memLimit  string
		want      int64
	}{
		{"no limit at all", "", "", DefaultMemoryEmptyDirSize},
		{"the memory limit", "", "256Mi", 256 << 20},
		{"sizeLimit wins", "8Mi", "256Mi", 8 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("ram", func(d *manifests.Deployment) {
				ed := &manifests.EmptyDirVolumeSource{Medium: "Memory"}
				if tt.sizeLimit != "" {
					ed.SizeLimit = ptr(resource.MustParse(tt.sizeLimit))
				}
				d.Spec.Template.Spec.Volumes = []manifests.Volume{{Name: "ram", EmptyDir: ed}}
				c := &d.Spec.Template.Spec.Containers[0]
				c.VolumeMounts = []manifests.VolumeMount{{Name: "ram", MountPath: "/ram"}}
				if tt.memLimit != "" {
					c.Resources.Limits = manifests.ResourceList{"memory": resource.MustParse(tt.memLimit)}
				}
			})
			hashBefore := d.TemplateHash()
			_, hc, _, err := BuildConfig(request(d))
			if err != nil {
				t.Fatal(err)
			}
			if len(hc.Mounts) != 1 || hc.Mounts[0].Type != "tmpfs" || hc.Mounts[0].TmpfsOptions == nil || hc.Mounts[0].TmpfsOptions.SizeBytes != tt.want {
				t.Fatalf("mounts %+v, want one tmpfs of %d bytes", hc.Mounts, tt.want)
			}
			if d.Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit != nil && tt.sizeLimit == "" {
				t.Error("conversion wrote a sizeLimit into the template")
			}
			if d.TemplateHash() != hashBefore {
				t.Error("conversion changed the template hash")
			}
		})
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
			l[LabelRole], l[LabelPod], l[LabelContainer] = RoleHolder, "other-pod", "other"
			l["tier"] = "backend"
		})
		req := request(d)
		cfg, _, _, err := BuildConfig(req)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			LabelInstance: req.Instance, LabelDeployment: "web", LabelNamespace: "default", LabelTemplateHash: req.TemplateHash, LabelRole: RoleReplica,
			// A template's pod labels would make a replica look like a
			// member of a pod: they are dropped.
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

// TestPodOfAnyOwnerIsLabelledWithItsOwner: a pod whose owner is no
// Deployment (PodTemplate.OwnerKind) is named by PodContainerName,
// labelled with its owner's kind and name and never a deployment (not
// even one its template labels), and has its pod's name as hostname
// (docs/design.md §3, §17).
func TestPodOfAnyOwnerIsLabelledWithItsOwner(t *testing.T) {
	d := deployment("ignored", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Labels = map[string]string{"app": "batch", LabelDeployment: "web"}
	})
	from := &PodTemplate{Namespace: "shop", Owner: "batch", OwnerKind: "TestOwner", Hostname: "batch-x7k2p", Template: &d.Spec.Template}
	name := PodContainerName("i", "shop", "batch-x7k2p")
	if name != "i_batch-x7k2p.shop_pod" || PodContainerName("i", "", "p") != "i_p.default_pod" {
		t.Fatalf("PodContainerName = %q, want i_batch-x7k2p.shop_pod (and the default namespace spelled)", name)
	}
	cfg, _, _, err := BuildConfig(CreateRequest{Instance: "i", Name: name, TemplateHash: "h", From: from})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "batch", LabelInstance: "i", LabelOwnerKind: "TestOwner", LabelOwner: "batch", LabelNamespace: "shop",
		LabelTemplateHash: "h", LabelRole: RoleReplica}
	if !maps.Equal(cfg.Labels, want) {
		t.Errorf("labels %v, want %v", cfg.Labels, want)
	}
	if cfg.Hostname != "batch-x7k2p" {
		t.Errorf("hostname %q, want the pod's name", cfg.Hostname)
	}
}

// A pod is labelled with its owner's incarnation whoever the owner is: a
// Deployment's too, whose pods outlive it when it is deleted with
// --cascade=orphan (docs/design.md §4, §17.1); a template without one
// (the controller of an earlier release's) labels none.
func TestPodIsLabelledWithItsOwnersIncarnation(t *testing.T) {
	d := deployment("web", nil)
	for _, tc := range []struct {
		name string
		from *PodTemplate
		want string
	}{
		{"a deployment's pod", &PodTemplate{Owner: "web", OwnerUID: "u1", Template: &d.Spec.Template}, "u1"},
		{"a workload's pod", &PodTemplate{Owner: "web", OwnerKind: "TestOwner", OwnerUID: "u2", Template: &d.Spec.Template}, "u2"},
		{"no incarnation", TemplateOf(d), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, _, err := BuildConfig(CreateRequest{Instance: "i", Name: ContainerName("i", "", "web", "h", 0), TemplateHash: "h", From: tc.from})
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := cfg.Labels[LabelOwnerUID]; got != tc.want || ok != (tc.want != "") {
				t.Errorf("%s = %q (set %v), want %q", LabelOwnerUID, got, ok, tc.want)
			}
		})
	}
}

// TestPodHostnameAndSubdomain: a pod's spec.hostname is its hostname, and
// with a spec.subdomain its domain is SUBDOMAIN.NS.svc.cluster.local, so
// that its /etc/hosts names it by its fully qualified name (`hostname -f`)
// as the kubelet's does; both are labelled (LabelHostname, LabelSubdomain)
// for the Service controller's DNS records (docs/design.md §4, §10). A
// template with neither gets what every earlier release gave it.
func TestPodHostnameAndSubdomain(t *testing.T) {
	named := func(h, s string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) { d.Spec.Template.Spec.Hostname, d.Spec.Template.Spec.Subdomain = h, s }
	}
	onNetwork := func(req CreateRequest) CreateRequest {
		req.Network = testPodNetwork()
		return inNamespace(req)
	}
	ownerPod := func(mutate func(*manifests.Deployment)) CreateRequest {
		d := deployment("db", mutate)
		return CreateRequest{Instance: "i", Name: PodContainerName("i", "shop", "db-0"), TemplateHash: "h",
			From: &PodTemplate{Namespace: "shop", Owner: "db", OwnerKind: "TestOwner", Hostname: "db-0", Template: &d.Spec.Template}}
	}
	for _, tt := range []struct {
		name            string
		req             CreateRequest
		host, domain    string
		hostLbl, subLbl string // "" not labelled
	}{
		{name: "a deployment's template without them keeps its replica hostname",
			req: onNetwork(request(deployment("web", nil))), host: "web-5d8f7c9b6-0"},
		{name: "a deployment's template with both", req: onNetwork(request(deployment("web", named("front", "web")))),
			host: "front", domain: "web.shop.svc.cluster.local", hostLbl: "front", subLbl: "web"},
		{name: "a hostname alone: no domain", req: onNetwork(request(deployment("web", named("front", "")))),
			host: "front", hostLbl: "front"},
		{name: "a subdomain alone: the replica's hostname in the subdomain", req: onNetwork(request(deployment("web", named("", "web")))),
			host: "web-5d8f7c9b6-0", domain: "web.shop.svc.cluster.local", subLbl: "web"},
		{name: "a holder carries them", req: onNetwork(podRequest(podDeployment("web", named("front", "web")), RoleHolder, "")),
			host: "front", domain: "web.shop.svc.cluster.local", hostLbl: "front", subLbl: "web"},
		{name: "a pod of another owner with them in its spec", req: ownerPod(named("db-0", "db")),
			host: "db-0", domain: "db.shop.svc.cluster.local", hostLbl: "db-0", subLbl: "db"},
		{name: "a pod of another owner without them: its name, unlabelled", req: ownerPod(nil), host: "db-0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, _, err := BuildConfig(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Hostname != tt.host || cfg.Domainname != tt.domain {
				t.Errorf("hostname %q domain %q, want %q %q", cfg.Hostname, cfg.Domainname, tt.host, tt.domain)
			}
			h, hok := cfg.Labels[LabelHostname]
			s, sok := cfg.Labels[LabelSubdomain]
			if h != tt.hostLbl || s != tt.subLbl || hok != (tt.hostLbl != "") || sok != (tt.subLbl != "") {
				t.Errorf("labels hostname %q subdomain %q, want %q %q", h, s, tt.hostLbl, tt.subLbl)
			}
		})
	}
}

// TestTemplateCannotForgeItsDNSIdentity: a template's own hostname and
// subdomain labels are dropped, as the pod and helper labels are: only
// the pod's spec names it in the cluster DNS.
func TestTemplateCannotForgeItsDNSIdentity(t *testing.T) {
	d := deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Labels = map[string]string{"app": "web", LabelHostname: "db-0", LabelSubdomain: "db"}
	})
	cfg, _, _, err := BuildConfig(request(d))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Labels[LabelHostname]; ok {
		t.Errorf("labels %v carry the template's hostname label", cfg.Labels)
	}
	if _, ok := cfg.Labels[LabelSubdomain]; ok {
		t.Errorf("labels %v carry the template's subdomain label", cfg.Labels)
	}
}
