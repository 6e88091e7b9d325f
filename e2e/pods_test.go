//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/errdefs"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dockctl/dockctl/manifests"
)

// Pods of several containers (docs/design.md §9), end to end: the
// controller runs as a container, creates the holder image with ImageLoad,
// and the tests look at what Docker shows — containers grouped by their
// io.dockctl.pod-uid label, volumes, images — not at dockctl's own view.

// podManifest is a deployment of one pod template. spec is the body of
// template.spec, indented six spaces, where IMAGE stands for the workload
// image; strategy is the body of spec.strategy indented four spaces ("" =
// the default).
func podManifest(name string, replicas int, strategy, spec string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: %d\n", name, replicas)
	fmt.Fprintf(&b, "  selector:\n    matchLabels: {app: %s}\n", name)
	if strategy != "" {
		fmt.Fprintf(&b, "  strategy:\n%s\n", strategy)
	}
	fmt.Fprintf(&b, "  template:\n    metadata:\n      labels: {app: %s}\n    spec:\n", name)
	b.WriteString(strings.ReplaceAll(spec, "IMAGE", workloadImage))
	return b.String()
}

// sidecarSpec: a native sidecar (proxy) whose readiness probe asks the app
// container's /readyz on 127.0.0.1, and the app; both publish a port on
// 127.0.0.1, which only the holder can carry.
func sidecarSpec(appPort, proxyPort int) string {
	return fmt.Sprintf(`      initContainers:
      - name: proxy
        image: IMAGE
        restartPolicy: Always
        args: ["--listen=:8081", "--message=hello from the sidecar"]
        ports:
        - {containerPort: 8081, hostPort: %d, hostIP: 127.0.0.1}
        readinessProbe:
          exec: {command: ["/workload", "probe", "http://127.0.0.1:8080/readyz"]}
          periodSeconds: 1
      containers:
      - name: app
        image: IMAGE
        args: ["--listen=:8080", "--message=hello from app"]
        ports:
        - {containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}
`, proxyPort, appPort)
}

// initChainSpec: two init containers and the app, chained through files on
// one emptyDir: init-2 fails unless init-1's file is there, the app unless
// init-2's is.
const initChainSpec = `      volumes:
      - name: work
        emptyDir: {}
      initContainers:
      - name: init-1
        image: IMAGE
        args: ["--listen=127.0.0.1:0", "--message=one", "--write-file=/work/one", "--exit-after=300ms"]
        volumeMounts: [{name: work, mountPath: /work}]
      - name: init-2
        image: IMAGE
        args: ["--listen=127.0.0.1:0", "--message=two", "--require-file=/work/one", "--write-file=/work/two", "--exit-after=300ms"]
        volumeMounts: [{name: work, mountPath: /work}]
      containers:
      - name: app
        image: IMAGE
        args: ["--require-file=/work/two"]
        volumeMounts: [{name: work, mountPath: /work}]
`

// failingInitSpec: an init container that exits 1 at once (its file never
// exists) in front of the app; initArgs replaces its arguments.
func failingInitSpec(initArgs string) string {
	return fmt.Sprintf(`      initContainers:
      - name: init
        image: IMAGE
        args: [%s]
      containers:
      - name: app
        image: IMAGE
`, initArgs)
}

// twoContainerSpec: two app containers sharing a disk emptyDir; app answers
// an httpGet readiness probe (which must reach it through its holder), side
// an exec one over localhost.
func twoContainerSpec(value string) string {
	return fmt.Sprintf(`      volumes:
      - name: cache
        emptyDir: {}
      containers:
      - name: app
        image: IMAGE
        args: ["--listen=:8080"]
        env: [{name: DOCKCTL_TEST_VALUE, value: %q}]
        volumeMounts: [{name: cache, mountPath: /cache}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
      - name: side
        image: IMAGE
        args: ["--listen=:8081"]
        volumeMounts: [{name: cache, mountPath: /cache}]
        readinessProbe:
          exec: {command: ["/workload", "probe", "http://127.0.0.1:8080/readyz"]}
          periodSeconds: 1
`, value)
}

// cleanSpec: an init container, an app, a disk and a tmpfs emptyDir: every
// kind of object a pod leaves on the host.
const cleanSpec = `      volumes:
      - name: disk
        emptyDir: {}
      - name: mem
        emptyDir: {medium: Memory, sizeLimit: 8Mi}
      initContainers:
      - name: init
        image: IMAGE
        args: ["--listen=127.0.0.1:0", "--write-file=/disk/ok", "--exit-after=100ms"]
        volumeMounts: [{name: disk, mountPath: /disk}]
      containers:
      - name: app
        image: IMAGE
        args: ["--require-file=/disk/ok", "--write-file=/mem/ok"]
        volumeMounts: [{name: disk, mountPath: /disk}, {name: mem, mountPath: /mem}]
`

// The pod manifests decode: a typo would otherwise show up as a timeout.
func TestPodManifestsDecode(t *testing.T) {
	for name, m := range map[string]string{
		"sidecar": podManifest("web", 1, "", sidecarSpec(18080, 18081)),
		"init":    podManifest("chain", 1, "", initChainSpec),
		"failing": podManifest("blocked", 1, "", failingInitSpec(`"--require-file=/nonexistent"`)),
		"two":     podManifest("two", 2, surge1, twoContainerSpec("one")),
		"clean":   podManifest("clean", 2, "", cleanSpec),
		"fixed":   podManifest("blocked", 1, "", failingInitSpec(`"--listen=127.0.0.1:0", "--exit-after=100ms"`)),
	} {
		d, err := manifests.Decode(name+".yaml", []byte(m))
		if err != nil {
			t.Errorf("%s:\n%s\n%v", name, m, err)
			continue
		}
		if len(d) != 1 || !manifests.NeedsHolder(&d[0].Deployment.Spec.Template.Spec) {
			t.Errorf("%s: want one deployment whose pods need a holder", name)
		}
	}
}

// podView is one pod as Docker shows it, grouped by its pod-uid label.
type podView struct {
	name, uid, hash string
	holder          *container.Summary
	members         map[string]container.Summary // by io.dockctl.container
	extra           []container.Summary          // a second member of one name, or a holder
}

func (p *podView) String() string {
	var parts []string
	if p.holder != nil {
		parts = append(parts, "holder:"+p.holder.State)
	} else {
		parts = append(parts, "no holder")
	}
	names := make([]string, 0, len(p.members))
	for n := range p.members {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := p.members[n]
		parts = append(parts, fmt.Sprintf("%s:%s(%s)", n, m.State, m.Status))
	}
	for _, x := range p.extra {
		parts = append(parts, "extra "+strings.TrimPrefix(x.Names[0], "/"))
	}
	return fmt.Sprintf("%s/%s[%s]{%s}", p.name, p.uid, p.hash, strings.Join(parts, " "))
}

// pods groups the deployment's containers into pods (sorted by name, then
// uid); containers without a pod-uid label are returned apart.
func (e *env) pods(deployment string) (pods []*podView, loose []container.Summary) {
	byUID := map[string]*podView{}
	for _, c := range e.deploymentContainers(deployment) {
		uid := c.Labels["io.dockctl.pod-uid"]
		if uid == "" {
			loose = append(loose, c)
			continue
		}
		p := byUID[uid]
		if p == nil {
			p = &podView{uid: uid, name: c.Labels["io.dockctl.pod"], hash: c.Labels["io.dockctl.template-hash"], members: map[string]container.Summary{}}
			byUID[uid] = p
			pods = append(pods, p)
		}
		name := c.Labels["io.dockctl.container"]
		switch {
		case c.Labels["io.dockctl.role"] == "holder" && p.holder == nil:
			c := c
			p.holder = &c
		case c.Labels["io.dockctl.role"] == "replica" && name != "" && p.members[name].ID == "":
			p.members[name] = c
		default:
			p.extra = append(p.extra, c)
		}
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].name != pods[j].name {
			return pods[i].name < pods[j].name
		}
		return pods[i].uid < pods[j].uid
	})
	return pods, loose
}

func describePods(pods []*podView, loose []container.Summary) string {
	var parts []string
	for _, p := range pods {
		parts = append(parts, p.String())
	}
	if len(loose) > 0 {
		parts = append(parts, "not in a pod: "+describe(loose))
	}
	return fmt.Sprintf("%d pods: %s", len(pods), strings.Join(parts, " "))
}

// podWant is what a settled pod looks like: its running holder and exactly
// these members, running or exited 0.
type podWant struct {
	running   []string // app containers and native sidecars
	completed []string // init containers
}

func (w podWant) settled(p *podView) bool {
	if p.holder == nil || p.holder.State != "running" || len(p.extra) > 0 || len(p.members) != len(w.running)+len(w.completed) {
		return false
	}
	for _, n := range w.running {
		if p.members[n].State != "running" {
			return false
		}
	}
	for _, n := range w.completed {
		if m := p.members[n]; m.State != "exited" || !strings.HasPrefix(m.Status, "Exited (0)") {
			return false
		}
	}
	return true
}

// waitPods waits until the deployment is exactly n settled pods of the
// given template hash (any one hash if empty), and nothing else.
func (e *env) waitPods(deployment string, n int, hash string, want podWant) []*podView {
	e.t.Helper()
	var pods []*podView
	eventually(e.t, 90*time.Second, fmt.Sprintf("%d settled pods of %s", n, deployment), func() (bool, string) {
		var loose []container.Summary
		pods, loose = e.pods(deployment)
		ok := len(pods) == n && len(loose) == 0
		for _, p := range pods {
			ok = ok && want.settled(p) && (p.hash == hash || hash == "" && p.hash == pods[0].hash)
		}
		return ok, describePods(pods, loose)
	})
	return pods
}

// in returns the env for a subtest: its failures stop the subtest, from
// the subtest's own goroutine.
func (e *env) in(t testing.TB) *env {
	sub := *e
	sub.t = t
	return &sub
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// httpBody GETs url and returns its body, or "" if nothing answered 200.
func httpBody(url string) string {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

func inspect(t testing.TB, id string) types.ContainerJSON {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := dockerCli.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return info
}

// gone reports whether a container no longer exists.
func gone(t testing.TB, id string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := dockerCli.ContainerInspect(ctx, id)
	if err != nil && !errdefs.IsNotFound(err) {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return err != nil
}

func rmForce(t testing.TB, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dockerCli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		t.Fatal(err)
	}
}

// execIn runs cmd in a running container and returns its exit code.
func execIn(t testing.TB, id string, cmd ...string) int {
	t.Helper()
	code, _, _ := execOutput(t, id, cmd...)
	return code
}

// containerLogs returns a container's log, stdout and stderr mixed (with
// Docker's stream headers, which substring checks do not mind).
func containerLogs(t testing.TB, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := dockerCli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs of %s: %v", id[:12], err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// followLogs follows a container's log (stdout and stderr) into a buffer
// until the container is removed or ctx ends; ended is closed then.
func followLogs(t testing.TB, ctx context.Context, id string) (log *syncBuffer, ended <-chan struct{}) {
	t.Helper()
	rc, err := dockerCli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		t.Fatalf("follow the log of %s: %v", id[:12], err)
	}
	t.Cleanup(func() { rc.Close() })
	log = &syncBuffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = stdcopy.StdCopy(log, log, rc)
	}()
	return log, done
}

// dockerTime parses a time of docker inspect (RFC 3339).
func dockerTime(t testing.TB, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return ts
}

// repairTime is how long after since the last of the containers ids was
// started, by Docker's clock (the daemon is local): the time a repair took,
// without the tests' polling.
func repairTime(t testing.TB, since time.Time, ids ...string) time.Duration {
	t.Helper()
	var last time.Time
	for _, id := range ids {
		if st := dockerTime(t, inspect(t, id).State.StartedAt); st.After(last) {
			last = st
		}
	}
	return last.Sub(since).Round(time.Millisecond)
}

// logHolderRSS logs the resident memory of a holder's process, read from
// /proc on this host (the daemon is local): a figure for the closing note.
func logHolderRSS(t testing.TB, holderID string) {
	t.Helper()
	info := inspect(t, holderID)
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", info.State.Pid))
	if err != nil {
		t.Logf("holder RSS: cannot read /proc of pid %d: %v", info.State.Pid, err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			t.Logf("holder %s (pid %d) VmRSS: %s", info.Name, info.State.Pid, strings.TrimSpace(v))
			return
		}
	}
	t.Logf("holder RSS: no VmRSS for pid %d", info.State.Pid)
}

// containerView is the part of `dockctl get containers -o json` the tests read.
type containerView struct {
	Name     string            `json:"name"`
	ID       string            `json:"id"`
	Phase    string            `json:"phase"`
	Ready    bool              `json:"ready"`
	Restarts int               `json:"restarts"`
	Labels   map[string]string `json:"labels"`
}

func (e *env) getContainersJSON() []containerView {
	e.t.Helper()
	out, err := e.dockctl("", "get", "containers", "-o", "json")
	if err != nil {
		e.t.Fatalf("dockctl get containers -o json: %v\n%s", err, out)
	}
	var list struct {
		Items []containerView `json:"items"`
	}
	if strings.TrimSpace(out) == "" || strings.HasPrefix(out, "No containers") {
		return nil
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		e.t.Fatalf("get containers -o json does not parse: %v\n%s", err, out)
	}
	return list.Items
}

// TestPodSidecar: a native sidecar reaches the app container on localhost;
// the holder publishes both containers' ports; `docker rm -f` of the
// sidecar is repaired in place, and of the holder re-creates the pod.
func TestPodSidecar(t *testing.T) {
	e := newEnv(t)
	// Repairs follow Docker's events; the periodic resync is a safety net
	// these tests keep out of the way.
	appPort, proxyPort := freePort(t), freePort(t)
	e.startController("--resync-period", "10m", fmt.Sprintf("--allow-host-ports=%d,%d", appPort, proxyPort))
	e.apply(podManifest("web", 1, "", sidecarSpec(appPort, proxyPort)))
	want := podWant{running: []string{"proxy", "app"}}
	pods := e.waitPods("web", 1, "", want)
	p := pods[0]

	t.Run("sidecar reaches app on localhost", func(t *testing.T) {
		e := e.in(t)
		proxy := p.members["proxy"]
		// The sidecar's readiness probe is a HEALTHCHECK run inside it that
		// asks 127.0.0.1:8080, where only the app container listens.
		eventually(t, 60*time.Second, "the sidecar's exec probe of the app over localhost to pass", func() (bool, string) {
			h := inspect(t, proxy.ID).State.Health
			if h == nil {
				return false, "no health"
			}
			return h.Status == "healthy", h.Status
		})
		if code := execIn(t, proxy.ID, "/workload", "probe", "http://127.0.0.1:8080/"); code != 0 {
			t.Fatalf("probe of the app from inside the sidecar exited %d", code)
		}
		// The control: nothing listens on 8082, so the probe can fail.
		if code := execIn(t, proxy.ID, "/workload", "probe", "http://127.0.0.1:8082/"); code == 0 {
			t.Fatal("probe of a closed port from inside the sidecar succeeded")
		}
		// From the host: both ports are published by the holder, and both
		// containers see the pod's hostname.
		for port, msg := range map[int]string{appPort: "hello from app", proxyPort: "hello from the sidecar"} {
			url := fmt.Sprintf("http://127.0.0.1:%d/", port)
			wantBody := msg + "\nhostname: " + p.name + "\n"
			eventually(t, 30*time.Second, "GET "+url, func() (bool, string) {
				b := httpBody(url)
				return b == wantBody, fmt.Sprintf("%q, want %q", b, wantBody)
			})
		}
		eventually(t, time.Minute, "get deployments to show the pod ready", func() (bool, string) {
			out := e.mustDockctl("", "get", "deployments")
			return regexpMatch(`(?m)^web\s+1/1\s+1\s+`, out), out
		})
		logHolderRSS(t, p.holder.ID)
	})

	// The same repair for a single-container replica, in the same run, for
	// comparison (figures only).
	t.Run("rm -f of a single-container replica", func(t *testing.T) {
		e := e.in(t)
		e.apply(testDeployment{name: "solo", replicas: 1}.manifest())
		old := e.waitRunning("solo", 1, "")[0]
		start := time.Now()
		rmForce(t, old.ID)
		var now []container.Summary
		eventually(t, 60*time.Second, "a new replica of solo", func() (bool, string) {
			now = e.deploymentContainers("solo")
			return len(now) == 1 && now[0].ID != old.ID && now[0].State == "running", describe(now)
		})
		t.Logf("repair after rm -f of a single-container replica: its replacement started %s later", repairTime(t, start, now[0].ID))
		e.mustDockctl("", "delete", "deployment", "solo", "--wait", "--timeout", "60s")
	})

	t.Run("rm -f of the sidecar is repaired in place", func(t *testing.T) {
		e := e.in(t)
		app := inspect(t, p.members["app"].ID)
		start := time.Now()
		rmForce(t, p.members["proxy"].ID)
		after := e.waitPods("web", 1, p.hash, want)[0]
		t.Logf("repair after rm -f of a sidecar: its replacement started %s later", repairTime(t, start, after.members["proxy"].ID))
		if after.uid != p.uid || after.holder.ID != p.holder.ID || after.members["app"].ID != app.ID {
			t.Fatalf("the pod was not repaired in place: before %s, after %s", p, after)
		}
		if after.members["proxy"].ID == p.members["proxy"].ID {
			t.Fatalf("the removed sidecar is back? %s", after)
		}
		if again := inspect(t, app.ID); again.State.StartedAt != app.State.StartedAt {
			t.Fatalf("the app container was restarted: started %s, now %s", app.State.StartedAt, again.State.StartedAt)
		}
		p = after
	})

	t.Run("rm -f of the holder re-creates the pod", func(t *testing.T) {
		e := e.in(t)
		start := time.Now()
		rmForce(t, p.holder.ID)
		var after *podView
		eventually(t, 90*time.Second, "a new pod", func() (bool, string) {
			pods, loose := e.pods("web")
			ok := len(pods) == 1 && len(loose) == 0 && pods[0].uid != p.uid && want.settled(pods[0])
			if ok {
				after = pods[0]
			}
			return ok, describePods(pods, loose)
		})
		// The new holder publishes the port again, under the new pod's name.
		wantBody := "hello from app\nhostname: " + after.name + "\n"
		t.Logf("repair after rm -f of the holder: the new pod's last container started %s later",
			repairTime(t, start, after.holder.ID, after.members["proxy"].ID, after.members["app"].ID))
		for name, m := range p.members {
			if !gone(t, m.ID) {
				t.Errorf("old member %s (%s) still exists", name, m.ID[:12])
			}
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/", appPort)
		eventually(t, 30*time.Second, "GET "+url+" from the new pod", func() (bool, string) {
			b := httpBody(url)
			return b == wantBody, fmt.Sprintf("%q, want %q", b, wantBody)
		})
	})
}

// TestPodInitContainersInOrder: init containers run one at a time and in
// order, each to its exit, before the app container; they share the pod's
// emptyDir, which is one labelled volume.
func TestPodInitContainersInOrder(t *testing.T) {
	independent(t)
	e := newEnv(t)
	// Each step follows the exit of the one before: the exit's event must
	// bring it, not the periodic resync, which is only a safety net.
	e.startController("--resync-period", "10m")
	e.apply(podManifest("chain", 1, "", initChainSpec))
	p := e.waitPods("chain", 1, "", podWant{running: []string{"app"}, completed: []string{"init-1", "init-2"}})[0]

	init1, init2, app := inspect(t, p.members["init-1"].ID), inspect(t, p.members["init-2"].ID), inspect(t, p.members["app"].ID)
	at := func(s string) time.Time { return dockerTime(t, s) }
	// Each step is created only once the one before has exited.
	if c, f := at(init2.Created), at(init1.State.FinishedAt); c.Before(f) {
		t.Errorf("init-2 created at %s, before init-1 exited at %s", c, f)
	}
	if c, f := at(app.Created), at(init2.State.FinishedAt); c.Before(f) {
		t.Errorf("app created at %s, before init-2 exited at %s", c, f)
	}
	// init-2 found init-1's file on its first run: it never failed.
	if l := containerLogs(t, init2.ID); strings.Contains(l, "--require-file") || !strings.Contains(l, "wrote /work/two") {
		t.Errorf("init-2's log:\n%s", l)
	}
	if l := containerLogs(t, app.ID); strings.Contains(l, "--require-file") {
		t.Errorf("app's log:\n%s", l)
	}
	for _, c := range e.getContainersJSON() {
		if c.Restarts != 0 {
			t.Errorf("%s restarted %d times", c.Name, c.Restarts)
		}
	}
	// One volume for the pod's emptyDir, named and labelled after the pod.
	vs := volumes(t, "io.dockctl.instance="+e.instance)
	wantName := strings.TrimPrefix(p.holder.Names[0], "/") + ".work." + p.uid
	if len(vs) != 1 || vs[0].Name != wantName || vs[0].Labels["io.dockctl.pod-uid"] != p.uid || vs[0].Labels["io.dockctl.role"] != "emptydir" {
		t.Errorf("volumes %s, want one named %s labelled with the pod", volumeNames(vs), wantName)
	}

	// docker pause of the app container, then of the holder, is undone in
	// place, and brings no init container back. (No probe runs in this pod,
	// and once it is available no settle time is pending: the pause events
	// alone must bring the unpause.)
	eventually(t, time.Minute, "get deployments to show the pod available", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments")
		return regexpMatch(`(?m)^chain\s+1/1\s+1\s+1\s+`, out), out
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range []string{p.members["app"].ID, p.holder.ID} {
		if err := dockerCli.ContainerPause(ctx, id); err != nil {
			t.Fatal(err)
		}
		after := e.waitPods("chain", 1, p.hash, podWant{running: []string{"app"}, completed: []string{"init-1", "init-2"}})[0]
		for name, m := range p.members {
			if after.members[name].ID != m.ID {
				t.Fatalf("%s was replaced: before %s, after %s", name, p, after)
			}
		}
	}
}

func volumeNames(vs []volume.Volume) string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// TestPodFailingInitBlocks: an init container that keeps failing is
// retried with the crash backoff and holds the app container back; a fixed
// template then rolls out.
func TestPodFailingInitBlocks(t *testing.T) {
	independent(t)
	e := newEnv(t)
	// The retries follow the crash backoff (200ms doubling), not the resync.
	e.startController("--resync-period", "10m")
	e.apply(podManifest("blocked", 1, "", failingInitSpec(`"--require-file=/nonexistent"`)))

	// The init state shows per container in `get containers` (restarts,
	// CrashLoopBackOff) and per pod in `get pods`.
	var initName string
	eventually(t, 90*time.Second, "the init container to be retried and shown crash-looping", func() (bool, string) {
		if pods, _ := e.pods("blocked"); len(pods) == 1 && pods[0].members["app"].ID != "" {
			t.Fatalf("the app container exists while its init container fails: %s", pods[0])
		}
		cs := e.getContainersJSON()
		for _, c := range cs {
			if c.Labels["io.dockctl.container"] == "init" && c.Restarts >= 2 && c.Phase == "CrashLoopBackOff" {
				initName = c.Name
				return true, ""
			}
		}
		b, _ := json.Marshal(cs)
		return false, string(b)
	})
	pods, loose := e.pods("blocked")
	if len(pods) != 1 || len(loose) != 0 || len(pods[0].members) != 1 || pods[0].members["init"].ID == "" || pods[0].holder == nil {
		t.Fatalf("want one pod of a holder and its init container: %s", describePods(pods, loose))
	}
	if m := pods[0].members["init"]; m.State == "exited" && !strings.HasPrefix(m.Status, "Exited (1)") {
		t.Errorf("init container %s: %s, want exit code 1", initName, m.Status)
	}
	out := e.mustDockctl("", "get", "deployments")
	if !regexpMatch(`(?m)^blocked\s+0/1\s+`, out) {
		t.Errorf("get deployments should show 0/1 ready:\n%s", out)
	}
	t.Logf("get containers:\n%s", e.mustDockctl("", "get", "containers"))
	eventually(t, 90*time.Second, "get pods to show the pod initializing and failing", func() (bool, string) {
		out := e.mustDockctl("", "get", "pods")
		return regexpMatch(`(?m)^blocked-\S+\s+0/1\s+Init:(CrashLoopBackOff|Error)\s+[1-9]`, out), out
	})

	// The fix rolls out: the new pod runs its init container to the end and
	// its app; the blocked pod goes.
	e.apply(podManifest("blocked", 1, "", failingInitSpec(`"--listen=127.0.0.1:0", "--exit-after=100ms"`)))
	after := e.waitPods("blocked", 1, "", podWant{running: []string{"app"}, completed: []string{"init"}})
	if after[0].hash == pods[0].hash {
		t.Fatalf("the pod of the failing template is still there: %s", after[0])
	}
}

// TestPodRollingUpdate: a rolling update of a deployment of two-container
// pods replaces every pod within maxSurge, and collects the old pods'
// volumes.
func TestPodRollingUpdate(t *testing.T) {
	independent(t)
	e := newEnv(t)
	// Each step of the rollout follows events (readiness, settle time,
	// removals), not the periodic resync.
	e.startController("--resync-period", "10m", settleFast)
	want := podWant{running: []string{"app", "side"}}
	e.apply(podManifest("two", 2, surge1, twoContainerSpec("one")))
	before := e.waitPods("two", 2, "", want)
	oldHash := before[0].hash
	eventually(t, time.Minute, "get deployments to show 2 ready pods", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments")
		return regexpMatch(`(?m)^two\s+2/2\s+2\s+2\s+`, out), out
	})
	if vs := volumes(t, "io.dockctl.instance="+e.instance, "io.dockctl.template-hash="+oldHash); len(vs) != 2 {
		t.Fatalf("want one volume per pod: %s", volumeNames(vs))
	}

	// maxSurge 1, maxUnavailable 0: never more than 3 holders.
	holders := startCountSampler(t, dockerCli, 100*time.Millisecond, 3, "io.dockctl.instance="+e.instance, "io.dockctl.role=holder")
	start := time.Now()
	if out := e.apply(podManifest("two", 2, surge1, twoContainerSpec("two"))); !strings.Contains(out, "configured") {
		t.Fatalf("apply: %q", out)
	}
	var after []*podView
	eventually(t, 2*time.Minute, "every pod of the new revision, the old ones gone", func() (bool, string) {
		pods, loose := e.pods("two")
		ok := len(pods) == 2 && len(loose) == 0
		for _, p := range pods {
			ok = ok && p.hash != oldHash && want.settled(p)
		}
		after = pods
		return ok, describePods(pods, loose)
	})
	t.Logf("rollout of 2 two-container pods: %s", time.Since(start).Round(10*time.Millisecond))
	holders.check(t)
	eventually(t, time.Minute, "the old pods' volumes to be collected", func() (bool, string) {
		vs := volumes(t, "io.dockctl.instance="+e.instance, "io.dockctl.template-hash="+oldHash)
		return len(vs) == 0, volumeNames(vs)
	})
	if vs := volumes(t, "io.dockctl.instance="+e.instance); len(vs) != 2 {
		t.Errorf("want one volume per new pod: %s", volumeNames(vs))
	}
	info := inspect(t, after[0].members["app"].ID)
	if !contains(info.Config.Env, "DOCKCTL_TEST_VALUE=two") {
		t.Errorf("env of the new app container: %v", info.Config.Env)
	}
	eventually(t, time.Minute, "get deployments to show the new pods ready", func() (bool, string) {
		out := e.mustDockctl("", "get", "deployments")
		return regexpMatch(`(?m)^two\s+2/2\s+2\s+2\s+`, out), out
	})
}

// TestPodDeleteLeavesHostClean: after `dockctl delete`, nothing of the
// instance is left: no container, no volume, and — at the sweep the end of
// the deletion brings, once the last holder is gone — no holder image.
func TestPodDeleteLeavesHostClean(t *testing.T) {
	e := newEnv(t)
	// No periodic resync comes to the rescue: the deletion's own syncs
	// must leave the host clean.
	e.startController("--resync-period", "10m")
	e.apply(podManifest("clean", 2, "", cleanSpec))
	pods := e.waitPods("clean", 2, "", podWant{running: []string{"app"}, completed: []string{"init"}})
	label := "io.dockctl.instance=" + e.instance
	// The helper image of the instance's DNS server may be there too, or
	// not yet: the holder image is the one to look at.
	var holderImgs []image.Summary
	for _, img := range images(t, label) {
		if len(img.RepoTags) > 0 && strings.HasPrefix(img.RepoTags[0], "dockctl-holder:") {
			holderImgs = append(holderImgs, img)
		}
	}
	if len(holderImgs) != 1 || len(holderImgs[0].RepoTags) != 1 || !strings.HasPrefix(holderImgs[0].RepoTags[0], "dockctl-holder:"+e.instance+"-") {
		t.Fatalf("want one holder image tagged dockctl-holder:%s-…: %+v", e.instance, holderImgs)
	}
	if got := inspect(t, pods[0].holder.ID).Image; got != holderImgs[0].ID {
		t.Errorf("holder runs image %s, want %s", got, holderImgs[0].ID)
	}
	if vs := volumes(t, label); len(vs) != 4 {
		t.Fatalf("want a disk and a tmpfs volume per pod: %s", volumeNames(vs))
	}

	out := e.mustDockctl("", "delete", "deployment", "clean", "--wait", "--timeout", "60s")
	if !strings.Contains(out, "deployment/clean deleted") {
		t.Fatalf("delete: %q", out)
	}
	start := time.Now()
	eventually(t, time.Minute, "no container, volume or image of the instance", func() (bool, string) {
		cs, vs, is := containers(t, label), volumes(t, label), images(t, label)
		return len(cs)+len(vs)+len(is) == 0, fmt.Sprintf("%s; volumes %s; %d images", describe(cs), volumeNames(vs), len(is))
	})
	t.Logf("host clean %s after delete --wait returned", time.Since(start).Round(10*time.Millisecond))
}
