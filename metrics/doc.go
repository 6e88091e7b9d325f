// Package metrics exposes what the dockctl controller does as Prometheus
// metrics, and serves them with the liveness and readiness endpoints.
//
// One Metrics value gathers three sources, each through the seam its
// producer already has, so that the reconciler never imports Prometheus:
//   - the controller's reconciler.Observer hook: syncs, their duration and
//     outcome, per-deployment replica counts, event-stream reconnects;
//   - the work queue's workqueue.MetricsProvider (QueueProvider);
//   - the Docker Engine, through the reconciler.Docker decorator returned by
//     InstrumentDocker: calls, errors and latency by operation.
//
// Invariants:
//   - Everything is registered on the Metrics' own prometheus.Registry, never
//     on the global default one, so that several controllers (tests) can live
//     in one process and /metrics shows exactly what this package declares
//     (plus the standard go_* and process_* collectors).
//   - Every dockctl series is named dockctl_*. The Docker call counter is
//     dockctl_docker_api_calls_total{operation}, and its six operations
//     (list, create, start, unpause, remove, image) exist from the start at 0,
//     so that a scrape of an idle controller shows "0 writes" rather than
//     nothing.
//   - Per-deployment series disappear when the controller reports the
//     deployment forgotten (deleted and its containers gone), and stay away
//     until the deployment is observed again: deleted deployments leave no
//     stale gauges behind, and the label cardinality stays bounded by the
//     live deployments (plus the names of orphans' deployments, if synced).
//   - Observer and decorator methods never block beyond a short mutex: they
//     run on the sync path.
package metrics
