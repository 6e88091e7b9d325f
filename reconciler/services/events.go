package services

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dockctl/dockctl/store"
)

// EventRecorder records Kubernetes-style events (store.Event) about what the
// Service controller did or failed to do: the controller's recorder. It
// must not block; no message carries a Secret's value.
type EventRecorder interface {
	Event(obj store.InvolvedObject, eventType, reason, message string)
}

type nopRecorder struct{}

func (nopRecorder) Event(store.InvolvedObject, string, string, string) {}

// recordServiceStatus records, once a Service's status is written, a
// condition that turned true (PortConflict, ProxyFailure: Warnings) and a
// change of its ready endpoints (Normal UpdatedEndpoints), as a proxy
// reports what it serves.
func recordServiceStatus(r EventRecorder, ns, name string, prev, next *store.ServiceStatus) {
	ref := store.InvolvedObject{Kind: "Service", Namespace: ns, Name: name}
	for _, c := range next.Conditions {
		if c.Status != "True" {
			continue
		}
		i := slices.IndexFunc(prev.Conditions, func(p store.Condition) bool { return p.Type == c.Type })
		if i >= 0 && prev.Conditions[i].Status == c.Status && prev.Conditions[i].Reason == c.Reason && prev.Conditions[i].Message == c.Message {
			continue
		}
		r.Event(ref, store.EventWarning, cmp.Or(c.Reason, c.Type), c.Message)
	}
	// A condition that stood and is gone is said once, as a Normal event:
	// its Warning is all `describe` would otherwise show of it.
	for _, c := range prev.Conditions {
		if c.Status != "True" || slices.ContainsFunc(next.Conditions, func(n store.Condition) bool { return n.Type == c.Type && n.Status == "True" }) {
			continue
		}
		r.Event(ref, store.EventNormal, c.Type+"Resolved", "no longer: "+c.Message)
	}
	ready := func(eps []store.EndpointStatus) []string {
		var out []string
		for _, e := range eps {
			if e.Ready {
				out = append(out, e.Pod)
			}
		}
		slices.Sort(out)
		return out
	}
	before, after := ready(prev.Endpoints), ready(next.Endpoints)
	if !slices.Equal(before, after) {
		msg := "no ready endpoints"
		if len(after) > 0 {
			msg = fmt.Sprintf("%d ready endpoints: %s", len(after), strings.Join(after, ", "))
		}
		r.Event(ref, store.EventNormal, "UpdatedEndpoints", msg)
	}
}
