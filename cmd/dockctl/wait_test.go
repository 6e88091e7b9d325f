package main

import (
	"strings"
	"testing"
	"time"
)

// A timed-out wait says what holds the rollout back when the controller
// reported it, and asks about the controller only when it has not.
func TestTimeoutErrorSaysWhy(t *testing.T) {
	stuck := progress{name: "web", desired: 3, updated: 1, observed: true,
		failure: "ImagePullBackOff: image nope:1: not found", crashLooping: 2}
	for _, tt := range []struct {
		name       string
		running    bool
		ps         []progress
		want, deny []string
	}{
		{"stuck, controller running", true, []progress{stuck},
			[]string{`deployment "web": ImagePullBackOff: image nope:1`, "2 replica(s) in CrashLoopBackOff"}, []string{"is `dockctl controller` running"}},
		{"stuck, no controller", false, []progress{stuck},
			[]string{"ImagePullBackOff", "is `dockctl controller` running for instance \"i\"?"}, nil},
		{"not observed yet", true, []progress{{name: "web", desired: 3}},
			[]string{"is `dockctl controller` running"}, nil},
		{"slow but healthy", true, []progress{{name: "web", desired: 3, updated: 2, observed: true}},
			[]string{"the controller is running; see `dockctl describe deployment NAME`"}, []string{"is `dockctl controller` running"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg := timeoutError(10*time.Second, "i", tt.running, tt.ps).Error()
			if !strings.HasPrefix(msg, "timed out after 10s waiting for the rollout: ") {
				t.Fatalf("message %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			for _, d := range tt.deny {
				if strings.Contains(msg, d) {
					t.Errorf("message %q has %q", msg, d)
				}
			}
		})
	}
}

// A wait that times out on a paused deployment says that the rollout is
// paused, the one thing holding it back, rather than pointing at describe.
func TestTimeoutErrorNamesPause(t *testing.T) {
	for _, tt := range []struct{ ns, name, ref string }{
		{"", "rc", "deployment/rc"},
		{"team", "team/rc", "deployment/rc -n team"}, // the hint works as given
	} {
		p := progress{name: tt.name, ref: cmdRef(tt.ns, "rc"), desired: 2, updated: 0, total: 2, observed: true, paused: true}
		msg := timeoutError(5*time.Second, "i", true, []progress{p}).Error()
		if !strings.Contains(msg, `deployment "`+tt.name+`": rollout paused`) || !strings.Contains(msg, "dockctl rollout resume "+tt.ref+"`") {
			t.Errorf("message %q does not say the rollout is paused", msg)
		}
		if strings.Contains(msg, "see `dockctl describe deployment NAME`") {
			t.Errorf("message %q points at describe for a paused rollout", msg)
		}
	}
}
