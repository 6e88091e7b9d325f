package dockerx

import (
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// TestBuildFilesWriterConfig: the writer of a pod's file volumes shares no
// namespace with the pod — a container of the pod must never see a process
// that holds its volumes writable — and can do nothing but write files:
// no network, no capability but file ownership and modes, none to gain,
// a read-only root, gone when it exits.
func TestBuildFilesWriterConfig(t *testing.T) {
	d := filesDeployment()
	d.Spec.Template.Spec.ShareProcessNamespace = new(true)
	req := podRequest(d, RoleHolder, "")
	req.Image = "dockctl-helper:test"
	for _, ro := range []bool{false, true} {
		cfg, hc, err := BuildFilesWriterConfig(FilesWriterRequest{Pod: req, Args: []string{"--check", "cfg,tls"}, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		if hc.PidMode != "" || hc.IpcMode != "" || hc.UTSMode != "" || hc.NetworkMode != "none" || !cfg.NetworkDisabled {
			t.Errorf("writer namespaces: pid %q ipc %q uts %q network %q: want its own, and no network", hc.PidMode, hc.IpcMode, hc.UTSMode, hc.NetworkMode)
		}
		if !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Contains(hc.SecurityOpt, "no-new-privileges") || !hc.ReadonlyRootfs || hc.Privileged {
			t.Errorf("writer privileges: drop %v add %v opts %v ro-root %v", hc.CapDrop, hc.CapAdd, hc.SecurityOpt, hc.ReadonlyRootfs)
		}
		for _, c := range hc.CapAdd {
			if c != "CAP_CHOWN" && c != "CAP_FOWNER" && c != "CAP_DAC_OVERRIDE" {
				t.Errorf("writer capability %s: more than setting files' owners and modes", c)
			}
		}
		if !hc.AutoRemove || hc.RestartPolicy.Name != container.RestartPolicyDisabled || !cfg.OpenStdin || !cfg.StdinOnce {
			t.Errorf("writer lifetime: auto-remove %v restart %q stdin %v once %v", hc.AutoRemove, hc.RestartPolicy.Name, cfg.OpenStdin, cfg.StdinOnce)
		}
		if want := append(slices.Clone(FilesCommand), "--check", "cfg,tls"); !slices.Equal(cfg.Cmd, want) {
			t.Errorf("writer command %v, want %v", cfg.Cmd, want)
		}
		if cfg.Labels[LabelRole] != RoleFilesWriter || cfg.Labels[LabelPod] != "" || cfg.Labels[LabelDeployment] != "" || !IsHelperRole(RoleFilesWriter) {
			t.Errorf("writer labels %v: a helper's, no container of the pod", cfg.Labels)
		}
		var targets []string
		for _, m := range hc.Mounts {
			targets = append(targets, m.Target)
			if m.Type != mount.TypeVolume || m.ReadOnly != ro || m.VolumeOptions == nil || m.VolumeOptions.Labels[LabelRole] != RoleFiles {
				t.Errorf("writer mount %+v: want the pod's file volume, read-only %v", m, ro)
			}
		}
		if strings.Join(targets, ",") != "/volumes/cfg,/volumes/tls" {
			t.Errorf("writer mounts %v: want the file volumes only", targets)
		}
	}
}

// TestFilesWriterPod: a files writer's name says which pod it wrote for
// (the hostname of its holder's replica), in any namespace, with an
// instance name holding "_", and for a deployment name long enough that
// the hostname is cut; any other name says none.
func TestFilesWriterPod(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, tc := range []struct {
		instance, namespace, deployment string
	}{
		{"i", "", "web"},
		{"i", "default", "web"},
		{"i", "shop", "web"},
		{"my_inst", "shop", "web-api"},
		{"i", "shop", long},
	} {
		name := FilesWriterName(ContainerName(tc.instance, tc.namespace, tc.deployment, "5d8f9c7b4", 3))
		if got, want := FilesWriterPod(tc.instance, tc.namespace, name), Hostname(tc.deployment, "5d8f9c7b4", 3); got != want {
			t.Errorf("FilesWriterPod(%q, %q, %q) = %q, want %q", tc.instance, tc.namespace, name, got, want)
		}
	}
	for _, name := range []string{
		ContainerName("i", "", "web", "5d8f9c7b4", 3),                      // a replica
		PortForwardHelperName("i", "shop", "web-5d8f9c7b4-3", "0a0b0c"),    // a port-forward helper
		FilesWriterName(ContainerName("other", "", "web", "5d8f9c7b4", 3)), // another instance's
		FilesWriterName(ContainerName("i", "shop", "web", "5d8f9c7b4", 3)), // asked in default
	} {
		if got := FilesWriterPod("i", "", name); got != "" {
			t.Errorf("FilesWriterPod(i, default, %q) = %q, want none", name, got)
		}
	}
}
