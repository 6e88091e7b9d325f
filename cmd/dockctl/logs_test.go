package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// logs picks a pod's container as kubectl does, never a holder.
func TestLogStreams(t *testing.T) {
	snap := podsFixture(t)
	shopHash := manifests.TemplateHash(&mustDecode(t, shopYAML).Spec.Template)
	jobsHash := manifests.TemplateHash(&mustDecode(t, jobsYAML).Spec.Template)
	webHash := manifests.TemplateHash(&mustDecode(t, webYAML).Spec.Template)
	shop0, shop1 := dockerx.Hostname("shop", shopHash, 0), dockerx.Hostname("shop", shopHash, 1)
	var jobsPod []string
	for i := range 8 {
		jobsPod = append(jobsPod, dockerx.Hostname("jobs", jobsHash, i))
	}
	jobs0, jobs1, jobs2, jobs3, jobs4, jobs5, jobs6, jobs7 := jobsPod[0], jobsPod[1], jobsPod[2], jobsPod[3], jobsPod[4], jobsPod[5], jobsPod[6], jobsPod[7]
	base := func(dep, hash string, ord int) string { return dockerx.ContainerName("default", "", dep, hash, ord) }
	pre := func(pod, container string) string { return "[pod/" + pod + "/" + container + "] " }
	// Every container of every jobs pod that exists, init first.
	var jobsAll []string
	for i, members := range [][]string{{"migrate", "proxy", "work", "log"}, {"migrate"}, {"migrate"}, {"migrate", "proxy"},
		{"migrate", "proxy", "work", "log"}, {"migrate", "proxy", "work", "log"}, {"migrate", "proxy"}, {"migrate"}} {
		for _, m := range members {
			jobsAll = append(jobsAll, pre(jobsPod[i], m)+base("jobs", jobsHash, i)+"."+m)
		}
	}
	names := func(ss []logStream) string {
		var out []string
		for _, s := range ss {
			if s.err != nil {
				out = append(out, s.name+": "+s.err.Error())
				continue
			}
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
		// A deployment's every replica, each prefixed as kubectl's
		// --all-pods prefixes, unless --prefix=false.
		{"a deployment of pods: each pod's first app container", kindDeployment, "shop", logsOptions{},
			pre(shop0, "web") + base("shop", shopHash, 0) + ".web | " + pre(shop1, "web") + base("shop", shopHash, 1) + ".web", ""},
		{"a deployment's replicas, -c", kindDeployment, "shop", logsOptions{container: "web"},
			pre(shop0, "web") + base("shop", shopHash, 0) + ".web | " + pre(shop1, "web") + base("shop", shopHash, 1) + ".web", ""},
		{"a deployment's replicas, --prefix=false", kindDeployment, "shop", logsOptions{container: "web", prefixSet: true},
			base("shop", shopHash, 0) + ".web | " + base("shop", shopHash, 1) + ".web", ""},
		{"a deployment's replicas that have the container", kindDeployment, "jobs", logsOptions{container: "log"},
			pre(jobs0, "log") + base("jobs", jobsHash, 0) + ".log | " +
				pre(jobs4, "log") + base("jobs", jobsHash, 4) + ".log | " +
				pre(jobs5, "log") + base("jobs", jobsHash, 5) + ".log", ""},
		{"a deployment that does not exist", kindDeployment, "nope", logsOptions{}, "", `deployments.apps "nope" not found`},
		{"a pod, --prefix", kindPod, shop0, logsOptions{container: "log", prefix: true, prefixSet: true}, pre(shop0, "log") + base("shop", shopHash, 0) + ".log", ""},
		// -l: the pods of the namespace whose labels match, unprefixed
		// unless --prefix, as kubectl; a pod without the container is an
		// error of its own stream (errs), reported at its turn.
		{"-l", "", "", logsOptions{selector: "app=shop,tier=front"},
			base("shop", shopHash, 0) + ".web | " + base("shop", shopHash, 1) + ".web", ""},
		{"-l --prefix -c", "", "", logsOptions{selector: "tier in (front)", container: "log", prefix: true, prefixSet: true},
			pre(shop0, "log") + base("shop", shopHash, 0) + ".log | " + pre(shop1, "log") + base("shop", shopHash, 1) + ".log", ""},
		{"-l with dockctl's short keys", "", "", logsOptions{selector: "deployment=jobs,app", container: "work"},
			base("jobs", jobsHash, 0) + ".work | " + jobs1 + `: container "work" in pod "` + jobs1 + `" is waiting to start: PodInitializing | ` +
				jobs2 + `: container "work" in pod "` + jobs2 + `" is waiting to start: PodInitializing | ` +
				jobs3 + `: container "work" in pod "` + jobs3 + `" is waiting to start: PodInitializing | ` +
				base("jobs", jobsHash, 4) + ".work | " + base("jobs", jobsHash, 5) + ".work | " +
				jobs6 + `: container "work" in pod "` + jobs6 + `" is waiting to start: PodInitializing | ` +
				jobs7 + `: container "work" in pod "` + jobs7 + `" is waiting to start: PodInitializing`, ""},
		{"-l --all-containers", "", "", logsOptions{selector: "app=jobs,deployment notin (shop)", allContainers: true},
			strings.Join(jobsAll, " | "), ""},
		{"-l matching nothing", "", "", logsOptions{selector: "app=nope"}, "", ""},
		{"-l invalid", "", "", logsOptions{selector: "app in"}, "", "invalid label selector"},
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
	// -l looks in -n's namespace only: another has no shop pods.
	other := &globalOptions{instance: testGlobal.instance, namespace: "other"}
	if got, err := logStreams(other, snap, "", "", &logsOptions{selector: "app=shop"}); err != nil || len(got) != 0 {
		t.Fatalf("-l in namespace other: %v %v, want nothing", names(got), err)
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
	api, base, d := shopApplied(t)
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
	if out := mustRun("logs", "deployment/shop", "-c", "log"); out != "[pod/"+pod+"/log] l1\n" {
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
		{name: "negative", o: logsOptions{since: -time.Minute}, wantErr: "--since must be greater than 0"},
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

// logs -l, --prefix, --max-log-requests and --ignore-errors, end to end:
// the real command against the fake Engine API, two pods of shop.
func TestLogsSelectorAgainstEngine(t *testing.T) {
	api, base, d := shopApplied(t)
	hash := manifests.TemplateHash(&d.Spec.Template)
	pod0, pod1 := dockerx.Hostname("shop", hash, 0), dockerx.Hostname("shop", hash, 1)
	var web []string // 12 lines: -l prints the last 10 unless --tail says
	for i := 1; i <= 12; i++ {
		web = append(web, fmt.Sprintf("w%d", i))
	}
	logs := map[string][]string{"migrate": {"m1", "m2"}, "web": web, "log": {"l1"}}
	add := func(cs []dockerx.Container) {
		for _, c := range cs {
			api.add(c.Name, c.State, c.Labels, logs[c.ContainerName]...)
		}
	}
	run0, run1 := member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}
	add(testPod("t1", d, 0, time.Minute, false, member{name: "migrate", state: "exited:0"}, run0, run1))
	// Pod 1's init container was removed after it completed: its log is
	// gone, an error of that one stream.
	add(testPod("t1", d, 1, time.Minute, false, run0, run1))
	queries := func() int {
		api.mu.Lock()
		defer api.mu.Unlock()
		return len(api.logQueries)
	}
	lines := func(prefix string, from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "%sw%d\n", prefix, i)
		}
		return b.String()
	}

	for _, tc := range []struct {
		name               string
		args               []string
		out, stderr, err   string
		anyOrder, noStream bool
	}{
		{name: "the last 10 lines of each pod's default container, a notice once",
			args: []string{"-l", "app=shop"}, out: lines("", 3, 12) + lines("", 3, 12),
			stderr: `Defaulted container "web" out of: web, log, migrate (init)` + "\n"},
		{name: "--tail and --prefix", args: []string{"-l", "tier=front", "--tail", "2", "--prefix", "-c", "web"},
			out: lines("[pod/"+pod0+"/web] ", 11, 12) + lines("[pod/"+pod1+"/web] ", 11, 12)},
		{name: "--tail all", args: []string{"-l", "app=shop", "--tail", "all", "-c", "web"}, out: lines("", 1, 12) + lines("", 1, 12)},
		{name: "a stream's error stops the command after the pods before it",
			args: []string{"-l", "app=shop", "-c", "migrate"}, out: "m1\nm2\n",
			err: `container "migrate" of pod "` + pod1 + `" was removed after it completed: its logs went with it`},
		{name: "--ignore-errors prints it as a line and goes on",
			args: []string{"-l", "app=shop", "-c", "migrate", "--ignore-errors"},
			out:  "m1\nm2\nerror: container \"migrate\" of pod \"" + pod1 + "\" was removed after it completed: its logs went with it\n"},
		{name: "-f with --ignore-errors", anyOrder: true,
			args: []string{"-l", "app=shop", "-c", "migrate", "--ignore-errors", "-f"},
			out:  "m1\nm2\nerror: container \"migrate\" of pod \"" + pod1 + "\" was removed after it completed: its logs went with it\n"},
		{name: "-f of more streams than --max-log-requests, before any is opened", noStream: true,
			args: []string{"-l", "app=shop", "--all-containers", "-f", "--max-log-requests", "4"},
			err:  "you are attempting to follow 5 log streams, but maximum allowed concurrency is 4, use --max-log-requests to increase the limit"},
		{name: "-f of as many streams as kubectl's default allows (5)", anyOrder: true,
			args: []string{"-l", "app=shop", "--all-containers", "-f", "--tail", "1"},
			out: "[pod/" + pod0 + "/migrate] m2\n[pod/" + pod0 + "/web] w12\n[pod/" + pod0 + "/log] l1\n" +
				"[pod/" + pod1 + "/web] w12\n[pod/" + pod1 + "/log] l1\n"},
		{name: "-f within the limit", anyOrder: true, args: []string{"-l", "app=shop", "-c", "log", "-f", "--max-log-requests", "2"},
			out: "l1\nl1\n"},
		{name: "-f of one stream is never limited", args: []string{"pod/" + pod0, "-c", "log", "-f", "--max-log-requests", "0"}, out: "l1\n"},
		{name: "matching nothing", args: []string{"-l", "app=nope"}, stderr: `No resources found in default namespace of instance "t1".` + "\n", noStream: true},
		{name: "a selector and a name", args: []string{"-l", "app=shop", pod0}, err: "only a selector (-l) or a POD name is allowed\nSee 'dockctl logs -h' for help and examples", noStream: true},
		{name: "neither", args: nil, noStream: true,
			err: "expected 'logs [-f] (POD | TYPE/NAME | -l SELECTOR) [-c CONTAINER]'.\nPOD or TYPE/NAME is a required argument for the logs command\nSee 'dockctl logs -h' for help and examples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := queries()
			out, errOut, err := run(t, "", append(append(base, "logs"), tc.args...)...)
			switch {
			case tc.err == "" && err != nil, tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("err %v, want %q", err, tc.err)
			case tc.anyOrder && !sameLines(out, tc.out), !tc.anyOrder && out != tc.out:
				t.Fatalf("stdout\n%s\nwant\n%s", out, tc.out)
			case errOut != tc.stderr:
				t.Fatalf("stderr %q, want %q", errOut, tc.stderr)
			case tc.noStream && queries() != before:
				t.Fatalf("%d log requests made, want none", queries()-before)
			}
		})
	}
	// kubectl's --tail default with a selector reaches the engine as 10.
	api.mu.Lock()
	api.logQueries = nil
	api.mu.Unlock()
	if _, _, err := run(t, "", append(base, "logs", "-l", "app=shop", "-c", "web")...); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(api.tails(), " "); got != "10 10" {
		t.Fatalf("tail parameters %q, want \"10 10\"", got)
	}
}

// fakeLogs serves printLogs: "block" streams until its context ends,
// "fail" breaks after one line, anything else is its own log, one line.
type fakeLogs struct{}

func (fakeLogs) LogsWith(ctx context.Context, id string, _ dockerx.LogsOptions) (io.ReadCloser, error) {
	switch id {
	case "block":
		pr, pw := io.Pipe()
		go func() {
			<-ctx.Done()
			pw.CloseWithError(ctx.Err())
		}()
		return pr, nil
	case "fail":
		return io.NopCloser(io.MultiReader(strings.NewReader("partial\n"), iotest.ErrReader(errors.New("connection reset")))), nil
	}
	return io.NopCloser(strings.NewReader(id + "\n")), nil
}

// With -f, kubectl stops at a stream's first error, the others with it;
// --ignore-errors prints it as a line and follows the others to their end.
func TestPrintLogsFollowErrors(t *testing.T) {
	streams := func(ids ...string) []logStream {
		var out []logStream
		for _, id := range ids {
			out = append(out, logStream{id: id, name: id})
		}
		return out
	}
	var buf bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- printLogs(t.Context(), fakeLogs{}, streams("block", "fail"), &logsOptions{follow: true, maxLogRequests: 5}, &buf)
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "connection reset" {
			t.Fatalf("err %v, want the failed stream's", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a stream's error did not stop the blocked one")
	}
	if buf.String() != "partial\n" {
		t.Fatalf("output %q", buf.String())
	}

	buf.Reset()
	o := &logsOptions{follow: true, maxLogRequests: 5, ignoreErrors: true}
	err := printLogs(t.Context(), fakeLogs{}, append(streams("a", "fail", "b"), logStream{name: "pod-x", err: errors.New(`container "c" in pod "pod-x" is waiting to start: PodInitializing`)}), o, &buf)
	want := "a\nb\npartial\nerror: connection reset\nerror: container \"c\" in pod \"pod-x\" is waiting to start: PodInitializing\n"
	if err != nil || !sameLines(buf.String(), want) {
		t.Fatalf("--ignore-errors: %v\n%s\nwant (in any order)\n%s", err, buf.String(), want)
	}
}

// kubectl logs' usage errors are cmdutil.UsageErrorf: one "error: " before
// the message (its second line as it is), then "See 'kubectl logs -h' for
// help and examples" (not "error: " before each line and no hint). A
// selector matching no pod is kubectl's "No resources found in default
// namespace." (the central noResources), which greps for the namespace
// find, not a wording of dockctl's own.
func TestLogsErrorsAsKubectl(t *testing.T) {
	checkKubectlErrors(t, []kubectlErrorCase{
		{situation: "logs alone", args: []string{"logs"},
			stderr: "error: expected '" + logsUsage + "'.\nPOD or TYPE/NAME is a required argument for the logs command\nSee 'dockctl logs -h' for help and examples\n", code: 1},
		{situation: "logs of a pod and a selector", args: []string{"logs", "web-0", "-l", "app=web"},
			stderr: "error: only a selector (-l) or a POD name is allowed\nSee 'dockctl logs -h' for help and examples\n", code: 1},
		{situation: "logs of a selector matching no pod", args: []string{"logs", "-l", "app=nope"},
			stderr: "No resources found in default namespace.\n", code: 0},
	})
}

// stringLogs serves each container's log from a string.
type stringLogs map[string]string

func (l stringLogs) LogsWith(_ context.Context, id string, _ dockerx.LogsOptions) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(l[id])), nil
}

// kubectl copies a log line by line with bufio.Reader.ReadBytes('\n'),
// whatever a line's length (DefaultConsumeRequest), so a container that logs
// a long line (a JSON document, a stack trace on one line, a base64 blob)
// has it printed whole, and the lines after it too. A bufio.Scanner capped
// at 1 MiB would fail the stream on a longer line with "bufio.Scanner:
// token too long", lose it and every line after it, and without
// --ignore-errors fail the command (with -f, stop every other stream too).
func TestLogsLineLongerThanOneMiBPrintedWhole(t *testing.T) {
	long := strings.Repeat("x", 2<<20)
	for _, follow := range []bool{false, true} {
		name := "snapshot"
		if follow {
			name = "follow"
		}
		t.Run(name, func(t *testing.T) {
			src := stringLogs{"a": "before\n" + long + "\nafter\n", "b": "other\n"}
			streams := []logStream{{id: "a", name: "t1.web-0", prefix: "[pod/web-0/web] "}, {id: "b", name: "t1.web-1", prefix: "[pod/web-1/web] "}}
			o := &logsOptions{follow: follow, maxLogRequests: defaultMaxLogRequests}
			var out bytes.Buffer
			err := printLogs(t.Context(), src, streams, o, &out)
			if err != nil {
				t.Fatalf("printLogs: %v", err)
			}
			for _, want := range []string{"[pod/web-0/web] before\n", "[pod/web-0/web] " + long + "\n", "[pod/web-0/web] after\n", "[pod/web-1/web] other\n"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("line %.40q… (%d bytes) missing from the output", want, len(want))
				}
			}
		})
	}
}

// kubectl logs -f deployment/web follows one pod of the deployment (the
// first, unless --all-pods), and --max-log-requests limits only the
// requests of a selector or of several containers. dockctl prints every
// replica of a deployment (its [pod/NAME/CONTAINER] prefix stands for
// kubectl's --all-pods), and --max-log-requests must not count them:
// `dockctl logs -f deployment/web` of a deployment of six replicas must
// not fail with "you are attempting to follow 6 log streams, but maximum
// allowed concurrency is 5" — a command kubectl never refuses.
func TestLogsFollowOfADeploymentNotLimitedByMaxLogRequests(t *testing.T) {
	api := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	base := []string{"--state-dir", t.TempDir(), "--instance", "t"}
	for i := range 6 {
		api.add(fmt.Sprintf("t_web-abc-%d", i), "running", map[string]string{dockerx.LabelInstance: "t", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: "abc"}, fmt.Sprintf("line of %d", i))
	}
	out, errOut, err := run(t, "", append(base, "logs", "deployment/web", "-f")...)
	if err != nil {
		t.Fatalf("logs -f deployment/web of six replicas: %v (stderr %q)", err, errOut)
	}
	if n := strings.Count(out, "line of "); n != 6 {
		t.Errorf("printed %d replicas' lines, want 6:\n%s", n, out)
	}
}

// timedLogs serves each container's lines by the time Docker recorded
// them, within the options' since and until, as Docker's logs endpoint;
// it records the options of each request.
type timedLogs struct {
	lines map[string][]timedLine
	opts  []dockerx.LogsOptions
}

type timedLine struct {
	at   time.Time
	text string
}

func (l *timedLogs) LogsWith(_ context.Context, id string, o dockerx.LogsOptions) (io.ReadCloser, error) {
	l.opts = append(l.opts, o)
	var b strings.Builder
	for _, line := range l.lines[id] {
		if (!o.Since.IsZero() && line.at.Before(o.Since)) || (!o.Until.IsZero() && !line.at.Before(o.Until)) {
			continue
		}
		b.WriteString(line.text + "\n")
	}
	return io.NopCloser(strings.NewReader(b.String())), nil
}

// logs -p prints a container's earlier runs, which Docker keeps in the
// container's one log (dockctl restarts a container in place): of a
// container waiting to restart its exited run, of a running one that
// restarted what it wrote before its current run started (every earlier
// run's when it restarted more than once, with a notice); a container
// that never restarted has none, and -p is kubectl's error, not its
// current log.
func TestLogsPreviousPrintsEarlierRunsOrKubectlsError(t *testing.T) {
	shopHash := manifests.TemplateHash(&mustDecode(t, shopYAML).Spec.Template)
	jobsHash := manifests.TemplateHash(&mustDecode(t, jobsYAML).Spec.Template)
	shop0, jobs4, jobs0 := dockerx.Hostname("shop", shopHash, 0), dockerx.Hostname("jobs", jobsHash, 4), dockerx.Hostname("jobs", jobsHash, 0)
	id := func(dep, hash string, ord int, c string) string {
		return testID(dockerx.ContainerName("default", "", dep, hash, ord) + "." + c)
	}
	// shop-0 was made 2h ago, its current run started a second later;
	// jobs-4's work, made 10m ago, exited 5s after its start.
	shopStart, jobsStart := now.Add(-2*time.Hour+time.Second), now.Add(-10*time.Minute+time.Second)
	src := &timedLogs{lines: map[string][]timedLine{
		id("shop", shopHash, 0, "web"):  {{shopStart.Add(-time.Hour), "web: run 1"}, {shopStart.Add(-time.Minute), "web: run 1 crashed"}, {shopStart.Add(time.Second), "web: current run"}},
		id("jobs", jobsHash, 4, "work"): {{jobsStart.Add(-time.Hour), "work: run 4"}, {jobsStart.Add(time.Second), "work: run 5"}, {jobsStart.Add(4 * time.Second), "work: exit 2"}},
		id("shop", shopHash, 0, "log"):  {{shopStart.Add(time.Second), "log: current run"}},
	}}
	for _, tt := range []struct {
		situation      string
		restartsOfWeb  int
		pod, container string
		want, notice   string
		err            string
		since, until   time.Time
	}{
		{situation: "a running container that restarted once: its run before", restartsOfWeb: 1, pod: shop0, container: "web",
			want: "web: run 1\nweb: run 1 crashed\n", until: shopStart},
		{situation: "a running container that restarted 3 times: every earlier run, said", restartsOfWeb: 3, pod: shop0, container: "web",
			want: "web: run 1\nweb: run 1 crashed\n", until: shopStart,
			notice: `container "web" in pod "` + shop0 + `" restarted 3 times: its previous logs are those of every earlier run (Docker keeps one log per container)`},
		{situation: "a container waiting to restart: its exited run", restartsOfWeb: 1, pod: jobs4, container: "work",
			want: "work: run 5\nwork: exit 2\n", since: jobsStart},
		{situation: "a running container that never restarted: kubectl's error", restartsOfWeb: 1, pod: shop0, container: "log",
			err: `previous terminated container "log" in pod "` + shop0 + `" not found`},
		{situation: "a container not created yet: kubectl's error", restartsOfWeb: 1, pod: dockerx.Hostname("jobs", jobsHash, 6), container: "work",
			err: `container "work" in pod "` + dockerx.Hostname("jobs", jobsHash, 6) + `" is waiting to start: PodInitializing`},
		{situation: "a container that exited once and is not restarted: kubectl's error", restartsOfWeb: 1, pod: jobs0, container: "migrate",
			err: `previous terminated container "migrate" in pod "` + jobs0 + `" not found`},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			snap := podsFixture(t)
			if tt.restartsOfWeb != 1 {
				b, _ := json.Marshal(map[string]any{"rollout": map[string]any{}, "containers": map[string]any{id("shop", shopHash, 0, "web"): map[string]any{"restarts": tt.restartsOfWeb}}})
				snap.statuses["default/shop"].Extra["controller"] = b
			}
			src.opts = nil
			o := &logsOptions{container: tt.container, previous: true, tail: "all", follow: true, maxLogRequests: defaultMaxLogRequests}
			streams, err := logStreams(testGlobal, snap, kindPod, tt.pod, o)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(streams) != 1 {
				t.Fatalf("%d streams, %v", len(streams), err)
			}
			if streams[0].notice != tt.notice {
				t.Errorf("notice %q, want %q", streams[0].notice, tt.notice)
			}
			var out bytes.Buffer
			if err := printLogs(context.Background(), src, streams, o, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("printed %q, want %q", out.String(), tt.want)
			}
			// -f ends with the run: a previous run is over.
			if got := src.opts[0]; got.Follow || !got.Since.Equal(tt.since) || !got.Until.Equal(tt.until) {
				t.Errorf("asked Docker for %+v, want since %v until %v, not followed", got, tt.since, tt.until)
			}
		})
	}
}

// A container that exited after it restarted (an init container that
// failed, was run again and completed; a Job's OnFailure container that
// at last succeeded) has kubectl's last state terminated: -p prints the
// runs before its last one, as kubelet's previous instance, not
// kubectl's "not found".
func TestLogsPreviousOfAContainerThatExitedAfterRestarts(t *testing.T) {
	jobsHash := manifests.TemplateHash(&mustDecode(t, jobsYAML).Spec.Template)
	jobs0 := dockerx.Hostname("jobs", jobsHash, 0)
	migrate := testID(dockerx.ContainerName("default", "", "jobs", jobsHash, 0) + ".migrate")
	for _, tt := range []struct {
		situation string
		restarts  int
		want, err string
	}{
		{situation: "restarted twice, then completed: the runs before its last", restarts: 2, want: "migrate: run 1 failed\n"},
		{situation: "never restarted: kubectl's error", restarts: 0, err: `previous terminated container "migrate" in pod "` + jobs0 + `" not found`},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			snap := podsFixture(t)
			b, _ := json.Marshal(map[string]any{"rollout": map[string]any{}, "containers": map[string]any{migrate: map[string]any{"restarts": tt.restarts}}})
			snap.statuses["default/jobs"].Extra["controller"] = b
			snap.inspect(snap.allPods())
			d, ok := snap.started[migrate]
			if !ok || d.StartedAt.IsZero() {
				t.Fatalf("no start time for %s in the fixture", migrate)
			}
			src := &timedLogs{lines: map[string][]timedLine{migrate: {
				{d.StartedAt.Add(-time.Minute), "migrate: run 1 failed"}, {d.StartedAt.Add(time.Second), "migrate: last run done"}}}}
			o := &logsOptions{container: "migrate", previous: true, tail: "all", maxLogRequests: defaultMaxLogRequests}
			streams, err := logStreams(testGlobal, snap, kindPod, jobs0, o)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(streams) != 1 {
				t.Fatalf("%d streams, %v; want the runs before the last", len(streams), err)
			}
			var out bytes.Buffer
			if err := printLogs(context.Background(), src, streams, o, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("printed %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// logs of a workload reads its first pod, as kubectl's; --all-pods reads
// every pod of it, each line prefixed as kubectl's --all-pods sets
// --prefix (unless --prefix=false).
func TestLogsAllPodsOfAWorkload(t *testing.T) {
	var cs []dockerx.Container
	for i, pod := range []string{"migrate-bbbbb", "migrate-aaaaa"} {
		name := dockerx.PodContainerName("default", "default", pod)
		cs = append(cs, dockerx.Container{ID: testID(name), Name: name, Namespace: "default", Image: "migrate:1",
			State: dockerx.StateRunning, Created: now.Add(-time.Duration(i+1) * time.Minute),
			Labels: map[string]string{dockerx.LabelOwnerKind: manifests.KindJob, dockerx.LabelOwner: "migrate", "job-name": "migrate"}})
	}
	snap := &snapshot{instance: "default", controllerRunning: true, statuses: map[string]*store.Status{},
		tombstones: map[string]bool{}, containers: cs, now: now}
	a, b := dockerx.PodContainerName("default", "default", "migrate-aaaaa"), dockerx.PodContainerName("default", "default", "migrate-bbbbb")
	for _, tc := range []struct {
		name string
		o    logsOptions
		want []string // prefix+container of each stream
	}{
		{"the first pod by default", logsOptions{}, nil},
		{"--all-pods: every pod, prefixed, by name", logsOptions{allPods: true},
			// No stored Job to name the container from: its Docker name.
			[]string{"[pod/migrate-aaaaa/" + a + "] " + a, "[pod/migrate-bbbbb/" + b + "] " + b}},
		{"--all-pods --prefix=false", logsOptions{allPods: true, prefixSet: true}, []string{a, b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logStreams(testGlobal, snap, kindJob, "migrate", &tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.prefix+s.name)
			}
			if tc.want == nil {
				if len(got) != 1 || got[0].prefix != "" {
					t.Errorf("streams %q, want the one pod unprefixed", names)
				}
				return
			}
			if strings.Join(names, " | ") != strings.Join(tc.want, " | ") {
				t.Errorf("streams %q, want %q", names, tc.want)
			}
		})
	}
}
