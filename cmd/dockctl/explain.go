package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/explain"
)

func newExplainCommand() *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "explain RESOURCE[.FIELD…] [--recursive]",
		Short: "Describe the fields dockctl accepts in a kind's manifests, with Kubernetes' documentation",
		Long: "Describe the fields of a kind dockctl reads from manifests (deployments, services, configmaps, secrets,\n" +
			"persistentvolumeclaims, namespaces), in kubectl explain's layout. A field is identified as kubectl identifies it:\n\n" +
			"  RESOURCE.FIELDNAME[.FIELDNAME…]\n\n" +
			"Listed are exactly the fields dockctl accepts, with Kubernetes' description of each, and a \"dockctl:\" line\n" +
			"where dockctl gives one another meaning or a restriction.",
		Example: `  # The fields of a Deployment
  dockctl explain deployments

  # A field deep in the pod template
  dockctl explain deployment.spec.template.spec.containers.readinessProbe

  # The whole tree of a Service's spec, without descriptions
  dockctl explain svc.spec --recursive`,
		Args: func(cmd *cobra.Command, args []string) error {
			// kubectl explain's Validate.
			switch len(args) {
			case 0:
				// kubectl's words, pointing at explain's help rather than
				// api-resources: explain covers the kinds manifests hold,
				// fewer than api-resources lists.
				return fmt.Errorf("You must specify the type of resource to explain. Use \"%s --help\" for a complete list of supported resources.", cmd.CommandPath())
			case 1:
				return nil
			}
			return errors.New("We accept only this format: explain RESOURCE")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, path, err := explainArg(args[0])
			if err != nil {
				return err
			}
			return explain.Explain(cmd.OutOrStdout(), kind, path, recursive)
		},
		ValidArgsFunction: completeExplain,
	}
	cmd.Flags().BoolVar(&recursive, "recursive", false, "print the fields of fields, the whole tree, without descriptions")
	return cmd
}

// explainArg splits RESOURCE[.FIELD…] into the kind manifests names (from
// any of kubectl's spellings, "deployments.apps" too) and the field path.
func explainArg(arg string) (kind string, path []string, err error) {
	parts := strings.Split(arg, ".")
	n := 1
	if len(parts) > 1 {
		if _, ok := kindAlias(parts[0] + "." + parts[1]); ok {
			n = 2
		}
	}
	word := strings.Join(parts[:n], ".")
	cli, ok := kindAlias(word)
	if !ok {
		return "", nil, unknownResourceType(word)
	}
	kind, ok = explainKinds[cli]
	if !ok {
		return "", nil, fmt.Errorf("explain covers the kinds of manifests (%s), not %s", strings.Join(storeKindWords, ", "), word)
	}
	path = parts[n:]
	if slices.Contains(path, "") {
		return "", nil, fmt.Errorf("invalid field path %q: a field name is empty", arg)
	}
	return kind, path, nil
}

// completeExplain completes the resource, then, once a "." is typed, the
// fields at the path typed so far (without a space after, so that the
// path can go on).
func completeExplain(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	dot := strings.LastIndexByte(toComplete, '.')
	if dot < 0 {
		return kindWords(storeKindWords, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	kind, path, err := explainArg(toComplete[:dot] + ".x")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	fields, err := explain.Fields(kind, path[:len(path)-1])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, f := range fields {
		out = append(out, toComplete[:dot+1]+f)
	}
	return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
