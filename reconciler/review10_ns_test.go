package reconciler

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
)

// A Service's proxy name (INSTANCE_NAME.NS.svc) and a pod member's name in
// another namespace (INSTANCE_DEP.NS-HASH-N.CONTAINER) share a shape: with a
// namespace named like "team-<hash>-0" (a valid DNS-1123 label) and a pod
// container named "svc", the two objects get the same Docker name, so one
// of them can never be created (ErrConflict) and a name no longer
// identifies one object of one namespace (svc.md: "container names stay
// unambiguous").
func TestReview10NamespaceProxyNameCollidesWithPodMember(t *testing.T) {
	const instance = "t1"
	hash := "0123456789"[:manifests.HashLength]
	holder := dockerx.ContainerName(instance, "team", "web", hash, 0)
	member := dockerx.MemberName(holder, "svc")
	proxy := proxyName(instance, "team-"+hash+"-0", "web")
	if member == proxy {
		t.Fatalf("pod member of team/web and proxy of Service team-%s-0/web are both named %q", hash, proxy)
	}
}
