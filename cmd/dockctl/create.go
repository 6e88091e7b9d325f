package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// newCreateCommand is kubectl's `create namespace NAME`: the one object
// worth creating without a file.
func newCreateCommand(g *globalOptions) *cobra.Command {
	var dryRun string
	cmd := &cobra.Command{
		Use:   "create namespace NAME [--dry-run]",
		Short: "Create a namespace",
		Example: `  # Create namespace team
  dockctl create namespace team

  # Print what would be created, without storing it
  dockctl create ns team --dry-run`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kindAliases[args[0]] != kindNamespace {
				return fmt.Errorf("dockctl create makes namespaces only (`create namespace NAME`); use apply -f for other objects")
			}
			name := args[1]
			if err := validNamespace(name); err != nil {
				return err
			}
			dry, err := parseDryRun(dryRun)
			if err != nil {
				return err
			}
			st, err := g.storeFor(dry)
			if err != nil {
				return err
			}
			// As kubectl create: an existing namespace is an error, not
			// "unchanged".
			if rec, err := st.LookupNamespace(name); err == nil && !rec.Deleted {
				return fmt.Errorf("namespaces %q already exists", name)
			}
			ns := &manifests.Namespace{APIVersion: manifests.CoreAPIVersion, Kind: manifests.KindNamespace, Metadata: manifests.ObjectMeta{Name: name}}
			res, err := st.Apply(store.Bundle{Namespaces: []*manifests.Namespace{ns}}, store.ApplyOptions{DryRun: dry})
			if err != nil {
				return err
			}
			suffix := ""
			if dry {
				suffix = " (dry run)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s%s\n", res[0].ObjectRef, res[0].Action, suffix)
			return nil
		},
	}
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", "print without storing (none|client)")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	return cmd
}
