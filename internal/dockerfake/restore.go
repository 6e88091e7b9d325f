package dockerfake

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/dockctl/dockctl/dockerx"
)

// Restoring what a real daemon showed. An upgrade test (docs/design.md
// §16) starts this release on the containers, volumes and networks an
// earlier release made, as `docker inspect` captured them: Restore,
// RestoreVolume and RestoreNetwork put each into the engine with its ID,
// name, labels, state, network attachments (static addresses, aliases, a
// pod member's join of its holder) and mounts, so that the controller
// sees what it would see on that daemon. None of them is counted in
// Calls: they are the test's setup, not the controller's doing.

// RestoreNetwork adds a network as `docker network inspect` showed it,
// with its ID, labels and IPv4 IPAM.
func (e *Engine) RestoreNetwork(n network.Inspect) error {
	dn := dockerx.Network{Name: n.Name, Labels: n.Labels}
	for _, c := range n.IPAM.Config {
		if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is4() {
			dn.Subnet, dn.IPRange, dn.Gateway = c.Subnet, c.IPRange, c.Gateway
			break
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	nets := e.networksLocked()
	if err := e.addNetworkLocked(dn, n.Driver == "bridge" && n.Name != "bridge"); err != nil {
		return fmt.Errorf("restore network %s: %w", n.Name, err)
	}
	nets[n.Name].n.ID = n.ID
	return nil
}

// RestoreVolume adds a volume as `docker volume inspect` showed it.
func (e *Engine) RestoreVolume(v volume.Volume) {
	e.AddVolume(v.Name, v.Labels)
}

// Restore adds a container as `docker inspect` showed it. Its image is
// made present (a daemon keeps the image of an existing container). A
// running container gets the addresses it had; its networks and join
// targets must be restored first (networks, then a pod's holder before
// its members).
func (e *Engine) Restore(in container.InspectResponse) error {
	if in.ContainerJSONBase == nil || in.Config == nil || in.State == nil || in.HostConfig == nil {
		return fmt.Errorf("restore container: incomplete inspect of %q", in.ID)
	}
	name := strings.TrimPrefix(in.Name, "/")
	created, err := time.Parse(time.RFC3339Nano, in.Created)
	if err != nil {
		return fmt.Errorf("restore container %s: created %q: %w", name, in.Created, err)
	}
	c := dockerx.Container{
		Name: name, Image: in.Config.Image, ImageID: in.Image, Labels: in.Config.Labels,
		State: in.State.Status, ExitCode: in.State.ExitCode, Created: created,
	}
	if in.State.Health != nil {
		c.Health = in.State.Health.Status
	}
	ns := &namespaces{
		network:       string(in.HostConfig.NetworkMode),
		ipc:           string(in.HostConfig.IpcMode),
		pid:           string(in.HostConfig.PidMode),
		shareable:     string(in.HostConfig.IpcMode) == "shareable",
		restartAlways: in.HostConfig.RestartPolicy.Name == container.RestartPolicyAlways,
	}
	ips := map[string]string{}
	if joinRef(ns.network) == "" && in.NetworkSettings != nil {
		ns.endpoints = map[string]*endpoint{}
		for netName, s := range in.NetworkSettings.Networks {
			ep := &endpoint{aliases: s.Aliases}
			if s.IPAMConfig != nil {
				ep.static = s.IPAMConfig.IPv4Address
			}
			ns.endpoints[netName] = ep
			ips[netName] = s.IPAddress
		}
		if in.NetworkSettings.Ports != nil {
			for p, bindings := range in.NetworkSettings.Ports {
				for _, b := range bindings {
					var hp uint16
					_, _ = fmt.Sscan(b.HostPort, &hp)
					c.Ports = append(c.Ports, dockerx.Port{HostIP: b.HostIP, HostPort: hp, ContainerPort: uint16(p.Int()), Protocol: p.Proto()})
				}
			}
		}
	}
	var vols []mountedVolume
	for _, m := range in.Mounts {
		if m.Type == "volume" && m.Name != "" {
			vols = append(vols, mountedVolume{name: m.Name})
		}
	}
	e.AddImage(c.Image)
	if _, err := e.addWithID(c, in.ID, "", ns, vols); err != nil {
		return fmt.Errorf("restore container %s: %w", name, err)
	}
	// The fake allocated the lowest free address at add; Docker had
	// given it the captured one.
	e.mu.Lock()
	defer e.mu.Unlock()
	if runningOrPaused(e.containers[in.ID]) {
		for netName, ip := range ips {
			if ep := ns.endpoints[netName]; ep != nil && ip != "" {
				ep.ip = ip
			}
		}
	}
	return nil
}
