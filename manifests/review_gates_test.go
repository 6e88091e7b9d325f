package manifests

import "testing"

// Docker's exec root (/run/docker, /var/run/docker) holds the socket of the
// containerd that dockerd starts itself (docker/containerd/containerd.sock,
// the default of Debian's docker.io), its plugin sockets and the network
// namespaces: as much control of the host as /run/containerd, which is a
// system path. --allow-host-path=/ alone must not hand it to a container.
func TestPrivilegesDockerExecRootIsSystem(t *testing.T) {
	for _, p := range []string{
		"/run/docker/containerd/containerd.sock",
		"/var/run/docker/containerd/containerd.sock",
		"/run/docker",
		"/run/docker/plugins",
	} {
		t.Run(p, func(t *testing.T) {
			refused := Policy{HostPaths: []string{"/"}}.Refused(privBase(withHostPath(p)))
			if len(refused) != 1 || refused[0].Flag != FlagAllowHostRoot {
				t.Fatalf("%s with --allow-host-path=/ only: refused %v, want %s", p, refused, FlagAllowHostRoot)
			}
		})
	}
}

// /run holds the sockets of the host's root daemons, and any of them is
// control of the host as much as the Docker socket: systemd's and D-Bus's
// (start a unit as root), snapd's, libvirt's, podman's, CRI-O's. Listing
// them one by one always misses one: the whole of /run needs
// --allow-host-root.
func TestPrivilegesRunIsSystem(t *testing.T) {
	for _, p := range []string{
		"/run/dbus/system_bus_socket",
		"/var/run/dbus/system_bus_socket",
		"/run/systemd/private",
		"/run/snapd.socket",
		"/run/libvirt/libvirt-sock",
		"/run/podman/podman.sock",
		"/run/crio/crio.sock",
	} {
		t.Run(p, func(t *testing.T) {
			refused := Policy{HostPaths: []string{"/"}}.Refused(privBase(withHostPath(p)))
			if len(refused) != 1 || refused[0].Flag != FlagAllowHostRoot {
				t.Fatalf("%s with --allow-host-path=/ only: refused %v, want %s", p, refused, FlagAllowHostRoot)
			}
		})
	}
}
