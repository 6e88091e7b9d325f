package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// startWait runs the command line in the background; its result comes on
// the channel. The test's context ends it if the test gives up.
func startWait(t *testing.T, base []string, args ...string) (*syncBuffer, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	var out syncBuffer
	cmd := cliCommand(nil, &out, &out, append(base, args...)...)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	return &out, done
}

// waitInstance is fakeInstance with deployment web applied, and the
// resync off: each wake must come from a source of change.
func waitInstance(t *testing.T) (*dockerAPI, []string, func(stdin string, args ...string) string) {
	t.Helper()
	api, base, _ := fakeInstance(t)
	run := runner(t, base)
	run(webYAML, "apply", "-f", "-")
	resync := waitResync
	t.Cleanup(func() { waitResync = resync })
	waitResync = time.Hour
	return api, base, run
}

// ends waits (generously: the machine is shared) for a background
// command's success with output want.
func ends(t *testing.T, out *syncBuffer, done <-chan error, want string) {
	t.Helper()
	select {
	case err := <-done:
		if got := out.String(); err != nil || got != want {
			t.Fatalf("wait: %v\n%q, want %q", err, got, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the command did not end; output so far:\n%s", out.String())
	}
}

// still checks that a background command has not ended, after giving it a
// moment to look (a wrong answer would come now).
func still(t *testing.T, out *syncBuffer, done <-chan error, why string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: it ended with %v\n%s", why, err, out.String())
	case <-time.After(500 * time.Millisecond):
	}
}

// start starts the fake's container named name, with Docker's start event.
func (d *dockerAPI) start(name string) {
	d.setState(httptest.NewRecorder(), name, "running", "Up 1 second")
}

// remove removes the fake's container id, with Docker's destroy event.
func (d *dockerAPI) remove(id string) {
	d.serve(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/containers/"+id, nil))
}

// listCount is the number of container lists the fake answered.
func (d *dockerAPI) listCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lists
}

// waitLists waits (generously) until the fake has answered n container
// lists in all.
func (d *dockerAPI) waitLists(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for d.listCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d container lists, want %d", d.listCount(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The line CI scripts have, `wait --for=condition=Ready pod -l app=…`:
// pods change in Docker alone (no state-directory write), so the wait must
// be woken by Docker's events (the resync is off here); it waits for the
// pods selected when it starts, not one a scale-up adds later, and reports
// each as kubectl does.
func TestWaitPodsReadyWokenByDocker(t *testing.T) {
	api, base, _ := waitInstance(t)
	labels := map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: "abc", "app": "web"}
	api.add("t1_web-abc-0", "created", labels)
	api.add("t1_web-abc-1", "created", labels)

	out, done := startWait(t, base, "wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=2m")
	still(t, out, done, "no pod is ready")
	api.start("t1_web-abc-0")
	// Its line says that the wait has its list: a scale-up's pod now, never
	// ready, is not waited for.
	waitOutput(t, out, "pod/web-abc-0 condition met\n")
	api.add("t1_web-abc-2", "created", labels)
	still(t, out, done, "web-abc-1 is not ready")
	api.start("t1_web-abc-1")
	ends(t, out, done, "pod/web-abc-0 condition met\npod/web-abc-1 condition met\n")

	// One pod by name, and a JSONPath on it, the same way.
	out, done = startWait(t, base, "wait", "--for=jsonpath={.status.containerStatuses[0].ready}=true", "pod/web-abc-2", "--timeout=2m")
	still(t, out, done, "web-abc-2 is not ready")
	api.start("t1_web-abc-2")
	ends(t, out, done, "pod/web-abc-2 condition met\n")
}

// --for=delete of pods: each one selected (or named) when the wait starts
// until it is gone, woken by Docker's destroy; one already gone is no
// wait and no line, as kubectl's.
func TestWaitPodsDeleted(t *testing.T) {
	api, base, run := waitInstance(t)
	id0 := api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	id1 := api.addContainer("t1_web-abc-1", "t1", "web", map[string]string{"app": "web"})

	lists := api.listCount()
	out, done := startWait(t, base, "wait", "--for=delete", "pods", "-l", "app=web", "--timeout=2m")
	api.waitLists(t, lists+1) // the wait has its list
	still(t, out, done, "both pods are there")
	api.remove(id0)
	still(t, out, done, "web-abc-1 is there")
	api.remove(id1)
	ends(t, out, done, "pod/web-abc-0 condition met\npod/web-abc-1 condition met\n")
	for _, args := range [][]string{{"pod/web-abc-0"}, {"pods", "--all"}} {
		if got := run("", append([]string{"wait", "--for=delete", "--timeout=2m"}, args...)...); got != "" {
			t.Errorf("%v: %q, want nothing", args, got)
		}
	}
}

// A deployment is deleted once its record and every container of it are
// gone (as delete --wait waits), named or selected by its labels.
func TestWaitDeploymentDeleted(t *testing.T) {
	api, base, run := waitInstance(t)
	id := api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	run("", "delete", "deployment", "web")
	// Deleted, its container left: still there, named or selected.
	runCases(t, base, []cliCase{
		{[]string{"wait", "--for=delete", "deployment/web", "--timeout=0"}, "", "condition not met for deployments/web"},
		{[]string{"wait", "--for=delete", "deployments", "-l", "app=web", "--timeout=0"}, "", "condition not met for deployments/web"},
		{[]string{"wait", "--for=condition=Available", "deployments", "-l", "app=web", "--timeout=0"}, "", "no matching resources found"},
	})
	lists := api.listCount()
	out, done := startWait(t, base, "wait", "--for=delete", "deployment/web", "--timeout=2m")
	api.waitLists(t, lists+1)
	still(t, out, done, "its container is there")
	api.remove(id)
	ends(t, out, done, "deployment.apps/web condition met\n")
}

// kubectl's errors and its single look.
func TestWaitPodsErrors(t *testing.T) {
	api, base, _ := waitInstance(t)
	api.add("t1_web-abc-0", "created", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: "abc", "app": "web"})
	runCases(t, base, []cliCase{
		{[]string{"wait", "--for=condition=Ready", "pod", "-l", "app=nope"}, "", "no matching resources found"},
		{[]string{"wait", "--for=condition=Ready", "pods", "--all", "-n", "team"}, "", "no matching resources found"},
		{[]string{"wait", "--for=delete", "pod", "-l", "app=nope"}, `^$`, ""},
		{[]string{"wait", "--for=condition=Ready", "pod/nope"}, "", `pods "nope" not found`},
		{[]string{"wait", "--for=condition=Ready", "pod/web-abc-0", "--timeout=0"}, "", "condition not met for pods/web-abc-0"},
		{[]string{"wait", "--for=condition=Ready", "pod/web-abc-0", "--timeout=300ms"}, "", "timed out waiting for the condition on pods/web-abc-0"},
		{[]string{"wait", "--for=condition=Ready=false", "pods", "--all", "-A", "--timeout=0"}, `^pod/web-abc-0 condition met\n$`, ""},
		{[]string{"wait", "--for=condition=PodScheduled", "pod", "web-abc-0", "--timeout=0"}, `^pod/web-abc-0 condition met\n$`, ""},
		{[]string{"wait", "--for=jsonpath={.status.phase}=Pending", "pod", "web-abc-0", "--timeout=0"}, `^pod/web-abc-0 condition met\n$`, ""},
		{[]string{"wait", "--for=jsonpath={.status.containerStatuses[*].name}=t1_web-abc-0", "pods", "-l", "deployment=web", "--timeout=0"}, `^pod/web-abc-0 condition met\n$`, ""},
		{[]string{"wait", "--for=jsonpath={.spec}=x", "pod/web-abc-0"}, "", "jsonpath leads to a nested object or list which is not supported"},
		{[]string{"wait", "--for=jsonpath={.status.replicas}=1", "deployment/web", "--timeout=0"}, `^deployment.apps/web condition met\n$`, ""},
		{[]string{"wait", "--for=nope", "pod/x"}, "", `unrecognized condition: "nope"`},
	})
}
