package main

import (
	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/internal/dataplane"
)

// newHelperCommand is `dockctl helper MODE …`, what dockctl's own helper
// containers run (docs/design.md §9, §10, §11). Hidden: it is not for users.
// Flags are left to dataplane.Main, so the root's flags and their
// environment variables play no part in a helper.
func newHelperCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "helper MODE [flags]",
		Short:  "Run a helper of dockctl's data plane (proxy, dns, push, probe)",
		Hidden: true,
		Example: `  # List the helper's modes and their flags (the controller starts helpers; not for users)
  dockctl helper`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := dataplane.Main(args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}
