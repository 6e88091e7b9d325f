// Package upgradetest holds the upgrade tests that start this release's
// controller, through its public wiring (reconciler.New and Options, as
// `dockctl controller` wires it), on what an earlier release left behind:
// its state directory and the Docker objects it made, as a real daemon
// showed them (docs/design.md §16). Nothing outside tests uses it.
//
// Invariants of its fixtures: testdata holds what a release wrote, never
// regenerated; a new capture goes next to the old ones under the commit it
// was made by (testdata/README.md says how).
package upgradetest
