package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

const hostPortYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: hp}
spec:
  selector: {matchLabels: {app: hp}}
  template:
    metadata: {labels: {app: hp}}
    spec:
      containers:
      - name: c
        image: busybox:1.36
        ports: [{containerPort: 80, hostPort: 18080, hostIP: 127.0.0.1}]
`

// A hostPort allows one replica (apply and scale refuse more);
// `rollout undo` to a revision that published one must not store it with
// the several replicas the deployment was scaled to since, since only one
// of its containers could bind the port.
func TestUndoRefusesHostPortWithReplicas(t *testing.T) {
	dir := t.TempDir()
	noPort := strings.Replace(hostPortYAML, "\n        ports: [{containerPort: 80, hostPort: 18080, hostIP: 127.0.0.1}]", "", 1)
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{hostPortYAML, []string{"apply", "-f", "-"}},
		{noPort, []string{"apply", "-f", "-"}},
		{"", []string{"scale", "deployment", "hp", "--replicas", "4"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	out, err := runCLI(t, dir, "", "rollout", "undo", "deployment", "hp")
	if err == nil || !strings.Contains(err.Error(), "hostPort") {
		t.Fatalf("undo to a hostPort revision with 4 replicas: err = %v (%s), want a refusal naming hostPort", err, out)
	}
	st, err := store.OpenReadOnly(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	if err := manifests.Validate(&rec.Deployment); err != nil {
		t.Fatalf("stored record is invalid: %v", err)
	}
}

// `rollout undo` restores a revision, and `rollout history` must
// then show that revision's own change cause, as Kubernetes does (a
// rollback copies the ReplicaSet's annotations, change-cause included, back
// to the Deployment), not the cause of the release rolled back from.
func TestUndoKeepsTheRevisionsChangeCause(t *testing.T) {
	dir := t.TempDir()
	v1 := strings.Replace(hostPortYAML, "metadata: {name: hp}", "metadata: {name: hp, annotations: {kubernetes.io/change-cause: v1 release}}", 1)
	v2 := strings.Replace(v1, "v1 release", "v2 release", 1)
	v2 = strings.Replace(v2, "busybox:1.36", "busybox:1.37", 1)
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{v1, []string{"apply", "-f", "-"}},
		{v2, []string{"apply", "-f", "-"}},
		{"", []string{"rollout", "undo", "deployment", "hp"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	st, err := store.OpenReadOnly(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	cur := rec.CurrentRevision()
	if cur.Template.Spec.Containers[0].Image != "busybox:1.36" || cur.ChangeCause != "v1 release" {
		t.Fatalf("after undo the current revision is %s with change cause %q, want busybox:1.36 with %q", cur.Template.Spec.Containers[0].Image, cur.ChangeCause, "v1 release")
	}
}

// `rollout undo --to-revision N` naming the current revision
// changes nothing; it must not claim a rollback (kubectl says "skipped
// rollback").
func TestUndoToCurrentRevisionSkips(t *testing.T) {
	dir := t.TempDir()
	v2 := strings.Replace(hostPortYAML, "busybox:1.36", "busybox:1.37", 1)
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{hostPortYAML, []string{"apply", "-f", "-"}},
		{v2, []string{"apply", "-f", "-"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	out, err := runCLI(t, dir, "", "rollout", "undo", "deployment", "hp", "--to-revision", "2")
	if err != nil || strings.Contains(out, "rolled back") || !strings.Contains(out, "skipped rollback") {
		t.Fatalf("undo to the current revision: %v\n%s", err, out)
	}
}
