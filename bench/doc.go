// Package bench holds dockctl's benchmarks.
//
// The Go benchmarks in this directory (go test -bench . ./bench/) time the
// pure hot paths — planning, status computation and manifest decoding — with
// no Docker daemon. The end-to-end harness that races dockctl against the
// Docker API and Docker Swarm is the main package in bench/cmd/dockbench; it
// is run by `make bench` and never by `go test ./...`. BENCHMARKS.md explains
// every figure.
package bench
