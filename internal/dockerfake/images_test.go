package dockerfake

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// TestFakeHolderImage: the holder image has the real reference, is present
// for creates once ensured, can be made to fail, and cannot be removed
// while a container made from it exists.
func TestFakeHolderImage(t *testing.T) {
	ctx := context.Background()
	e := New(img)
	want, err := dockerx.BuildHolderImage("i", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if HolderImageRef("i") != want.Ref {
		t.Fatalf("HolderImageRef = %s, want %s", HolderImageRef("i"), want.Ref)
	}
	holderCtr := dockerx.Container{Name: "i_web-h-0", Image: want.Ref, Labels: map[string]string{dockerx.LabelInstance: "i"}}
	if _, err := e.Add(holderCtr, ""); !errors.Is(err, dockerx.ErrNotFound) {
		t.Fatalf("create from the holder image before EnsureHolderImage = %v, want ErrNotFound", err)
	}

	boom := errors.New("boom")
	e.OnHolderImage = func(instance string) error {
		if instance == "broken" {
			return boom
		}
		return nil
	}
	if _, err := e.EnsureHolderImage(ctx, "broken"); !errors.Is(err, boom) {
		t.Errorf("EnsureHolderImage(broken) = %v, want the hook's error", err)
	}
	ref, err := e.EnsureHolderImage(ctx, "i")
	if err != nil || ref != want.Ref {
		t.Fatalf("EnsureHolderImage = %s, %v; want %s", ref, err, want.Ref)
	}
	if again, err := e.EnsureHolderImage(ctx, "i"); err != nil || again != ref {
		t.Errorf("second EnsureHolderImage = %s, %v", again, err)
	}
	if _, err := e.EnsureHolderImage(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if c := e.Calls()["image:holder"]; c != 4 {
		t.Errorf("image:holder calls %d, want 4", c)
	}

	imgs, err := e.ListHelperImages(ctx, "i")
	wantImg := dockerx.Image{ID: want.ID, Tags: []string{want.Ref},
		Labels: map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleHelperImage}}
	if err != nil || !reflect.DeepEqual(imgs, []dockerx.Image{wantImg}) {
		t.Errorf("ListHelperImages = %+v, %v; want %+v", imgs, err, wantImg)
	}
	if len(e.HelperImages()) != 2 {
		t.Errorf("HelperImages = %+v, want both instances'", e.HelperImages())
	}

	id, err := e.Add(holderCtr, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(id); err != nil { // a stopped container holds its image too
		t.Fatal(err)
	}
	if err := e.RemoveImage(ctx, want.ID); !errors.Is(err, dockerx.ErrConflict) {
		t.Errorf("RemoveImage while a container uses it = %v, want ErrConflict", err)
	}
	if err := e.Remove(id); err != nil {
		t.Fatal(err)
	}
	waitGone(t, e, id)
	if err := e.RemoveImage(ctx, want.ID); err != nil {
		t.Errorf("RemoveImage: %v", err)
	}
	if err := e.RemoveImage(ctx, want.ID); err != nil {
		t.Errorf("RemoveImage(missing) = %v, want nil", err)
	}
	if imgs, _ := e.ListHelperImages(ctx, "i"); len(imgs) != 0 {
		t.Errorf("after removal: %+v", imgs)
	}
	if _, err := e.Add(holderCtr, ""); !errors.Is(err, dockerx.ErrNotFound) {
		t.Errorf("create from a removed holder image = %v, want ErrNotFound", err)
	}

	e.DaemonDown()
	defer e.DaemonUp()
	if _, err := e.EnsureHolderImage(ctx, "i"); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Errorf("EnsureHolderImage with the daemon down = %v", err)
	}
	if _, err := e.ListHelperImages(ctx, "i"); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Errorf("ListHelperImages with the daemon down = %v", err)
	}
	if err := e.RemoveImage(ctx, want.ID); !errors.Is(err, dockerx.ErrUnreachable) {
		t.Errorf("RemoveImage with the daemon down = %v", err)
	}
}
