package main

import (
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// logs picks a pod's container as kubectl does, never a holder.
func TestLogStreams(t *testing.T) {
	snap := podsFixture(t)
	shopHash := manifests.TemplateHash(&mustDecode(t, shopYAML).Spec.Template)
	jobsHash := manifests.TemplateHash(&mustDecode(t, jobsYAML).Spec.Template)
	webHash := manifests.TemplateHash(&mustDecode(t, webYAML).Spec.Template)
	shop0, jobs1, jobs4 := dockerx.Hostname("shop", shopHash, 0), dockerx.Hostname("jobs", jobsHash, 1), dockerx.Hostname("jobs", jobsHash, 4)
	base := func(dep, hash string, ord int) string { return dockerx.ContainerName("default", "", dep, hash, ord) }
	names := func(ss []logStream) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.prefix+s.name)
		}
		return strings.Join(out, " | ")
	}
	for _, tc := range []struct {
		name, kind, target string
		o                  logsOptions
		want, err          string
	}{
		{"two app containers: the first by default", kindPod, shop0, logsOptions{}, base("shop", shopHash, 0) + ".web", ""},
		{"-c an app container", kindPod, shop0, logsOptions{container: "log"}, base("shop", shopHash, 0) + ".log", ""},
		{"-c an init container", kindPod, shop0, logsOptions{container: "migrate"}, base("shop", shopHash, 0) + ".migrate", ""},
		{"-c no such container", kindPod, shop0, logsOptions{container: "nope"}, "", `no container "nope" in pod "` + shop0 + `" (it has: migrate, web, log)`},
		{"the default-container annotation", kindPod, jobs4, logsOptions{}, base("jobs", jobsHash, 4) + ".work", ""},
		{"the annotated container is not created yet", kindPod, jobs1, logsOptions{}, "",
			`container "work" in pod "` + jobs1 + `" is waiting to start: PodInitializing`},
		{"a single-container pod", kindPod, dockerx.Hostname("web", webHash, 1), logsOptions{}, base("web", webHash, 1), ""},
		{"an unknown pod", kindPod, "nope-0", logsOptions{}, "", `pods "nope-0" not found`},
		{"every container, init first, no holder", kindPod, shop0, logsOptions{allContainers: true},
			"[pod/" + shop0 + "/migrate] " + base("shop", shopHash, 0) + ".migrate | " +
				"[pod/" + shop0 + "/web] " + base("shop", shopHash, 0) + ".web | " +
				"[pod/" + shop0 + "/log] " + base("shop", shopHash, 0) + ".log", ""},
		{"every container of a pod still initializing", kindPod, jobs1, logsOptions{allContainers: true},
			"[pod/" + jobs1 + "/migrate] " + base("jobs", jobsHash, 1) + ".migrate", ""},
		{"a deployment of pods: each pod's first app container", kindDeployment, "shop", logsOptions{},
			"[" + base("shop", shopHash, 0) + ".web] " + base("shop", shopHash, 0) + ".web | " +
				"[" + base("shop", shopHash, 1) + ".web] " + base("shop", shopHash, 1) + ".web", ""},
		{"a deployment's replicas, -c", kindDeployment, "shop", logsOptions{container: "web"},
			"[" + base("shop", shopHash, 0) + ".web] " + base("shop", shopHash, 0) + ".web | " +
				"[" + base("shop", shopHash, 1) + ".web] " + base("shop", shopHash, 1) + ".web", ""},
		{"a deployment's replicas that have the container", kindDeployment, "jobs", logsOptions{container: "log"},
			"[" + base("jobs", jobsHash, 0) + ".log] " + base("jobs", jobsHash, 0) + ".log | " +
				"[" + base("jobs", jobsHash, 4) + ".log] " + base("jobs", jobsHash, 4) + ".log | " +
				"[" + base("jobs", jobsHash, 5) + ".log] " + base("jobs", jobsHash, 5) + ".log", ""},
		{"a deployment that does not exist", kindDeployment, "nope", logsOptions{}, "", `deployments.apps "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logStreams(testGlobal, snap, tc.kind, tc.target, &tc.o)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Fatalf("streams\n%s\nwant\n%s", names(got), tc.want)
			}
		})
	}
}

func TestLogsArgs(t *testing.T) {
	for _, tc := range []struct {
		args                  []string
		kind, name, container string
		ok                    bool
	}{
		{[]string{"deployment/web"}, kindDeployment, "web", "", true},
		{[]string{"deploy", "web"}, kindDeployment, "web", "", true},
		{[]string{"pod/web-1"}, kindPod, "web-1", "", true},
		{[]string{"po", "web-1"}, kindPod, "web-1", "", true},
		{[]string{"web-1"}, kindPod, "web-1", "", true},
		{[]string{"web-1", "app"}, kindPod, "web-1", "app", true},
		{[]string{"service/web"}, "", "", "", false},
		{[]string{"pod/"}, "", "", "", false},
	} {
		kind, name, container, err := logsArgs(tc.args)
		if (err == nil) != tc.ok || kind != tc.kind || name != tc.name || container != tc.container {
			t.Errorf("%v: %q %q %q %v", tc.args, kind, name, container, err)
		}
	}
}

// get pods, describe pod and logs of a pod, end to end: the real commands
// against the fake Engine API, the pod's containers labelled as the
// controller labels them.
func TestPodsAgainstEngine(t *testing.T) {
	api := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t1"}
	if _, _, err := run(t, shopYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	d := &storedDeployment(t, dir, "shop").Deployment
	hash := manifests.TemplateHash(&d.Spec.Template)
	pod := dockerx.Hostname("shop", hash, 0)
	logs := map[string][]string{"": {"holder says nothing"}, "migrate": {"m1", "m2"}, "web": {"w1", "w2", "w3"}, "log": {"l1"}}
	for _, c := range testPod("t1", d, 0, time.Minute, false,
		member{name: "migrate", state: "exited:0"}, member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}) {
		state := c.State
		api.add(c.Name, state, c.Labels, logs[c.ContainerName]...)
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(t, "", append(base, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		return out
	}

	out := mustRun("get", "pods")
	if want := regexp.MustCompile(`(?m)^` + pod + `\s+2/2\s+Running\s+0\s+\d+s$`); !want.MatchString(out) {
		t.Fatalf("get pods:\n%s", out)
	}
	if out := mustRun("get", "pod/"+pod, "-o", "name"); out != "pod/"+pod+"\n" {
		t.Fatalf("get pod/NAME -o name: %q", out)
	}
	if out := mustRun("get", "po", "-l", "app=shop,tier=front", "-o", "name"); out != "pod/"+pod+"\n" {
		t.Fatalf("get po -l: %q", out)
	}
	if out, errOut, err := run(t, "", append(base, "get", "pods", "-l", "app=other")...); err != nil || out != "" || errOut != "No resources found in default namespace of instance \"t1\".\n" {
		t.Fatalf("get pods -l matching nothing: %v %q %q", err, out, errOut)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(mustRun("get", "pods", pod, "-o", "json")), &obj); err != nil || obj["kind"] != "Pod" {
		t.Fatalf("get pods NAME -o json: %v %v", err, obj)
	}
	desc := mustRun("describe", "pod", pod)
	flat := strings.Join(strings.Fields(desc), " ") // spacing aside
	for _, want := range []string{"Name: " + pod, "Init Containers: migrate:", "Containers: web:", "Reason: Completed",
		"Holder: t1_shop-" + hash + "-0 ", "ContainersReady True"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("describe pod lacks %q:\n%s", want, desc)
		}
	}
	if _, _, err := run(t, "", append(base, "describe", "pod", "nope")...); err == nil || err.Error() != `pods "nope" not found in instance "t1"` {
		t.Fatalf("describe of an unknown pod: %v", err)
	}

	// logs: one container of the pod, unprefixed, as kubectl prints it.
	if out := mustRun("logs", "pod/"+pod, "-c", "web", "--tail", "2"); out != "w2\nw3\n" {
		t.Fatalf("logs -c web --tail 2: %q", out)
	}
	if out := mustRun("logs", pod, "migrate"); out != "m1\nm2\n" {
		t.Fatalf("logs POD CONTAINER: %q", out)
	}
	// Without -c, as kubectl: the first app container, and a notice on
	// stderr naming the choices.
	out, errOut, err := run(t, "", append(base, "logs", "pod/"+pod)...)
	if want := `Defaulted container "web" out of: web, log, migrate (init)`; err != nil || out != "w1\nw2\nw3\n" || strings.TrimSpace(errOut) != want {
		t.Fatalf("logs without -c: %q %q %v, want the web container's log and %q", out, errOut, err, want)
	}
	// --all-containers: every container but the holder, init first, each
	// line prefixed with its pod and container.
	want := "[pod/" + pod + "/migrate] m1\n[pod/" + pod + "/migrate] m2\n" +
		"[pod/" + pod + "/web] w1\n[pod/" + pod + "/web] w2\n[pod/" + pod + "/web] w3\n" +
		"[pod/" + pod + "/log] l1\n"
	if out := mustRun("logs", "pod/"+pod, "--all-containers"); out != want {
		t.Fatalf("logs --all-containers:\n%s\nwant\n%s", out, want)
	}
	if out := mustRun("logs", "deployment/shop", "--all-containers", "-f"); !sameLines(out, want) {
		t.Fatalf("logs deployment --all-containers -f:\n%s\nwant (in any order)\n%s", out, want)
	}
	if out := mustRun("logs", "deployment/shop", "-c", "log"); out != "[t1_shop-"+hash+"-0.log] l1\n" {
		t.Fatalf("logs deployment -c: %q", out)
	}
	if _, _, err := run(t, "", append(base, "logs", "pod/"+pod, "-c", "web", "--all-containers")...); err == nil || !strings.Contains(err.Error(), "--all-containers") {
		t.Fatalf("-c with --all-containers: %v", err)
	}
}

// sameLines reports whether a and b hold the same lines, in any order.
func sameLines(a, b string) bool {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	sort.Strings(as)
	sort.Strings(bs)
	return strings.Join(as, "\n") == strings.Join(bs, "\n")
}

func TestLogsDockerOptions(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		o       logsOptions
		want    dockerx.LogsOptions
		wantErr string
	}{
		{name: "defaults", o: logsOptions{tail: "all"}, want: dockerx.LogsOptions{Tail: "all"}},
		{name: "since", o: logsOptions{tail: "5", since: time.Hour, timestamps: true},
			want: dockerx.LogsOptions{Tail: "5", Since: now.Add(-time.Hour), Timestamps: true}},
		{name: "since-time", o: logsOptions{sinceTime: "2026-12-03T10:30:00.5Z"},
			want: dockerx.LogsOptions{Since: time.Date(2026, 12, 3, 10, 30, 0, 5e8, time.UTC)}},
		{name: "both", o: logsOptions{since: time.Minute, sinceTime: "2026-12-03T10:30:00Z"}, wantErr: "at most one"},
		{name: "negative", o: logsOptions{since: -time.Minute}, wantErr: "positive"},
		{name: "bad time", o: logsOptions{sinceTime: "yesterday"}, wantErr: "RFC 3339"},
	}
	for _, tt := range tests {
		got, err := tt.o.dockerOptions(now, false)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

// --since-time and --timestamps reach the engine as its since (Unix
// seconds) and timestamps parameters; a bad value fails before any call.
func TestLogsSinceReachesEngine(t *testing.T) {
	api := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t"}
	api.add("t_web-abc-0", "running", map[string]string{dockerx.LabelInstance: "t", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: "abc"}, "l1")
	if out, _, err := run(t, "", append(base, "logs", "deployment/web", "--since-time", "2026-12-03T10:30:00Z", "--timestamps")...); err != nil {
		t.Fatalf("logs: %v\n%s", err, out)
	}
	api.mu.Lock()
	queries := append([]string(nil), api.logQueries...)
	api.mu.Unlock()
	if len(queries) != 1 {
		t.Fatalf("logs requests %q, want one", queries)
	}
	v, _ := url.ParseQuery(queries[0])
	if got, want := v.Get("since"), "1796293800.000000000"; got != want {
		t.Errorf("since = %q, want %q", got, want)
	}
	if v.Get("timestamps") != "1" {
		t.Errorf("timestamps = %q, want 1 (query %s)", v.Get("timestamps"), queries[0])
	}
	if _, _, err := run(t, "", append(base, "logs", "deployment/web", "--since", "1m", "--since-time", "2026-12-03T10:30:00Z")...); err == nil {
		t.Fatal("--since with --since-time succeeded")
	}
}
