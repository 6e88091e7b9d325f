//go:build e2e

// Package e2e tests dockctl end to end against the real Docker daemon: the
// controller runs as a container built from the repository's Dockerfile,
// the CLI runs on the host, and the tests disturb the workloads the way a
// user would (docker rm -f, docker stop, stray containers) and wait for the
// controller to repair them.
//
// Every test uses its own --instance and state directory and removes every
// container carrying its instance label when it ends, pass or fail.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/testcontainers/testcontainers-go"
)

// The images are tagged per run, so that two runs on one machine (a
// developer's and CI's, say) never remove each other's images.
var (
	imageTag        = "e2e-" + randomSuffix()
	controllerImage = "dockctl:" + imageTag
	workloadImage   = "dockctl-workload:" + imageTag
	clientImage     = "dockctl-e2e-client:" + imageTag // e2e/svcclient, for the Service tests
)

var (
	dockctlBin  string // static dockctl binary for the host-side CLI
	workloadBin string // static workload binary, for stand-in images (realworld_test.go)
	dockerCli   *client.Client
)

func TestMain(m *testing.M) {
	// This machine cannot pull Ryuk's image, and testcontainers would guess
	// a non-local gateway address for the host; the tests clean up after
	// themselves by label instead.
	setDefaultEnv("TESTCONTAINERS_RYUK_DISABLED", "true")
	setDefaultEnv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setDefaultEnv(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

func run(m *testing.M) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	dockerCli, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return 0, err
	}
	if _, err := dockerCli.Ping(ctx); err != nil {
		return 0, fmt.Errorf("the e2e tests need a Docker daemon: %w", err)
	}
	tmp, err := os.MkdirTemp("", "dockctl-e2e-build-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	imageCtx := filepath.Join(tmp, "image")
	workloadCtx := filepath.Join(tmp, "workload")
	clientCtx := filepath.Join(tmp, "client")
	dockctlBin = filepath.Join(imageCtx, "dockctl")
	workloadBin = filepath.Join(workloadCtx, "workload")
	// The three builds at once: each ends in a link that uses one core,
	// and most of their packages are shared (the go command's cache
	// serialises the compiles they share).
	gos := []struct {
		pkg, out string
		flags    []string
	}{
		{"./cmd/dockctl", dockctlBin, []string{"-tags", "grpcnotrace"}},
		{"./cmd/workload", workloadBin, []string{"-tags", "grpcnotrace"}},
		{"./e2e/svcclient", filepath.Join(clientCtx, "svcclient"), []string{"-tags", "e2e"}},
	}
	if err := concurrently(len(gos), func(i int) error { return goBuild(root, gos[i].pkg, gos[i].out, gos[i].flags...) }); err != nil {
		return 0, err
	}
	// The Dockerfiles live in the repository; copy each next to its binary
	// so that the build context holds nothing else.
	if err := copyFile(filepath.Join(root, "Dockerfile"), filepath.Join(imageCtx, "Dockerfile")); err != nil {
		return 0, err
	}
	if err := copyFile(filepath.Join(root, "cmd/workload/Dockerfile"), filepath.Join(workloadCtx, "Dockerfile")); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(clientCtx, "Dockerfile"), []byte(clientDockerfile), 0o644); err != nil {
		return 0, err
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return 0, err
	}
	defer provider.Close()
	// The three images at once too: each is a FROM scratch copy of one
	// binary, and the daemon builds them independently.
	builds := []struct{ dir, repo string }{{imageCtx, "dockctl"}, {workloadCtx, "dockctl-workload"}, {clientCtx, "dockctl-e2e-client"}}
	err = concurrently(len(builds), func(i int) error {
		req := &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
			Context: builds[i].dir, Dockerfile: "Dockerfile", Repo: builds[i].repo, Tag: imageTag, KeepImage: true,
		}}
		if _, err := provider.BuildImage(ctx, req); err != nil {
			return fmt.Errorf("build %s:%s: %w", builds[i].repo, imageTag, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	code := m.Run()
	sweepCtx, stopSweep := context.WithTimeout(context.Background(), 2*time.Minute)
	sweepInstanceImages(sweepCtx)
	stopSweep()
	// The images are this suite's own; containers were removed by each
	// test. PruneChildren takes the classic builder's untagged parents
	// too. A removal that fails (a container still uses the image) is a
	// leak: the run fails rather than leave the host changed.
	for _, ref := range []string{controllerImage, workloadImage, clientImage} {
		if _, err := dockerCli.ImageRemove(context.Background(), ref, image.RemoveOptions{PruneChildren: true}); err != nil {
			fmt.Fprintf(os.Stderr, "e2e cleanup: remove image %s: %v\n", ref, err)
			code = max(code, 1)
		}
	}
	return code, nil
}

// clientDockerfile packages the test client: a test-only image, so it
// lives here rather than next to a product Dockerfile.
const clientDockerfile = "FROM scratch\nCOPY svcclient /svcclient\nENTRYPOINT [\"/svcclient\"]\n"

// goBuild builds a static binary; flags go before the package (the test
// client needs -tags e2e, which keeps it out of the product's builds).
func goBuild(root, pkg, out string, flags ...string) error {
	args := append(append([]string{"build", "-trimpath"}, flags...), "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// concurrently runs f(0) to f(n-1) at once and joins their errors.
func concurrently(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the repository")
	}
	return filepath.Dir(filepath.Dir(file)), nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
