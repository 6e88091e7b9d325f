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
		// Any standing one of its type: a Service may hold two of one
		// type (ProxyFailure for a port no nodePort was left for, and for
		// its publisher's failure), and the second is no news either.
		if slices.ContainsFunc(prev.Conditions, func(p store.Condition) bool {
			return p.Type == c.Type && p.Status == c.Status && p.Reason == c.Reason && p.Message == c.Message
		}) {
			continue
		}
		r.Event(ref, store.EventWarning, cmp.Or(c.Reason, c.Type), c.Message)
	}
	// A condition that stood and is gone is said once, as a Normal event:
	// its Warning is all `describe` would otherwise show of it.
	// One of two of a type ends when none of its type and reason
	// stands; one whose message changed stands (its new Warning says it).
	for _, c := range prev.Conditions {
		if c.Status != "True" || slices.ContainsFunc(next.Conditions, func(n store.Condition) bool {
			return n.Type == c.Type && n.Status == "True" && n.Reason == c.Reason
		}) {
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
