package manifests

import (
	"strings"
	"testing"
)

// A Localhost seccomp profile is a host file the controller reads as root
// and hands to Docker, "judged as a hostPath" (security.go). A hostPath
// that resolves into a system path needs --allow-host-root on top of a
// --allow-host-path prefix ("/" allows any path that is NOT a system
// path); the profile skips that check, so --allow-host-path=/ lets a
// profile that is (or links to) /etc/shadow, /proc/…, /run/… be read.
func TestLocalhostProfileIntoSystemPathNeedsHostRoot(t *testing.T) {
	link := SeccompRoot + "/evil.json"
	h := Host{
		Resolve: func(p string) (string, error) {
			if p == link {
				return "/etc/shadow", nil
			}
			return p, nil
		},
	}
	d := decodeOne(t, podBase(`      securityContext:
        seccompProfile: {type: Localhost, localhostProfile: evil.json}
`))
	// The same file as a hostPath volume is refused without --allow-host-root.
	vol := decodeOne(t, podBase(`      volumes:
      - name: v
        hostPath: {path: `+link+`}
`))
	pol := Policy{HostPaths: []string{"/"}, Host: h}
	if r := pol.Refused(vol); len(r) == 0 {
		t.Fatalf("premise: a hostPath that resolves to /etc/shadow must be refused without --allow-host-root")
	}
	r := pol.Refused(d)
	var names []string
	for _, p := range r {
		names = append(names, p.String())
	}
	if len(r) == 0 {
		t.Errorf("a Localhost seccomp profile resolving to /etc/shadow is allowed by --allow-host-path=/ alone (no --allow-host-root): the controller will read it as root")
	} else if !strings.Contains(strings.Join(names, ";"), FlagAllowHostRoot) {
		t.Errorf("refused, but not for --allow-host-root: %v", names)
	}
}
