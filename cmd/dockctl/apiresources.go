package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// api-resources lists the CLI's kinds as kubectl api-resources lists a
// server's: every row comes from the kind table (kinds.go), so a new kind
// is listed the moment it has an entry there.

func newAPIResourcesCommand() *cobra.Command {
	var (
		output, namespaced, apiGroup, sortBy string
		noHeaders                            bool
	)
	cmd := &cobra.Command{
		Use:   "api-resources [--namespaced=true|false] [--api-group=GROUP] [-o wide|name] [--sort-by=name|kind] [--no-headers]",
		Short: "Print the kinds dockctl knows: name, short names, API version, whether namespaced, kind",
		Long: "Print the kinds dockctl knows, as kubectl api-resources prints a server's: the resource name (what\n" +
			"get, describe, delete… take), its short names, API version, whether it is namespaced, and its kind.\n" +
			"Rows are in kubectl's order: by API group (the core group first), each group's by name.",
		Example: `  # Every kind
  dockctl api-resources

  # The kinds without a namespace, names only
  dockctl api-resources --namespaced=false -o name

  # The kinds of the apps group
  dockctl api-resources --api-group=apps`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "", "wide", "name":
			default:
				// kubectl's words.
				return fmt.Errorf("--output %v is not available", output)
			}
			switch sortBy {
			case "", "name", "kind":
			default:
				return fmt.Errorf("--sort-by accepts only name or kind")
			}
			var only *bool
			if cmd.Flags().Changed("namespaced") {
				b, err := strconv.ParseBool(namespaced)
				if err != nil {
					return fmt.Errorf("invalid argument %q for --namespaced: %w", namespaced, err)
				}
				only = &b
			}
			rows := apiResourceRows(only, apiGroup, sortBy)
			out := cmd.OutOrStdout()
			if output == "name" {
				for _, k := range rows {
					fmt.Fprintln(out, k.api.qualified())
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
			if !noHeaders {
				h := "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND"
				if output == "wide" {
					h += "\tVERBS\tCATEGORIES"
				}
				fmt.Fprintln(tw, h)
			}
			for _, k := range rows {
				line := fmt.Sprintf("%s\t%s\t%s\t%t\t%s", k.api.resource, strings.Join(k.shortNames(), ","),
					k.api.apiVersion(), k.api.namespaced, k.api.kind)
				if output == "wide" {
					line += fmt.Sprintf("\t%s\t%s", strings.Join(k.verbs(), ","), strings.Join(k.categoryNames(), ","))
				}
				fmt.Fprintln(tw, line)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide (with VERBS and CATEGORIES) or name (resource.group)")
	cmd.Flags().StringVar(&namespaced, "namespaced", "", "true: only namespaced kinds; false: only those without a namespace")
	cmd.Flags().StringVar(&apiGroup, "api-group", "", "only the kinds of this API group (\"\" is the core group's, as given)")
	cmd.Flags().StringVar(&sortBy, "sort-by", "", "sort by name or kind instead of by API group")
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "no header line")
	return cmd
}

// apiResourceRows are the kinds api-resources prints: those namespaced
// as *only says (nil: all), of apiGroup when the flag was given
// (apiGroup "" then matches every group, as kubectl's empty flag), in
// kubectl's order: by API group, a stable sort of the kinds already in
// resource-name order, or by name or kind.
func apiResourceRows(only *bool, apiGroup, sortBy string) []*kindInfo {
	var rows []*kindInfo
	for _, k := range kinds {
		if only != nil && k.api.namespaced != *only {
			continue
		}
		if apiGroup != "" && k.api.group != apiGroup {
			continue
		}
		rows = append(rows, k)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].api.resource < rows[j].api.resource })
	key := func(k *kindInfo) string { return k.api.group }
	switch sortBy {
	case "name":
		key = func(k *kindInfo) string { return k.api.resource }
	case "kind":
		key = func(k *kindInfo) string { return k.api.kind }
	}
	sort.SliceStable(rows, func(i, j int) bool { return key(rows[i]) < key(rows[j]) })
	return rows
}

// apiVersion is the APIVERSION column: group/version, or the version of
// the core group.
func (r apiResource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

// shortNames are the aliases of k that are kubectl's short names: not
// qualified with a group, and neither the resource, the kind, their
// singular nor the plural of another alias (pvcs is pvc's).
func (k *kindInfo) shortNames() []string {
	var out []string
	for _, a := range k.aliases {
		switch {
		case strings.Contains(a, "."), a == k.api.resource, a == strings.ToLower(k.api.kind), a+"s" == k.api.resource:
			continue
		case strings.HasSuffix(a, "s") && slices.Contains(k.aliases, strings.TrimSuffix(a, "s")):
			continue
		}
		out = append(out, a)
	}
	return out
}

// verbs are what dockctl's commands do with objects of k, in kubectl's
// words (the VERBS of -o wide).
func (k *kindInfo) verbs() []string {
	var v []string
	if k.store != "" {
		v = append(v, "create")
	}
	if k.delete {
		v = append(v, "delete")
	}
	if k.get != nil {
		v = append(v, "get", "list")
	}
	if k.store != "" {
		v = append(v, "patch", "update")
	}
	if k.get != nil {
		v = append(v, "watch")
	}
	return v
}

// categoryNames are the categories of get that list k (kubectl's all).
func (k *kindInfo) categoryNames() []string {
	out := make([]string, 0, len(k.categories))
	for c := range k.categories {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
