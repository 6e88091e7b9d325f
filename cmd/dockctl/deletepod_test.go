package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// summary lists the fake's containers as "name:state", sorted.
func (d *dockerAPI) summary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, c := range d.ctrs {
		out = append(out, strings.TrimPrefix(c.summary.Names[0], "/")+":"+c.summary.State)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

type ctrRef struct{ id, name string }

// containersOf returns the containers labelled k=v, sorted by name.
func (d *dockerAPI) containersOf(k, v string) []ctrRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []ctrRef
	for _, c := range d.ctrs {
		if c.summary.Labels[k] == v {
			out = append(out, ctrRef{c.summary.ID, strings.TrimPrefix(c.summary.Names[0], "/")})
		}
	}
	slices.SortFunc(out, func(a, b ctrRef) int { return strings.Compare(a.name, b.name) })
	return out
}

// exists reports whether the container of that ID is still there.
func (d *dockerAPI) exists(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.ctrs[id]
	return ok
}

// podDeletionsOf reads the requests `delete pod` recorded for deployment
// dep of namespace ns, as "pod grace containers" lines (grace "-" for
// the pod's own).
func podDeletionsOf(t *testing.T, dir, instance, ns, dep string) []string {
	t.Helper()
	st, err := store.OpenReadOnly(dir, instance)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := st.PodDeletions(ns, dep)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range reqs {
		g := "-"
		if r.GracePeriodSeconds != nil {
			g = fmt.Sprint(*r.GracePeriodSeconds)
		}
		out = append(out, fmt.Sprintf("%s %s %d", r.Pod, g, len(r.Containers)))
		if r.RequestedAt.IsZero() {
			t.Errorf("request for %s has no time", r.Pod)
		}
	}
	return out
}

// `delete pod` through the real command and the fake Docker API, without
// a controller: it records a request per pod (never stopping a container
// itself), prints kubectl's lines, reads --grace-period, --now and
// --force as kubectl does, refuses orphans, and says it does not wait
// when no controller runs.
func TestDeletePod(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string   // substring; "" for success
		stderr  []string // substrings of standard error
		want    []string // the requests of web (podDeletionsOf)
	}{
		{name: "one pod", args: []string{"delete", "pod", "web-abc-0"}, wantOut: `pod "web-abc-0" deleted` + "\n",
			stderr: []string{`Warning: no controller is running for instance "t1"`}, want: []string{"web-abc-0 - 1"}},
		{name: "pod/NAME, two of them", args: []string{"delete", "pod/web-abc-0", "po/web-abc-1", "--wait=false"},
			wantOut: "pod \"web-abc-0\" deleted\npod \"web-abc-1\" deleted\n", want: []string{"web-abc-0 - 1", "web-abc-1 - 1"}},
		{name: "--grace-period", args: []string{"delete", "pod", "web-abc-1", "--grace-period=5"}, wantOut: `pod "web-abc-1" deleted` + "\n",
			want: []string{"web-abc-1 5 1"}},
		{name: "--now is a grace of 1", args: []string{"delete", "pod", "web-abc-1", "--now"}, want: []string{"web-abc-1 1 1"},
			wantOut: `pod "web-abc-1" deleted` + "\n"},
		{name: "--grace-period=0 without --force is 1, as kubectl", args: []string{"delete", "pod", "web-abc-1", "--grace-period=0"},
			wantOut: `pod "web-abc-1" deleted` + "\n", want: []string{"web-abc-1 1 1"}},
		{name: "--grace-period=0 --force", args: []string{"delete", "pod", "web-abc-1", "--grace-period=0", "--force"},
			wantOut: `pod "web-abc-1" force deleted` + "\n", want: []string{"web-abc-1 0 1"},
			stderr: []string{"Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely."}},
		{name: "--force alone is a grace of 0", args: []string{"delete", "pod", "web-abc-1", "--force"},
			wantOut: `pod "web-abc-1" force deleted` + "\n", want: []string{"web-abc-1 0 1"}},
		{name: "--force with a grace", args: []string{"delete", "pod", "web-abc-1", "--force", "--grace-period=5"},
			wantErr: "--force and --grace-period greater than 0 cannot be specified together"},
		{name: "--now with a grace", args: []string{"delete", "pod", "web-abc-1", "--now", "--grace-period=5"},
			wantErr: "--now and --grace-period cannot be specified together"},
		{name: "-l", args: []string{"delete", "pods", "-l", "app=web", "--wait=false"},
			wantOut: "pod \"web-abc-0\" deleted\npod \"web-abc-1\" deleted\n", want: []string{"web-abc-0 - 1", "web-abc-1 - 1"}},
		{name: "-l matching none", args: []string{"delete", "pods", "-l", "app=none"}, wantOut: "No resources found\n"},
		{name: "--all leaves orphans out, with a warning", args: []string{"delete", "pods", "--all", "--wait=false"},
			wantOut: "pod \"api-abc-0\" deleted\npod \"web-abc-0\" deleted\npod \"web-abc-1\" deleted\n",
			stderr:  []string{`Warning: pod "ghost-abc-0" is an orphan`}, want: []string{"web-abc-0 - 1", "web-abc-1 - 1"}},
		{name: "--all of another namespace", args: []string{"delete", "pods", "--all", "-n", "team"}, wantOut: "No resources found\n"},
		{name: "missing", args: []string{"delete", "pod", "web-abc-7"}, wantErr: `pods "web-abc-7" not found in instance "t1"`},
		{name: "missing, --ignore-not-found", args: []string{"delete", "pod", "web-abc-7", "--ignore-not-found"}},
		{name: "an orphan is refused", args: []string{"delete", "pod", "ghost-abc-0"},
			wantErr: `pod "ghost-abc-0" is an orphan: no deployment of instance "t1" owns it`},
		{name: "a bad selector", args: []string{"delete", "pods", "-l", "a=(b"}, wantErr: `Unable to find "/v1, Resource=pods" that match label selector "a=(b"`},
		{name: "--wait with no controller times out", args: []string{"delete", "pod", "web-abc-0", "--wait", "--timeout", "300ms"},
			wantOut: `pod "web-abc-0" deleted` + "\n", want: []string{"web-abc-0 - 1"},
			wantErr: "timed out waiting for the condition on pods/web-abc-0: is `dockctl controller` running for instance \"t1\"?"},
		{name: "a pod and a deployment", args: []string{"delete", "deployment/api", "pod/web-abc-0", "--wait=false"},
			wantOut: "deployment/api deleted\npod \"web-abc-0\" deleted\n", want: []string{"web-abc-0 - 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := startFakeDaemon(t)
			dir := t.TempDir()
			base := []string{"--state-dir", dir, "--instance", "t1"}
			for _, src := range []string{webYAML, strings.ReplaceAll(webYAML, "web", "api")} {
				if _, errOut, err := run(t, src, append(base, "apply", "-f", "-")...); err != nil {
					t.Fatalf("apply: %v %s", err, errOut)
				}
			}
			api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
			api.addContainer("t1_web-abc-1", "t1", "web", map[string]string{"app": "web"})
			api.addContainer("t1_api-abc-0", "t1", "api", map[string]string{"app": "api"})
			api.addContainer("t1_ghost-abc-0", "t1", "ghost", map[string]string{"app": "ghost"}) // an orphan
			before := api.summary()
			out, errOut, err := run(t, "", append(base, tt.args...)...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, stderr %q", err, errOut)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q, want %q in it", errOut, s)
				}
			}
			if got := podDeletionsOf(t, dir, "t1", "", "web"); !slices.Equal(got, tt.want) {
				t.Errorf("requests %q, want %q", got, tt.want)
			}
			if after := api.summary(); after != before || len(api.createsSnapshot()) > 0 {
				t.Errorf("the CLI touched containers: before %s, after %s", before, after)
			}
		})
	}
}

// A pod with a holder is named by its uid and all its containers, so that
// the controller finds it however it changes, and never its successor.
func TestDeletePodWithHolder(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	if _, errOut, err := run(t, shopYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	shop := mustDecode(t, shopYAML)
	var ids []string
	for _, c := range testPod("t1", shop, 0, 0, false, member{name: "migrate", state: "exited:0"},
		member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}) {
		ids = append(ids, api.add(c.Name, c.State, c.Labels))
	}
	pod := dockerx.Hostname("shop", manifests.TemplateHash(&shop.Spec.Template), 0)
	out, errOut, err := run(t, "", append(base, "delete", "pod", pod, "--wait=false")...)
	if err != nil || out != fmt.Sprintf("pod %q deleted\n", pod) {
		t.Fatalf("out %q err %v stderr %q", out, err, errOut)
	}
	st, _ := store.OpenReadOnly(dir, "t1")
	reqs, err := st.PodDeletions("", "shop")
	if err != nil || len(reqs) != 1 {
		t.Fatalf("requests %+v %v", reqs, err)
	}
	slices.Sort(ids)
	got := slices.Sorted(slices.Values(reqs[0].Containers))
	if reqs[0].UID != fmt.Sprintf("%08x", 0xa0) || !slices.Equal(got, ids) {
		t.Fatalf("request %+v, want uid %08x and containers %v", reqs[0], 0xa0, ids)
	}
}

// With a controller running (the real one, in a child process, against
// the fake API), `delete pod` waits by default, as kubectl does, until
// the pod's container is gone; the deployment is back to its replicas
// with a new pod, and the request is cleared.
func TestDeletePodWithController(t *testing.T) {
	api := startDockerAPI(t, "dockctl-workload:dev")
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t"}
	if _, _, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	startDockctl(t, api, append(base, "controller", "--metrics-addr", "", "--resync-period", "1h")...)
	waitUntil(t, "3 running replicas", func() bool { return api.running(dockerx.LabelDeployment, "web") == 3 })
	st, err := store.OpenReadOnly(dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the controller's lock", func() bool { ok, _ := st.ControllerRunning(); return ok })
	victim := api.containersOf(dockerx.LabelDeployment, "web")[0]
	pod := strings.TrimPrefix(victim.name, "t_")
	out, errOut, err := run(t, "", append(base, "delete", "pod", pod, "--timeout", "1m")...)
	if err != nil || out != fmt.Sprintf("pod %q deleted\n", pod) {
		t.Fatalf("out %q err %v stderr %q", out, err, errOut)
	}
	if api.exists(victim.id) {
		t.Fatalf("delete returned before %s was gone", victim.name)
	}
	waitUntil(t, "3 running replicas again", func() bool { return api.running(dockerx.LabelDeployment, "web") == 3 })
	waitUntil(t, "the request cleared", func() bool { return len(podDeletionsOf(t, dir, "t", "", "web")) == 0 })
}

// Right after `delete pod` the pod is Terminating, as kubectl shows a pod
// with a deletion timestamp at once: once the deletion is recorded, `get
// pods` must not keep showing it Running until a controller begins its
// stop — forever while none runs (the pods are stopped only when one
// starts).
func TestDeletePodShowsItTerminatingAtOnce(t *testing.T) {
	api := startFakeDaemon(t)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	if _, errOut, err := run(t, webYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"})
	api.addContainer("t1_web-abc-1", "t1", "web", map[string]string{"app": "web"})
	if out, errOut, err := run(t, "", append(base, "delete", "pod", "web-abc-0", "--wait=false")...); err != nil {
		t.Fatalf("delete: %v %q %q", err, out, errOut)
	}
	if got := podDeletionsOf(t, dir, "t1", "", "web"); len(got) != 1 {
		t.Fatalf("requests %q, want the one recorded", got)
	}
	out, errOut, err := run(t, "", append(base, "get", "pods")...)
	if err != nil {
		t.Fatalf("get pods: %v %s", err, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) < 3:
		case f[0] == "web-abc-0" && f[2] != "Terminating":
			t.Errorf("the deleted pod shows as %s, want Terminating:\n%s", f[2], out)
		case f[0] == "web-abc-1" && f[2] != "Running":
			t.Errorf("the pod not deleted shows as %s, want Running:\n%s", f[2], out)
		}
	}
}

// fakeRemover records the stops and removals deleteWorkloadPod asks.
type fakeRemover struct{ calls []string }

func (f *fakeRemover) StopContainer(_ context.Context, id string, timeout time.Duration) error {
	f.calls = append(f.calls, fmt.Sprintf("stop %s %s", id, timeout))
	return nil
}

func (f *fakeRemover) RemoveContainer(_ context.Context, id string) error {
	f.calls = append(f.calls, "remove "+id)
	return nil
}

// delete pod of a Job's pod stops its container over the pod's grace
// period and removes it: the workload controller keeps no delete
// requests, and its owner replaces the pod if it wants one.
func TestDeleteWorkloadPodRemovesItsContainer(t *testing.T) {
	name := dockerx.PodContainerName("default", "default", "migrate-abcde")
	c := dockerx.Container{ID: "c1", Name: name, Namespace: "default", State: dockerx.StateRunning, Created: now.Add(-time.Minute),
		Labels: map[string]string{dockerx.LabelOwnerKind: manifests.KindJob, dockerx.LabelOwner: "migrate"}}
	snap := &snapshot{instance: "default", statuses: map[string]*store.Status{}, tombstones: map[string]bool{},
		containers: []dockerx.Container{c}, now: now}
	e, err := snap.pod(testGlobal, "default", "migrate-abcde")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		grace int
		want  []string
	}{
		{"its own grace period", -1, []string{"stop c1 30s", "remove c1"}},
		{"the grace given", 5, []string{"stop c1 5s", "remove c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRemover{}
			if err := deleteWorkloadPod(context.Background(), nil, f, e, tc.grace); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.calls, tc.want) {
				t.Errorf("calls %q, want %q", f.calls, tc.want)
			}
		})
	}
}
