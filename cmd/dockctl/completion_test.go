package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

const completionYAML = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: migrate, image: m}]
      containers: [{name: web, image: w}, {name: side, image: s}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: team}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: a}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: team}
data: {a: b}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {a: b}
`

// complete runs cobra's hidden __complete command and returns the
// completions and the directive.
func complete(t *testing.T, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	out, errOut, err := run(t, "", append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if err != nil {
		t.Fatalf("__complete %q: %v (stderr %q)", args, err, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, ":") {
		t.Fatalf("__complete %q: no directive in %q", args, out)
	}
	var d int
	for _, r := range last[1:] {
		d = d*10 + int(r-'0')
	}
	var words []string
	for _, l := range lines[:len(lines)-1] {
		words = append(words, strings.SplitN(l, "\t", 2)[0])
	}
	return words, cobra.ShellCompDirective(d)
}

func TestCompletion(t *testing.T) {
	// Docker is unreachable: pods come from it and are then none, at once.
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	dir := t.TempDir()
	if _, errOut, err := run(t, completionYAML, "--state-dir", dir, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	const (
		nofile  = cobra.ShellCompDirectiveNoFileComp
		nospace = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	)
	sd := []string{"--state-dir", dir}
	tests := []struct {
		args []string
		want string
		dir  cobra.ShellCompDirective
	}{
		{[]string{"get", ""}, "deployments pods containers namespaces services endpoints configmaps secrets persistentvolumeclaims daemonsets replicasets statefulsets cronjobs jobs ingresses ingressclasses gatewayclasses gateways httproutes referencegrants", nofile},
		{[]string{"get", "se"}, "services secrets", nofile},
		{[]string{"get", "svc"}, "svc", nofile},
		{[]string{"get", "deploy"}, "deployments", nofile},
		{[]string{"get", "deployments", ""}, "web", nofile},
		{[]string{"get", "deploy", ""}, "web", nofile},
		{[]string{"get", "deployment.apps", ""}, "web", nofile},
		{[]string{"get", "deployments", "web", ""}, "", nofile},
		{[]string{"get", "-n", "team", "deployments", ""}, "api", nofile},
		{[]string{"-n", "team", "get", "cm", ""}, "cfg", nofile},
		{[]string{"get", "cm", ""}, "", nofile},
		{[]string{"get", "secrets", ""}, "creds", nofile},
		{[]string{"get", "svc", ""}, "web", nofile},
		{[]string{"get", "endpoints", ""}, "web", nofile},
		{[]string{"get", "ns", ""}, "default team", nofile},
		{[]string{"get", "pods", ""}, "", nofile},
		{[]string{"get", "deployment/"}, "deployment/web", nofile},
		{[]string{"get", "svc/w"}, "svc/web", nofile},
		{[]string{"get", "deployments/x"}, "", nofile},
		{[]string{"get", "nope", ""}, "", nofile},
		{[]string{"get", "-n", ""}, "default team", nofile},
		{[]string{"get", "--namespace", "t"}, "team", nofile},
		{[]string{"get", "-o", ""}, "table wide json yaml name jsonpath= jsonpath-as-json= custom-columns= custom-columns-file= go-template= go-template-file=", nofile},
		{[]string{"get", "-o", "j"}, "json jsonpath= jsonpath-as-json=", nofile},
		{[]string{"get", "-o", "jsonp"}, "jsonpath= jsonpath-as-json=", nospace},
		{[]string{"get", "-o", "custom"}, "custom-columns= custom-columns-file=", nospace},
		{[]string{"get", "--output", "y"}, "yaml", nofile},
		{[]string{"describe", ""}, "deployments pods namespaces services endpoints configmaps secrets persistentvolumeclaims daemonsets replicasets statefulsets cronjobs jobs ingresses ingressclasses gatewayclasses gateways httproutes referencegrants", nofile},
		{[]string{"describe", "secret", ""}, "creds", nofile},
		{[]string{"describe", "deployments", "w"}, "web", nofile},
		{[]string{"describe", "ns", ""}, "default team", nofile},
		{[]string{"delete", ""}, "deployments pods services namespaces configmaps secrets persistentvolumeclaims daemonsets replicasets statefulsets cronjobs jobs ingresses ingressclasses gatewayclasses gateways httproutes referencegrants", nofile},
		{[]string{"delete", "ns", ""}, "default team", nofile},
		{[]string{"delete", "pods", ""}, "", nofile},
		{[]string{"label", ""}, "deployments services namespaces configmaps secrets persistentvolumeclaims daemonsets replicasets statefulsets cronjobs jobs ingresses ingressclasses gatewayclasses gateways httproutes referencegrants", nofile},
		{[]string{"label", "deploy", ""}, "web", nofile},
		{[]string{"label", "deploy", "web", ""}, "", nofile},
		{[]string{"label", "tier=a", "svc", ""}, "web", nofile},
		{[]string{"annotate", "-n", "team", "configmap", ""}, "cfg", nofile},
		// As kubectl's: --replicas is required, and offered until given.
		{[]string{"scale", ""}, "--replicas deployments", nofile},
		{[]string{"scale", "deployment", ""}, "--replicas web", nofile},
		{[]string{"scale", "--replicas", "2", "deployment", ""}, "web", nofile},
		{[]string{"scale", "deployment/"}, "deployment/web", nofile},
		{[]string{"rollout", "status", ""}, "deployments", nofile},
		{[]string{"rollout", "undo", "deploy", ""}, "web", nofile},
		{[]string{"rollout", "restart", "--namespace", "team", "deployments", ""}, "api", nofile},
		{[]string{"set", "image", ""}, "deployments", nofile},
		{[]string{"set", "image", "deployment/"}, "deployment/web", nofile},
		{[]string{"set", "image", "deployment/web", ""}, "migrate= web= side=", nospace},
		{[]string{"set", "image", "deployment", "web", "web=w:2", "s"}, "side=", nospace},
		{[]string{"logs", ""}, "deployment/web", nofile},
		{[]string{"logs", "deployment/"}, "deployment/web", nofile},
		{[]string{"logs", "deployment/web", "-c", ""}, "migrate web side", nofile},
		{[]string{"logs", "deployment/web", "--container", "w"}, "web", nofile},
		{[]string{"logs", "deployment/nope", "-c", ""}, "", nofile},
		{[]string{"logs", "pod/web-x", "-c", ""}, "", nofile},
		{[]string{"exec", ""}, "deployment/web", nofile},
		{[]string{"exec", "svc/"}, "svc/web", nofile},
		{[]string{"exec", "deploy/w"}, "deploy/web", nofile},
		{[]string{"exec", "deployment/web", "-c", ""}, "migrate web side", nofile},
		{[]string{"exec", "deployment/web", "--", ""}, "", nofile},
		{[]string{"port-forward", ""}, "deployment/web", nofile},
		{[]string{"port-forward", "service/"}, "service/web", nofile},
		{[]string{"port-forward", "svc/web", ""}, "", nofile},
		{[]string{"create", ""}, "configmap deployment job secret service namespace", nofile},
		{[]string{"explain", ""}, "deployments services namespaces configmaps secrets persistentvolumeclaims daemonsets replicasets statefulsets cronjobs jobs ingresses ingressclasses gatewayclasses gateways httproutes referencegrants", nofile},
		{[]string{"explain", "s"}, "services secrets statefulsets", nofile},
		{[]string{"explain", "sv"}, "svc", nofile},
		{[]string{"explain", "svc.sp"}, "svc.spec", nospace},
		{[]string{"explain", "deploy.spec.template.spec.containers.re"},
			"deploy.spec.template.spec.containers.readinessProbe deploy.spec.template.spec.containers.resources " +
				"deploy.spec.template.spec.containers.restartPolicy", nospace},
		{[]string{"explain", "pods.s"}, "", nofile},
		{[]string{"explain", "deploy.nope.s"}, "", nofile},
		{[]string{"explain", "deployments", ""}, "", nofile},
		{[]string{"completion", ""}, "bash zsh fish powershell", nofile},
		{[]string{"version", ""}, "", nofile},
		{[]string{"top", ""}, "deployments pods", nofile},
		{[]string{"top", "deployments", ""}, "web", nofile},
		{[]string{"top", "deploy", "w"}, "web", nofile},
		{[]string{"top", "deployments", "web", ""}, "", nofile},
		{[]string{"-n", "team", "top", "deployments", ""}, "api", nofile},
		{[]string{"top", "pods", ""}, "", nofile},
		{[]string{"top", "pods", "--sort-by", ""}, "cpu memory", nofile},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			start := time.Now()
			got, d := complete(t, append(append([]string{}, sd...), tc.args...)...)
			if strings.Join(got, " ") != tc.want || d != tc.dir {
				t.Errorf("got %q %v, want %q %v", got, d, tc.want, tc.dir)
			}
			if el := time.Since(start); el > completionDockerTimeout+time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

// A missing or broken state directory completes nothing and fails nothing.
func TestCompletionWithoutState(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for _, args := range [][]string{
		{"--state-dir", t.TempDir() + "/missing", "get", "deployments", ""},
		{"--state-dir", "/dev/null", "get", "deployments", ""},
		{"--state-dir", t.TempDir(), "--instance", "BAD!", "get", "-n", ""},
	} {
		if got, d := complete(t, args...); len(got) != 0 || d != cobra.ShellCompDirectiveNoFileComp {
			t.Errorf("%q: got %q %v", args, got, d)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_dockctl", "zsh": "#compdef dockctl", "fish": "complete -c dockctl", "powershell": "Register-ArgumentCompleter"} {
		out, _, err := run(t, "", "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("completion %s: err %v, no %q in %d bytes", shell, err, want, len(out))
		}
	}
	if _, _, err := run(t, "", "completion", "tcsh"); err == nil {
		t.Error("completion tcsh: want an error")
	}
}
