package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dockctl/dockctl/internal/kustomize"
	"github.com/dockctl/dockctl/manifests"
)

// input is where apply, diff and delete read their objects: manifest
// files (-f) or a kustomization directory (-k), as kubectl's
// FilenameOptions.
type input struct {
	files     []string
	kustomize string
	// recursive is -R: a directory of -f is read with its
	// subdirectories. It is dockctl's default (as it has always been);
	// kubectl's, reading a directory's own files only, is
	// --recursive=false (recursiveFlag tells whether it was given).
	recursive     bool
	recursiveFlag *pflag.Flag
}

// addFlags adds -f (described by fileUsage) and -k.
func (in *input) addFlags(cmd *cobra.Command, fileUsage string) {
	cmd.Flags().StringSliceVarP(&in.files, "filename", "f", nil, fileUsage)
	cmd.Flags().BoolVarP(&in.recursive, "recursive", "R", true,
		"read the directories of -f with their subdirectories (dockctl's default; --recursive=false: a directory's own files only, kubectl's default)")
	in.recursiveFlag = cmd.Flags().Lookup("recursive")
	cmd.Flags().StringVarP(&in.kustomize, "kustomize", "k", "", "a kustomization directory: its kustomize build (generators run, transformers applied, as kubectl -k); cannot be used with -f")
}

// given reports whether -f or -k is.
func (in *input) given() bool { return len(in.files) > 0 || in.kustomize != "" }

// check is kubectl's refusal of -f with -k.
func (in *input) check() error {
	if len(in.files) > 0 && in.kustomize != "" {
		return errors.New("only one of -f or -k can be specified")
	}
	return nil
}

// String names the input in messages.
func (in *input) String() string {
	if in.kustomize != "" {
		return in.kustomize
	}
	return fmt.Sprint(in.files)
}

// load decodes the input's documents: -k's kustomize build, or -f's files.
func (in *input) load(stdin io.Reader, opts manifests.LoadOptions) ([]*manifests.Document, []manifests.Skipped, error) {
	if in.kustomize == "" {
		opts.TopLevelOnly = in.recursiveFlag != nil && in.recursiveFlag.Changed && !in.recursive
		return loadManifests(in.files, stdin, opts)
	}
	data, err := kustomize.Build(in.kustomize)
	if err != nil {
		return nil, nil, err
	}
	return manifests.DecodeAll(kustomize.File(in.kustomize), data, opts)
}

// kustomizationHint is the error of -f DIR where DIR holds a
// kustomization: its files are inputs to kustomize, not objects (the
// kustomization file itself has no apiVersion/kind, or is a Kustomization,
// and its generators would not run), so, as kubectl, -f refuses it, here
// with the flag that reads it.
func kustomizationHint(paths []string) error {
	for _, p := range paths {
		if f := kustomize.File(p); f != "" {
			return fmt.Errorf("%s holds a kustomization (%s), which -f does not build: use -k %s", p, f, p)
		}
	}
	return nil
}

func newKustomizeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kustomize [DIR]",
		Short: "Print the objects a kustomization directory builds (as kubectl kustomize)",
		Long: "Build a kustomization directory (kustomization.yaml, kustomization.yml or Kustomization) as kubectl kustomize does:\n" +
			"bases and overlays, patches, generators (with their hash suffixes, and the references to them rewritten),\n" +
			"namePrefix/nameSuffix, images, replicas. Files are loaded only from below DIR (kubectl's LoadRestrictionsRootOnly);\n" +
			"nothing is fetched: a remote base is refused. DIR defaults to the current directory.",
		Example: `  # Print what apply -k would apply
  dockctl kustomize overlays/prod

  # Apply it
  dockctl apply -k overlays/prod`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			data, err := kustomize.Build(dir)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
}
