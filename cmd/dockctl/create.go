package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// newCreateCommand is kubectl's `create namespace NAME`, and its
// imperative creates of a configmap, a secret and a deployment
// (create_objects.go).
func newCreateCommand(g *globalOptions) *cobra.Command {
	var dryRun string
	cmd := &cobra.Command{
		Use:   "create namespace|configmap|secret|deployment|service|job NAME [flags]",
		Short: "Create a namespace, configmap, secret, deployment, service or job from the command line",
		Example: `  # Create namespace team
  dockctl create namespace team

  # Print what would be created, without storing it
  dockctl create ns team --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// As kubectl's create, whose `namespace` (`ns`) is a
			// subcommand: anything else is an unknown one (apply -f
			// creates the other kinds), none prints the help (exit 1).
			if len(args) == 0 || kindAliases[args[0]] != kindNamespace || strings.Contains(args[0], "/") {
				return subcommandsOnly(false)(cmd, args)
			}
			if len(args) != 2 {
				return usageErrorf(cmd, "exactly one NAME is required, got %d", len(args)-1)
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
				return alreadyExists(kindNamespace, name)
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
	cmd.AddCommand(newCreateConfigMapCommand(g), newCreateSecretCommand(g), newCreateDeploymentCommand(g), newCreateServiceCommand(g), newCreateJobCommand(g))
	return cmd
}
