package dockerx

import (
	"slices"
	"testing"
)

// A port-forward session's helper joins the network namespace of a user's
// pod and needs nothing there but to open TCP connections to 127.0.0.1
// (`helper relay`) and to wait on its stdin (`helper port-forward`): no
// capability, no root, no writable file system. BuildHelperConfig gives it
// Docker's defaults instead: root (the image names no user), Docker's
// default capability set — NET_RAW (raw sockets: sniff and forge the pod's
// traffic in its namespace), NET_BIND_SERVICE, CHOWN, DAC_OVERRIDE,
// SETUID, SETGID, … — privilege escalation allowed, and a writable root.
// DESIGN §8 asks for small helpers; the brief's gate: "the helper container
// getting more than it needs".
func TestReview12cPortForwardHelperDropsWhatItDoesNotNeed(t *testing.T) {
	req := HelperRequest{Instance: "i", Namespace: "shop", Name: "i_web-abc-0.shop_pf-1a2b3c", Role: RolePortForward, Image: "img",
		Cmd: []string{"/dockctl", "helper", "port-forward"}, JoinNetwork: "container:0123abcd", Attached: true}
	cfg, hc, _, err := BuildHelperConfig(req, testLogs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hc.CapDrop, "ALL") || len(hc.CapAdd) != 0 {
		t.Errorf("capabilities: drop %v, add %v; want every one dropped (it only dials 127.0.0.1 and reads stdin)", hc.CapDrop, hc.CapAdd)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") && !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("security options %v: want no-new-privileges", hc.SecurityOpt)
	}
	if cfg.User == "" || cfg.User == "0" || cfg.User == "root" || cfg.User == "0:0" {
		t.Errorf("user %q: the helper runs as root in the pod's network namespace; want an unprivileged uid (e.g. 65534)", cfg.User)
	}
	if !hc.ReadonlyRootfs {
		t.Error("the helper's root file system is writable; it writes nothing")
	}
	if hc.Privileged || len(hc.Binds) > 0 || len(hc.Mounts) > 0 {
		t.Errorf("privileged %v, binds %v, mounts %v: want none", hc.Privileged, hc.Binds, hc.Mounts)
	}
}
