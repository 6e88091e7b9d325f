//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/dockctl/dockctl/manifests"
)

// TestReleasedBinaryTakesKustomizeAndCompose walks the README's path from
// the `make release` artefact alone, as on a clean machine with Docker and
// nothing else (no Go, no clone, no PATH): `dockctl version` names the
// build, `dockctl install` runs the controller from the binary itself,
// `apply -k` of an overlay laid over a base shaped like kustomize's
// helloWorld example (commonLabels, a ConfigMap read through $(VAR)
// expansion, namePrefix, replicas, a strategic-merge and a JSON patch)
// answers on its published port, so does `convert` of a five-service
// Compose application once applied, and `dockctl uninstall` leaves no
// Docker object of the instance (docs/design.md §15).
func TestReleasedBinaryTakesKustomizeAndCompose(t *testing.T) {
	independent(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := releaseArtefact(t, root)

	// The base, copied as a user's checkout holds it, and an overlay of
	// the test's own: a free port and a prefix, so that runs never meet.
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "base"), os.DirFS(filepath.Join(root, "e2e", "testdata", "release", "hello"))); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	overlay := filepath.Join(dir, "overlays", "dev")
	writeFiles(t, overlay, map[string]string{
		"kustomization.yaml": fmt.Sprintf(`resources:
- ../../base
namePrefix: dev-
replicas:
- name: greeter
  count: 2
patches:
- path: map.yaml
- target: {kind: Service, name: greeter}
  patch: |-
    - op: replace
      path: /spec/ports/0/port
      value: %d
`, port),
		"map.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: greeter-config
data:
  enableRisky: "true"
`,
	})

	e := newSvcEnv(t)
	e.bin = bin
	// The clean machine: no PATH, a home of its own; only what reaches the
	// daemon is kept.
	e.cliEnv = []string{"HOME=" + t.TempDir()}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		e.cliEnv = append(e.cliEnv, "DOCKER_HOST="+h)
	}
	controllerName := "dockctl-" + e.instance + "-controller"
	t.Cleanup(func() { removeInstalledController(t, controllerName) })

	out := e.mustDockctl("", "version")
	commit := strings.TrimSpace(mustRun(t, root, "git", "rev-parse", "--short=12", "HEAD"))
	if !strings.Contains(out, commit) {
		t.Errorf("version of the released binary does not name commit %s:\n%s", commit, out)
	}

	start := time.Now()
	out = e.mustDockctl("", "install", "--timeout", "2m", "--", "--service-address", "127.0.0.1",
		"--subnet", testSubnet(t), "--resync-period", "2s", "--settle-time", "1s")
	if !strings.Contains(out, "ready after") {
		t.Fatalf("install did not see its controller ready:\n%s", out)
	}
	t.Logf("released binary to a ready controller: %s", time.Since(start).Round(time.Millisecond))

	// The stand-ins of the images the overlay names, from its own render.
	rendered := filepath.Join(dir, "rendered.yaml")
	if err := os.WriteFile(rendered, []byte(e.mustDockctl("", "kustomize", overlay)), 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.Load([]string{rendered}, nil)
	if err != nil {
		t.Fatalf("the render does not load: %v", err)
	}
	buildStandins(t, docs)

	start = time.Now()
	out = e.mustDockctl("", "apply", "-k", overlay)
	for _, want := range []string{"configmap/dev-greeter-config created", "service/dev-greeter created", "deployment/dev-greeter created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply -k did not say %q:\n%s", want, out)
		}
	}
	e.mustDockctl("", "rollout", "status", "deployment/dev-greeter", "--timeout", "2m")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	eventually(t, 2*time.Minute, "the overlay's Service answers on "+url, func() (bool, string) {
		body := httpBody(url)
		return strings.Contains(body, "stand-in for example.org/hello:1"), body
	})
	t.Logf("apply -k to an answering port: %s", time.Since(start).Round(time.Millisecond))
	out = e.mustDockctl("", "get", "pods", "-l", "app=hello")
	if n := strings.Count(out, "dev-greeter-"); n != 2 {
		t.Errorf("want the overlay's 2 replicas, labelled by the base's commonLabels; got %d:\n%s", n, out)
	}
	// The patched value reaches the command line through $(VAR)
	// expansion, the base's through the environment.
	var seen []string
	found := false
	for _, c := range containers(t, "io.dockctl.instance="+e.instance, "io.dockctl.deployment=dev-greeter") {
		info := inspect(t, c.ID)
		args := strings.Join(append(slices.Clone(info.Config.Entrypoint), info.Config.Cmd...), " ")
		seen = append(seen, info.Name+": "+args)
		if strings.Contains(args, "--risky=true") && slices.Contains(info.Config.Env, "GREETING=Good morning") {
			found = true
		}
	}
	if !found {
		t.Errorf("no greeter container runs with the overlay's patched ConfigMap ($(ENABLE_RISKY) = true) and the base's greeting:\n%s", strings.Join(seen, "\n"))
	}

	convertAndApplyCompose(t, e, root)

	out = e.mustDockctl("", "uninstall")
	if !strings.HasPrefix(out, "container "+controllerName+" removed\n") {
		t.Errorf("uninstall did not remove the controller first:\n%s", out)
	}
	// Right after uninstall, not only at the cleanup (which removes by
	// label first).
	checkNoLeftovers(t, e.instance, e.created.containerIDs())
}

// convertAndApplyCompose converts the five-service Compose application of
// e2e/testdata/release/shop with an env file of free ports (Compose's own
// interpolation), applies what it wrote, and waits until every published
// port answers: the API only once its database is healthy, through the
// init container convert gives each `depends_on` (run here by the local
// workload's wait mode, since busybox cannot be pulled).
func convertAndApplyCompose(t testing.TB, e *env, root string) {
	t.Helper()
	dir := t.TempDir()
	ports := map[string]int{"WEB_PORT": freePort(t), "API_PORT": freePort(t), "DB_PORT": freePort(t), "CACHE_PORT": freePort(t)}
	envFile := "DB_PASSWORD=s3cret\n"
	for k, p := range ports {
		envFile += fmt.Sprintf("%s=%d\n", k, p)
	}
	writeFiles(t, dir, map[string]string{"shop.env": envFile})
	out := filepath.Join(dir, "k8s")
	start := time.Now()
	e.mustDockctl("", "convert", "-f", filepath.Join(root, "e2e", "testdata", "release", "shop", "compose.yaml"),
		"--env-file", filepath.Join(dir, "shop.env"), "-o", out,
		"--wait-image", workloadImage, "--wait-command", "/workload", "--wait-command", "wait", "--wait-command", "{host}:{port}")
	docs, err := manifests.Load([]string{out}, nil)
	if err != nil {
		t.Fatalf("what convert wrote does not load: %v", err)
	}
	// Stand-ins for the application's images; the wait containers run the
	// local workload itself.
	var waits int
	for _, d := range docs {
		if d.Deployment == nil {
			continue
		}
		ps := &d.Deployment.Spec.Template.Spec
		waits += len(ps.InitContainers)
		ps.InitContainers = slices.DeleteFunc(ps.InitContainers, func(c manifests.Container) bool { return c.Image == workloadImage })
	}
	if waits != 4 { // api on db and cache, web on api, worker on cache
		t.Errorf("convert made %d wait init containers, want 4", waits)
	}
	buildStandins(t, docs)
	e.mustDockctl("", "apply", "-f", out)
	for name, image := range map[string]string{"WEB_PORT": "example.org/shop-web:1", "API_PORT": "example.org/shop-api:1",
		"DB_PORT": "example.org/postgres:16", "CACHE_PORT": "example.org/redis:7"} {
		url := fmt.Sprintf("http://127.0.0.1:%d/", ports[name])
		eventually(t, 2*time.Minute, "the Compose service answers on "+url, func() (bool, string) {
			body := httpBody(url)
			return strings.Contains(body, "stand-in for "+image), body
		})
	}
	t.Logf("convert + apply of a 5-service Compose file to every published port answering: %s", time.Since(start).Round(time.Millisecond))
	pods := e.mustDockctl("", "get", "pods", "--no-headers")
	if n := strings.Count(pods, "worker-"); n != 2 {
		t.Errorf("want the worker's deploy.replicas of 2, got %d:\n%s", n, pods)
	}
	if strings.Contains(pods, "admin") {
		t.Errorf("the ops profile's admin service runs without --profile ops:\n%s", pods)
	}
}

// releaseArtefact runs `make release` for this machine's architecture
// into a directory of the test's and returns the binary it made, checked
// against the SHA256SUMS beside it.
func releaseArtefact(t testing.TB, root string) string {
	t.Helper()
	build := t.TempDir()
	mustRun(t, root, "make", "--no-print-directory", "release", "RELEASE_ARCHES="+runtime.GOARCH, "BUILD="+build)
	dir := filepath.Join(build, "release")
	mustRun(t, dir, "sha256sum", "-c", "SHA256SUMS")
	matches, err := filepath.Glob(filepath.Join(dir, "dockctl-*-linux-"+runtime.GOARCH))
	if err != nil || len(matches) != 1 {
		t.Fatalf("want one release binary for linux/%s in %s: %v %v", runtime.GOARCH, dir, matches, err)
	}
	return matches[0]
}

// removeInstalledController removes the controller `dockctl install` made
// (it would re-create the workloads the env's cleanup removes: it runs
// first, being registered after), logging its last lines if the test failed.
func removeInstalledController(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if t.Failed() {
		if rc, err := dockerCli.ContainerLogs(ctx, name, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "50"}); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Logf("controller log:\n%s", b)
		}
	}
	_ = dockerCli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
}

func mustRun(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
