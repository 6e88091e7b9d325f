package standin

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

func load(t *testing.T, bundle string) []*manifests.Document {
	t.Helper()
	docs, err := manifests.Load([]string{filepath.Join("..", "..", "manifests", "testdata", "realworld", bundle)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// The stand-ins of a bundle: one per image, serving the ports its
// containers declare and probe, holding the binary where its commands,
// exec probes and hooks expect one, and knowing its init containers'
// command lines.
func TestForBundle(t *testing.T) {
	got := map[string]Image{}
	for _, b := range []string{"sidecars.yaml", "lifecycle-hooks.yaml", "team-namespaces.yaml"} {
		for _, img := range ForBundle(load(t, b)) {
			got[img.Ref()] = img
		}
	}
	want := map[string]Image{
		// The same image as init container (migrate) and app (serve).
		"ghcr.io/fin-core/ledger:3.3.0": {Config: Config{Image: "ghcr.io/fin-core/ledger:3.3.0", Ports: []string{"8080"},
			Init: [][]string{{"/app/ledger", "migrate", "--up"}}}, Paths: []string{"/app/ledger"}},
		// A native sidecar is no init container: it serves.
		"docker.io/fluent/fluent-bit:3.0.2":        {Config: Config{Image: "docker.io/fluent/fluent-bit:3.0.2", Ports: []string{"2020"}}},
		"ghcr.io/fin-core/log-exporter:0.4.0":      {Config: Config{Image: "ghcr.io/fin-core/log-exporter:0.4.0", Ports: []string{"9100"}}},
		"docker.io/library/nginx:1.25.4":           {Config: Config{Image: "docker.io/library/nginx:1.25.4", Ports: []string{"80"}}, Paths: []string{"/bin/sh"}},
		"ghcr.io/storefront/worker:8.3.0":          {Config: Config{Image: "ghcr.io/storefront/worker:8.3.0", Ports: []string{"9000"}}},
		"ghcr.io/storefront/worker-exporter:1.1.0": {Config: Config{Image: "ghcr.io/storefront/worker-exporter:1.1.0", Ports: []string{"9102"}}},
		"ghcr.io/platform/echo:1.4.0":              {Config: Config{Image: "ghcr.io/platform/echo:1.4.0", Ports: []string{"5678"}}},
		"ghcr.io/platform/catalog:3.0.0":           {Config: Config{Image: "ghcr.io/platform/catalog:3.0.0", Ports: []string{"8080"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

// Bare command names go on the image's PATH, relative ones under the
// working directory; UDP ports keep their protocol; runAsNonRoot without
// a user makes the image's user non-root.
func TestForBundlePathsPortsUser(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata: {name: dns}
spec:
  selector: {matchLabels: {app: dns}}
  template:
    metadata: {labels: {app: dns}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
      - name: dns
        image: dns:1
        workingDir: /srv
        command: ["./dnsd"]
        ports: [{containerPort: 53, protocol: UDP}, {containerPort: 53, protocol: TCP}]
        readinessProbe:
          exec: {command: [dig, "@127.0.0.1", example.org]}
        livenessProbe:
          tcpSocket: {port: 9153}
`
	docs, err := manifests.Decode("dns.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	imgs := ForBundle(docs)
	want := []Image{{Config: Config{Image: "dns:1", Ports: []string{"53", "53/udp", "9153"}}, Paths: []string{"/srv/dnsd", "/usr/local/bin/dig"}, NonRoot: true}}
	if !reflect.DeepEqual(imgs, want) {
		t.Fatalf("got %+v, want %+v", imgs, want)
	}
	df := imgs[0].Dockerfile(map[string]string{"io.dockctl.e2e-standin": "r1"})
	for _, line := range []string{"FROM scratch\n", "COPY workload /workload\n", "COPY workload /srv/dnsd\n", "COPY workload /usr/local/bin/dig\n",
		"COPY standin.json /standin.json\n", "ENV DOCKCTL_STANDIN=/standin.json PATH=", `LABEL "io.dockctl.e2e-standin"="r1"` + "\n",
		"USER 65532:65532\n", `ENTRYPOINT ["/workload"]` + "\n"} {
		if !strings.Contains(df, line) {
			t.Errorf("Dockerfile lacks %q:\n%s", line, df)
		}
	}
	ctx, err := imgs[0].BuildContext([]byte("binary"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(ctx))
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var cfg Config
	if err := json.Unmarshal(files["standin.json"], &cfg); err != nil || !reflect.DeepEqual(cfg, imgs[0].Config) {
		t.Errorf("standin.json %s: %v", files["standin.json"], err)
	}
	if string(files["workload"]) != "binary" || !strings.HasPrefix(string(files["Dockerfile"]), "FROM scratch") {
		t.Errorf("context files: %v", files)
	}
}

// The pod templates of every workload kind name stand-ins, not only
// Deployments'; the app containers of a Job's and a CronJob's pods run to
// completion, so their command lines exit 0 at once as an init
// container's do, while a StatefulSet's serve.
func TestForBundleWorkloadKinds(t *testing.T) {
	in := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: db:1
        command: [db-server]
        ports: [{containerPort: 6379}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: db:1
        command: [/bin/sh, -c, "db-cli ping"]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: backup, image: tools:2, args: [--all]}
`
	docs, err := manifests.Decode("kinds.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := ForBundle(docs)
	want := []Image{
		{Config: Config{Image: "db:1", Ports: []string{"6379"}, Init: [][]string{{"/bin/sh", "-c", "db-cli ping"}}},
			Paths: []string{"/bin/sh", "/usr/local/bin/db-server"}},
		{Config: Config{Image: "tools:2", Init: [][]string{{"/workload", "--all"}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}
