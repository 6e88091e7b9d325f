package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/store"
)

// get all: kubectl's category of the objects a user runs, for dockctl the
// kinds of it that it has, listed each by its own getter and printed
// together as kubectl prints several kinds.

// categories are the resource categories get expands, each into its kinds
// in the order kubectl lists them (kubectl's all also holds replica sets,
// stateful sets, jobs…, which dockctl has not).
var categories = map[string][]string{"all": {kindPod, kindService, kindDeployment}}

// resourceKinds returns the kinds a resource argument of get names when it
// names several (a category), nil when it names one kind (objectArgs reads
// it).
func resourceKinds(arg string) []string {
	return categories[arg]
}

// getSeveral lists several kinds, each with its getter, from one snapshot,
// and prints them as kubectl does (printer.printKinds); with names, each
// name is looked for in each kind, and the ones a kind has not are
// NotFound errors after what was found, as kubectl's.
func getSeveral(cmd *cobra.Command, g *globalOptions, o *getOptions, kinds, names []string) error {
	// kubectl's words and order.
	if o.selector != "" && len(names) > 0 {
		return errors.New("name cannot be provided when a selector is specified")
	}
	if o.allNamespaces && len(names) > 0 {
		return errors.New("a resource cannot be retrieved by name across all namespaces")
	}
	for _, kind := range kinds {
		if err := checkSelector(kind, o.selector); err != nil {
			return err
		}
	}
	p, err := newPrinter(o.printFlags())
	if err != nil {
		return err
	}
	if o.watchEvents && !o.watching() {
		return fmt.Errorf("--output-watch-events option can only be used with --watch or --watch-only")
	}
	if o.watching() {
		return errors.New("you may only specify a single resource type") // a watch is of one kind
	}
	var tables []*table
	capture := *p
	capture.capture = func(t *table, _ bool) { tables = append(tables, t) }
	o.printer, o.several = &capture, true
	asked := names
	if len(asked) == 0 {
		asked = []string{""}
	}
	var errs []error
	for _, kind := range kinds {
		for _, name := range asked {
			err := getters[kind](cmd, g, o, name)
			if errors.Is(err, store.ErrNotFound) {
				errs = append(errs, err)
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	if len(names) == 0 && p.human() && !slices.ContainsFunc(tables, func(t *table) bool { return len(t.rows) > 0 }) {
		o.several = false
		o.noResources(cmd.ErrOrStderr(), g, true)
		return nil
	}
	if err := p.printKinds(cmd.OutOrStdout(), tables, o.allNamespaces); err != nil {
		return err
	}
	return errors.Join(errs...)
}
