package main

import (
	"testing"
	"time"
)

// kubectl wait --for=delete watches the object by name and is met on its
// DELETED event, even when an object of the same name is created again
// right after (`delete deployment web` then `apply -f web.yaml`): the
// object it waited for is gone. dockctl judges "deleted" as "no record of
// that name and no container of it" on its next look: when the
// deployment is deleted, its containers removed and the deployment
// applied again between two looks, the revived record is taken for the
// deleted one and the wait never ends (until its timeout).
func TestReview12fWaitDeleteDeploymentRecreated(t *testing.T) {
	api, base, run := waitInstance(t)
	id := api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	calls := countCalls(t, api)
	out, done := startWait(t, base, "wait", "--for=delete", "deployment/web", "--timeout=10s")
	deadline := time.Now().Add(60 * time.Second)
	for calls.get("list") < 1 { // its first look
		if time.Now().After(deadline) {
			t.Fatal("the wait never listed the containers")
		}
		time.Sleep(10 * time.Millisecond)
	}
	still(t, out, done, "web is there")
	// Its next look sees Docker and the state directory only after all of
	// this: deleted, gone, applied again (a new object of the same name).
	release := calls.hold()
	defer release()
	run("", "delete", "deployment", "web")
	api.remove(id)
	run(webYAML, "apply", "-f", "-")
	release()
	select {
	case err := <-done:
		if err != nil || out.String() != "deployment.apps/web condition met\n" {
			t.Errorf("wait: %v\n%q, want kubectl's \"deployment.apps/web condition met\"", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the wait did not end; output so far:\n%s", out.String())
	}
}
