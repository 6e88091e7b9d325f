package main

import (
	"strings"
	"testing"
)

// A manifest that does not set replicas keeps the live count (1 on create),
// as kubectl apply does, so that applying it again does not undo a scale.
func TestApplyWithoutReplicasKeepsScale(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	noReplicas := strings.Replace(webYAML, "  replicas: 3\n", "", 1)
	nullReplicas := strings.Replace(webYAML, "replicas: 3", "replicas: null", 1)
	steps := []struct {
		stdin string
		args  []string
		out   string
		want  int32 // stored replicas afterwards
	}{
		{noReplicas, []string{"apply", "-f", "-"}, "deployment/web created\n", 1},
		{"", []string{"scale", "deployment/web", "--replicas", "4"}, "deployment/web scaled\n", 4},
		{noReplicas, []string{"apply", "-f", "-"}, "deployment/web unchanged\n", 4},
		{nullReplicas, []string{"apply", "-f", "-"}, "deployment/web unchanged\n", 4},
		{strings.Replace(noReplicas, "value: hi", "value: ho", 1), []string{"apply", "-f", "-"}, "deployment/web configured\n", 4},
		{strings.Replace(noReplicas, "value: hi", "value: ho", 1), []string{"apply", "-f", "-", "--dry-run"}, "deployment/web unchanged (dry run)\n", 4},
		// Setting it explicitly still wins.
		{strings.Replace(webYAML, "value: hi", "value: ho", 1), []string{"apply", "-f", "-"}, "deployment/web configured\n", 3},
		{"", []string{"delete", "deployment/web"}, "deployment/web deleted\n", -1},
		{noReplicas, []string{"apply", "-f", "-"}, "deployment/web created\n", 1},
	}
	for i, s := range steps {
		out, errOut, err := run(t, s.stdin, append(base, s.args...)...)
		if err != nil || out != s.out {
			t.Fatalf("step %d %v: out %q err %v stderr %q, want %q", i+1, s.args, out, err, errOut, s.out)
		}
		if s.want < 0 {
			continue
		}
		if got := storedDeployment(t, base[1], "web").Deployment.Replicas(); got != s.want {
			t.Fatalf("step %d %v: replicas %d, want %d", i+1, s.args, got, s.want)
		}
	}

	// diff reports no difference for an omitted replicas, only for a set one.
	if out, _, err := run(t, strings.Replace(noReplicas, "value: hi", "value: ho", 1), append(base, "diff", "-f", "-")...); exitCode(err) != 1 || strings.Contains(out, "replicas") {
		t.Fatalf("diff: exit %d\n%s", exitCode(err), out)
	}
	if _, _, err := run(t, "", append(base, "scale", "deployment/web", "--replicas", "2")...); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, noReplicas, append(base, "diff", "-f", "-")...); exitCode(err) != 0 || out != "" {
		t.Fatalf("diff without replicas after a scale: exit %d\n%s", exitCode(err), out)
	}
	if out, _, err := run(t, webYAML, append(base, "diff", "-f", "-")...); exitCode(err) != 1 || !strings.Contains(out, "-  replicas: 2") || !strings.Contains(out, "+  replicas: 3") {
		t.Fatalf("diff with replicas: exit %d\n%s", exitCode(err), out)
	}
}

// Keeping the live count must not store what validation forbids: a hostPort
// with more than one replica. (The count is the live one, set by scale: a
// count the previous apply set and the file no longer does is removed,
// back to the default, as kubectl apply's merge removes it.)
func TestApplyWithoutReplicasValidatesKeptCount(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	noReplicas := strings.Replace(webYAML, "  replicas: 3\n", "", 1)
	if _, _, err := run(t, noReplicas, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "", append(base, "scale", "deployment/web", "--replicas", "3")...); err != nil {
		t.Fatal(err)
	}
	hostPort := strings.Replace(noReplicas, "hostPort: 0", "hostPort: 18080", 1)
	_, _, err := run(t, hostPort, append(base, "apply", "-f", "-")...)
	if err == nil || !strings.Contains(err.Error(), "hostPort") || !strings.Contains(err.Error(), "replicas") {
		t.Fatalf("want a hostPort error, got %v", err)
	}
	if got := storedDeployment(t, base[1], "web").Deployment.Container().Ports[0].HostPort; got != 0 {
		t.Fatalf("stored hostPort %d", got)
	}
}

// As with replicas, apply keeps a `rollout pause` when the manifest does
// not set spec.paused, as kubectl apply does; a manifest that sets it wins
// (found trying the README as a new user: apply silently resumed).
func TestApplyWithoutPausedKeepsPause(t *testing.T) {
	base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
	changed := strings.Replace(webYAML, "value: hi", "value: ho", 1)
	setFalse := strings.Replace(changed, "  replicas: 3\n", "  replicas: 3\n  paused: false\n", 1)
	steps := []struct {
		stdin string
		args  []string
		out   string
		want  bool // stored paused afterwards
	}{
		{webYAML, []string{"apply", "-f", "-"}, "deployment/web created\n", false},
		{"", []string{"rollout", "pause", "deployment/web"}, "deployment/web paused\n", true},
		{webYAML, []string{"apply", "-f", "-"}, "deployment/web unchanged\n", true},
		{changed, []string{"apply", "-f", "-"}, "deployment/web configured\n", true},
		{setFalse, []string{"apply", "-f", "-"}, "deployment/web configured\n", false},
	}
	for i, s := range steps {
		out, errOut, err := run(t, s.stdin, append(base, s.args...)...)
		if err != nil || out != s.out {
			t.Fatalf("step %d %v: out %q err %v stderr %q, want %q", i+1, s.args, out, err, errOut, s.out)
		}
		if got := storedDeployment(t, base[1], "web").Deployment.Spec.Paused; got != s.want {
			t.Fatalf("step %d %v: paused %v, want %v", i+1, s.args, got, s.want)
		}
		if i == 2 {
			// diff agrees: the kept pause is no difference.
			if out, _, err := run(t, webYAML, append(base, "diff", "-f", "-")...); exitCode(err) != 0 {
				t.Fatalf("diff after a kept pause: exit %d\n%s", exitCode(err), out)
			}
		}
	}
}
