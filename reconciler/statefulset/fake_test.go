package statefulset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/workload"
	"github.com/dockctl/dockctl/reconciler/workload/workloadtest"
)

// t0 is the fake clock's start: no test reads the real clock.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type setOpt func(*manifests.StatefulSet)

func parallel(s *manifests.StatefulSet) { s.Spec.PodManagementPolicy = manifests.PodManagementParallel }
func onDelete(s *manifests.StatefulSet) {
	s.Spec.UpdateStrategy = manifests.StatefulSetUpdateStrategy{Type: manifests.StrategyOnDelete}
}
func partition(n int32) setOpt {
	return func(s *manifests.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = &n }
}
func maxUnavailable(n int) setOpt {
	return func(s *manifests.StatefulSet) {
		v := intstr.FromInt(n)
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &v
	}
}
func minReady(sec int32) setOpt {
	return func(s *manifests.StatefulSet) { s.Spec.MinReadySeconds = sec }
}
func claimTemplate(name string) setOpt {
	return func(s *manifests.StatefulSet) {
		s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, manifests.PersistentVolumeClaim{
			Metadata: manifests.ObjectMeta{Name: name, Labels: map[string]string{"tier": "db"}},
			Spec:     manifests.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}},
		})
	}
}
func retention(whenDeleted, whenScaled string) setOpt {
	return func(s *manifests.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &manifests.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	}
}
func image(img string) setOpt {
	return func(s *manifests.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = img }
}

// newSet is a defaulted StatefulSet "web" of n replicas, serviceName
// "nginx", generation 3.
func newSet(n int32, opts ...setOpt) *manifests.StatefulSet {
	s := &manifests.StatefulSet{
		APIVersion: "apps/v1", Kind: manifests.KindStatefulSet,
		Metadata: manifests.ObjectMeta{Name: "web", Namespace: "shop", Generation: 3},
		Spec: manifests.StatefulSetSpec{
			Replicas:    &n,
			Selector:    &manifests.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			ServiceName: "nginx",
			Template: manifests.PodTemplateSpec{
				Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": "web"}},
				Spec:     manifests.PodSpec{Containers: []manifests.Container{{Name: "nginx", Image: "nginx:1"}}},
			},
		},
	}
	manifests.SetStatefulSetDefaults(s)
	for _, o := range opts {
		o(s)
	}
	return s
}

// pod is an observed pod NAME of revision rev in phase, ready since
// readySince when that is not zero.
func pod(name, rev string, phase corev1.PodPhase, readySince time.Time) workload.ObservedPod {
	p := workloadtest.Pod(name, phase, readySince)
	p.Labels = map[string]string{workload.RevisionLabel: rev}
	return p
}

// ready is a running pod ready since an hour before t0.
func ready(name, rev string) workload.ObservedPod {
	return pod(name, rev, corev1.PodRunning, t0.Add(-time.Hour))
}

func notReady(name, rev string) workload.ObservedPod {
	return pod(name, rev, corev1.PodRunning, time.Time{})
}

var terminating = workloadtest.Terminating

func rev(s *manifests.StatefulSet) string { return RevisionOf(s).Name }

// history is the update revision of each set given.
func history(sets ...*manifests.StatefulSet) []Revision {
	var h []Revision
	for _, s := range sets {
		h = append(h, RevisionOf(s))
	}
	return h
}

var podNames = workloadtest.PodNames

func claimNames(cs []Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Claim.Metadata.Name)
	}
	return out
}

var eq = workloadtest.Equal

// cluster plays the executor and the pod runtime on the fake clock: a
// created pod runs and is ready readyAfter later, a deleted pod is gone
// at the next step.
type cluster struct {
	set        *manifests.StatefulSet
	hist       []Revision
	status     Status
	pods       map[string]workload.ObservedPod
	claims     map[string]bool
	now        time.Time
	readyAfter time.Duration
	created    []string // every pod created, in order
	deleted    []string
}

func newCluster(set *manifests.StatefulSet) *cluster {
	return &cluster{set: set, pods: map[string]workload.ObservedPod{}, claims: map[string]bool{}, now: t0, readyAfter: time.Second}
}

// step syncs once and applies the decision; it returns the decision.
func (c *cluster) step() Decision {
	var pods []workload.ObservedPod
	for _, p := range c.pods {
		if p.Status.Phase == corev1.PodPending && !c.now.Before(p.Created.Add(c.readyAfter)) {
			p = pod(p.Name, p.Revision(), corev1.PodRunning, p.Created.Add(c.readyAfter))
			c.pods[p.Name] = p
		}
		pods = append(pods, p)
	}
	var claims []ObservedClaim
	for n := range c.claims {
		claims = append(claims, ObservedClaim{Name: n})
	}
	d := Sync(c.set, c.hist, c.status, pods, claims, c.now)
	if d.NewRevision != nil {
		c.hist = append(c.hist, *d.NewRevision)
	}
	for _, cl := range d.CreateClaims {
		c.claims[cl.Claim.Metadata.Name] = true
	}
	for _, ps := range d.CreatePods {
		p := pod(ps.Name, ps.Template.Metadata.Labels[workload.RevisionLabel], corev1.PodPending, time.Time{})
		p.Created = c.now
		c.pods[ps.Name] = p
		c.created = append(c.created, ps.Name)
	}
	for _, n := range d.DeletePods {
		delete(c.pods, n)
		c.deleted = append(c.deleted, n)
	}
	for _, n := range d.DeleteClaims {
		delete(c.claims, n)
	}
	c.status = d.Status
	return d
}

// settle steps until a decision changes nothing, advancing the clock a
// second a step; it fails after 100 steps.
func (c *cluster) settle(t *testing.T) Decision {
	t.Helper()
	for range 100 {
		d := c.step()
		c.now = c.now.Add(time.Second)
		if len(d.CreatePods)+len(d.DeletePods)+len(d.CreateClaims)+len(d.DeleteClaims) == 0 && d.Waiting == "" && d.RequeueAt.IsZero() {
			return d
		}
	}
	t.Fatal("no steady state after 100 steps")
	return Decision{}
}

// observed is the cluster's pods as a sync sees them.
func (c *cluster) observed() []workload.ObservedPod {
	var out []workload.ObservedPod
	for _, p := range c.pods {
		out = append(out, p)
	}
	return out
}
