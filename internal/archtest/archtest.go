// Package archtest holds dockctl's architecture rules — which package may
// import which — and the checker that holds an import graph to them. The
// test of this package loads the module's graph with `go list` and fails
// on any violation, naming the chain of imports that breaks a rule; so a
// layering mistake fails `make unit` where it is made, not in review.
//
// Go already refuses import cycles, so the rules are the layering that
// keeps the packages independently testable and the helper images small
// (docs/design.md §10: the Service helpers run dockctl's own binary, but
// the code paths inside a helper must not reach the controller's state or
// the Docker client):
//
//   - manifests is the leaf of the model: it imports no package of the
//     module but internal helpers, which themselves reach nothing else;
//   - store (the desired state on disk) reaches neither the controllers
//     (reconciler/...), nor the Docker client (dockerx), nor cmd/...;
//   - dockerx (the Docker client) reaches neither store nor reconciler/...;
//   - nothing imports cmd/...;
//   - the Deployment controller, package reconciler, is imported only by
//     the wiring (cmd/..., metrics, bench/...): its subpackages and every
//     other package stay below it;
//   - only dockerx (and the fake of it, the end-to-end tests and the
//     benchmark harness) imports the Docker SDK (github.com/docker/docker,
//     github.com/docker/cli);
//   - the code that runs inside the helper and workload containers reaches
//     no store, reconciler/... or dockerx.
//
// Invariants: Check is a pure function of the graph and the rules (no
// I/O), so each rule is proved on a synthetic graph that breaks it; a
// rule whose From matches no package of the graph is itself reported, so
// a renamed package cannot leave a rule silently vacuous. Test files are
// not part of the graph: tests may wire what the product must not.
package archtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path the rules are written against.
const Module = "github.com/dockctl/dockctl"

// Graph maps each package of the module to its direct (non-test) imports,
// standard library and other modules included.
type Graph map[string][]string

// Rule forbids some packages (From minus Except) to import others (Forbid
// minus Allow). A pattern is an import path, or a path ending in "/..."
// that matches that path and every package below it.
type Rule struct {
	Name         string
	From, Except []string
	Forbid       []string
	Allow        []string
	// Direct: only the package's own imports count. Otherwise any chain of
	// imports through the module's packages does: the forbidden package
	// would be linked in all the same.
	Direct bool
}

// Violation is one forbidden import: Chain runs from the package the rule
// applies to, through the module's packages, to the forbidden import.
type Violation struct {
	Rule  string
	Chain []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s", v.Rule, strings.Join(v.Chain, " -> "))
}

// Match reports whether the import path pkg matches pattern.
func Match(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return Match(p, pkg) })
}

func (r Rule) appliesTo(pkg string) bool {
	return matchAny(r.From, pkg) && !matchAny(r.Except, pkg)
}

func (r Rule) forbids(imp string) bool {
	return matchAny(r.Forbid, imp) && !matchAny(r.Allow, imp)
}

// Check returns every violation of rules in g, sorted, one per package the
// rule applies to and forbidden import it reaches (by a shortest chain);
// a rule that applies to no package of g is a violation too.
func Check(g Graph, rules []Rule) []Violation {
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var out []Violation
	for _, r := range rules {
		applied := false
		for _, p := range pkgs {
			if !r.appliesTo(p) {
				continue
			}
			applied = true
			out = append(out, r.check(g, p)...)
		}
		if !applied {
			out = append(out, Violation{Rule: r.Name, Chain: []string{"(no package matches From " + strings.Join(r.From, ", ") + ")"}})
		}
	}
	return out
}

// check walks breadth first from p, so each forbidden import is reported
// with a shortest chain; it does not walk through a forbidden package (its
// own imports would only repeat the same mistake).
func (r Rule) check(g Graph, p string) []Violation {
	parent := map[string]string{p: ""}
	queue := []string{p}
	reported := map[string]bool{}
	var out []Violation
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		imps := slices.Clone(g[n])
		sort.Strings(imps)
		for _, imp := range imps {
			if r.forbids(imp) {
				if !reported[imp] {
					reported[imp] = true
					out = append(out, Violation{Rule: r.Name, Chain: append(chain(parent, n), imp)})
				}
				continue
			}
			if r.Direct {
				continue
			}
			if _, seen := parent[imp]; seen {
				continue
			}
			if _, inModule := g[imp]; !inModule {
				continue
			}
			parent[imp] = n
			queue = append(queue, imp)
		}
	}
	return out
}

func chain(parent map[string]string, n string) []string {
	var c []string
	for ; n != ""; n = parent[n] {
		c = append(c, n)
	}
	slices.Reverse(c)
	return c
}
