package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
	"golang.org/x/sys/unix"
)

func TestExecArgs(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		dash    int
		want    podTarget
		command []string
		err     string
	}{
		{args: []string{"web-0", "date"}, dash: 1, want: podTarget{kindPod, "web-0"}, command: []string{"date"}},
		{args: []string{"deploy/web", "ls", "-l", "/"}, dash: 1, want: podTarget{kindDeployment, "web"}, command: []string{"ls", "-l", "/"}},
		{args: []string{"deployment.apps/web", "ls"}, dash: 1, want: podTarget{kindDeployment, "web"}, command: []string{"ls"}},
		{args: []string{"pod/web-0", "ls"}, dash: 1, want: podTarget{kindPod, "web-0"}, command: []string{"ls"}},
		{args: []string{"svc/web", "ls"}, dash: 1, want: podTarget{kindService, "web"}, command: []string{"ls"}},
		{args: nil, dash: -1, err: "pod or type/name must be specified"},
		{args: []string{"date"}, dash: 0, err: "pod or type/name must be specified"},
		{args: []string{"web-0"}, dash: -1, err: "you must specify at least one command for the container"},
		{args: []string{"web-0"}, dash: 1, err: "you must specify at least one command for the container"},
		{args: []string{"web-0", "date"}, dash: -1, err: "exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead"},
		{args: []string{"web-0", "extra", "date"}, dash: 2, err: "exec [POD] [COMMAND] is not supported"},
		{args: []string{"configmap/web", "date"}, dash: 1, err: `expected POD, pod/NAME, deployment/NAME or service/NAME, got "configmap/web"`},
		{args: []string{"pod/", "date"}, dash: 1, err: `expected POD, pod/NAME`},
		{args: []string{"pod/a/b", "date"}, dash: 1, err: `expected POD, pod/NAME`},
	} {
		t.Run(strings.Join(tt.args, " ")+" dash "+strconv.Itoa(tt.dash), func(t *testing.T) {
			got, command, err := execArgs(newExecCommand(&globalOptions{}), tt.args, tt.dash)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || strings.Join(command, " ") != strings.Join(tt.command, " ") {
				t.Errorf("execArgs = %v, %q, %v; want %v, %q", got, command, err, tt.want, tt.command)
			}
		})
	}
}

// testPodEntry is a single-container pod for attachable's order.
func testPodEntry(name string, state string, ready bool, restarts int, age time.Duration, terminating bool) podEntry {
	pv := podruntime.PodView{Name: name, Namespace: "default", Owner: podruntime.OwnerRef{Kind: manifests.Kind, Name: "web"}, Total: 1, Created: now.Add(-age), Terminating: terminating,
		Containers: []podruntime.PodContainer{{Name: "web", Container: &dockerx.Container{ID: name, Name: name, State: state},
			View: podruntime.ContainerView{Ready: ready, Restarts: restarts}}}}
	if ready {
		pv.Ready = 1
	}
	return podEntry{PodView: pv}
}

// exec and port-forward pick a deployment's or Service's pod as kubectl
// does: each rule on its own, then a whole fixture.
func TestAttachablePod(t *testing.T) {
	run, created := dockerx.StateRunning, dockerx.StateCreated
	for _, tt := range []struct {
		name string
		pods []podEntry
		want string
	}{
		{"running before pending", []podEntry{testPodEntry("a", created, false, 0, time.Hour, false), testPodEntry("b", run, false, 0, time.Minute, false)}, "b"},
		{"ready before not", []podEntry{testPodEntry("a", run, false, 0, time.Hour, false), testPodEntry("b", run, true, 0, time.Minute, false)}, "b"},
		{"not terminating before terminating", []podEntry{testPodEntry("a", run, true, 0, time.Hour, true), testPodEntry("b", run, true, 0, time.Minute, false)}, "b"},
		{"fewer restarts", []podEntry{testPodEntry("a", run, true, 3, time.Hour, false), testPodEntry("b", run, true, 1, time.Minute, false)}, "b"},
		{"then the older", []podEntry{testPodEntry("a", run, true, 0, time.Minute, false), testPodEntry("b", run, true, 0, time.Hour, false)}, "b"},
		{"then by name", []podEntry{testPodEntry("b", run, true, 0, time.Hour, false), testPodEntry("a", run, true, 0, time.Hour, false)}, "a"},
		{"one", []podEntry{testPodEntry("a", created, false, 9, 0, true)}, "a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := attachable(tt.pods)
			if !ok || got.Name != tt.want {
				t.Errorf("attachable = %s, %v; want %s", got.Name, ok, tt.want)
			}
		})
	}
	if _, ok := attachable(nil); ok {
		t.Error("a pod out of none")
	}

	snap := podsFixture(t)
	hash := func(src string) string { return manifests.TemplateHash(&mustDecode(t, src).Spec.Template) }
	svc := &manifests.Service{Metadata: manifests.ObjectMeta{Name: "front"}, Spec: manifests.ServiceSpec{Selector: map[string]string{"tier": "front"}}}
	none := &manifests.Service{Metadata: manifests.ObjectMeta{Name: "external"}}
	snap.services = []serviceEntry{{rec: &store.ServiceRecord{Service: *svc}}, {rec: &store.ServiceRecord{Service: *none}}}
	for _, tt := range []struct {
		target podTarget
		want   string
		err    string
	}{
		// web-0 runs ready; web-1 is unhealthy; web-2 exited.
		{podTarget{kindDeployment, "web"}, dockerx.Hostname("web", hash(webYAML), 0), ""},
		// shop-1's log container is unhealthy: shop-0, though it restarted.
		{podTarget{kindDeployment, "shop"}, dockerx.Hostname("shop", hash(shopYAML), 0), ""},
		// jobs-0 and jobs-5 run every container; jobs-5 is being stopped.
		{podTarget{kindDeployment, "jobs"}, dockerx.Hostname("jobs", hash(jobsYAML), 0), ""},
		{podTarget{kindService, "front"}, dockerx.Hostname("shop", hash(shopYAML), 0), ""},
		{podTarget{kindPod, dockerx.Hostname("jobs", hash(jobsYAML), 7)}, dockerx.Hostname("jobs", hash(jobsYAML), 7), ""},
		{podTarget{kindPod, "nope"}, "", `pods "nope" not found`},
		{podTarget{kindDeployment, "nope"}, "", `deployments.apps "nope" not found`},
		{podTarget{kindService, "nope"}, "", `services "nope" not found`},
		{podTarget{kindService, "external"}, "", `cannot attach to service "external": it is defined without a selector`},
	} {
		t.Run(tt.target.String(), func(t *testing.T) {
			pods, err := snap.podsOf(testGlobal, "default", tt.target)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			got, ok := attachable(pods)
			if err != nil || !ok || got.Name != tt.want {
				t.Errorf("attachable(podsOf) = %s, %v, %v; want %s", got.Name, ok, err, tt.want)
			}
		})
	}
}

// The container exec runs in: the pod's default, or -c's, running.
func TestRunningContainer(t *testing.T) {
	snap := podsFixture(t)
	jobs := mustDecode(t, jobsYAML)
	name := func(ord int) string {
		return dockerx.Hostname("jobs", manifests.TemplateHash(&jobs.Spec.Template), ord)
	}
	for _, tt := range []struct {
		pod, container string
		want, notice   string
		err            string
	}{
		{pod: name(0), want: "work"}, // the annotation's, no notice
		{pod: name(0), container: "log", want: "log"},
		{pod: name(0), container: "proxy", want: "proxy"}, // a sidecar runs
		{pod: name(0), container: "migrate", err: `container "migrate" in pod "` + name(0) + `" is not running (exited)`},
		{pod: name(0), container: "nope", err: `no container "nope" in pod "` + name(0) + `"`},
		{pod: name(1), err: `container "work" in pod "` + name(1) + `" is waiting to start: PodInitializing`},
		{pod: name(4), err: `container "work" in pod "` + name(4) + `" is not running (exited)`},
	} {
		t.Run(tt.pod+" "+tt.container, func(t *testing.T) {
			e, err := snap.pod(testGlobal, "default", tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			pc, notice, err := runningContainer(e, tt.container)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || pc.DisplayName() != tt.want || pc.Container == nil || pc.Container.State != dockerx.StateRunning || notice != tt.notice {
				t.Errorf("runningContainer = %+v, %q, %v; want %s running, %q", pc, notice, err, tt.want, tt.notice)
			}
		})
	}
}

// exec end to end: the real command against the fake Engine API, whose
// exec runs a few commands: echo, cat (stdin), exit N, and a missing one.
func TestExecAgainstEngine(t *testing.T) {
	api, base, d := shopApplied(t)
	pod := dockerx.Hostname("shop", manifests.TemplateHash(&d.Spec.Template), 0)
	for _, c := range testPod("t1", d, 0, time.Minute, false,
		member{name: "migrate", state: "exited:0"}, member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}) {
		api.add(c.Name, c.State, c.Labels)
	}
	api.setExec(func(name string, cmd []string) (string, func(io.Reader, io.Writer, io.Writer) int) {
		switch cmd[0] {
		case "echo":
			return "", func(_ io.Reader, out, _ io.Writer) int {
				fmt.Fprintln(out, name[strings.LastIndex(name, ".")+1:], strings.Join(cmd[1:], " "))
				return 0
			}
		case "cat":
			return "", func(in io.Reader, out, _ io.Writer) int {
				io.Copy(out, in)
				return 0
			}
		case "exit":
			return "", func(_ io.Reader, _, errOut io.Writer) int {
				fmt.Fprintln(errOut, "exiting")
				n, _ := strconv.Atoi(cmd[1])
				return n
			}
		}
		return `OCI runtime exec failed: exec failed: unable to start container process: exec: "` + cmd[0] + `": executable file not found in $PATH: unknown`, nil
	})
	notice := `Defaulted container "web" out of: web, log, migrate (init)` + "\n"
	for _, tt := range []struct {
		stdin            string
		args             []string
		out, errOut, err string
		code             int
	}{
		{args: []string{pod, "--", "echo", "hi"}, out: "web hi\n", errOut: notice},
		{args: []string{"pod/" + pod, "-c", "log", "--", "echo", "-n", "x"}, out: "log -n x\n"},
		{args: []string{"deploy/shop", "-q", "--", "echo", "quiet"}, out: "web quiet\n"},
		{args: []string{"-i", "deploy/shop", "-c", "web", "--", "cat"}, stdin: "hello\nworld\n", out: "hello\nworld\n"},
		{args: []string{"deploy/shop", "-c", "web", "--", "cat"}, stdin: "not passed without -i", out: ""},
		{args: []string{"-it", "deploy/shop", "-c", "web", "--", "cat"}, stdin: "no terminal\n", out: "no terminal\n",
			errOut: "Unable to use a TTY - input is not a terminal or the right kind of file\n"},
		{args: []string{pod, "-c", "web", "--", "exit", "3"}, errOut: "exiting\ncommand terminated with exit code 3\n", code: 3},
		{args: []string{pod, "-c", "web", "--", "sh"}, code: 126,
			err: `container "web" of pod "` + pod + `": OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": executable file not found in $PATH: unknown`},
		{args: []string{pod, "-c", "migrate", "--", "echo"}, code: 1, err: `container "migrate" in pod "` + pod + `" is not running (exited)`},
		{args: []string{"svc/shop", "--", "echo"}, code: 1, err: `services "shop" not found in instance "t1"`},
		{args: []string{pod, "echo"}, code: 1, err: "exec [POD] [COMMAND] is not supported"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := run(t, tt.stdin, append(base, append([]string{"exec"}, tt.args...)...)...)
			code := 0
			var ex *exitError
			switch {
			case errors.As(err, &ex):
				code = ex.code
				if ex.err != nil && ex.err.Error() != tt.err || ex.err == nil && tt.err != "" {
					t.Errorf("error %v, want %q", ex.err, tt.err)
				}
			case err != nil:
				code = 1
				if !strings.Contains(err.Error(), tt.err) || tt.err == "" {
					t.Errorf("error %v, want one containing %q", err, tt.err)
				}
			}
			if code != tt.code || out != tt.out || errOut != tt.errOut {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errOut, tt.code, tt.out, tt.errOut)
			}
		})
	}
	// No terminal was asked of Docker without one here; stdin only with -i.
	stdins := 0
	for _, o := range api.execsOf("t1_shop-" + manifests.TemplateHash(&d.Spec.Template) + "-0.web") {
		if o.Tty {
			t.Errorf("exec %v asked for a TTY", o.Cmd)
		}
		if o.AttachStdin {
			stdins++
		}
	}
	if stdins != 2 {
		t.Errorf("%d execs with stdin attached, want the 2 with -i", stdins)
	}
}

// shopApplied starts a fake Engine API (DOCKER_HOST points at it),
// applies shopYAML under instance t1 in a new state directory, and returns
// the API, the global flags of that instance and the stored deployment.
func shopApplied(t *testing.T) (*dockerAPI, []string, *manifests.Deployment) {
	t.Helper()
	api := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	dir := t.TempDir()
	controllerBeating(t, dir, "t1")
	base := []string{"--state-dir", dir, "--instance", "t1"}
	if _, _, err := run(t, shopYAML, append(base, "apply", "-f", "-")...); err != nil {
		t.Fatal(err)
	}
	return api, base, &storedDeployment(t, dir, "shop").Deployment
}

// `dockctl exec -it` puts the local terminal in raw mode and restores it
// when the command ends, or on a signal that ends it: SIGINT (kill -INT, a
// supervising script or `timeout -s INT`; Ctrl-C itself is a key in raw
// mode), SIGQUIT, SIGTERM and SIGHUP. Killed with Go's default action, it
// would leave the user's terminal raw: no echo, no line editing, Ctrl-C
// dead, until `reset`. kubectl restores the terminal on SIGINT, SIGTERM,
// SIGHUP and SIGQUIT alike (its term.TTY.Safe runs under util/interrupt's
// handler).
func TestExecTTYRestoresTerminalOnSignal(t *testing.T) {
	api, base, d := shopApplied(t)
	pod := dockerx.Hostname("shop", manifests.TemplateHash(&d.Spec.Template), 0)
	for _, c := range testPod("t1", d, 0, time.Minute, false,
		member{name: "migrate", state: "exited:0"}, member{name: "web", state: dockerx.StateRunning}, member{name: "log", state: dockerx.StateRunning}) {
		api.add(c.Name, c.State, c.Labels)
	}
	// The command: a shell that reads its terminal until it goes.
	api.setExec(func(string, []string) (string, func(io.Reader, io.Writer, io.Writer) int) {
		return "", func(in io.Reader, out, _ io.Writer) int {
			io.WriteString(out, "$ ")
			_, _ = io.Copy(io.Discard, in)
			return 0
		}
	})
	// SIGINT, and the other three signals kubectl's interrupt handler covers.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			_, pts := openPTY(t)
			setWinsize(t, pts, 24, 80)
			lflag := func() uint32 {
				tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				return tio.Lflag
			}
			const cooked = unix.ICANON | unix.ECHO | unix.ISIG
			before := lflag()
			if before&cooked != cooked {
				t.Fatalf("the pseudo-terminal does not start cooked: lflag %#x", before)
			}
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, append(base, "exec", "-it", pod, "-c", "web", "--", "sh")...)
			cmd.Env = append(os.Environ(), runAsDockctlEnv+"=1", "DOCKER_HOST="+api.host)
			var errOut bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			waitUntil(t, "exec -it to make the terminal raw", func() bool { return lflag()&cooked == 0 })

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				t.Logf("exec -it after %v: %v; stderr %q", sig, err, errOut.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("exec -it did not end on %v", sig)
			}
			if after := lflag(); after != before {
				t.Errorf("the terminal is left raw after %v: lflag %#x, was %#x (kubectl restores it)", sig, after, before)
			}
		})
	}
}

// exec and port-forward: kubectl's "you must specify at least one
// command for the container" (ExecOptions.Validate), its usage error for
// a command without "--", and port-forward's usage error with its hint.
func TestExecAndPortForwardErrorsAsKubectl(t *testing.T) {
	checkKubectlErrors(t, []kubectlErrorCase{
		{situation: "exec without a command", args: []string{"exec", "web-0"},
			stderr: "error: you must specify at least one command for the container\n", code: 1},
		{situation: "exec without --", args: []string{"exec", "web-0", "ls"},
			stderr: "error: exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead\nSee 'dockctl exec -h' for help and examples\n", code: 1},
		{situation: "port-forward alone", args: []string{"port-forward"},
			stderr: "error: TYPE/NAME and list of ports are required for port-forward\nSee 'dockctl port-forward -h' for help and examples\n", code: 1},
	})
}
