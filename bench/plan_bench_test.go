package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
)

const instance = "bench"

// deployment decodes a real manifest rather than building the struct by
// hand, so that defaults and the template hash are exactly what the
// controller would see.
func deployment(b *testing.B, name string, replicas int) (*manifests.Deployment, string) {
	b.Helper()
	src := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - name: app
        image: dockctl-workload:dev
        args: ["--listen=:8080"]
        env: [{name: GREETING, value: hello}]
`, name, replicas, name, name)
	docs, err := manifests.Decode(name+".yaml", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	d := docs[0].Deployment
	return d, manifests.TemplateHash(&d.Spec.Template)
}

// replicas returns n running containers of the deployment, as one list
// call would report them for a converged deployment.
func replicas(name, hash string, n int, created time.Time) []dockerx.Container {
	cs := make([]dockerx.Container, n)
	for i := range cs {
		cn := dockerx.ContainerName(instance, "", name, hash, i)
		cs[i] = dockerx.Container{
			ID:   fmt.Sprintf("%064x", i),
			Name: cn, Image: "dockctl-workload:dev",
			Labels: map[string]string{
				dockerx.LabelInstance: instance, dockerx.LabelDeployment: name,
				dockerx.LabelTemplateHash: hash, "app": name,
			},
			Instance: instance, Deployment: name, TemplateHash: hash,
			State: dockerx.StateRunning, Status: "Up 3 minutes",
			Created: created.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return cs
}

// inputs builds one PlanInput per deployment. Every fifth deployment has
// lost a replica, so that the benchmark also exercises the create path and
// not only the converged fast path.
func inputs(b *testing.B, deployments, perDeployment int) []reconciler.PlanInput {
	now := time.Now()
	out := make([]reconciler.PlanInput, deployments)
	for i := range out {
		name := fmt.Sprintf("app-%d", i)
		d, hash := deployment(b, name, perDeployment)
		cs := replicas(name, hash, perDeployment, now.Add(-time.Hour))
		if i%5 == 4 {
			cs = cs[1:]
		}
		// Running for an hour without a health check: every replica counts
		// as available, as the controller would have recorded.
		avail := make(map[string]bool, len(cs))
		for _, c := range cs {
			avail[c.ID] = true
		}
		out[i] = reconciler.PlanInput{Instance: instance, Name: name, Desired: d, Hash: hash, Containers: cs, Available: avail, Now: now}
	}
	return out
}

// BenchmarkComputePlan1000x10 plans one full resync of 1,000 deployments
// with 10 containers each: one op of the benchmark is the whole pass.
func BenchmarkComputePlan1000x10(b *testing.B) {
	in := inputs(b, 1000, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range in {
			reconciler.ComputePlan(in[i])
		}
	}
}

// BenchmarkComputePlan1x10000 plans a single deployment of 10,000 replicas
// (target: ≤ 10 ms, BENCHMARKS.md "Go benchmarks").
func BenchmarkComputePlan1x10000(b *testing.B) {
	in := inputs(b, 1, 10000)[0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		reconciler.ComputePlan(in)
	}
}

// BenchmarkComputePlanScaleDown1x10000 plans 10,000 → 100, the ranking
// (sort) path of a scale-down.
func BenchmarkComputePlanScaleDown1x10000(b *testing.B) {
	in := inputs(b, 1, 10000)[0]
	d, _ := deployment(b, in.Name, 100)
	in.Desired = d
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		reconciler.ComputePlan(in)
	}
}

// BenchmarkComputeStatus1000x10 computes the status of 1,000 deployments
// with 10 containers each, as a resync does after planning. Every replica
// has run for an hour without a health check, so the same map says which
// are ready and which are available.
func BenchmarkComputeStatus1000x10(b *testing.B) {
	in := inputs(b, 1000, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range in {
			reconciler.ComputeStatus(in[i].Desired, in[i].Hash, in[i].Containers, in[i].Available, in[i].Available)
		}
	}
}

// BenchmarkComputeStatus1x10000 computes one deployment's status over
// 10,000 containers.
func BenchmarkComputeStatus1x10000(b *testing.B) {
	in := inputs(b, 1, 10000)[0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		reconciler.ComputeStatus(in.Desired, in.Hash, in.Containers, in.Available, in.Available)
	}
}

// BenchmarkDecodeExamples decodes each file of manifests/examples/, the
// work `dockctl apply` does per file before it stores anything.
func BenchmarkDecodeExamples(b *testing.B) {
	files, err := filepath.Glob(filepath.Join("..", "manifests", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no example manifests found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(f), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := manifests.Decode(f, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTemplateHash hashes one defaulted template: every sync hashes
// the desired template once to tell current from outdated containers.
func BenchmarkTemplateHash(b *testing.B) {
	d, _ := deployment(b, "web", 3)
	b.ReportAllocs()
	for b.Loop() {
		manifests.TemplateHash(&d.Spec.Template)
	}
}
