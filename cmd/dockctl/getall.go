package main

import "strings"

// get all: kubectl's category of the objects a user runs, for dockctl the
// kinds of it that it has, listed as several kinds are (getSeveralKinds).

// expandCategories expands each category in get's first argument, alone
// or in a comma-separated list of kinds (all,configmaps), as kubectl's
// resource builder does.
func expandCategories(args []string) []string {
	if len(args) == 0 || strings.Contains(args[0], "/") {
		return args
	}
	words := strings.Split(args[0], ",")
	var out []string
	for _, w := range words {
		if kinds, ok := categories[w]; ok {
			out = append(out, kinds...)
		} else {
			out = append(out, w)
		}
	}
	return append([]string{strings.Join(out, ",")}, args[1:]...)
}
