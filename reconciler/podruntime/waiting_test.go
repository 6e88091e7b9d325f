package podruntime

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// Which failed create a pod shows, as the Deployment controller showed it
// before the move to the runtime: a wait (a WaitError, which wraps
// ErrNotRun) names the pod as a whole; a skipped create, a name conflict
// and a start failure show nothing; a holder's failure is the pod's.
func TestCreateWaitShowsWhatThePodShows(t *testing.T) {
	for _, tc := range []struct {
		name              string
		holder            bool
		err               error
		ok                bool
		reason, container string
	}{
		{name: "no error", err: nil},
		{name: "image pull wait is the pod's", err: &WaitError{Reason: WaitErrImagePull, Message: "pull x"}, ok: true, reason: WaitErrImagePull},
		{name: "skipped for another's failure", err: fmt.Errorf("create: %w", ErrNotRun)},
		{name: "name conflict", err: fmt.Errorf("create: %w", dockerx.ErrConflict)},
		{name: "start failure", err: &StartError{Name: "c", Err: errors.New("boom")}},
		{name: "config error", err: &ConfigError{Err: errors.New("no key")}, ok: true, reason: WaitCreateContainerConfigError, container: "app"},
		{name: "other create error", err: errors.New("daemon said no"), ok: true, reason: WaitCreateContainerError, container: "app"},
		{name: "holder's create error is the pod's", holder: true, err: errors.New("daemon said no"), ok: true, reason: WaitCreateContainerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := CreateWait("web-1", "h1", "app", tc.holder, tc.err)
			if ok != tc.ok || w.Reason != tc.reason || w.Container != tc.container {
				t.Fatalf("CreateWait = %+v, %v; want reason %q container %q, %v", w, ok, tc.reason, tc.container, tc.ok)
			}
		})
	}
}

// A wait keeps its start while its reason stays; a repeated pull failure
// backs off (ImagePullBackOff) and keeps the start of the first.
func TestSettleWaitsKeepsStartsAndBacksOffPulls(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	prev := []WaitingPod{
		{Name: "a", Reason: WaitErrImagePull, Since: t0},
		{Name: "b", Container: "c", Reason: WaitCreateContainerError, Since: t0},
	}
	got := SettleWaits([]WaitingPod{
		{Name: "b", Container: "c", Reason: WaitCreateContainerConfigError},
		{Name: "a", Reason: WaitErrImagePull},
		{Name: "a", Reason: WaitErrImagePull},
	}, prev, t1)
	if len(got) != 2 {
		t.Fatalf("got %+v, want one wait per pod and container", got)
	}
	if got[0].Name != "a" || got[0].Reason != WaitImagePullBackOff || !got[0].Since.Equal(t0) {
		t.Fatalf("a: %+v, want ImagePullBackOff since %v", got[0], t0)
	}
	if got[1].Name != "b" || got[1].Reason != WaitCreateContainerConfigError || !got[1].Since.Equal(t1) {
		t.Fatalf("b: %+v, want a new reason since %v", got[1], t1)
	}
}
