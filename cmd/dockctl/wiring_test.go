package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// runAsDockctlEnv makes the test binary run dockctl's main instead of the
// tests: startDockctl uses it to run `dockctl controller` as a child
// process, which ends only on a signal.
const runAsDockctlEnv = "DOCKCTL_TEST_RUN_AS_DOCKCTL"

func TestMain(m *testing.M) {
	if os.Getenv(runAsDockctlEnv) == "1" {
		main()
		os.Exit(0)
	}
	// No test reads the configuration file of the user running it
	// (config.go): tests that need one point DOCKCTL_CONFIG at theirs.
	if os.Getenv("DOCKCTL_CONFIG") == "" {
		dir, err := os.MkdirTemp("", "dockctl-test-config")
		if err != nil {
			panic(err)
		}
		os.Setenv("DOCKCTL_CONFIG", filepath.Join(dir, "absent", "config.yaml"))
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

type dockctlProcess struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// startDockctl runs dockctl with args against the fake Docker API, and
// stops it (SIGTERM) when the test ends.
func startDockctl(t *testing.T, api *dockerAPI, args ...string) *dockctlProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &dockctlProcess{cmd: exec.Command(exe, args...), out: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1", "DOCKER_HOST="+api.host)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("dockctl %v output:\n%s", args, p.out)
		}
	})
	return p
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The --allow-* flags of `dockctl controller` reach the reconciler: with
// the flag a deployment needing it is created as written; without it, it
// is refused (ReplicaFailure naming the flag) and nothing is created.
func TestControllerAllowFlagsWiring(t *testing.T) {
	privileged := strings.Replace(webYAML, "        env:", "        securityContext: {privileged: true}\n        env:", 1)
	hostNetwork := strings.Replace(webYAML, "      containers:", "      hostNetwork: true\n      containers:", 1)
	for _, tc := range []struct {
		name, manifest, flag string
		applied              func(req dockerx.CreateRequest) bool
	}{
		{"privileged", privileged, manifests.FlagAllowPrivileged, nil},
		{"hostNetwork", hostNetwork, manifests.FlagAllowHostNamespaces, nil},
	} {
		for _, allow := range []bool{true, false} {
			name := tc.name + "/without " + tc.flag
			if allow {
				name = tc.name + "/with " + tc.flag
			}
			t.Run(name, func(t *testing.T) {
				api := startDockerAPI(t, "dockctl-workload:dev")
				dir := t.TempDir()
				base := []string{"--state-dir", dir, "--instance", "t"}
				if _, _, err := run(t, tc.manifest, append(base, "apply", "-f", "-")...); err != nil {
					t.Fatal(err)
				}
				args := append(base, "controller", "--metrics-addr", "", "--resync-period", "200ms")
				if allow {
					args = append(args, tc.flag)
				}
				startDockctl(t, api, args...)
				st, err := store.OpenReadOnly(dir, "t")
				if err != nil {
					t.Fatal(err)
				}
				if allow {
					waitUntil(t, "3 running replicas", func() bool { return api.running(dockerx.LabelDeployment, "web") == 3 })
					for _, req := range api.createsSnapshot() {
						if req.HostConfig == nil || (tc.name == "privileged" && !req.HostConfig.Privileged) ||
							(tc.name == "hostNetwork" && req.HostConfig.NetworkMode != "host") {
							t.Fatalf("created without the %s setting: %+v", tc.name, req.HostConfig)
						}
					}
					return
				}
				waitUntil(t, "a ReplicaFailure naming "+tc.flag, func() bool {
					s, err := st.ReadStatus("", "web")
					if err != nil || s == nil {
						return false
					}
					for _, c := range s.Conditions {
						if c.Type == manifests.ConditionReplicaFailure && strings.Contains(c.Message, tc.flag) {
							return true
						}
					}
					return false
				})
				if n := len(api.createsSnapshot()); n != 0 {
					t.Fatalf("%d creates by a controller without %s", n, tc.flag)
				}
			})
		}
	}
}

// apply --wait returns once the controller has rolled the deployment out,
// and fails when the rollout cannot finish in time.
func TestApplyWaitAgainstEngine(t *testing.T) {
	api := startDockerAPI(t, "dockctl-workload:dev")
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t"}
	startDockctl(t, api, append(base, "controller", "--metrics-addr", "", "--resync-period", "200ms")...)

	out, _, err := run(t, webYAML, append(base, "apply", "-f", "-", "--wait", "--timeout", "60s")...)
	if err != nil {
		t.Fatalf("apply --wait: %v\n%s", err, out)
	}
	if !strings.Contains(out, "deployment/web created") || !strings.Contains(out, `deployment "web" successfully rolled out`) {
		t.Fatalf("apply --wait output:\n%s", out)
	}
	// It returned only once the rollout was complete.
	if n := api.running(dockerx.LabelDeployment, "web"); n != 3 {
		t.Fatalf("apply --wait returned with %d of 3 replicas running", n)
	}

	// An image nobody has: the rollout cannot finish; --wait fails at its
	// timeout, naming it.
	missing := strings.Replace(webYAML, "image: dockctl-workload:dev", "image: absent:1", 1)
	start := time.Now()
	out, _, err = run(t, missing, append(base, "apply", "-f", "-", "--wait", "--timeout", "2s")...)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("apply --wait of an image that cannot be had: err %v, want a timeout\n%s", err, out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("apply --wait --timeout 2s took %v", took)
	}
}

// logs prints the last lines (stdout and stderr) of every replica of the
// deployment, each prefixed with its container, passes --tail to the
// daemon, and prints nothing of other deployments or instances.
func TestLogsAgainstEngine(t *testing.T) {
	api := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	base := []string{"--state-dir", dir, "--instance", "t"}
	labels := func(dep string) map[string]string {
		return map[string]string{dockerx.LabelInstance: "t", dockerx.LabelDeployment: dep, dockerx.LabelTemplateHash: "abc"}
	}
	api.add("t_web-abc-1", "running", labels("web"), "b1", "b2", "b3")
	api.add("t_web-abc-0", "exited", labels("web"))
	api.setLogs("t_web-abc-0", logLine{1, "a1"}, logLine{2, "a2"}, logLine{1, "a3"})
	api.add("t_api-abc-0", "running", labels("api"), "other")
	otherInstance := labels("web")
	otherInstance[dockerx.LabelInstance] = "u"
	api.add("u_web-abc-0", "running", otherInstance, "elsewhere")

	out, _, err := run(t, "", append(base, "logs", "deployment/web", "--tail", "2")...)
	if err != nil {
		t.Fatalf("logs: %v\n%s", err, out)
	}
	// Replicas stream concurrently: lines interleave, but each replica's
	// stay in order.
	per := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		prefix, text, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(prefix, "[") {
			t.Fatalf("line without a container prefix: %q\n%s", line, out)
		}
		per[prefix] = append(per[prefix], text)
	}
	// Containers without a stored template (nor a container label) are
	// named by their Docker names in kubectl's [pod/NAME/CONTAINER].
	p0, p1 := "[pod/web-abc-0/t_web-abc-0]", "[pod/web-abc-1/t_web-abc-1]"
	want := map[string][]string{p0: {"a2", "a3"}, p1: {"b2", "b3"}}
	if len(per) != len(want) || strings.Join(per[p0], ",") != "a2,a3" || strings.Join(per[p1], ",") != "b2,b3" {
		t.Fatalf("logs --tail 2 printed %v, want %v:\n%s", per, want, out)
	}
	if tails := strings.Join(api.tails(), " "); tails != "2 2" {
		t.Fatalf("tail parameters %q, want \"2 2\"", tails)
	}

	if _, _, err := run(t, "", append(base, "logs", "deployment/nope")...); err == nil || err.Error() != `deployments.apps "nope" not found in instance "t"` {
		t.Fatalf("logs of a deployment that does not exist: %v, want a NotFound", err)
	}
}

// The controller finds its own container from the files Docker mounts from
// the container's directory, and from nothing else.
func TestSelfContainerID(t *testing.T) {
	const self = "3f1c2b9a8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170615e4d3"
	const other = "aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999"
	line := func(root, mountPoint string) string {
		return "812 790 8:1 " + root + " " + mountPoint + " rw,relatime - ext4 /dev/sda1 rw\n"
	}
	overlay := "790 700 0:51 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X\n"
	for _, tc := range []struct {
		name, mountinfo, want string
	}{
		{"not in a container", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n", ""},
		{"docker", overlay +
			line("/var/lib/docker/containers/"+self+"/resolv.conf", "/etc/resolv.conf") +
			line("/var/lib/docker/containers/"+self+"/hostname", "/etc/hostname") +
			line("/var/lib/docker/containers/"+self+"/hosts", "/etc/hosts"), self},
		{"custom data root", overlay + line("/srv/docker/containers/"+self+"/hostname", "/etc/hostname"), self},
		{"another container's directory mounted first", overlay +
			line("/var/lib/docker/containers/"+other+"/", "/logs/other") +
			line("/var/lib/docker/containers/"+self+"/hostname", "/etc/hostname"), self},
		{"only another container's directory", overlay + line("/var/lib/docker/containers/"+other+"/", "/logs/other"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selfContainerIDFrom(tc.mountinfo); got != tc.want {
				t.Fatalf("selfContainerIDFrom = %q, want %q", got, tc.want)
			}
		})
	}
}
