package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// The section's size: Deployments of 5, a Service per two, and never
// more containers than one bridge holds (pods + proxies + DNS ≤ 1,023).
func TestNewBigSizeFitsOneBridge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pods   int
		want   bigSize
		refuse string
	}{
		{name: "the default", pods: 400, want: bigSize{Pods: 400, Deployments: 80, Services: 40}},
		{name: "the largest round size", pods: 900, want: bigSize{Pods: 900, Deployments: 180, Services: 90}},
		{name: "the largest that fits", pods: 920, want: bigSize{Pods: 920, Deployments: 184, Services: 92}},
		{name: "quick", pods: 20, want: bigSize{Pods: 20, Deployments: 4, Services: 2}},
		{name: "one more step overflows the bridge", pods: 930, refuse: "more than a Linux bridge holds"},
		{name: "issue 28's 1,000", pods: 1000, refuse: "more than a Linux bridge holds"},
		{name: "not whole Deployment pairs", pods: 25, refuse: "multiple of 10"},
		{name: "not a number", pods: 0, refuse: "positive multiple"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newBigSize(tc.pods)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("newBigSize(%d) = %+v, %v; want an error saying %q", tc.pods, got, err, tc.refuse)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("newBigSize(%d) = %+v, %v; want %+v", tc.pods, got, err, tc.want)
			}
			if got.containers() > bridgePorts {
				t.Errorf("%d containers on one bridge, more than %d", got.containers(), bridgePorts)
			}
		})
	}
}

// BENCH_SCALE_PODS replaces the default; a value that is not a number
// becomes one newBigSize refuses, never the default in disguise.
func TestBigPodsSettingReadsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env, name string
		want      int
	}{
		{"", "unset", 400},
		{"900", "set", 900},
		{"lots", "not a number", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bigPodsSetting(func(k string) string {
				if k == "BENCH_SCALE_PODS" {
					return tc.env
				}
				return ""
			}, 400)
			if got != tc.want {
				t.Errorf("BENCH_SCALE_PODS=%q: %d, want %d", tc.env, got, tc.want)
			}
		})
	}
}

// The bundle is what `dockctl apply` accepts: D Deployments of 5 and D/2
// ClusterIP Services, each selecting the pods of two Deployments, every
// pod labelled with the run.
func TestBigBundleDecodes(t *testing.T) {
	e := &env{runID: "b0", image: "dockctl-workload:bench-b0"}
	b := bigSize{Pods: 40, Deployments: 8, Services: 4}
	docs, err := manifests.Decode("bench.yaml", []byte(e.bigBundle(b)))
	if err != nil {
		t.Fatal(err)
	}
	selected := map[string]int{} // Service name → pods it selects
	var services []*manifests.Service
	for _, d := range docs {
		if d.Service != nil {
			services = append(services, d.Service)
		}
	}
	deployments := 0
	for _, d := range docs {
		dep := d.Deployment
		if dep == nil {
			continue
		}
		deployments++
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != bigReplicas {
			t.Errorf("deployment %s: replicas %v, want %d", dep.Metadata.Name, dep.Spec.Replicas, bigReplicas)
		}
		labels := dep.Spec.Template.Metadata.Labels
		if labels[benchLabel] != "b0" {
			t.Errorf("deployment %s: template labels %v lack the run label", dep.Metadata.Name, labels)
		}
		for _, s := range services {
			match := true
			for k, v := range s.Spec.Selector {
				if labels[k] != v {
					match = false
				}
			}
			if match {
				selected[s.Metadata.Name] += int(*dep.Spec.Replicas)
			}
		}
	}
	if deployments != b.Deployments || len(services) != b.Services {
		t.Fatalf("%d deployments and %d services, want %d and %d", deployments, len(services), b.Deployments, b.Services)
	}
	for _, s := range services {
		if s.Spec.Type != "" && s.Spec.Type != manifests.ServiceTypeClusterIP {
			t.Errorf("service %s: type %q, want ClusterIP", s.Metadata.Name, s.Spec.Type)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].TargetPort.IntValue() != 8080 {
			t.Errorf("service %s: ports %+v, want 80 → 8080", s.Metadata.Name, s.Spec.Ports)
		}
		if selected[s.Metadata.Name] != 2*bigReplicas {
			t.Errorf("service %s selects %d pods, want %d", s.Metadata.Name, selected[s.Metadata.Name], 2*bigReplicas)
		}
	}
}

// get pods' table is counted by its STATUS column, wherever -A puts it.
func TestCountRunningRowsReadsTheStatusColumn(t *testing.T) {
	for _, tc := range []struct {
		name, table string
		want        int
	}{
		{"all namespaces", "NAMESPACE   NAME        READY   STATUS    RESTARTS   AGE\n" +
			"default     big-000-a   1/1     Running   0          5s\n" +
			"default     big-000-b   0/1     Pending   0          1s\n" +
			"default     big-001-a   1/1     Running   0          5s\n", 2},
		{"one namespace", "NAME        READY   STATUS    RESTARTS   AGE\nbig-000-a   1/1     Running   0          5s\n", 1},
		{"nothing", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countRunningRows([]byte(tc.table)); got != tc.want {
				t.Errorf("%d running rows, want %d", got, tc.want)
			}
		})
	}
}

// A teardown registered with the run's cleanups and deferred by its
// section runs once, whoever calls it first, and both see its error.
func TestOnceRunsOnceAndRepeatsTheError(t *testing.T) {
	runs := 0
	f := once(func() error { runs++; return errors.New("busy") })
	for i := 0; i < 3; i++ {
		if err := f(); err == nil || err.Error() != "busy" {
			t.Errorf("call %d: %v, want busy", i, err)
		}
	}
	if runs != 1 {
		t.Errorf("ran %d times, want once", runs)
	}
}
