package reconciler

import "context"

// Drainer is implemented by the Service reconciler; this declaration is
// replaced when "svc" lands.
type Drainer interface {
	Drain(ctx context.Context, namespace, pod string) error
}
