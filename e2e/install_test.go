//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// `dockctl install` runs the instance's controller from the binary itself
// (no image built or pulled), an install with the same flags changes
// nothing, a Deployment applied next runs and answers on its Service's
// 127.0.0.1 port, and `dockctl uninstall` leaves no Docker object of the
// instance (docs/design.md §15).
func TestInstallRunsTheControllerAndUninstallRemovesEverything(t *testing.T) {
	e := newSvcEnv(t)
	controllerName := "dockctl-" + e.instance + "-controller"
	// Registered after newEnv's: runs first, so that the controller is
	// gone before its workloads are removed by label (it would re-create
	// them).
	t.Cleanup(func() { removeInstalledController(t, controllerName) })
	ctrlArgs := []string{"--", "--service-address", "127.0.0.1", "--subnet", testSubnet(t),
		"--resync-period", "2s", "--settle-time", "1s"}

	out := e.mustDockctl("", append([]string{"install", "--timeout", "2m"}, ctrlArgs...)...)
	t.Logf("install:\n%s", out)
	if !strings.Contains(out, "container "+controllerName+" created") || !strings.Contains(out, "ready after") {
		t.Fatalf("install did not say it created the controller and saw it ready:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := dockerCli.ContainerInspect(ctx, controllerName)
	if err != nil {
		t.Fatalf("inspect the controller: %v", err)
	}
	hc := first.HostConfig
	if hc.RestartPolicy.Name != container.RestartPolicyUnlessStopped || !hc.ReadonlyRootfs ||
		hc.NetworkMode != network.NetworkNone || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" {
		t.Errorf("controller container not hardened as promised: restart %q, read-only %v, network %q, cap-drop %v",
			hc.RestartPolicy.Name, hc.ReadonlyRootfs, hc.NetworkMode, hc.CapDrop)
	}
	if got := first.Config.Labels["io.dockctl.instance"]; got != e.instance {
		t.Errorf("controller container's instance label %q, want %q", got, e.instance)
	}

	// The same flags in another order: the same container, left running.
	again := append([]string{"install", "--"}, ctrlArgs[3:]...)
	again = append(again, ctrlArgs[1:3]...)
	out = e.mustDockctl("", again...)
	if !strings.Contains(out, "container "+controllerName+" unchanged") {
		t.Fatalf("a second install with the same flags did not leave the controller:\n%s", out)
	}
	if second, err := dockerCli.ContainerInspect(ctx, controllerName); err != nil || second.ID != first.ID {
		t.Fatalf("a second install with the same flags changed the controller container: %v", err)
	}

	port := freePort(t)
	e.apply(bundle(
		svcDeployment{name: "web", app: "web", replicas: 2, probePath: "/readyz", args: []string{"--message=installed"}}.manifest(),
		serviceManifest("", "web", "web", publishedSpec(port))))
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	eventually(t, 2*time.Minute, "the Deployment answers on "+url, func() (bool, string) {
		body := httpBody(url)
		return strings.Contains(body, "installed"), body
	})

	out = e.mustDockctl("", "uninstall")
	t.Logf("uninstall:\n%s", out)
	if !strings.HasPrefix(out, "container "+controllerName+" removed\n") {
		t.Errorf("uninstall did not remove the controller first:\n%s", out)
	}
	label := "io.dockctl.instance=" + e.instance
	if cs := containers(t, label); len(cs) > 0 {
		t.Errorf("containers left after uninstall: %s", describe(cs))
	}
	if vs := volumes(t, label); len(vs) > 0 {
		t.Errorf("%d volumes left after uninstall", len(vs))
	}
	if is := images(t, label); len(is) > 0 {
		t.Errorf("%d images left after uninstall", len(is))
	}
	nets, err := dockerCli.NetworkList(ctx, network.ListOptions{Filters: labelFilter(label)})
	if err != nil || len(nets) > 0 {
		t.Errorf("networks left after uninstall: %d (%v)", len(nets), err)
	}
}
