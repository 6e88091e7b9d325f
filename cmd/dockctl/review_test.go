package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Review: the replicas of a deleted deployment are being stopped (gracefully,
// over their grace period) to be removed; `get containers` must not show
// them as Running and ready meanwhile.
func TestDeletedDeploymentContainersTerminating(t *testing.T) {
	snap, _ := fixture(t)
	snap.records = nil
	snap.statuses = nil
	snap.tombstones["default/web"] = true
	c := snap.containers[0] // running, no health check
	o := snap.containerObject(c)
	if o.Phase != "Terminating" || o.Ready || o.Orphan {
		t.Fatalf("container of a deleted deployment: %s ready=%v orphan=%v, want Terminating, not ready, not an orphan", o.Phase, o.Ready, o.Orphan)
	}
}

// runCLI runs the dockctl command line args against state directory dir and
// returns its standard output and error.
func runCLI(t *testing.T, dir string, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--state-dir", dir, "--instance", "rev"}, args...))
	err := root.Execute()
	return out.String() + errb.String(), err
}

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

// Review: a hostPort allows one replica (apply and scale refuse more);
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

// Review: `rollout undo` restores a revision, and `rollout history` must
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

// Review: `diff` previews `apply`. A manifest without replicas keeps the
// live count, and when that count is invalid with the new manifest (a
// hostPort with several replicas) apply refuses it: diff must report that
// error (exit 2), not a difference apply would never make (exit 1).
func TestDiffReportsWhatApplyRefuses(t *testing.T) {
	dir := t.TempDir()
	noPort := strings.Replace(hostPortYAML, "\n        ports: [{containerPort: 80, hostPort: 18080, hostIP: 127.0.0.1}]", "", 1)
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{noPort, []string{"apply", "-f", "-"}},
		{"", []string{"scale", "deployment", "hp", "--replicas", "4"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	if out, err := runCLI(t, dir, hostPortYAML, "apply", "--dry-run", "-f", "-"); err == nil {
		t.Fatalf("apply --dry-run accepted a hostPort with the 4 live replicas kept:\n%s", out)
	}
	out, err := runCLI(t, dir, hostPortYAML, "diff", "-f", "-")
	var ex *exitError
	if !errors.As(err, &ex) || ex.code != 2 || !strings.Contains(err.Error(), "hostPort") {
		t.Fatalf("diff: err = %v, want exit 2 naming hostPort\n%s", err, out)
	}
}

// Review: `delete -f` deletes every deployment its files name; one that is
// already gone is reported (exit 1), as kubectl does, but must not leave the
// others running.
func TestDeleteFileContinuesPastMissing(t *testing.T) {
	dir := t.TempDir()
	a := strings.ReplaceAll(hostPortYAML, "hp", "aa")
	b := strings.ReplaceAll(hostPortYAML, "hp", "bb")
	both := b + "---\n" + a
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{both, []string{"apply", "-f", "-"}},
		{"", []string{"delete", "deployment", "bb"}},
	} {
		if out, err := runCLI(t, dir, step.stdin, step.args...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	out, err := runCLI(t, dir, both, "delete", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `"bb"`) {
		t.Fatalf("delete -f with bb already deleted: err = %v, want bb reported\n%s", err, out)
	}
	st, serr := store.OpenReadOnly(dir, "rev")
	if serr != nil {
		t.Fatal(serr)
	}
	if _, gerr := st.Get("", "aa"); !errors.Is(gerr, store.ErrNotFound) {
		t.Fatalf("aa after delete -f: %v, want deleted (output %q, err %v)", gerr, out, err)
	}
}

// Review: an unknown --log-format is a typo to report, not text logs
// silently (every other controller flag refuses a bad value).
func TestControllerRefusesUnknownLogFormat(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newControllerCommand(&globalOptions{stateDir: notADir, instance: "rev"})
	cmd.SetArgs([]string{"--log-format", "jsn", "--metrics-addr", ""})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("err = %v, want a refusal naming --log-format", err)
	}
}

// Review: `--wait` words its timeout the same however it strikes — here
// before the first look at the engine completes (as on a loaded machine,
// where TestApplyWait's 1 s timeout failed with a bare "timed out after 1s"
// or "context deadline exceeded").
func TestWaitTimeoutMessage(t *testing.T) {
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, err := store.OpenReadOnly(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	g := &globalOptions{stateDir: dir, instance: "rev"}
	err = waitRollouts(context.Background(), g, st, []string{"default/web"}, time.Nanosecond, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "timed out after 1ns waiting for the rollout") {
		t.Fatalf("err = %v, want the timeout message", err)
	}
}

// Review: when the controller has observed the deployment and the rollout
// is stuck (a crash-looping release), the timeout must not suggest that no
// controller is running.
func TestWaitTimeoutWithController(t *testing.T) {
	dir, st, rec := appliedWeb(t)
	if err := st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation}); err != nil {
		t.Fatal(err)
	}
	// A controller runs: it holds the lock.
	release, err := st.AcquireControllerLock(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	g := &globalOptions{stateDir: dir, instance: "rev"}
	var out bytes.Buffer
	err = waitRollouts(context.Background(), g, st, []string{"default/web"}, time.Second, &out)
	if err == nil || !strings.Contains(err.Error(), "timed out") || strings.Contains(err.Error(), "controller` running") {
		t.Fatalf("err = %v, want a timeout that does not blame a missing controller\n%s", err, out.String())
	}
}

// Review: an orphan is a container whose deployment the state directory
// never knew. One whose record exists but cannot be read is not: the
// controller never touches it (not even with --prune-orphans), and `get
// containers` must not call it an orphan.
func TestUnreadableRecordIsNoOrphan(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("rev_api-abc-0", "rev", "api", nil)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "deployments", "api.json"), []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, dir, "", "get", "containers")
	if err != nil || !strings.Contains(out, "rev_api-abc-0") || strings.Contains(out, "orphan") {
		t.Fatalf("get containers: %v\n%s", err, out)
	}
}

// Review: `rollout status` and `apply --wait` wait for a rollout to
// complete; a deployment deleted meanwhile never completes it, so they must
// fail, not exit 0 as `delete --wait` rightly does once its containers are
// gone.
func TestWaitRolloutFailsOnDeletion(t *testing.T) {
	dir, st, _ := appliedWeb(t)
	if err := st.Delete("", "web"); err != nil {
		t.Fatal(err)
	}
	g := &globalOptions{stateDir: dir, instance: "rev"}
	var out bytes.Buffer
	err := waitRollouts(context.Background(), g, st, []string{"default/web"}, time.Minute, &out)
	if err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("waiting for the rollout of a deleted deployment: err = %v, want a failure naming the deletion\n%s", err, out.String())
	}
	if err := waitDeleted(context.Background(), g, st, []string{"default/web"}, time.Minute, &out); err != nil {
		t.Fatalf("delete --wait with no container left: %v", err)
	}
}

// Review: `get containers NAME` of a container that does not exist fails
// (exit 1) as `get deployments NAME` does and as kubectl does, instead of
// exiting 0 — scripts test for a container with it.
func TestGetContainerByNameNotFound(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("rev_web-abc-0", "rev", "web", nil)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, "", "get", "containers", "rev_web-abc-0"); err != nil || !strings.Contains(out, "rev_web-abc-0") {
		t.Fatalf("get containers of an existing one: %v\n%s", err, out)
	}
	out, err := runCLI(t, dir, "", "get", "containers", "rev_web-abc-9")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("get containers of a missing one: err = %v, want not found\n%s", err, out)
	}
	if _, err := runCLI(t, dir, "", "get", "containers"); err != nil {
		t.Fatalf("get containers (all): %v", err)
	}
}

// Review: `rollout undo --to-revision N` naming the current revision
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

// Review: a controller flag with a value that means nothing (no workers, a
// resync period or backoff of zero or less, a negative settle time, a
// backoff cap below its base) is refused naming the flag, as --max-replicas
// is, instead of silently replaced by a default.
func TestControllerRefusesMeaninglessFlags(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--workers", "0"}, {"--workers", "-2"},
		{"--resync-period", "0s"}, {"--resync-period", "-1s"},
		{"--crash-backoff-base", "0s"}, {"--crash-backoff-max", "-1s"},
		{"--crash-backoff-max", "1s", "--crash-backoff-base", "2s"},
		{"--settle-time", "-1s"},
		{"--stale-port-forward-after", "0s"},
	} {
		cmd := newControllerCommand(&globalOptions{stateDir: notADir, instance: "rev"})
		cmd.SetArgs(append(args, "--metrics-addr", ""))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err = %v, want a refusal naming %s", args, err, args[0])
		}
	}
}

// Review: a deployment whose record cannot be read exists; `get deployments
// NAME` and `describe` must say why it cannot be shown, not that it is not
// found (which invites applying it afresh over its history).
func TestUnreadableRecordIsNotNotFound(t *testing.T) {
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "deployments", "web.json"), []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get", "deployments", "web"}, {"get", "deployment/web"}, {"describe", "deployment", "web"}} {
		out, err := runCLI(t, dir, "", args...)
		if err == nil || strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "deployments/web.json") {
			t.Errorf("%v: err = %v, want the unreadable state file named, not \"not found\"\n%s", args, err, out)
		}
	}
}

// appliedWeb applies webYAML (instance "rev") into a new state directory,
// with a fake Docker daemon, and returns the directory, the store and the
// deployment's record.
func appliedWeb(t *testing.T) (string, *store.Store, *store.Record) {
	t.Helper()
	startFakeDaemon(t)
	dir := t.TempDir()
	if out, err := runCLI(t, dir, webYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, err := store.Open(dir, "rev")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, rec
}
