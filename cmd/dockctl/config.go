package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
)

// dockctl's configuration file, its kubeconfig: contexts, each a default
// namespace and instance, and the current one. It is one small YAML file,
// $DOCKCTL_CONFIG, else ${XDG_CONFIG_HOME:-~/.config}/dockctl/config.yaml;
// a missing file is an empty configuration. Every global setting is, in
// order of precedence: its flag, its environment variable
// (DOCKCTL_INSTANCE, DOCKCTL_NAMESPACE), the current context's, its
// default (resolveSetting).

// cliConfig is the configuration file, shaped as a kubeconfig's contexts.
type cliConfig struct {
	CurrentContext string         `json:"current-context,omitempty"`
	Contexts       []namedContext `json:"contexts,omitempty"`
}

type namedContext struct {
	Name    string         `json:"name"`
	Context contextDetails `json:"context"`
}

// contextDetails are a context's defaults; instance is dockctl's own
// (kubectl's context names a cluster and a user).
type contextDetails struct {
	Namespace string `json:"namespace,omitempty"`
	Instance  string `json:"instance,omitempty"`
}

// configPath is where the configuration file is; "" when there is no
// home to hold it ($HOME unset, as in the controller's FROM scratch
// container, docs/cli.md install): then there is none, and every command
// but config's works without.
func configPath() string {
	if p := os.Getenv("DOCKCTL_CONFIG"); p != "" {
		return p
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "dockctl", "config.yaml")
}

// errNoConfigPath is config's error when there is no file to change.
var errNoConfigPath = errors.New("no configuration file: set DOCKCTL_CONFIG, XDG_CONFIG_HOME or HOME")

// loadConfig reads the configuration file; a missing one (or none, with
// no home) is empty.
func loadConfig() (*cliConfig, string, error) {
	p := configPath()
	if p == "" {
		return &cliConfig{}, "", nil
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &cliConfig{}, p, nil
	}
	if err != nil {
		return nil, p, fmt.Errorf("reading the configuration: %w", err)
	}
	c := &cliConfig{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, p, fmt.Errorf("configuration %s: %w", p, err)
	}
	return c, p, nil
}

// save writes c to p, whole and atomically (a rename); modifyConfig,
// its one caller, has made p's directory.
func (c *cliConfig) save(p string) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	return nil
}

// modifyConfig loads the configuration, has change change it and saves
// it, holding an exclusive lock on PATH.lock throughout, as kubectl's
// clientcmd.ModifyConfig locks the kubeconfig: two commands changing the
// file at once (config set-context in two shells, a script's parallel
// steps) both land, neither saving over the other's change.
func modifyConfig(change func(c *cliConfig) error) error {
	p := configPath()
	if p == "" {
		return errNoConfigPath
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	lock, err := os.OpenFile(p+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking the configuration: %w", err)
	}
	defer lock.Close() // closing drops the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the configuration: %w", err)
	}
	c, p, err := loadConfig()
	if err != nil {
		return err
	}
	if err := change(c); err != nil {
		return err
	}
	return c.save(p)
}

// context is the context called name; nil for none.
func (c *cliConfig) context(name string) *namedContext {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i]
		}
	}
	return nil
}

// current is the current context's details (empty for none).
func (c *cliConfig) current() contextDetails {
	if c == nil {
		return contextDetails{}
	}
	if ctx := c.context(c.CurrentContext); ctx != nil {
		return ctx.Context
	}
	return contextDetails{}
}

// resolveSetting is a global setting's value when its flag is not given:
// its environment variable's, else the current context's, else def.
func resolveSetting(env, fromConfig, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	if fromConfig != "" {
		return fromConfig
	}
	return def
}

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config SUBCOMMAND",
		Short: "Show or change dockctl's configuration file: contexts, each a default namespace and instance",
		Long: "Show or change dockctl's configuration file ($DOCKCTL_CONFIG, else ${XDG_CONFIG_HOME:-~/.config}/dockctl/config.yaml),\n" +
			"as kubectl config does a kubeconfig. Its contexts hold a default namespace and instance (dockctl's own): a\n" +
			"flag wins over its environment variable (DOCKCTL_NAMESPACE, DOCKCTL_INSTANCE), which wins over the current\n" +
			"context's value, which wins over \"default\".",
		Example: `  # Work in namespace team from now on
  dockctl config set-context --current --namespace=team

  # Talk to instance ci by default
  dockctl config set-context --current --instance=ci

  # Show the configuration
  dockctl config view`,
		RunE: subcommandsOnly(false),
	}
	cmd.AddCommand(newConfigSetContextCommand(), newConfigViewCommand(), newConfigCurrentContextCommand(),
		newConfigUseContextCommand(), newConfigGetContextsCommand())
	return cmd
}

func newConfigSetContextCommand() *cobra.Command {
	var (
		current             bool
		namespace, instance string
	)
	cmd := &cobra.Command{
		Use:   "set-context [NAME | --current] [--namespace=NAMESPACE] [--instance=INSTANCE]",
		Short: "Create or change a context: its default namespace and instance",
		Long: "Create or change a context, as kubectl config set-context. --current changes the current context; when\n" +
			"there is none, it creates the context \"default\" and makes it current (kubectl would refuse: dockctl's\n" +
			"file starts empty). An empty value (--namespace=) removes the setting.",
		Example: `  # Work in namespace team from now on
  dockctl config set-context --current --namespace=team

  # A context of its own for instance ci, then switch to it
  dockctl config set-context ci --instance=ci --namespace=build
  dockctl config use-context ci`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if current && len(args) > 0 {
				return usageErrorf(cmd, "you cannot specify both a context name and --current")
			}
			if !current && len(args) != 1 {
				return usageErrorf(cmd, "Unexpected args: %v", args)
			}
			// Flags are checked as -n and --instance check them.
			if cmd.Flags().Changed("namespace") && namespace != "" {
				if err := validNamespace(namespace); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("instance") && instance != "" {
				if err := validInstance(instance); err != nil {
					return err
				}
			}
			name, verb := "", ""
			err := modifyConfig(func(c *cliConfig) error {
				if current {
					name = c.CurrentContext
					if name == "" {
						name = manifests.DefaultNamespace
						c.CurrentContext = name
					}
				} else {
					name = args[0]
				}
				ctx := c.context(name)
				verb = "modified"
				if ctx == nil {
					c.Contexts = append(c.Contexts, namedContext{Name: name})
					ctx = &c.Contexts[len(c.Contexts)-1]
					verb = "created"
				}
				if cmd.Flags().Changed("namespace") {
					ctx.Context.Namespace = namespace
				}
				if cmd.Flags().Changed("instance") {
					ctx.Context.Instance = instance
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Context %q %s.\n", name, verb) // kubectl's words
			return nil
		},
	}
	cmd.Flags().BoolVar(&current, "current", false, "change the current context")
	// Local flags shadow the global -n and --instance here: they are
	// what the context stores, not where this command acts.
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the context's default namespace")
	cmd.Flags().StringVar(&instance, "instance", "", "the context's default instance (dockctl's own)")
	return cmd
}

func newConfigViewCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "view [-o yaml|json]",
		Short: "Print the configuration file",
		Example: `  # The configuration, as YAML
  dockctl config view

  # The configuration, as JSON
  dockctl config view -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := loadConfig()
			if err != nil {
				return err
			}
			obj := map[string]any{"apiVersion": "v1", "kind": "Config", "current-context": c.CurrentContext, "contexts": c.Contexts}
			if c.Contexts == nil {
				obj["contexts"] = []namedContext{}
			}
			switch output {
			case "yaml", "json":
				return printObjects(cmd.OutOrStdout(), output, []any{obj}, true)
			}
			return fmt.Errorf("--output %s is not available (yaml or json)", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "yaml or json")
	return cmd
}

func newConfigCurrentContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "current-context",
		Short: "Print the name of the current context",
		Example: `  # The current context's name
  dockctl config current-context`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := loadConfig()
			if err != nil {
				return err
			}
			if c.CurrentContext == "" {
				return errors.New("current-context is not set") // kubectl's words
			}
			fmt.Fprintln(cmd.OutOrStdout(), c.CurrentContext)
			return nil
		},
	}
}

func newConfigUseContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "use-context NAME",
		Short: "Make a context the current one",
		Example: `  # Switch to context ci
  dockctl config use-context ci`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := modifyConfig(func(c *cliConfig) error {
				if c.context(args[0]) == nil {
					return fmt.Errorf("no context exists with the name: %q", args[0]) // kubectl's words
				}
				c.CurrentContext = args[0]
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Switched to context %q.\n", args[0])
			return nil
		},
	}
}

func newConfigGetContextsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts, the current one marked *",
		Example: `  # Every context, with its namespace and instance
  dockctl config get-contexts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := loadConfig()
			if err != nil {
				return err
			}
			ctxs := append([]namedContext{}, c.Contexts...)
			sort.Slice(ctxs, func(i, j int) bool { return ctxs[i].Name < ctxs[j].Name })
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "CURRENT\tNAME\tNAMESPACE\tINSTANCE")
			for _, x := range ctxs {
				mark := ""
				if x.Name == c.CurrentContext {
					mark = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark, x.Name, x.Context.Namespace, x.Context.Instance)
			}
			return tw.Flush()
		},
	}
}
