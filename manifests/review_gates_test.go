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
