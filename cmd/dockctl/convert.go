package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/compose"
	"github.com/dockctl/dockctl/manifests"
)

// newConvertCommand is `dockctl convert -f compose.yaml`: the manifests of
// a Compose project (package compose), printed or written one file per
// object, and what could not be converted named on stderr. It reads no
// state and stores nothing: `dockctl apply -f` of its output does.
func newConvertCommand(g *globalOptions) *cobra.Command {
	var (
		opts   compose.Options
		outDir string
	)
	cmd := &cobra.Command{
		Use:   "convert -f compose.yaml [-f override.yaml] [--env-file .env] [--profile NAME] [-o DIR]",
		Short: "Convert a Compose project into manifests (Deployments, Services, ConfigMaps, Secrets, claims)",
		Long: "Reads Compose files as Docker Compose does (interpolation, .env, profiles, extends, merges)\n" +
			"and prints the manifests that run the project on dockctl. Whatever could not be converted\n" +
			"is named on stderr, one line per service and key; see docs/user-guide.md, \"From Compose\".",
		Example: `  # Print the manifests of a Compose project, then apply them
  dockctl convert -f compose.yaml > app.yaml
  dockctl apply -f app.yaml

  # One file per object in k8s/, with another env file and a profile
  dockctl convert -f compose.yaml -f compose.prod.yaml --env-file prod.env --profile tools -o k8s/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd, "Unexpected args: %v", args)
			}
			if len(opts.Files) == 0 {
				return usageErrorf(cmd, "-f is required: the Compose file(s) to convert")
			}
			opts.Environ = os.Environ()
			if g.nsExplicit() {
				opts.Namespace = g.namespace
			}
			res, err := compose.Convert(cmd.Context(), opts)
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s\n", w)
			}
			if outDir == "" {
				y, err := res.YAML()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(y)
				return err
			}
			return writeConverted(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, outDir)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&opts.Files, "file", "f", nil, "a Compose file, repeatable (merged in order, as docker compose -f)")
	f.StringArrayVar(&opts.EnvFiles, "env-file", nil, "an env file for interpolation instead of the project directory's .env, repeatable")
	f.StringArrayVar(&opts.Profiles, "profile", nil, "a profile to activate, repeatable")
	f.StringVar(&opts.ProjectName, "project-name", "", "the project's name (default: the files' name:, else the project directory's); labels every object")
	f.StringVarP(&outDir, "output-dir", "o", "", "write one file per object, NAME-KIND.yaml, in this directory (made if missing) instead of printing")
	f.StringVar(&opts.ClaimSize, "claim-size", compose.DefaultClaimSize, "the storage request of each named volume's claim")
	f.StringVar(&opts.WaitImage, "wait-image", compose.DefaultWaitImage, "the image of the init containers that wait for a depends_on dependency")
	f.StringArrayVar(&opts.WaitCommand, "wait-command", nil, "the wait init container's command, one argument per flag; {host} and {port} are the dependency's (default: sh -c 'until nc -z -w 2 {host} {port}; do sleep 1; done')")
	return cmd
}

// writeConverted writes each object to DIR/NAME-KIND.yaml and names the
// files written, as kompose does. A file already there is replaced: the
// directory is the conversion's output. A Secret's file is its owner's
// only (writeObjectFile). A manifest file already in DIR that this
// conversion did not write is named on errOut: apply -f DIR reads it too
// (a service removed since an earlier conversion would come back).
func writeConverted(out, errOut io.Writer, res *compose.Result, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	// Files are opened in DIR as an os.Root, which refuses a symbolic
	// link leading out of it: DIR may be a checked-out repository's, and
	// a link there must not make convert replace or create a file
	// elsewhere.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	defer root.Close()
	var errs []error
	written := map[string]bool{}
	for _, o := range res.Objects {
		one := &compose.Result{Objects: []compose.Object{o}}
		y, err := one.YAML()
		if err != nil {
			return err
		}
		p := filepath.Join(dir, o.FileName())
		if err := writeObjectFile(root, o.FileName(), y, o.Kind == manifests.KindSecret); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", p, err))
			continue
		}
		written[p] = true
		fmt.Fprintf(out, "%s\n", p)
	}
	// The files apply -f DIR reads (manifests.ExpandPath), less ours.
	files, _, err := manifests.ExpandPath(dir)
	if err != nil {
		errs = append(errs, fmt.Errorf("list %s: %w", dir, err))
	}
	for _, f := range files {
		if !written[f] {
			fmt.Fprintf(errOut, "Warning: %s: not written by this conversion; apply -f %s applies it too\n", f, dir)
		}
	}
	return errors.Join(errs...)
}

// writeObjectFile writes one object's file: 0644, but a Secret's 0600,
// since it holds the secret's value (read from a file its owner may keep
// private). The mode is set before the data is written, so that a file
// of an earlier conversion, whatever its mode, never shows the value to
// others (os.WriteFile keeps an existing file's mode).
func writeObjectFile(root *os.Root, name string, data []byte, private bool) error {
	mode := os.FileMode(0o644)
	if private {
		mode = 0o600
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
