package reconciler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/dockerfake"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

// A pod the controller could not create is in its status, and the read
// commands' pods (Pods) show it with the kubelet's reason, as `kubectl get
// pods` shows a pod that exists but cannot run.
func TestFailedCreatesShowAsWaitingPods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(h *harness, d *manifests.Deployment)
		reasons []string // any of them
		message string   // in the pod's waiting message
	}{
		{
			name: "an image that cannot be pulled",
			setup: func(h *harness, d *manifests.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = "absent:1"
			},
			reasons: []string{podruntime.WaitErrImagePull, podruntime.WaitImagePullBackOff},
			message: "absent:1",
		},
		{
			name: "a ConfigMap without the key the environment names",
			setup: func(h *harness, d *manifests.Deployment) {
				c := &d.Spec.Template.Spec.Containers[0]
				c.Env = append(c.Env, manifests.EnvVar{Name: "MODE", ValueFrom: &manifests.EnvVarSource{
					ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}})
				if _, err := h.store.Apply(store.Bundle{ConfigMaps: []*manifests.ConfigMap{{APIVersion: "v1", Kind: manifests.KindConfigMap,
					Metadata: manifests.ObjectMeta{Name: "app"}, Data: map[string]string{"other": "x"}}}}, store.ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			reasons: []string{podruntime.WaitCreateContainerConfigError},
			message: "mode",
		},
		{
			name: "a claim that does not exist",
			setup: func(h *harness, d *manifests.Deployment) {
				d.Spec.Template.Spec = claimTestDeployment("web", "data", 2).Spec.Template.Spec
			},
			reasons: []string{podruntime.WaitPending},
			message: `"data"`,
		},
		{
			// The kubelet's verifyRunAsNonRoot fails the container's
			// config: CreateContainerConfigError, never a pod that only
			// waits its turn.
			name: "runAsNonRoot with an image that runs as root",
			setup: func(h *harness, d *manifests.Deployment) {
				yes := true
				d.Spec.Template.Spec.SecurityContext = &manifests.PodSecurityContext{RunAsNonRoot: &yes}
			},
			reasons: []string{podruntime.WaitCreateContainerConfigError},
			message: "runAsNonRoot",
		},
		{
			name: "Docker refusing the create",
			setup: func(h *harness, d *manifests.Deployment) {
				h.engine.OnCreate = func(dockerx.CreateRequest) error { return errors.New("invalid mount config") }
			},
			reasons: []string{podruntime.WaitCreateContainerError},
			message: "invalid mount config",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.opts.Config = h.store
			h.ctrl = New(h.engine, h.store, h.opts)
			d := testDeployment("web", 2, "v1")
			tc.setup(h, d)
			h.apply(d)
			h.start()
			var pods []podruntime.PodView
			h.waitFor("both wanted pods to show waiting", func() bool {
				rec, err := h.store.Lookup("", "web")
				st, _ := h.store.ReadStatus("", "web")
				if err != nil || st == nil {
					return false
				}
				pods = Pods(rec, st, nil, h.ours("web"), time.Now())
				// Slow start tries one create at a time after a failure:
				// the others wait their turn (ContainerCreating).
				n, told := 0, false
				for _, p := range pods {
					if p.Waiting != nil && p.Status == p.Waiting.Reason {
						n++
					}
					for _, r := range tc.reasons {
						told = told || p.Status == r && strings.Contains(p.Waiting.Message, tc.message)
					}
				}
				return n == 2 && told
			})
			names := map[string]bool{}
			for _, p := range pods {
				names[p.Name] = true
				if p.Ready != 0 || p.Total != 1 {
					t.Errorf("pod %s: READY %d/%d, want 0/1", p.Name, p.Ready, p.Total)
				}
				// Pending is the pod's (not admitted): its container is
				// not yet being created.
				want := p.Status
				if want == podruntime.WaitPending {
					want = podruntime.WaitContainerCreating
				}
				state, _ := p.ContainerState(p.Containers[0])
				if state.Waiting == nil || state.Waiting.Reason != want {
					t.Errorf("pod %s: container state %+v, want waiting %s", p.Name, state, want)
				}
			}
			if len(names) != 2 {
				t.Errorf("pods %v, want two of distinct names", names)
			}
		})
	}
}

// Each pod that waits for its image names its own: a wave that creates
// pods of two revisions whose images both fail to pull (a rollout whose
// old pods are made again while the new image is missing too) shows on
// each pod, and in its events, the pull of its revision's image, as the
// kubelet reports each pod's own pull.
func TestImagePullWaitNamesEachRevisionsOwnImage(t *testing.T) {
	st, err := store.Open(t.TempDir(), "i")
	if err != nil {
		t.Fatal(err)
	}
	c := New(dockerfake.New(testImage), st, Options{Instance: "i", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	images := map[string]string{} // hash → image
	var ops []Op
	for i, image := range []string{"gone:0", "absent:1"} {
		d := deployment(1)
		d.Spec.Template.Spec.Containers[0].Image = image
		hash := manifests.TemplateHash(&d.Spec.Template)
		images[hash] = image
		ops = append(ops, Op{ID: OpID(i + 1), Kind: OpCreate, Name: "i_web-" + hash + "-0", Hash: hash, From: dockerx.TemplateOf(d)})
	}
	in := PlanInput{Instance: "i", Name: "web", Now: t0}
	_, _ = c.execute(context.Background(), in, Plan{Ops: ops}) // the pulls' failures show in the waits
	waits := c.waits.Take(in.key())
	if len(waits) != 2 {
		t.Fatalf("waits %+v, want one per pod", waits)
	}
	for _, w := range waits {
		own := images[w.Hash]
		other := "gone:0"
		if own == other {
			other = "absent:1"
		}
		if w.Reason != podruntime.WaitErrImagePull || !strings.Contains(w.Message, own) || strings.Contains(w.Message, other) {
			t.Errorf("pod %s (image %s): %s %q, want ErrImagePull naming its own image only", w.Name, own, w.Reason, w.Message)
		}
	}
}
