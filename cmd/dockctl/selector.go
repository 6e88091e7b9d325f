package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/dockctl/dockctl/dockerx"
)

// parseSelector parses a -l value with Kubernetes' own parser, so that
// every form kubectl accepts (=, ==, !=, in, notin, key, !key) means the
// same here, and anything else is an error rather than a filter that
// silently matches everything or nothing. An empty value selects all.
func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid label selector %q: %w", s, err)
	}
	return sel, nil
}

// containerKeyAliases are the short keys `get containers -l` accepts for
// dockctl's ownership labels (documented in the README).
var containerKeyAliases = map[string]string{
	"deployment":    dockerx.LabelDeployment,
	"template-hash": dockerx.LabelTemplateHash,
	"revision":      dockerx.LabelTemplateHash,
}

// parseContainerSelector is parseSelector with the short keys of
// containerKeyAliases rewritten to the labels they stand for.
func parseContainerSelector(s string) (labels.Selector, error) {
	sel, err := parseSelector(s)
	if err != nil {
		return nil, err
	}
	reqs, _ := sel.Requirements()
	out := labels.NewSelector()
	for _, r := range reqs {
		key, ok := containerKeyAliases[r.Key()]
		if !ok {
			out = out.Add(r)
			continue
		}
		op := r.Operator()
		var vals []string
		if op != selection.Exists && op != selection.DoesNotExist {
			vals = r.ValuesUnsorted()
		}
		nr, err := labels.NewRequirement(key, op, vals)
		if err != nil {
			return nil, fmt.Errorf("invalid label selector %q: %w", s, err)
		}
		out = out.Add(*nr)
	}
	return out, nil
}
