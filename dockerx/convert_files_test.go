package dockerx

import (
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"

	"github.com/dockctl/dockctl/manifests"
)

// filesDeployment is a pod of one container "web" with a configMap
// volume "cfg" (mounted whole, and one key by subPath), a secret volume
// "tls", an emptyDir "cache" mounted by subPath and a hostPath by subPath.
func filesDeployment() *manifests.Deployment {
	return deployment("web", func(d *manifests.Deployment) {
		ps := &d.Spec.Template.Spec
		ps.Volumes = []manifests.Volume{
			{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
			{Name: "tls", Secret: &manifests.SecretVolumeSource{SecretName: "tls"}},
			{Name: "cache", EmptyDir: &manifests.EmptyDirVolumeSource{}},
			{Name: "host", HostPath: &manifests.HostPathVolumeSource{Path: "/srv/data"}},
		}
		ps.Containers[0].VolumeMounts = []manifests.VolumeMount{
			{Name: "cfg", MountPath: "/etc/app"},
			{Name: "cfg", MountPath: "/etc/nginx/nginx.conf", SubPath: "nginx.conf"},
			{Name: "tls", MountPath: "/etc/tls", ReadOnly: false},
			{Name: "cache", MountPath: "/var/cache/app"},
			{Name: "host", MountPath: "/data", ReadOnly: true},
		}
	})
}

func TestBuildConfigFileVolumes(t *testing.T) {
	d := filesDeployment()
	holder := podRequest(d, RoleHolder, "")
	cfg, hc, _, err := BuildConfig(holder)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Entrypoint, HolderWriterCommand) || !hc.ReadonlyRootfs {
		t.Errorf("holder: entrypoint %q read-only %v; want %q on a read-only root", cfg.Entrypoint, hc.ReadonlyRootfs, HolderWriterCommand)
	}
	mounts := map[string]mount.Mount{}
	for _, m := range hc.Mounts {
		mounts[m.Target] = m
	}
	for _, name := range []string{"cfg", "tls"} {
		m, ok := mounts["/volumes/"+name]
		if !ok {
			t.Fatalf("holder: no mount of %s at /volumes/%s: %+v", name, name, hc.Mounts)
		}
		// Read-only: the holder keeps the tmpfs mounted and writes
		// nothing; a writer container of its own writes (fileswriter.go).
		if !m.ReadOnly || m.Type != mount.TypeVolume || m.Source != VolumeName(holder.Pod.Holder, name, testPodUID) {
			t.Errorf("holder mount of %s: %+v", name, m)
		}
		if l := m.VolumeOptions.Labels; l[LabelRole] != RoleFiles || l[LabelPodUID] != testPodUID {
			t.Errorf("holder mount of %s: labels %v, want role %s of the pod", name, l, RoleFiles)
		}
		if o := m.VolumeOptions.DriverConfig; o == nil || o.Options["type"] != "tmpfs" {
			t.Errorf("holder mount of %s: %+v, want a tmpfs volume", name, o)
		}
	}
	if _, ok := mounts["/volumes/cache"]; !ok {
		t.Error("holder: the emptyDir is no longer held")
	}

	member := podRequest(d, RoleReplica, "web")
	if _, _, _, err := BuildConfig(member); err == nil || !strings.Contains(err.Error(), "mountpoint of volume") {
		t.Errorf("member without mountpoints: %v, want the mountpoint refused as unknown", err)
	}
	if got := SubPathVolumes(member); !slices.Equal(got, []string{VolumeName(member.Pod.Holder, "cfg", testPodUID)}) {
		t.Errorf("SubPathVolumes = %q", got)
	}
	member.VolumeMountpoints = map[string]string{}
	for _, n := range SubPathVolumes(member) {
		member.VolumeMountpoints[n] = "/var/lib/docker/volumes/" + n + "/_data"
	}
	_, hc, _, err = BuildConfig(member)
	if err != nil {
		t.Fatal(err)
	}
	mounts = map[string]mount.Mount{}
	for _, m := range hc.Mounts {
		mounts[m.Target] = m
	}
	for _, target := range []string{"/etc/app", "/etc/tls"} {
		if m, ok := mounts[target]; !ok || !m.ReadOnly {
			t.Errorf("member mount at %s: %+v, want the pod's volume read-only (as the kubelet mounts it)", target, m)
		}
	}
	wantBinds := []string{
		"/var/lib/docker/volumes/" + VolumeName(member.Pod.Holder, "cfg", testPodUID) + "/_data/nginx.conf:/etc/nginx/nginx.conf:ro",
	}
	if !slices.Equal(hc.Binds, wantBinds) {
		t.Errorf("binds:\n got %q\nwant %q", hc.Binds, wantBinds)
	}
	if len(hc.Mounts) != 4 {
		t.Errorf("member mounts %+v: want the four whole volumes", hc.Mounts)
	}
}

// A subPath of any volume but a file volume is refused at create too (apply
// refuses it first): the daemon follows links in a bind's source, and a
// container of the pod could point an emptyDir's or a hostPath's path
// anywhere on the host (a review proved it on Docker 20.10: an emptyDir subPath made a link to / mounted the host's root).
func TestSubPathOnlyOfFileVolumes(t *testing.T) {
	for _, name := range []string{"cache", "host"} {
		d := filesDeployment()
		vms := d.Spec.Template.Spec.Containers[0].VolumeMounts
		for i := range vms {
			if vms[i].Name == name {
				vms[i].SubPath = "sub"
			}
		}
		member := podRequest(d, RoleReplica, "web")
		member.VolumeMountpoints = map[string]string{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			n := VolumeName(member.Pod.Holder, v.Name, testPodUID)
			member.VolumeMountpoints[n] = "/var/lib/docker/volumes/" + n + "/_data"
		}
		if _, _, _, err := BuildConfig(member); err == nil || !strings.Contains(err.Error(), "supported on configMap, secret, projected and downwardAPI volumes only") {
			t.Errorf("subPath of %s: %v, want it refused", name, err)
		}
	}
}

func TestBuildConfigHolderWithoutFileVolumesUnchanged(t *testing.T) {
	cfg, hc, _, err := BuildConfig(podRequest(podDeployment("web", nil), RoleHolder, ""))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Entrypoint != nil || hc.ReadonlyRootfs {
		t.Errorf("a holder without file volumes: entrypoint %q read-only %v, want the assembled holder as before", cfg.Entrypoint, hc.ReadonlyRootfs)
	}
}

func TestSubPathBindRefusals(t *testing.T) {
	req := CreateRequest{VolumeMountpoints: map[string]string{"v": "/mp/v"}}
	for _, vm := range []manifests.VolumeMount{
		{Name: "v", MountPath: "/x:y", SubPath: "a"},
		{Name: "v", MountPath: "/x", SubPath: "a:b"},
	} {
		if _, err := subPathBind(req, mount.Mount{Type: mount.TypeVolume, Source: "v"}, vm); err == nil {
			t.Errorf("%+v: accepted", vm)
		}
	}
	if _, err := subPathBind(req, mount.Mount{Type: mount.TypeTmpfs}, manifests.VolumeMount{Name: "t", MountPath: "/x", SubPath: "a"}); err == nil {
		t.Error("a subPath of a tmpfs mount: accepted")
	}
}
