package podruntime

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// sweepDocker records the claims' sweep's Docker calls.
type sweepDocker struct {
	created []string
	removed []string
}

func (d *sweepDocker) CreateClaimVolume(_ context.Context, r dockerx.ClaimVolumeRequest) (string, error) {
	d.created = append(d.created, r.Name())
	return r.Name(), nil
}

func (d *sweepDocker) RemoveVolume(_ context.Context, name string) error {
	d.removed = append(d.removed, name)
	return nil
}

// deletedClaims is a ConfigStore whose every claim is a deleted one.
type deletedClaims struct{ fakeConfig }

func (deletedClaims) LookupClaim(string, string) (*manifests.PersistentVolumeClaim, bool, error) {
	return nil, true, nil
}

// TestClaimSweep: a live claim is bound; a deleted claim's volume is kept
// while a container mounts it, its owner awaited, and released once the
// owner's last such container is gone (UsersGone says so once).
func TestClaimSweep(t *testing.T) {
	d := &sweepDocker{}
	s := &ClaimSweep{Instance: "i", Docker: d, Store: &deletedClaims{}, Volumes: &ClaimVolumes{},
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Owner: func(ct dockerx.Container) string { return ct.Namespace + "/" + ct.Deployment }}
	ctx := context.Background()
	live := []ClaimInput{{Namespace: "default", Name: "live"}}
	if err := s.Sync(ctx, live, nil, nil); err != nil || len(d.created) != 1 || d.created[0] != claimReq("default", "live").Name() {
		t.Fatalf("a live claim without a volume: %v, created %q; want it bound", err, d.created)
	}
	gone := []ClaimInput{{Namespace: "default", Name: "data", Deleted: true}}
	vols := []dockerx.Volume{claimVol("default", "data")}
	user := dockerx.Container{Name: "i_web-abc-0", Instance: "i", Namespace: "default", Deployment: "web", Volumes: []string{vols[0].Name}}
	if err := s.Sync(ctx, gone, []dockerx.Container{user}, vols); err != nil || len(d.removed) != 0 {
		t.Fatalf("a deleted claim in use: %v, removed %q; want it kept", err, d.removed)
	}
	if s.UsersGone("default/web", []dockerx.Container{user}) {
		t.Fatal("the owner still mounts the claim: not gone")
	}
	if !s.UsersGone("default/web", nil) || s.UsersGone("default/web", nil) {
		t.Fatal("the owner's last user gone: want it said once")
	}
	if err := s.Sync(ctx, gone, nil, vols); err != nil || len(d.removed) != 1 || d.removed[0] != vols[0].Name {
		t.Fatalf("a deleted claim no longer used: %v, removed %q; want its volume released", err, d.removed)
	}
}

// A volume left in place is warned about once per volume and reason,
// whatever the number of sweeps, as the controller noted it before the
// move to the runtime; without a store to ask again, nothing is released.
func TestClaimSweepWarnsOnceAndReleasesNothingWithoutAStore(t *testing.T) {
	var logs bytes.Buffer
	d := &sweepDocker{}
	s := &ClaimSweep{Instance: "i", Docker: d, Volumes: &ClaimVolumes{},
		Log:   slog.New(slog.NewTextHandler(&logs, nil)),
		Owner: func(ct dockerx.Container) string { return ct.Namespace + "/" + ct.Deployment }}
	ctx := context.Background()
	vols := []dockerx.Volume{claimVol("default", "stray"), claimVol("default", "data")}
	gone := []ClaimInput{{Namespace: "default", Name: "data", Deleted: true}}
	for range 3 {
		if err := s.Sync(ctx, gone, nil, vols); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "claim volume left in place"); n != 1 {
		t.Fatalf("%d warnings of the unknown claim's volume over 3 sweeps, want 1:\n%s", n, logs.String())
	}
	if len(d.removed) != 0 {
		t.Fatalf("removed %q without a store to ask again, want nothing", d.removed)
	}
}
