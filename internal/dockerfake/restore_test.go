package dockerfake

import (
	"context"
	"reflect"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/dockctl/dockctl/dockerx"
)

// inspected is a `docker inspect` of a container, as much of it as Restore
// reads.
func inspected(id, name, state, netMode string, labels map[string]string, nets map[string]*network.EndpointSettings, mounts ...string) container.InspectResponse {
	c := container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID: id, Name: "/" + name, Created: "2026-12-06T21:17:24.123456789Z", Image: "sha256:img",
			State:      &container.State{Status: container.ContainerState(state), Running: state == "running"},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netMode)},
		},
		Config:          &container.Config{Image: "app:1", Labels: labels},
		NetworkSettings: &container.NetworkSettings{Networks: nets},
	}
	for _, m := range mounts {
		c.Mounts = append(c.Mounts, container.MountPoint{Type: "volume", Name: m})
	}
	return c
}

// A restored pod is what Docker showed: the holder keeps its ID, its
// network with the address Docker gave it and its static one, its
// volumes; the member joins the holder by ID and has no address of its
// own; the network keeps its ID; nothing counts as a call.
func TestRestoreKeepsWhatDockerShowed(t *testing.T) {
	e := New()
	if err := e.RestoreNetwork(network.Inspect{Name: "dockctl_i", ID: "net1", Driver: "bridge",
		Labels: dockerx.NetworkLabels("i"),
		IPAM:   network.IPAM{Config: []network.IPAMConfig{{Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1"}}}}); err != nil {
		t.Fatal(err)
	}
	e.RestoreVolume(volume.Volume{Name: "i_web-h-0.work.uid", Labels: map[string]string{dockerx.LabelInstance: "i"}})
	holderID := "aa00000000000000000000000000000000000000000000000000000000000001"
	holder := inspected(holderID, "i_web-h-0", "running", "dockctl_i", map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleHolder},
		map[string]*network.EndpointSettings{"dockctl_i": {IPAddress: "10.222.0.7", IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.0.7"}, Aliases: []string{"web-h-0"}}},
		"i_web-h-0.work.uid")
	member := inspected("bb00000000000000000000000000000000000000000000000000000000000002", "i_web-h-0.web", "running", "container:"+holderID,
		map[string]string{dockerx.LabelInstance: "i", dockerx.LabelRole: dockerx.RoleReplica}, nil, "i_web-h-0.work.uid")
	for _, c := range []container.InspectResponse{holder, member} {
		if err := e.Restore(c); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]dockerx.Container{}
	cs, err := e.ListContainers(context.Background(), "i")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		got[c.Name] = c
	}
	h, m := got["i_web-h-0"], got["i_web-h-0.web"]
	if h.ID != holderID || h.State != dockerx.StateRunning || h.Role != dockerx.RoleHolder ||
		!reflect.DeepEqual(h.Networks, map[string]string{"dockctl_i": "10.222.0.7"}) ||
		!reflect.DeepEqual(h.StaticIPv4, map[string]string{"dockctl_i": "10.222.0.7"}) ||
		!reflect.DeepEqual(h.Volumes, []string{"i_web-h-0.work.uid"}) || h.Created.Unix() != 1796591844 {
		t.Errorf("holder restored as %+v", h)
	}
	if m.ID != member.ID || m.NetworkMode != "container:"+holderID || len(m.Networks) != 0 || e.Stranded(m.ID) {
		t.Errorf("member restored as %+v (stranded %v)", m, e.Stranded(m.ID))
	}
	nets, err := e.ListNetworks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range nets {
		if n.Name == "dockctl_i" {
			ids = append(ids, n.ID, n.Subnet, n.IPRange)
		}
	}
	if want := []string{"net1", "10.222.0.0/20", "10.222.0.0/21"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("network restored as %v, want %v", ids, want)
	}
	if calls := e.Calls(); calls["create"]+calls["start"]+calls["network:create"]+calls["volume:create"] != 0 {
		t.Errorf("restoring counted calls: %v", calls)
	}
}
