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

// podManifest is a pod of several containers using every pod field:
// an init container, a native sidecar, two app containers, a shared
// emptyDir and shareProcessNamespace.
const podManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: pod
spec:
  replicas: 2
  selector:
    matchLabels: {app: pod}
  template:
    metadata:
      labels: {app: pod}
    spec:
      shareProcessNamespace: true
      volumes:
      - name: cache
        emptyDir: {}
      initContainers:
      - name: migrate
        image: migrate:1
        args: ["--once"]
        ports: [{containerPort: 9000}]
        volumeMounts: [{name: cache, mountPath: /cache}]
      - name: proxy
        image: proxy
        restartPolicy: Always
        ports: [{name: proxy, containerPort: 8443}]
        readinessProbe:
          tcpSocket: {port: proxy}
      containers:
      - name: app
        image: app:2
        ports:
        - {name: http, containerPort: 8080}
        - {containerPort: 8080, protocol: UDP}
        volumeMounts: [{name: cache, mountPath: /cache, readOnly: true}]
        livenessProbe:
          httpGet: {port: http}
      - name: metrics
        image: metrics:3
        ports: [{containerPort: 9100}]
`

func TestDecodePod(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, d *Deployment)
	}{
		{"init containers, a sidecar and two app containers", podManifest, func(t *testing.T, d *Deployment) {
			ps := &d.Spec.Template.Spec
			if !NeedsHolder(ps) || ps.ShareProcessNamespace == nil || !*ps.ShareProcessNamespace {
				t.Errorf("NeedsHolder %v shareProcessNamespace %v", NeedsHolder(ps), ps.ShareProcessNamespace)
			}
			var names []string
			for _, c := range ps.AllContainers() {
				names = append(names, c.Name)
			}
			if got := strings.Join(names, " "); got != "migrate proxy app metrics" {
				t.Errorf("containers %q", got)
			}
			migrate, proxy := ps.FindContainer("migrate"), ps.FindContainer("proxy")
			if migrate.IsSidecar() || !proxy.IsSidecar() {
				t.Errorf("sidecars: migrate %v proxy %v", migrate.IsSidecar(), proxy.IsSidecar())
			}
			// Every container is defaulted as the single one was.
			if migrate.ImagePullPolicy != PullIfNotPresent || migrate.Ports[0].Protocol != "TCP" {
				t.Errorf("init container not defaulted: %+v", migrate)
			}
			if p := proxy.ReadinessProbe; proxy.ImagePullPolicy != PullAlways || p.PeriodSeconds != 10 || p.TimeoutSeconds != 1 ||
				p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
				t.Errorf("sidecar not defaulted: %+v, probe %+v", proxy, p)
			}
			if m := ps.FindContainer("metrics"); m.ImagePullPolicy != PullIfNotPresent || m.Ports[0].Protocol != "TCP" {
				t.Errorf("second app container not defaulted: %+v", m)
			}
			if h := ps.FindContainer("app").LivenessProbe.HTTPGet; h.Path != "/" || h.Scheme != "HTTP" {
				t.Errorf("app probe not defaulted: %+v", h)
			}
			if proxy.RestartPolicy != ContainerRestartPolicyAlways || migrate.RestartPolicy != "" {
				t.Errorf("restartPolicy: proxy %q migrate %q (an init container's has no default)", proxy.RestartPolicy, migrate.RestartPolicy)
			}
		}},
		{"hostNetwork with several containers", strings.Replace(podManifest, "      shareProcessNamespace: true\n", "      hostNetwork: true\n", 1),
			func(t *testing.T, d *Deployment) {
				if !d.Spec.Template.Spec.HostNetwork || len(d.Spec.Template.Spec.AllContainers()) != 4 {
					t.Errorf("hostNetwork pod: %+v", d.Spec.Template.Spec)
				}
			}},
		{"shareProcessNamespace false with hostPID", strings.Replace(podManifest, "      shareProcessNamespace: true\n", "      shareProcessNamespace: false\n      hostPID: true\n", 1),
			func(t *testing.T, d *Deployment) {
				if sp := d.Spec.Template.Spec.ShareProcessNamespace; sp == nil || *sp {
					t.Errorf("shareProcessNamespace = %v, want an explicit false", sp)
				}
			}},
		{"one container may publish its own port twice, as before pods",
			base + "          hostPort: 8080\n        - containerPort: 8080\n          hostPort: 8081\n",
			func(t *testing.T, d *Deployment) {
				if p := d.Container().Ports; len(p) != 2 || p[0].HostPort != 8080 || p[1].HostPort != 8081 {
					t.Errorf("ports = %+v", p)
				}
			}},
		{"an init container alone is a pod of two", base + "      initContainers:\n      - name: init\n        image: busybox:1.36\n",
			func(t *testing.T, d *Deployment) {
				if !NeedsHolder(&d.Spec.Template.Spec) {
					t.Errorf("a container with an init container needs a holder")
				}
			}},
		{"a single container needs no holder", base, func(t *testing.T, d *Deployment) {
			if NeedsHolder(&d.Spec.Template.Spec) {
				t.Errorf("a single container needs no holder")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			d := one(t, docs).Deployment
			tt.check(t, d)
			if err := Validate(d); err != nil {
				t.Errorf("the defaulted pod does not validate again: %v", err)
			}
		})
	}
}

// TestValidatePodBuiltInCode checks the pod rules on a Deployment built in
// code (no file, no lines): each error names its container by path.
func TestValidatePodBuiltInCode(t *testing.T) {
	docs, err := Decode("t.yaml", []byte(podManifest))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0].Deployment
	ps := &d.Spec.Template.Spec
	ps.InitContainers[1].Image = ""
	ps.InitContainers[0].ReadinessProbe = &Probe{Exec: &ExecAction{Command: []string{"true"}}}
	ps.Containers[1].Name = "proxy"
	ps.Containers[1].RestartPolicy = ContainerRestartPolicyAlways
	want := strings.Join([]string{
		"spec.template.spec.containers[1].restartPolicy: may not be set for non-init containers",
		"spec.template.spec.initContainers[0].readinessProbe: may not be set for init containers without restartPolicy=Always",
		`spec.template.spec.initContainers[1].name: duplicate container name "proxy" (also spec.template.spec.containers[1].name)`,
		"spec.template.spec.initContainers[1].image: required",
	}, "\n")
	if err := Validate(d); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}
