package dockerfake

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

func volumeReq(instance, volume, uid string) dockerx.VolumeRequest {
	return dockerx.VolumeRequest{
		Instance: instance, Deployment: "web", TemplateHash: "h",
		Pod:    dockerx.PodRef{Name: "web-h-0", UID: uid, Holder: instance + "_web-h-0"},
		Volume: volume, Memory: true, SizeBytes: 1 << 20,
	}
}

// TestFakeVolumesFollowDocker: volumes are created with the real names and
// labels, never adopted when not this pod's (including one Docker made on
// its own for a container that mounted a missing name), cannot be removed
// while a container that exists mounts them, and remove fine when gone.
func TestFakeVolumesFollowDocker(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	req := volumeReq("i", "cache", "3f9a01bc")
	name, err := e.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if name != "i_web-h-0.cache.3f9a01bc" {
		t.Errorf("name %s", name)
	}
	if again, err := e.CreateVolume(ctx, req); err != nil || again != name {
		t.Errorf("re-create of the pod's own volume = %s, %v", again, err)
	}
	if got, ok := e.VolumeRequest(name); !ok || !reflect.DeepEqual(got, req) {
		t.Errorf("VolumeRequest = %+v, %v", got, ok)
	}
	if _, err := e.CreateVolume(ctx, volumeReq("i", "", "3f9a01bc")); err == nil {
		t.Error("CreateVolume without a volume name succeeded")
	}

	// Another pod of the same name (a new uid) gets its own volume; a
	// volume of that name that is not the instance's is refused.
	if other, err := e.CreateVolume(ctx, volumeReq("i", "cache", "00000001")); err != nil || other == name {
		t.Errorf("other pod's volume = %s, %v", other, err)
	}
	stray, err := e.AddWithVolumes(dockerx.Container{Name: "stray", Image: img}, "", "i_web-h-0.data.3f9a01bc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, volumeReq("i", "data", "3f9a01bc")); !errors.Is(err, dockerx.ErrConflict) {
		t.Errorf("CreateVolume over a volume Docker made unlabelled = %v, want ErrConflict", err)
	}
	if _, ok := e.VolumeRequest("i_web-h-0.data.3f9a01bc"); ok {
		t.Error("VolumeRequest reports a request for a volume Docker made on its own")
	}

	list, err := e.ListVolumes(ctx, "i")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "i_web-h-0.cache.00000001" || list[1].Name != name ||
		list[1].Role != dockerx.RoleEmptyDir || list[1].Pod != "web-h-0" || list[1].PodUID != "3f9a01bc" || list[1].Deployment != "web" {
		t.Errorf("ListVolumes = %+v", list)
	}
	if len(e.Volumes()) != 3 {
		t.Errorf("Volumes = %+v, want the unlabelled one too", e.Volumes())
	}

	// In use while a container that mounts it exists, even one being
	// removed.
	user, err := e.AddWithVolumes(dockerx.Container{Name: "member", Image: img, State: dockerx.StateRunning,
		Labels: map[string]string{dockerx.LabelInstance: "i"}}, "", name)
	if err != nil {
		t.Fatal(err)
	}
	e.HoldRemovals(true)
	if err := e.RemoveContainer(ctx, user); err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveVolume(ctx, name); !errors.Is(err, dockerx.ErrConflict) || !strings.Contains(err.Error(), "volume is in use") {
		t.Errorf("RemoveVolume while a removing container mounts it = %v, want ErrConflict", err)
	}
	e.HoldRemovals(false)
	if err := e.RemoveVolume(ctx, name); err != nil {
		t.Errorf("RemoveVolume once the container is gone: %v", err)
	}
	if err := e.RemoveVolume(ctx, name); err != nil {
		t.Errorf("RemoveVolume(missing) = %v, want nil", err)
	}
	if err := e.Remove(stray); err != nil {
		t.Fatal(err)
	}

	e.DaemonDown()
	for what, err := range map[string]error{
		"create": func() error { _, err := e.CreateVolume(ctx, req); return err }(),
		"list":   func() error { _, err := e.ListVolumes(ctx, "i"); return err }(),
		"remove": e.RemoveVolume(ctx, name),
	} {
		if !errors.Is(err, dockerx.ErrUnreachable) {
			t.Errorf("%s with the daemon down = %v, want ErrUnreachable", what, err)
		}
	}
	e.DaemonUp()
	if c := e.Calls(); c["volume:create"] != 5 || c["volume:list"] != 2 || c["volume:remove"] != 4 {
		t.Errorf("calls %v", c)
	}
}
