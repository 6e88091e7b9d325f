package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// globalOptions are the flags every command has (DESIGN §5): a flag wins over
// its environment variable, which wins over the default.
type globalOptions struct {
	stateDir string
	instance string
	// namespace is -n/--namespace: the namespace of the objects a
	// command names, and of those of a file that name none. nsGiven tells
	// whether it was given (an object of a file in another namespace is
	// then an error, as in kubectl).
	namespace string
	nsGiven   func() bool
}

func newRootCommand() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "dockctl",
		Short: "Keep Docker containers matching declared Deployments",
		Long: "dockctl keeps plain Docker containers matching Kubernetes-style Deployment manifests:\n" +
			"`dockctl apply` records the desired state, `dockctl controller` keeps it true.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: `  # Record the desired state of a directory of manifests, and keep it true
  dockctl apply -f k8s/
  dockctl controller

  # See what runs, in every namespace
  dockctl get pods -A`,
	}
	root.PersistentFlags().StringVar(&g.stateDir, "state-dir", envOr("DOCKCTL_STATE_DIR", store.DefaultDir()), "state directory (env DOCKCTL_STATE_DIR)")
	root.PersistentFlags().StringVar(&g.instance, "instance", envOr("DOCKCTL_INSTANCE", "default"), "controller instance (env DOCKCTL_INSTANCE)")
	// As kubectl's: on every command, "default" unless given; no variable
	// (kubectl's comes from a kubeconfig context, which dockctl has not).
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", manifests.DefaultNamespace,
		"namespace of the objects named, and of the objects of files that name none")
	g.nsGiven = func() bool { return root.PersistentFlags().Changed("namespace") }
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return validNamespace(g.namespace) }
	root.AddCommand(
		newApplyCommand(g), newDiffCommand(g), newGetCommand(g), newDescribeCommand(g),
		newScaleCommand(g), newDeleteCommand(g), newLogsCommand(g), newControllerCommand(g),
		newVersionCommand(g), newRolloutCommand(g), newCreateCommand(g), newHelperCommand(),
		newSetCommand(g), newLabelCommand(g), newAnnotateCommand(g), newCompletionCommand(),
		newPatchCommand(g), newEditCommand(g), newEventsCommand(g), newWaitCommand(g),
		newExecCommand(g), newPortForwardCommand(g),
	)
	registerCompletions(root, g)
	return root
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// openStore opens the state directory for writing.
func (g *globalOptions) openStore() (*store.Store, error) {
	if err := validInstance(g.instance); err != nil {
		return nil, err
	}
	return store.Open(g.stateDir, g.instance)
}

// readStore opens the state directory for reading; a missing one is empty.
func (g *globalOptions) readStore() (*store.Store, error) {
	if err := validInstance(g.instance); err != nil {
		return nil, err
	}
	return store.OpenReadOnly(g.stateDir, g.instance)
}

// docker connects to the engine and checks that it answers, so that an
// unreachable daemon is one clear line rather than an error deep in a command.
func (g *globalOptions) docker(ctx context.Context) (*dockerx.Client, error) {
	cli, err := dockerx.NewClient()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

func validInstance(s string) error {
	if s == "" || len(s) > 63 {
		return fmt.Errorf("invalid instance %q: must be 1-63 characters", s)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '-' && i > 0 && i < len(s)-1)
		if !ok {
			return fmt.Errorf("invalid instance %q: lower-case letters, digits and inner '-' only", s)
		}
	}
	return nil
}

// validNamespace checks a namespace given with -n: a DNS-1123 label, as
// Kubernetes requires.
func validNamespace(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("invalid namespace %q: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// nsExplicit reports whether -n was given.
func (g *globalOptions) nsExplicit() bool { return g.nsGiven != nil && g.nsGiven() }

// where words where a command looked: the instance (as every message of
// earlier releases did) for the default namespace and for all namespaces
// (ns ""), the namespace and instance for any other.
func (g *globalOptions) where(ns string) string {
	if ns == "" || ns == manifests.DefaultNamespace {
		return fmt.Sprintf("instance %q", g.instance)
	}
	return fmt.Sprintf("namespace %q of instance %q", ns, g.instance)
}

// notFound words a store miss of a deployment of -n's namespace the same
// way in every command.
func notFound(g *globalOptions, name string, err error) error {
	return notFoundIn(g, store.KindDeployment, g.namespace, name, err)
}

// notFoundIn is notFound for an object of any kind and namespace.
func notFoundIn(g *globalOptions, kind, ns, name string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if kind == store.KindNamespace {
		return fmt.Errorf("namespaces %q not found in instance %q", name, g.instance)
	}
	return fmt.Errorf("%s %q not found in %s", strings.ToLower(kind), name, g.where(ns))
}

// deploymentCommand is a command about one deployment: it accepts
// `deployment NAME` and `deployment/NAME` and hands run the name.
func deploymentCommand(use, short string, run func(cmd *cobra.Command, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			return run(cmd, name)
		},
	}
}

// updateDeployment applies fn to the stored deployment under the state
// directory's write lock.
// It is recorded as a change by updater, the command's name (scale, set
// image, rollout): the deployment's manager stays.
func (g *globalOptions) updateDeployment(updater, name string, fn func(*store.Record, *manifests.Deployment) error) error {
	st, err := g.openStore()
	if err != nil {
		return err
	}
	if _, err := st.UpdateRecordAs(updater, g.namespace, name, fn); err != nil {
		return notFound(g, name, err)
	}
	return nil
}

// deploymentArg accepts "deployment NAME", "deployment/NAME" and the short
// forms kubectl accepts ("deploy", "deployments").
func deploymentArg(args []string) (string, error) {
	_, name, err := resourceArg(args, kindDeployment)
	return name, err
}

// Resource kinds the commands name, and the forms kubectl accepts for them.
const (
	kindDeployment = "deployment"
	kindPod        = "pod"
	kindService    = "service"
	kindNamespace  = "namespace"
	kindEndpoints  = "endpoints"
	kindContainer  = "container"
)

var kindAliases = map[string]string{
	"deployment": kindDeployment, "deployments": kindDeployment, "deploy": kindDeployment,
	"deployment.apps": kindDeployment, "deployments.apps": kindDeployment, // what get -o name prints, as kubectl
	"pod": kindPod, "pods": kindPod, "po": kindPod,
	"service": kindService, "services": kindService, "svc": kindService,
	"namespace": kindNamespace, "namespaces": kindNamespace, "ns": kindNamespace,
	"endpoints": kindEndpoints, "endpoint": kindEndpoints, "ep": kindEndpoints,
	"container": kindContainer, "containers": kindContainer,
	"configmap": kindConfigMap, "configmaps": kindConfigMap, "cm": kindConfigMap,
	"secret": kindSecret, "secrets": kindSecret,
	"persistentvolumeclaim": kindClaim, "persistentvolumeclaims": kindClaim, "pvc": kindClaim, "pvcs": kindClaim,
	"manifests": kindManifests, "manifestssource": kindManifests, "manifestssources": kindManifests,
	"event": kindEvent, "events": kindEvent, "ev": kindEvent,
}

// resourceArg accepts "KIND NAME" and "KIND/NAME" for one of kinds (in any
// of kubectl's spellings, kindAliases) and returns the kind, normalized,
// and the name.
func resourceArg(args []string, kinds ...string) (kind, name string, err error) {
	isKind := func(s string) (string, bool) {
		k := kindAliases[s]
		for _, want := range kinds {
			if k == want {
				return k, true
			}
		}
		return "", false
	}
	forms := make([]string, 0, 2*len(kinds))
	for _, k := range kinds {
		forms = append(forms, "`"+k+" NAME`", "`"+k+"/NAME`")
	}
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		k, n, _ := strings.Cut(args[0], "/")
		kind, ok := isKind(k)
		if !ok || n == "" {
			slashed := make([]string, len(kinds))
			for i, k := range kinds {
				slashed[i] = k + "/NAME"
			}
			return "", "", fmt.Errorf("expected %s, got %q", strings.Join(slashed, " or "), args[0])
		}
		return kind, n, nil
	case len(args) == 2:
		if kind, ok := isKind(args[0]); ok {
			return kind, args[1], nil
		}
	}
	return "", "", fmt.Errorf("expected %s", strings.Join(forms, " or "))
}
