package podruntime

import (
	"testing"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

func TestDeletionsMatchUnitsByContainerOrPodUIDAndReportTheRestDone(t *testing.T) {
	holder := &dockerx.Container{ID: "h1", Name: "web-holder"}
	member := &dockerx.Container{ID: "m1", Name: "web-app"}
	pod := &Pod{Key: PodKeyPrefix + "web-holder/u1", UID: "u1", Holder: holder, Members: map[string]*dockerx.Container{"app": member}}
	podByMember := &Pod{Key: PodKeyPrefix + "api-holder/u2", UID: "u2", Holder: &dockerx.Container{ID: "h2"}, Members: map[string]*dockerx.Container{"app": {ID: "m2"}}}
	reqs := []store.PodDeletion{
		{Pod: "web", UID: "u1"},                  // a holder pod, by its uid
		{Pod: "api", Containers: []string{"m2"}}, // a holder pod, by a member
		{Pod: "one", Containers: []string{"c1"}}, // a single container
		{Pod: "gone", Containers: []string{"c9"}},
	}
	d := NewDeletions(reqs, map[string]*Pod{pod.Key: pod, podByMember.Key: podByMember})
	for unit, want := range map[string]string{pod.Key: "web", podByMember.Key: "api", "c1": "one"} {
		if got := d.Of(&dockerx.Container{ID: unit}); got == nil || got.Pod != want {
			t.Errorf("Of(%s) = %+v, want the request of %s", unit, got, want)
		}
	}
	if got := d.Of(&dockerx.Container{ID: "other"}); got != nil {
		t.Errorf("Of(other) = %+v, want none", got)
	}
	if done := d.Done(); len(done) != 1 || done[0].Pod != "gone" {
		t.Errorf("Done = %+v, want only the request of gone", done)
	}
	none := NewDeletions(nil, nil)
	if none.Of(holder) != nil || none.Done() != nil {
		t.Error("no request: Of and Done must find none")
	}
}
