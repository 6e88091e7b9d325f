package dockerx

import (
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

func TestBuildConfigEnv(t *testing.T) {
	literal := deployment("web", func(d *manifests.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = []manifests.EnvVar{{Name: "GREETING", Value: "hi"}}
		c.Command = []string{"/app", "--greet=$(GREETING)", "$$(GREETING)", "$(NOPE)"}
		c.Args = []string{"$(GREETING)"}
	})
	fromConfig := deployment("web", func(d *manifests.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = []manifests.EnvVar{{Name: "MODE", ValueFrom: &manifests.EnvVarSource{
			ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}}}
		c.Args = []string{"--mode=$(MODE)"}
	})
	pod := deployment("pod", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.Containers = append(ps.Containers, manifests.Container{Name: "side", Image: "x",
			EnvFrom: []manifests.EnvFromSource{{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "app"}}}})
	})
	member := func(d *manifests.Deployment, ctr string, env []string) CreateRequest {
		req := request(d)
		req.Pod = &PodRef{Name: "pod-5d8f7c9b6-0", UID: "u1", Holder: req.Name}
		req.Container = ctr
		req.Name = MemberName(req.Name, ctr)
		req.Env = env
		return req
	}
	tests := []struct {
		name      string
		req       CreateRequest
		env       string
		cmd, args string
		err       string
	}{
		{name: "literal values and expansion without a resolved environment", req: request(literal),
			env: "GREETING=hi", cmd: "/app --greet=hi $(GREETING) $(NOPE)", args: "hi"},
		{name: "a resolved environment replaces the literal one", req: func() CreateRequest {
			r := request(literal)
			r.Env = []string{"GREETING=resolved", "EXTRA=1"}
			return r
		}(), env: "GREETING=resolved EXTRA=1", cmd: "/app --greet=resolved $(GREETING) $(NOPE)", args: "resolved"},
		{name: "a template that needs resolving, resolved", req: func() CreateRequest {
			r := request(fromConfig)
			r.Env = []string{"MODE=fast"}
			return r
		}(), env: "MODE=fast", args: "--mode=fast"},
		{name: "resolved to nothing (an optional reference missing) is not unresolved", req: func() CreateRequest {
			r := request(fromConfig)
			r.Env = []string{}
			return r
		}(), env: "", args: "--mode=$(MODE)"},
		{name: "a template that needs resolving, unresolved", req: request(fromConfig),
			err: "container web: its environment refers to ConfigMaps, Secrets or the pod, and the request carries no resolved environment"},
		{name: "a member without envFrom needs nothing", req: member(pod, "pod", nil)},
		{name: "a member with envFrom, unresolved", req: member(pod, "side", nil), err: "container side: its environment refers"},
		{name: "a member with envFrom, resolved", req: member(pod, "side", []string{"mode=fast"}), env: "mode=fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, _, err := BuildConfig(tt.req)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(cfg.Env, " "); got != tt.env {
				t.Errorf("Env = %q, want %q", got, tt.env)
			}
			if got := strings.Join(cfg.Entrypoint, " "); got != tt.cmd {
				t.Errorf("Entrypoint = %q, want %q", got, tt.cmd)
			}
			if got := strings.Join(cfg.Cmd, " "); got != tt.args {
				t.Errorf("Cmd = %q, want %q", got, tt.args)
			}
		})
	}
	// The template is not changed by the expansion.
	if c := literal.Spec.Template.Spec.Containers[0]; !slices.Equal(c.Command, []string{"/app", "--greet=$(GREETING)", "$$(GREETING)", "$(NOPE)"}) {
		t.Errorf("template command changed: %q", c.Command)
	}
}

func TestPodName(t *testing.T) {
	// metadata.name is the pod's name whatever hostname the pod gives
	// itself: Kubernetes' spec.hostname changes the hostname only.
	withHostname := func(d *manifests.Deployment) {
		d.Spec.Template.Spec.Hostname, d.Spec.Template.Spec.Subdomain = "db", "peers"
	}
	tests := []struct {
		name   string
		mutate func(*manifests.Deployment)
		pod    *PodRef
		want   string
	}{
		{"a replica is named by its deployment, hash and ordinal", nil, nil, Hostname("web", "5d8f7c9b6", 0)},
		{"a pod with a holder is its PodRef's", nil, &PodRef{Name: "web-5d8f7c9b6-3", UID: "u"}, "web-5d8f7c9b6-3"},
		{"a replica with spec.hostname keeps its own name", withHostname, nil, Hostname("web", "5d8f7c9b6", 0)},
		{"a pod with a holder and spec.hostname keeps its PodRef's", withHostname, &PodRef{Name: "web-5d8f7c9b6-3", UID: "u"}, "web-5d8f7c9b6-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(deployment("web", tt.mutate))
			if tt.pod != nil {
				p := *tt.pod
				p.Holder = req.Name
				req.Pod = &p
			}
			if got := req.PodName(); got != tt.want {
				t.Errorf("PodName = %q, want %q", got, tt.want)
			}
		})
	}
}
