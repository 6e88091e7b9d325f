package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/dockerx"
)

func newVersionCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print dockctl's version and the Docker Engine's",
		Example: `  # Print dockctl's version and the Docker Engine's
  dockctl version`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("extra arguments: %v", args) // kubectl's words
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "dockctl %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			cli, err := dockerx.NewClient()
			if err != nil {
				fmt.Fprintf(out, "docker: %v\n", err)
				return nil
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			v, err := cli.ServerVersion(ctx)
			if err != nil {
				fmt.Fprintf(out, "docker engine: unreachable (%v)\n", err)
				return nil
			}
			fmt.Fprintf(out, "docker engine: %s\n", v)
			return nil
		},
	}
}
