package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func newSetCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set image|env|resources KIND/NAME …",
		Short: "Change fields of stored objects (set image, set env, set resources)",
		Example: `  # Roll out a new image of container web of deployment web
  dockctl set image deployment/web web=registry.example/web:1.2`,
		RunE: subcommandsOnly(false), // kubectl set's help goes to stderr
	}
	cmd.AddCommand(newSetImageCommand(g), newSetEnvCommand(g), newSetResourcesCommand(g))
	return cmd
}

func newSetImageCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "image deployment/NAME CONTAINER=IMAGE [CONTAINER=IMAGE…]",
		Short: "Change the image of containers of a deployment's pod template (a new revision, rolled out)",
		Long: "Change the image of containers (init containers too) of a deployment's pod template, as\n" +
			"`kubectl set image`: a new revision, rolled out as any change. `*=IMAGE` sets every container's.",
		Example: `  # Roll out a new image of container web
  dockctl set image deployment/web web=registry.example/web:1.2

  # Two containers (an init container among them) at once
  dockctl set image deploy web web=web:1.2 migrate=migrate:1.2

  # Every container and init container of api, in namespace team
  dockctl set image deployment/api '*=api:2' -n team`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var resource []string
			images := map[string]string{}
			var order []string
			for _, a := range args {
				if !strings.Contains(a, "=") {
					resource = append(resource, a)
					continue
				}
				c, img, _ := strings.Cut(a, "=")
				if c == "" {
					// kubectl's words; an empty image is the validation's.
					return fmt.Errorf("invalid image format: %s", a)
				}
				if _, dup := images[c]; !dup {
					order = append(order, c)
				}
				images[c] = img
			}
			// kubectl's words, in its order.
			if len(resource) == 0 {
				return fmt.Errorf("one or more resources must be specified as <resource> <name> or <resource>/<name>")
			}
			if len(images) == 0 {
				return fmt.Errorf("at least one image update is required")
			}
			if _, all := images["*"]; all && len(images) > 1 {
				return fmt.Errorf("all containers are already specified by *, but saw more than one container_name=container_image pairs")
			}
			name, err := deploymentArg(resource)
			if err != nil {
				return refuseKind(cmd, err)
			}
			changed := false
			err = g.updateDeployment("set image", name, func(_ *store.Record, d *manifests.Deployment) error {
				changed = false
				ps := &d.Spec.Template.Spec
				var missing []string
				for _, c := range order {
					found := false
					for _, ct := range ps.AllContainers() {
						if c == "*" || ct.Name == c {
							found = true
							if ct.Image != images[c] {
								ct.Image = images[c]
								changed = true
							}
						}
					}
					if !found {
						missing = append(missing, c)
					}
				}
				if len(missing) > 0 {
					sort.Strings(missing)
					msgs := make([]string, len(missing))
					for i, c := range missing {
						// kubectl's words; nothing is changed.
						msgs[i] = fmt.Sprintf("unable to find container named %q", c)
					}
					return plainError(strings.Join(msgs, "\n"))
				}
				return manifests.Validate(d)
			})
			if err != nil {
				return unwrapPlain(err)
			}
			// As kubectl: an update that changes nothing prints nothing.
			if changed {
				fmt.Fprintf(cmd.OutOrStdout(), "deployment.apps/%s image updated\n", name)
			}
			return nil
		},
	}
}

// plainError is an error a command prints as it is, without the
// `deployment "x":` the store prefixes to the errors of an update.
type plainError string

func (e plainError) Error() string { return string(e) }

// unwrapPlain returns the plainError inside err, or err.
func unwrapPlain(err error) error {
	var p plainError
	if errors.As(err, &p) {
		return p
	}
	return err
}
