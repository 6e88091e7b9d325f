package services

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// eventLines records events as "Kind/name Type Reason: message".
type eventLines []string

func (l *eventLines) Event(obj store.InvolvedObject, typ, reason, msg string) {
	*l = append(*l, fmt.Sprintf("%s/%s %s %s: %s", obj.Kind, obj.Name, typ, reason, msg))
}

// TestRecordServiceStatus: once a Service's status is written, a condition
// that turned true is a Warning, one that ended a Normal TYPEResolved, a
// change of its ready endpoints a Normal UpdatedEndpoints; a standing
// condition is not recorded again.
func TestRecordServiceStatus(t *testing.T) {
	ep := func(pod string, ready bool) store.EndpointStatus { return store.EndpointStatus{Pod: pod, Ready: ready} }
	conflict := store.Condition{Type: ServicePortConflict, Status: "True", Reason: "PortConflict", Message: "port 80 in use"}
	// A Service may hold two conditions of one type: ProxyFailure for a
	// port no nodePort was left for, and for its publisher's failure.
	exhausted := store.Condition{Type: ServiceProxyFailure, Status: "True", Reason: ReasonNodePortsExhausted, Message: "port 81/TCP: no free nodePort"}
	pubFailed := store.Condition{Type: ServiceProxyFailure, Status: "True", Reason: ReasonPublisherFailed, Message: "its host ports are not served: create refused"}
	for _, tt := range []struct {
		name       string
		prev, next store.ServiceStatus
		want       []string
	}{
		{"nothing changed", store.ServiceStatus{Endpoints: []store.EndpointStatus{ep("a", true)}}, store.ServiceStatus{Endpoints: []store.EndpointStatus{ep("a", true)}}, nil},
		{"an endpoint turned ready", store.ServiceStatus{Endpoints: []store.EndpointStatus{ep("a", true), ep("b", false)}},
			store.ServiceStatus{Endpoints: []store.EndpointStatus{ep("b", true), ep("a", true)}},
			[]string{"Service/web Normal UpdatedEndpoints: 2 ready endpoints: a, b"}},
		{"the last endpoint went", store.ServiceStatus{Endpoints: []store.EndpointStatus{ep("a", true)}}, store.ServiceStatus{},
			[]string{"Service/web Normal UpdatedEndpoints: no ready endpoints"}},
		{"a conflict begins", store.ServiceStatus{}, store.ServiceStatus{Conditions: []store.Condition{conflict}},
			[]string{"Service/web Warning PortConflict: port 80 in use"}},
		{"a standing conflict is not repeated", store.ServiceStatus{Conditions: []store.Condition{conflict}}, store.ServiceStatus{Conditions: []store.Condition{conflict}}, nil},
		{"a conflict ends", store.ServiceStatus{Conditions: []store.Condition{conflict}}, store.ServiceStatus{},
			[]string{"Service/web Normal PortConflictResolved: no longer: port 80 in use"}},
		{"a conflict turns false", store.ServiceStatus{Conditions: []store.Condition{conflict}},
			store.ServiceStatus{Conditions: []store.Condition{{Type: ServicePortConflict, Status: "False"}}},
			[]string{"Service/web Normal PortConflictResolved: no longer: port 80 in use"}},
		{"two standing failures of one type are not repeated", store.ServiceStatus{Conditions: []store.Condition{exhausted, pubFailed}},
			store.ServiceStatus{Conditions: []store.Condition{exhausted, pubFailed}}, nil},
		{"one of two failures of a type ends", store.ServiceStatus{Conditions: []store.Condition{exhausted, pubFailed}},
			store.ServiceStatus{Conditions: []store.Condition{exhausted}},
			[]string{"Service/web Normal ProxyFailureResolved: no longer: its host ports are not served: create refused"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &eventLines{}
			recordServiceStatus(m, "default", "web", &tt.prev, &tt.next)
			if !slices.Equal(*m, tt.want) {
				t.Errorf("got %q, want %q", *m, tt.want)
			}
		})
	}
}
