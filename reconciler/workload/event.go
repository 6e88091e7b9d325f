package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Event is an event a decision records on its workload, in the words of
// the Kubernetes controller of the same kind.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Normal is a Normal event.
func Normal(reason, format string, args ...any) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Warning is a Warning event.
func Warning(reason, format string, args ...any) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
