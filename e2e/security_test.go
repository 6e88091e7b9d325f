//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/dockctl/dockctl/manifests"
)

// secManifest is a pod of two containers (so a holder owns its network and
// IPC namespaces) with every pod field with a meaning on one host that this host
// can run (no GPU here), and a few fields with no meaning on one host.
func secManifest() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: sec
spec:
  replicas: 1
  selector:
    matchLabels: {app: sec}
  template:
    metadata:
      labels: {app: sec}
    spec:
      serviceAccountName: robot
      nodeSelector: {disk: ssd}
      securityContext:
        runAsUser: 1000
        runAsGroup: 3000
        runAsNonRoot: true
        supplementalGroups: [4000]
        fsGroup: 2000
        seccompProfile: {type: RuntimeDefault}
        sysctls:
        - {name: net.ipv4.ip_unprivileged_port_start, value: "80"}
        - {name: kernel.shm_rmid_forced, value: "1"}
      hostAliases:
      - {ip: 10.9.8.7, hostnames: [legacy.internal]}
      dnsConfig:
        searches: [corp.example]
        options: [{name: ndots, value: "2"}]
      containers:
      - name: app
        image: %[1]s
        workingDir: /
        stdin: true
        tty: true
        terminationMessagePolicy: File
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
      - name: side
        image: %[1]s
        args: ["--listen", ":8081"]
        securityContext:
          runAsUser: 1001
`, workloadImage)
}

// The settings reach Docker: the member containers carry the user, groups,
// no-new-privileges, read-only root and dropped capabilities; the holder
// the sysctls, extra hosts and merged resolver settings (Docker would
// refuse them on a member); a root image under runAsNonRoot is refused
// with kubelet's message and nothing of it is created.
func TestSecurityContextReachesDocker(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()

	out := e.apply(secManifest())
	if n := strings.Count(out, "Warning: fields with no meaning on one host are ignored: deployment/sec (nodeSelector, serviceAccountName, terminationMessagePolicy)"); n != 1 {
		t.Fatalf("apply output, want exactly one warning line naming the ignored fields:\n%s", out)
	}

	var app, side, holder container.Summary
	eventually(t, 60*time.Second, "the pod's holder and both members running", func() (bool, string) {
		app, side, holder = container.Summary{}, container.Summary{}, container.Summary{}
		cs := e.deploymentContainers("sec")
		for _, c := range cs {
			if c.State != "running" {
				continue
			}
			switch {
			case c.Labels["io.dockctl.role"] == "holder":
				holder = c
			case c.Labels["io.dockctl.container"] == "app":
				app = c
			case c.Labels["io.dockctl.container"] == "side":
				side = c
			}
		}
		return app.ID != "" && side.ID != "" && holder.ID != "", describe(cs)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inspect := func(id string) container.InspectResponse {
		t.Helper()
		ins, err := dockerCli.ContainerInspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ins
	}
	a := inspect(app.ID)
	if a.Config.User != "1000:3000" || !slices.Equal(a.HostConfig.GroupAdd, []string{"4000", "2000"}) {
		t.Errorf("app: User %q GroupAdd %v, want 1000:3000 and [4000 2000]", a.Config.User, a.HostConfig.GroupAdd)
	}
	if !slices.Contains(a.HostConfig.SecurityOpt, "no-new-privileges") || !a.HostConfig.ReadonlyRootfs ||
		!slices.Equal([]string(a.HostConfig.CapDrop), []string{"ALL"}) {
		t.Errorf("app: SecurityOpt %v ReadonlyRootfs %v CapDrop %v", a.HostConfig.SecurityOpt, a.HostConfig.ReadonlyRootfs, a.HostConfig.CapDrop)
	}
	if !a.Config.OpenStdin || !a.Config.Tty || a.Config.WorkingDir != "/" {
		t.Errorf("app: OpenStdin %v Tty %v WorkingDir %q", a.Config.OpenStdin, a.Config.Tty, a.Config.WorkingDir)
	}
	if s := inspect(side.ID); s.Config.User != "1001:3000" || slices.Contains(s.HostConfig.SecurityOpt, "no-new-privileges") || s.HostConfig.ReadonlyRootfs {
		t.Errorf("side: User %q SecurityOpt %v ReadonlyRootfs %v, want its own runAsUser and nothing of app's", s.Config.User, s.HostConfig.SecurityOpt, s.HostConfig.ReadonlyRootfs)
	}
	h := inspect(holder.ID)
	if h.HostConfig.Sysctls["net.ipv4.ip_unprivileged_port_start"] != "80" || h.HostConfig.Sysctls["kernel.shm_rmid_forced"] != "1" {
		t.Errorf("holder: Sysctls %v", h.HostConfig.Sysctls)
	}
	if !slices.Equal(h.HostConfig.ExtraHosts, []string{"legacy.internal:10.9.8.7"}) {
		t.Errorf("holder: ExtraHosts %v", h.HostConfig.ExtraHosts)
	}
	if !slices.Contains(h.HostConfig.DNSSearch, "corp.example") || !slices.Contains(h.HostConfig.DNSSearch, "default.svc.cluster.local") ||
		!slices.Equal(h.HostConfig.DNSOptions, []string{"ndots:2"}) || len(h.HostConfig.DNS) == 0 {
		t.Errorf("holder: DNS %v DNSSearch %v DNSOptions %v, want the cluster's resolver merged with the pod's dnsConfig",
			h.HostConfig.DNS, h.HostConfig.DNSSearch, h.HostConfig.DNSOptions)
	}

	// A container with a TTY has one raw log stream, which Docker does
	// not multiplex: logs reads it as it is.
	eventually(t, 30*time.Second, "the tty container's log", func() (bool, string) {
		out, err := e.dockctl("", "logs", "deployment/sec", "-c", "app")
		return err == nil && strings.Contains(out, "workload: listening on"), out
	})

	// runAsNonRoot with the workload image, which names no USER (root):
	// refused before anything is created.
	root := strings.NewReplacer("name: sec", "name: rootimg", "app: sec", "app: rootimg").Replace(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: sec
spec:
  replicas: 2
  selector:
    matchLabels: {app: sec}
  template:
    metadata:
      labels: {app: sec}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
      - name: app
        image: ` + workloadImage + "\n")
	e.apply(root)
	eventually(t, 60*time.Second, "the runAsNonRoot refusal", func() (bool, string) {
		js, err := e.dockctl("", "get", "deployments", "rootimg", "-o", "json")
		if err != nil {
			return false, js
		}
		var d manifests.Deployment
		if err := json.Unmarshal([]byte(js), &d); err != nil || d.Status == nil {
			return false, js
		}
		for _, c := range d.Status.Conditions {
			if c.Type == manifests.ConditionReplicaFailure && c.Reason == "CreateContainerConfigError" &&
				strings.HasPrefix(c.Message, "container has runAsNonRoot and image will run as root (pod: ") &&
				strings.HasSuffix(c.Message, "container: app)") {
				return true, ""
			}
		}
		return false, js
	})
	if cs := e.deploymentContainers("rootimg"); len(cs) != 0 {
		t.Fatalf("containers of the refused deployment exist: %s", describe(cs))
	}
}
