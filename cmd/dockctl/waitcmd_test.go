package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/store"
)

func TestParseWaitFor(t *testing.T) {
	tests := []struct {
		in        string
		delete    bool
		typ       string
		value     string
		jsonPath  bool
		jsonValue string
		wantErr   string
	}{
		{in: "delete", delete: true},
		{in: "DELETE", delete: true},
		{in: "condition=Available", typ: "Available", value: "True"},
		{in: "condition=Available=false", typ: "Available", value: "false"},
		{in: "condition=Ready,ContainersReady", typ: "Ready,ContainersReady", value: "True"},
		{in: "condition=ReplicaFailure=True", typ: "ReplicaFailure", value: "True"},
		{in: "condition=", wantErr: `unrecognized condition: "condition="`},
		{in: "condition==True", wantErr: "unrecognized condition"},
		{in: "available", wantErr: `unrecognized condition: "available"`},
		// What the shell leaves of --for=jsonpath='{.status.readyReplicas}'=3.
		{in: "jsonpath={.status.readyReplicas}=3", jsonPath: true, jsonValue: "3"},
		{in: "jsonpath={.status.loadBalancer.ingress}", jsonPath: true},
		{in: "jsonpath=.status.phase=Running", jsonPath: true, jsonValue: "Running"},
		{in: "jsonpath=status.phase='Running'", jsonPath: true, jsonValue: "Running"},
		{in: `jsonpath={.status.conditions[?(@.type=="Ready")].status}=True`, jsonPath: true, jsonValue: "True"},
		{in: "jsonpath={.status.readyReplicas}=", wantErr: "jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3"},
		{in: "jsonpath={.status.readyReplicas}=''", wantErr: "jsonpath wait has to have a value after equal sign"},
		{in: "jsonpath={.a}=1=2", wantErr: "jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 or --for=jsonpath='{.status.readyReplicas}'"},
		{in: "jsonpath=", wantErr: "jsonpath expression cannot be empty"},
		{in: "jsonpath={.a}{.b}", wantErr: "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'"},
		{in: "jsonpath={.a[}", wantErr: "unterminated array"},
	}
	for _, tt := range tests {
		got, err := parseWaitFor(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseWaitFor(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseWaitFor(%q): %v", tt.in, err)
			continue
		}
		if got.delete != tt.delete || got.typ != tt.typ || got.value != tt.value || (got.jsonPath != nil) != tt.jsonPath || got.jsonValue != tt.jsonValue {
			t.Errorf("parseWaitFor(%q) = %+v", tt.in, got)
		}
	}
}

// generic decodes an object as genericObjects gives it.
func generic(t *testing.T, src string) map[string]any {
	t.Helper()
	objs, err := genericObjects([]row{{object: func() (any, error) { return json.RawMessage(src), nil }}})
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].(map[string]any)
}

// condition= and jsonpath= judged as kubectl's wait judges them.
func TestWaitConditionMet(t *testing.T) {
	deploy := func(gen, observed int) string {
		return `{"metadata":{"name":"web","generation":` + itoa(gen) + `},"status":{"observedGeneration":` + itoa(observed) +
			`,"readyReplicas":3,"paused":false,"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`
	}
	pod := `{"metadata":{"name":"web-0","labels":{"app":"web"}},"spec":{"containers":[{"name":"a"},{"name":"b"}]},
		"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"False"},
		{"type":"ContainersReady","status":"False"},{"type":"PodScheduled","status":"True","observedGeneration":1}],
		"containerStatuses":[{"name":"a","ready":true,"restartCount":0},{"name":"b","ready":false,"restartCount":2}]}}`
	tests := []struct {
		name, obj, for_ string
		want            bool
		wantErr         string
	}{
		{"met", deploy(3, 3), "condition=Available", true, ""},
		{"case-insensitive", deploy(3, 3), "condition=available=TRUE", true, ""},
		{"stale generation", deploy(3, 2), "condition=Available", false, ""},
		{"other value", deploy(3, 3), "condition=Available=False", false, ""},
		{"absent condition", deploy(3, 3), "condition=ReplicaFailure", false, ""},
		{"absent condition is not False", deploy(3, 3), "condition=ReplicaFailure=False", false, ""},
		{"no status", `{"metadata":{"generation":1}}`, "condition=Available", false, ""},
		{"no observedGeneration", `{"metadata":{"generation":4},"status":{"conditions":[{"type":"Available","status":"True"}]}}`, "condition=Available", true, ""},
		{"pod ready", pod, "condition=Ready", false, ""},
		{"pod not ready", pod, "condition=Ready=false", true, ""},
		{"pod scheduled", pod, "condition=PodScheduled", true, ""},
		{"any of several types: the first found", pod, "condition=ContainersReady,Initialized", true, ""},
		{"condition without status", `{"status":{"conditions":[{"type":"Ready"},{"type":"Ready","status":"True"}]}}`, "condition=Ready", true, ""},
		{"jsonpath number", deploy(3, 3), "jsonpath={.status.readyReplicas}=3", true, ""},
		{"jsonpath other number", deploy(3, 3), "jsonpath={.status.readyReplicas}=2", false, ""},
		{"jsonpath bool", deploy(3, 3), "jsonpath={.status.paused}=false", true, ""},
		{"jsonpath string", pod, "jsonpath={.status.phase}=Running", true, ""},
		{"jsonpath quoted value", pod, `jsonpath={.status.phase}="Running"`, true, ""},
		{"jsonpath filter", pod, `jsonpath={.status.conditions[?(@.type=="Initialized")].status}=True`, true, ""},
		{"jsonpath filter unmet", pod, `jsonpath={.status.conditions[?(@.type=="Ready")].status}=True`, false, ""},
		{"jsonpath index", pod, "jsonpath={.status.containerStatuses[1].restartCount}=2", true, ""},
		{"jsonpath exists", pod, "jsonpath={.metadata.labels.app}", true, ""},
		{"jsonpath exists: a map", pod, "jsonpath={.metadata.labels}", true, ""},
		{"jsonpath missing", pod, "jsonpath={.status.podIP}", false, ""},
		{"jsonpath missing with value", pod, "jsonpath={.status.podIP}=10.0.0.1", false, ""},
		{"jsonpath map with value", pod, "jsonpath={.metadata.labels}=x", false, "jsonpath leads to a nested object or list which is not supported"},
		{"jsonpath several values", pod, "jsonpath={.status.containerStatuses[*].ready}=true", false, "given jsonpath expression matches more than one value"},
		{"jsonpath several lists", pod, "jsonpath={.status.phase}{.status.phase}", false, "unexpected path string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseWaitFor(tt.for_)
			if err != nil {
				if tt.wantErr == "" || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseWaitFor(%q): %v", tt.for_, err)
				}
				return
			}
			got, err := c.met(generic(t, tt.obj))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("met = %v, %v; want the error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("met = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A pod's conditions and fields are judged on the pod get -o json prints
// (podObject), a deployment's on its object with Docker's counts.
func TestWaitJudgesGetObjects(t *testing.T) {
	snap := podsFixture(t)
	hash := func(src string) string { return manifests.TemplateHash(&mustDecode(t, src).Spec.Template) }
	jobs := func(n int) string { return dockerx.Hostname("jobs", hash(jobsYAML), n) }
	tests := []struct {
		kind, name, for_ string
		want             bool
	}{
		// jobs-0 runs every container.
		{kindPod, jobs(0), "condition=Ready", true},
		{kindPod, jobs(0), "condition=ContainersReady", true},
		{kindPod, jobs(0), "condition=Initialized", true},
		{kindPod, jobs(0), "condition=PodScheduled", true},
		{kindPod, jobs(0), "jsonpath={.status.phase}=Running", true},
		// jobs-1 runs its init container.
		{kindPod, jobs(1), "condition=Initialized=False", true},
		{kindPod, jobs(1), "condition=Ready", false},
		{kindPod, jobs(1), "condition=PodScheduled", true},
		{kindPod, jobs(1), "jsonpath={.status.phase}=Pending", true},
		{kindPod, jobs(1), "jsonpath={.status.initContainerStatuses[0].state.running}", true},
		// jobs-5 runs every container but is being stopped.
		{kindPod, jobs(5), "condition=ContainersReady", true},
		{kindPod, jobs(5), "condition=Ready", false},
		// web: one of three ready, as get shows it; observed generation 3 of 3.
		{kindDeployment, "web", "jsonpath={.status.readyReplicas}=1", true},
		{kindDeployment, "web", "jsonpath={.status.replicas}=3", true},
		{kindDeployment, "web", "jsonpath={.status.observedGeneration}", true},
		{kindDeployment, "web", "condition=Available", false}, // the controller recorded none
		// Not there: not met (yet).
		{kindPod, "nope", "jsonpath={.metadata.name}", false},
		{kindDeployment, "nope", "jsonpath={.metadata.name}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.for_, func(t *testing.T) {
			c, err := parseWaitFor(tt.for_)
			if err != nil {
				t.Fatal(err)
			}
			w := &waiter{g: testGlobal, cond: c, snap: snap}
			got, err := w.done(waitTarget{kind: tt.kind, namespace: "default", name: tt.name})
			if err != nil || got != tt.want {
				t.Errorf("done = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestWaitRequest(t *testing.T) {
	tests := []struct {
		args    []string
		o       waitOptions
		want    string // named objects (kind/name,…), or "select KIND"
		wantErr string
	}{
		{args: []string{"deployment/web"}, want: "deployment/web"},
		{args: []string{"deploy/web", "deployments.apps/api", "po/web-abc-0"}, want: "deployment/web,deployment/api,pod/web-abc-0"},
		{args: []string{"pods", "a", "b"}, want: "pod/a,pod/b"},
		{args: []string{"pod"}, o: waitOptions{selector: "app=web"}, want: "select pod"},
		{args: []string{"pods"}, o: waitOptions{all: true, allNamespaces: true}, want: "select pod"},
		{args: []string{"deployments"}, o: waitOptions{selector: "app in (a,b)"}, want: "select deployment"},
		{args: []string{"deployment"}, wantErr: "resource(s) were provided, but no name was specified"},
		{args: []string{"pods", "a"}, o: waitOptions{allNamespaces: true}, wantErr: "a resource cannot be retrieved by name across all namespaces"},
		{args: []string{"pods", "a"}, o: waitOptions{selector: "app=web"}, wantErr: "name cannot be provided when a selector is specified"},
		{args: []string{"pod/a"}, o: waitOptions{all: true}, wantErr: "selectors and the all flag cannot be used when passing resource/name arguments"},
		{args: []string{"pods"}, o: waitOptions{all: true, selector: "app=web"}, wantErr: "setting 'all' parameter but found a non empty selector."},
		{args: []string{"pods"}, o: waitOptions{selector: "app in (a"}, wantErr: `Unable to find "/v1, Resource=pods" that match label selector "app in (a"`},
		{args: []string{"svc/web"}, wantErr: "services are not supported here: expected deployments, pods, daemonsets, replicasets, statefulsets, cronjobs or jobs"},
		{args: []string{"web"}, wantErr: `the server doesn't have a resource type "web"`},
		{args: []string{"deploy/"}, wantErr: "arguments in resource/name form must have a single resource and name"},
		{args: nil, wantErr: "You must provide one or more resources"},
	}
	for _, tt := range tests {
		req, err := tt.o.request(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("request(%q, %+v) err = %v, want %q", tt.args, tt.o, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("request(%q, %+v): %v", tt.args, tt.o, err)
			continue
		}
		var got []string
		for _, o := range req.named {
			got = append(got, o.kind+"/"+o.name)
		}
		if req.selecting {
			got = []string{"select " + req.kind}
			if req.allNamespaces != tt.o.allNamespaces {
				t.Errorf("request(%q, %+v): allNamespaces %v", tt.args, tt.o, req.allNamespaces)
			}
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("request(%q, %+v) = %q, want %q", tt.args, tt.o, got, tt.want)
		}
	}
}

// wait reports each deployment as its condition is met for the current
// generation, times out with kubectl's message otherwise, and prints
// nothing for a deployment already gone.
func TestWaitCommand(t *testing.T) {
	dir, st, rec := appliedWeb(t)
	// A controller runs (it holds the lock): the conditions it records
	// are not stale.
	release, err := st.AcquireControllerLock(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	// Not yet observed: the wait times out.
	out, err := runCLI(t, dir, "", "wait", "--for=condition=Available", "deployment/web", "--timeout", "50ms")
	if err == nil || err.Error() != "timed out waiting for the condition on deployments/web" {
		t.Fatalf("err = %v, want kubectl's timeout\n%s", err, out)
	}

	// The controller reports Available while the wait runs: it wakes.
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation,
			Conditions: []manifests.DeploymentCondition{{Type: "Available", Status: "True"}}})
	}()
	out, err = runCLI(t, dir, "", "wait", "--for=condition=Available", "deploy/web", "--timeout", "2m")
	if err != nil || out != "deployment.apps/web condition met\n" {
		t.Fatalf("out = %q, err = %v", out, err)
	}
	for _, args := range [][]string{
		{"deployment", "-l", "app=web"},
		{"deployments", "--all"},
		{"deployments", "--all", "-A"},
	} {
		out, err = runCLI(t, dir, "", append([]string{"wait", "--for=condition=Available", "--timeout=0"}, args...)...)
		if err != nil || out != "deployment.apps/web condition met\n" {
			t.Fatalf("%v: out = %q, err = %v", args, out, err)
		}
	}
	out, err = runCLI(t, dir, "", "wait", "--for=condition=Available", "deployment", "-l", "app=nope")
	if err == nil || err.Error() != "no matching resources found" {
		t.Fatalf("err = %v, want kubectl's no-match error\n%s", err, out)
	}
	out, err = runCLI(t, dir, "", "wait", "--for=condition=Available", "deployment", "--all", "-n", "team")
	if err == nil || err.Error() != "no matching resources found" {
		t.Fatalf("err = %v, want kubectl's no-match error\n%s", err, out)
	}

	out, err = runCLI(t, dir, "", "wait", "--for=condition=Available", "deployment/nope")
	if err == nil || !strings.Contains(err.Error(), `"nope" not found`) {
		t.Fatalf("err = %v, want not found\n%s", err, out)
	}
	if out, err := runCLI(t, dir, "", "wait", "deployment/web"); err == nil || !strings.Contains(err.Error(), "--for must be given") {
		t.Fatalf("wait without --for: %v\n%s", err, out)
	}

	if out, err := runCLI(t, dir, "", "delete", "deployment", "web"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Gone before the wait: kubectl prints nothing, and succeeds.
	for _, args := range [][]string{{"deployment/web"}, {"deployment", "-l", "app=web"}, {"deployment/never"}} {
		out, err = runCLI(t, dir, "", append([]string{"wait", "--for=delete", "--timeout", "2m"}, args...)...)
		if err != nil || out != "" {
			t.Fatalf("%v: out = %q, err = %v", args, out, err)
		}
	}
}

// --timeout as each kubectl command means it: wait's 0 looks once and
// does not wait, its negative waits a week; rollout status's 0 (and
// negative) never times out; delete --wait's 0 waits a week. None of
// them times out at once.
func TestWaitTimeoutZeroAndNegative(t *testing.T) {
	available := &store.Status{Conditions: []manifests.DeploymentCondition{{Type: "Available", Status: "True"}}}
	deadline := &store.Status{Conditions: []manifests.DeploymentCondition{{Type: manifests.ConditionProgressing, Status: "False", Reason: reconciler.ReasonProgressDeadlineExceeded}}}
	tests := []struct {
		name    string
		status  *store.Status // written before the command (nil: none)
		later   *store.Status // written while it runs
		deleted bool          // the deployment deleted before
		// controller: a controller holds the state directory's lock (else
		// the conditions it recorded are stale: Unknown to wait).
		controller bool
		args       []string
		wantOut    string
		wantErr    string // "" for success
	}{
		{name: "wait 0, condition met", status: available, controller: true,
			args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=0"}, wantOut: "deployment.apps/web condition met\n"},
		{name: "wait 0, condition met but stale", status: available,
			args:    []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=0"},
			wantErr: "condition not met for deployments/web: is `dockctl controller` running for instance \"rev\"?"},
		{name: "wait 0, condition not met",
			args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=0"}, wantErr: "condition not met for deployments/web"},
		{name: "wait 0 for delete, still there",
			args: []string{"wait", "--for=delete", "deployment/web", "--timeout=0"}, wantErr: "condition not met for deployments/web"},
		{name: "wait 0 for delete, gone", deleted: true,
			args: []string{"wait", "--for=delete", "deployment/web", "--timeout=0"}, wantOut: ""},
		{name: "wait negative waits", later: available, controller: true,
			args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout=-1s"}, wantOut: "deployment.apps/web condition met\n"},
		{name: "rollout status 0 waits", later: deadline,
			args: []string{"rollout", "status", "deployment/web", "--timeout=0"}, wantErr: "exit status 1"},
		{name: "rollout status negative waits", later: deadline,
			args: []string{"rollout", "status", "deployment/web", "--timeout=-1s"}, wantErr: "exit status 1"},
		{name: "delete --wait 0 waits",
			args: []string{"delete", "deployment", "web", "--wait", "--timeout=0"}, wantOut: "all containers removed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, st, rec := appliedWeb(t)
			write := func(s *store.Status) {
				c := *s
				c.ObservedGeneration = rec.Generation
				if err := st.WriteStatus("", "web", &c); err != nil {
					t.Error(err)
				}
			}
			if tt.controller {
				release, err := st.AcquireControllerLock(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			if tt.status != nil {
				write(tt.status)
			}
			if tt.deleted {
				if err := st.Delete("", "web"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.later != nil {
				// After the command's first look, which a timeout of 0
				// taken as already expired would not outlive.
				go func() {
					time.Sleep(300 * time.Millisecond)
					write(tt.later)
				}()
			}
			// A deadline, generous, so that a wait that never returns
			// fails the test rather than hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var buf bytes.Buffer
			err := cliCommand(nil, &buf, &buf, append([]string{"--state-dir", dir, "--instance", "rev"}, tt.args...)...).ExecuteContext(ctx)
			out := buf.String()
			if tt.wantErr == "" {
				if err != nil || !strings.HasSuffix(out, tt.wantOut) || tt.args[0] == "wait" && out != tt.wantOut {
					t.Fatalf("%v: %q %v, want %q", tt.args, out, err, tt.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(out+err.Error(), "timed out") {
				t.Fatalf("%v: %q %v, want the error %q", tt.args, out, err, tt.wantErr)
			}
		})
	}
}

// kubectl wait: "--timeout: The length of time to wait before giving up.
// Zero means check once and don't wait, negative means wait for a week."
// A script checking once with --timeout=0 (as it would with kubectl) must
// not hang on an unmet condition.
func TestWaitTimeoutZeroChecksOnce(t *testing.T) {
	dir, _, _ := appliedWeb(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the command if it is still waiting
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		err := cliCommand(nil, &out, &out, "--state-dir", dir, "--instance", "rev", "wait", "--for=condition=Available", "deployment/web", "--timeout=0").ExecuteContext(ctx)
		done <- result{out.String(), err}
	}()
	select {
	case r := <-done:
		// kubectl's words for a single look (getObjAndCheckCondition's
		// o.Timeout == 0 branch, k8s.io/kubectl/pkg/cmd/wait); "timed out
		// waiting…" is the error of a wait that ran out.
		if r.err == nil || !strings.Contains(r.err.Error(), "condition not met for deployments/web") {
			t.Errorf("wait --timeout=0 on an unmet condition: err %v, want kubectl's condition not met error at once\n%s", r.err, r.out)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("wait --timeout=0 still waiting after 20s on a condition that is not met (kubectl checks once and returns)")
	}
}

// `wait --for=jsonpath='{.status.readyReplicas}'` (no value) waits until
// the path finds a value. The API server omits a Deployment's zero counts
// (apps/v1 DeploymentStatus: replicas, updatedReplicas, readyReplicas,
// availableReplicas are all omitempty), so with kubectl that line waits
// for a first ready replica. dockctl's deployment object always carries
// the counts, 0 included (docs/design.md §15 requires them in status): decided, the
// existence form is met at once, as it is on any object that has the
// field (the README's wait row says so). The value form behaves as
// kubectl's: `=0` is met on a deployment with no replica ready, `=3` is
// not.
func TestWaitJSONPathZeroCountIsPresent(t *testing.T) {
	_, base, _ := waitInstance(t) // web, 3 replicas, no container at all
	for _, field := range []string{"readyReplicas", "availableReplicas", "updatedReplicas"} {
		t.Run(field, func(t *testing.T) {
			path := "--for=jsonpath={.status." + field + "}"
			for _, tt := range []struct {
				forFlag string
				met     bool
			}{
				{path, true}, // present as 0
				{path + "=0", true},
				{path + "=3", false},
			} {
				out, _, err := run(t, "", append(base, "wait", tt.forFlag, "deployment/web", "--timeout=0")...)
				switch {
				case tt.met && (err != nil || out != "deployment.apps/web condition met\n"):
					t.Errorf("%s with no replica at all: out %q err %v, want it met", tt.forFlag, out, err)
				case !tt.met && (err == nil || !strings.Contains(err.Error(), "condition not met for deployments/web")):
					t.Errorf("%s with no replica at all: out %q err %v, want kubectl's \"condition not met for deployments/web\"", tt.forFlag, out, err)
				}
			}
		})
	}
}

// kubectl wait --for=delete watches the object by name and is met on its
// DELETED event, even when an object of the same name is created again
// right after (`delete deployment web` then `apply -f web.yaml`): the
// object it waited for is gone. dockctl looks rather than watches: when the
// deployment is deleted, its containers removed and the deployment applied
// again between two looks, the revived record must not be taken for the
// deleted one ("no record of that name and no container of it" alone
// would never be met, and the wait would end only at its timeout).
func TestWaitDeleteMetWhenDeploymentRecreated(t *testing.T) {
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

// kubectl wait visits its objects with the resource builder's
// ContinueOnError: an object whose condition is not met (--timeout=0), or
// that is not found, is an error collected while the others are still
// judged, each met one printed ("pod/B condition met"), and the errors are
// reported together at the end (exit 1). A wait that stopped at the first
// failure would judge and report none of the pods after it, and lose the
// errors of the others: a script could not tell which of its pods were
// ready.
func TestWaitSeveralObjectsReportsEach(t *testing.T) {
	api, base, _ := waitInstance(t)
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"}) // running: Ready
	api.add("t1_web-abc-1", "created", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: "web",
		dockerx.LabelTemplateHash: "abc", "app": "web"}) // not Ready
	for _, tt := range []struct {
		args     []string
		wantOut  string
		wantErrs []string
	}{
		{[]string{"pod/web-abc-1", "pod/web-abc-0"}, "pod/web-abc-0 condition met\n",
			[]string{"condition not met for pods/web-abc-1"}},
		{[]string{"pod/nope", "pod/web-abc-0"}, "pod/web-abc-0 condition met\n",
			[]string{`pods "nope" not found`}},
		{[]string{"pod/nope", "pod/web-abc-1", "pod/web-abc-0"}, "pod/web-abc-0 condition met\n",
			[]string{`pods "nope" not found`, "condition not met for pods/web-abc-1"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"wait", "--for=condition=Ready", "--timeout=0"}, tt.args...)
			out, errOut, err := run(t, "", append(base, args...)...)
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q (kubectl judges every object)", out, tt.wantOut)
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q (stderr %q) does not say %q", err, errOut, want)
				}
			}
		})
	}
}

// kubectl wait runs its watch under interrupt.New(nil, cancel): SIGINT or
// SIGTERM cancels it and, with no final function, exits 1, as get -w does
// (TestGetWatchInterruptedExitsOne). Without a signal handler, Ctrl-C
// would kill dockctl's wait with the signal (no exit status 1; a shell
// sees 130), unlike its get -w and kubectl's wait.
func TestWaitInterruptedExitsOne(t *testing.T) {
	api, base, _ := waitInstance(t)
	api.add("t1_web-abc-0", "created", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: "web",
		dockerx.LabelTemplateHash: "abc", "app": "web"}) // never Ready
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			lists := api.listCount()
			code, out := exitOnSignal(t, api.host, append(base, "wait", "--for=condition=Ready", "pod/web-abc-0", "--timeout=5m"), sig,
				func(*syncBuffer) { api.waitLists(t, lists+1) }) // it looked: it waits now
			if code != 1 {
				t.Errorf("wait ended by %v: exit status %d, want kubectl's exit status 1; output:\n%s", sig, code, out)
			}
		})
	}
}

// docs/design.md §15: a deployment's counts come from Docker, "so they are right
// even when no controller runs; controller-only fields show as unknown when
// stale". wait --for=condition=Available must not judge the conditions the
// controller last recorded when no controller runs: with the controller
// gone and every container of web removed (Docker: 0 of 3 replicas, `get
// deployment` says 0/3 and AVAILABLE 0), "condition met" from the stale
// status file would let a CI line go on with nothing running.
// (TestWaitTimeoutZeroAndNegative's "wait 0, condition met" case concerns
// the same read.)
func TestWaitStaleConditionWithoutContainersNotMet(t *testing.T) {
	_, base, st := fakeInstance(t)
	run := runner(t, base)
	run(webYAML, "apply", "-f", "-")
	rec, err := st.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	// What a controller recorded before it stopped: web available, for
	// the current generation.
	if err := st.WriteStatus("", "web", &store.Status{ObservedGeneration: rec.Generation,
		Conditions: []manifests.DeploymentCondition{{Type: manifests.ConditionAvailable, Status: "True", Reason: "MinimumReplicasAvailable"}}}); err != nil {
		t.Fatal(err)
	}
	if got := run("", "get", "deployment", "web", "--no-headers"); !strings.HasPrefix(got, "web   0/3 ") {
		t.Fatalf("get deployment web: %q, want 0/3 ready (no container)", got)
	}
	out, _, err := runArgs(t, base, "wait", "--for=condition=Available", "deployment/web", "--timeout=0")
	if err == nil {
		t.Errorf("no controller runs and no container of web exists, yet wait says %q", out)
	}
}
