package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// globalOptions are the flags every command has (the instance and state
// directory of docs/design.md §2 and §5): a flag wins over its environment
// variable, which wins over the default.
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
	// A flag wins over its variable, which wins over the current
	// context of the configuration file (config.go), which wins over the
	// default: resolved here, so that completions see the same values.
	// A configuration that cannot be read fails every command but those
	// that never read it (readsConfig).
	cfg, _, cfgErr := loadConfig()
	ctx := cfg.current()
	root.PersistentFlags().StringVar(&g.stateDir, "state-dir", envOr("DOCKCTL_STATE_DIR", store.DefaultDir()), "state directory (env DOCKCTL_STATE_DIR)")
	root.PersistentFlags().StringVar(&g.instance, "instance", resolveSetting("DOCKCTL_INSTANCE", ctx.Instance, "default"),
		"controller instance (env DOCKCTL_INSTANCE, then the current context's: dockctl config)")
	// As kubectl's -n: on every command; unless given, the variable's or
	// the current context's (kubectl's comes from its kubeconfig context),
	// else "default". Only the flag makes it explicit (nsGiven), as
	// kubectl enforces -n's namespace only.
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", resolveSetting("DOCKCTL_NAMESPACE", ctx.Namespace, manifests.DefaultNamespace),
		"namespace of the objects named, and of the objects of files that name none (env DOCKCTL_NAMESPACE, then the current context's: dockctl config)")
	g.nsGiven = func() bool { return root.PersistentFlags().Changed("namespace") }
	// As kubectl: an unknown flag or a flag's bad value, then where to
	// read about the command's flags. The unknown command's error is
	// cobra's (execute prints its suggestions as kubectl does).
	root.SetFlagErrorFunc(flagError)
	root.SuggestionsMinimumDistance = 2
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cfgErr != nil && readsConfig(cmd) {
			return cfgErr
		}
		return validNamespace(g.namespace)
	}
	root.AddCommand(
		newApplyCommand(g), newDiffCommand(g), newGetCommand(g), newDescribeCommand(g),
		newScaleCommand(g), newDeleteCommand(g), newLogsCommand(g), newControllerCommand(g),
		newVersionCommand(g), newRolloutCommand(g), newCreateCommand(g), newKustomizeCommand(), newExposeCommand(g), newRunCommand(g), newHelperCommand(),
		newSetCommand(g), newLabelCommand(g), newAnnotateCommand(g), newCompletionCommand(),
		newPatchCommand(g), newEditCommand(g), newEventsCommand(g), newWaitCommand(g),
		newTopCommand(g), newExplainCommand(), newExecCommand(g), newPortForwardCommand(g),
		newInstallCommand(g), newUninstallCommand(g), newConvertCommand(g), newAPIResourcesCommand(), newConfigCommand(), newCpCommand(g),
	)
	registerCompletions(root, g)
	return root
}

// readsConfig tells whether cmd uses what the configuration file sets
// (the namespace, the instance and with it the state): a file that
// cannot be read fails those commands only, as a broken kubeconfig fails
// only the kubectl commands that load it, never completion, version
// --client or help. config's own commands read the file themselves and
// name what is wrong with it.
func readsConfig(cmd *cobra.Command) bool {
	top := cmd
	for top.HasParent() && top.Parent() != cmd.Root() {
		top = top.Parent()
	}
	switch top.Name() {
	case "config", "version", "completion", "help", "explain", "api-resources", "kustomize", "helper":
		return top == cmd.Root()
	}
	return true
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
func (g *globalOptions) docker(ctx context.Context, opts ...dockerx.Option) (*dockerx.Client, error) {
	cli, err := dockerx.NewClient(opts...)
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

// The words of kubectl's errors and notices, in one place. dockctl prints
// kubectl's line for the same situation; where it has more to say (the
// namespace or instance it looked in, when not "default") it says it at
// the end of the same line, so that what matches kubectl's words (grep
// NotFound, grep 'not found', grep 'No resources found') matches dockctl's.

// lookedIn is what dockctl adds after kubectl's words about an object it
// did not find in namespace ns ("" for a kind without one): nothing in
// the default namespace of the default instance.
func (g *globalOptions) lookedIn(ns string) string {
	otherNS := ns != "" && ns != manifests.DefaultNamespace
	otherInstance := g.instance != "default"
	switch {
	case otherNS && otherInstance:
		return fmt.Sprintf(" in namespace %q of instance %q", ns, g.instance)
	case otherNS:
		return fmt.Sprintf(" in namespace %q", ns)
	case otherInstance:
		return fmt.Sprintf(" in instance %q", g.instance)
	}
	return ""
}

// notFound words a store miss of a deployment of -n's namespace the same
// way in every command.
func notFound(g *globalOptions, name string, err error) error {
	return notFoundIn(g, store.KindDeployment, g.namespace, name, err)
}

// notFoundIn is notFound for an object of any kind (the store's or the
// CLI's word) and namespace: kubectl's
//
//	Error from server (NotFound): deployments.apps "web" not found
//
// err is returned as it is unless it is a store.ErrNotFound.
func notFoundIn(g *globalOptions, kind, ns, name string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	r := apiResourceOf(kind)
	if !r.namespaced {
		ns = ""
	}
	return &apiError{reason: "NotFound", err: store.ErrNotFound,
		msg: fmt.Sprintf("%s %q not found%s", r.qualified(), name, g.lookedIn(ns))}
}

// alreadyExists is kubectl create's error for an object that exists.
func alreadyExists(kind, name string) error {
	return &apiError{reason: "AlreadyExists", msg: fmt.Sprintf("%s %q already exists", apiResourceOf(kind).qualified(), name)}
}

// badSelector is the API server's refusal of an invalid -l of a listing
// of kind (get, delete -l), as kubectl prints it.
func badSelector(kind, selector string, err error) error {
	return &apiError{reason: "BadRequest", err: err,
		msg: fmt.Sprintf("Unable to find %q that match label selector %q, field selector %q: %v", apiResourceOf(kind).gvr(), selector, "", err)}
}

// checkSelector refuses an invalid -l of a listing of kind as the API
// server does (badSelector).
func checkSelector(kind, selector string) error {
	if _, err := labels.Parse(selector); err != nil {
		return badSelector(kind, selector, err)
	}
	return nil
}

// noResources prints kubectl get's notice of an empty listing of
// namespace ns ("" for every namespace, or a kind without one).
func (g *globalOptions) noResources(w io.Writer, ns string) {
	g.nothingFound(w, "resources", ns, "")
}

// nothingFound prints kubectl's "No WHAT found in NS namespace." (all
// namespaces: "No WHAT found" and then allEnd, "." for events), and the
// instance when not the default one.
func (g *globalOptions) nothingFound(w io.Writer, what, ns, allEnd string) {
	instance := ""
	if g.instance != "default" {
		instance = fmt.Sprintf(" of instance %q", g.instance)
	}
	if ns == "" {
		if instance != "" {
			instance = fmt.Sprintf(" in instance %q", g.instance)
		}
		fmt.Fprintf(w, "No %s found%s%s\n", what, instance, allEnd)
		return
	}
	fmt.Fprintf(w, "No %s found in %s namespace%s.\n", what, ns, instance)
}

// apiResource is a kind as the API server names it in kubectl's
// messages.
type apiResource struct {
	kind, resource, group, version string
	namespaced                     bool
}

// apiResourceOf finds kind, a CLI word (kindAliases) or the store's
// (Deployment, ConfigMap…); an unknown one is named as it is.
func apiResourceOf(kind string) apiResource {
	k := strings.ToLower(kind)
	if a, ok := kindAliases[k]; ok {
		k = a
	}
	if r, ok := apiResources[k]; ok {
		return r
	}
	return apiResource{kind: kind, resource: k, version: "v1", namespaced: true}
}

// qualified is the resource as a NotFound names it: deployments.apps,
// services.
func (r apiResource) qualified() string {
	if r.group == "" {
		return r.resource
	}
	return r.resource + "." + r.group
}

// groupKind is kubectl's GroupKind: Deployment.apps, Service.
func (r apiResource) groupKind() string {
	if r.group == "" {
		return r.kind
	}
	return r.kind + "." + r.group
}

// gvr is client-go's GroupVersionResource: "apps/v1, Resource=deployments".
func (r apiResource) gvr() string {
	return fmt.Sprintf("%s/%s, Resource=%s", r.group, r.version, r.resource)
}

// unknownResourceType is kubectl's error for a kind it does not know.
func unknownResourceType(kind string) error {
	return fmt.Errorf("the server doesn't have a resource type %q", kind)
}

// errMissingResource is the error of kubectl's resource builder when a
// command is given no object at all.
var errMissingResource = &hintError{err: errors.New("You must provide one or more resources by argument or filename."),
	hint: `Example resource specifications include:
   '-f rsrc.yaml'
   '--filename=rsrc.json'
   '<resource> <name>'
   '<resource>'`}

// usageErrorf is kubectl's cmdutil.UsageErrorf: the error, then "See
// 'dockctl CMD -h' for help and examples". Its lines after the first are
// printed as they are, "error: " before the first only, as kubectl
// prints the whole message after one "error: ".
func usageErrorf(cmd *cobra.Command, format string, a ...any) error {
	first, rest, _ := strings.Cut(fmt.Sprintf(format, a...), "\n")
	hint := seeHelp(cmd)
	if rest != "" {
		hint = rest + "\n" + hint
	}
	return &hintError{err: errors.New(first), hint: hint}
}

func seeHelp(cmd *cobra.Command) string {
	return fmt.Sprintf("See '%s -h' for help and examples", cmd.CommandPath())
}

// flagError is kubectl's FlagErrorFunc: an unknown flag, or a flag's
// invalid value, then "See 'dockctl CMD --help' for usage.".
func flagError(cmd *cobra.Command, err error) error {
	return &hintError{err: err, hint: fmt.Sprintf("See '%s --help' for usage.", cmd.CommandPath())}
}

// suggestAPIResources is kubectl's pointer to the list of the kinds
// (api-resources; a root without it, as some tests build, points at the
// command's help, which names its kinds).
func suggestAPIResources(cmd *cobra.Command) string {
	if siblingExists(cmd.Root(), "api-resources") {
		return fmt.Sprintf("Use \"%s api-resources\" for a complete list of supported resources.", cmd.Root().Name())
	}
	return fmt.Sprintf("Use \"%s --help\" for a complete list of supported resources.", cmd.CommandPath())
}

// siblingExists tells whether parent has a subcommand called name.
func siblingExists(parent *cobra.Command, name string) bool {
	for _, c := range parent.Commands() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

// subcommandsOnly is the Run of a command that only groups others
// (rollout, set), as kubectl's DefaultSubCommandRun: an argument is an
// unknown command; none prints the help (on stdout with toStdout, else
// on stderr) and exits 1.
func subcommandsOnly(toStdout bool) func(cmd *cobra.Command, args []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErrorf(cmd, "unknown command %q", strings.Join(args, " "))
		}
		if !toStdout {
			cmd.SetOut(cmd.ErrOrStderr())
		}
		if err := cmd.Help(); err != nil {
			return err
		}
		return &exitError{code: 1}
	}
}

// deploymentCommand is a command about one deployment: it accepts
// `deployment NAME` and `deployment/NAME` and hands run the name.
func deploymentCommand(use, short string, run func(cmd *cobra.Command, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && cmd.Parent().Name() == "rollout" {
				return errors.New("required resource not specified") // kubectl rollout's words
			}
			name, err := deploymentArg(args)
			if err != nil {
				return refuseKind(cmd, err)
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
		return unwrapPlain(notFound(g, name, err))
	}
	return nil
}

// deploymentArg accepts "deployment NAME", "deployment/NAME" and the short
// forms kubectl accepts ("deploy", "deployments").
func deploymentArg(args []string) (string, error) {
	_, name, err := resourceArg(args, kindDeployment)
	return name, err
}

// kindAlias is the CLI's kind of word, one of kubectl's spellings in any
// case (kubectl's REST mapper lower-cases a resource: `get Deployments`).
func kindAlias(word string) (string, bool) {
	kind, ok := kindAliases[strings.ToLower(word)]
	return kind, ok
}

// resourceArg reads kubectl's "KIND NAME" or "KIND/NAME" for one object of
// one of kinds (in any of kubectl's spellings, kindAliases) and returns
// the kind, normalized, and the name; objectArgs words its errors.
func resourceArg(args []string, kinds ...string) (kind, name string, err error) {
	objs, err := objectArgs(args, kinds...)
	switch {
	case err != nil:
		return "", "", err
	case objs[0].name == "":
		return "", "", errors.New("resource(s) were provided, but no name was specified")
	case len(objs) > 1:
		return "", "", errors.New("you must specify only one resource")
	}
	return objs[0].kind, objs[0].name, nil
}

// objectArg is an object named on the command line: a kind (normalized)
// and a name ("" when only the kind is given).
type objectArg struct{ kind, name string }

// objectArgs reads kubectl's arguments for objects, as its resource
// builder does: "KIND NAME…", "KIND/NAME…", or "KIND" alone (one
// objectArg without a name), each kind one of kinds; KIND may be several,
// "KIND1,KIND2" (the objects of each in turn). Its errors are the
// builder's; a kind dockctl knows that is not one of kinds is a
// *kindError.
func objectArgs(args []string, kinds ...string) ([]objectArg, error) {
	kindOf := func(word, name string) (string, error) {
		kind, known := kindAlias(word)
		if !known {
			return "", unknownResourceType(word)
		}
		if !slices.Contains(kinds, kind) {
			return "", &kindError{kind: kind, name: name, want: kinds}
		}
		return kind, nil
	}
	slashed := 0
	for _, a := range args {
		if strings.Contains(a, "/") {
			slashed++
		}
	}
	var out []objectArg
	switch {
	case len(args) == 0:
		return nil, errMissingResource
	case slashed == len(args):
		for _, a := range args {
			word, name, _ := strings.Cut(a, "/")
			if strings.Contains(name, "/") {
				return nil, errors.New("arguments in resource/name form may not have more than one slash")
			}
			if word == "" || name == "" {
				return nil, errors.New("arguments in resource/name form must have a single resource and name")
			}
			kind, err := kindOf(word, name)
			if err != nil {
				return nil, err
			}
			out = append(out, objectArg{kind, name})
		}
	case slashed > 0:
		return nil, errors.New("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form " +
			"(e.g. 'dockctl get resource/<resource_name>' instead of 'dockctl get resource resource/<resource_name>'")
	default:
		name := ""
		if len(args) > 1 {
			name = args[1]
		}
		// TYPE1,TYPE2: each kind in turn, with every name.
		for _, word := range strings.Split(args[0], ",") {
			kind, err := kindOf(word, name)
			if err != nil {
				return nil, err
			}
			if len(args) == 1 {
				out = append(out, objectArg{kind: kind})
			}
			for _, n := range args[1:] {
				out = append(out, objectArg{kind, n})
			}
		}
	}
	return out, nil
}

// kindError is a kind dockctl knows given to a command that does not act
// on it (kubectl's own commands act on more kinds, or word it each their
// way: refuseKind).
type kindError struct {
	kind string
	// name is the object's, for refuseKind's words.
	name string
	want []string
}

func (e *kindError) Error() string {
	want := make([]string, len(e.want))
	for i, k := range e.want {
		want[i] = apiResourceOf(k).resource
	}
	list := want[0]
	if n := len(want); n > 1 {
		list = strings.Join(want[:n-1], ", ") + " or " + want[n-1]
	}
	return fmt.Sprintf("%s are not supported here: expected %s", apiResourceOf(e.kind).resource, list)
}

// kindRefusals are kubectl's words when a command about deployments is
// given an object of another kind it knows, by command (path without
// "dockctl "). kubectl finds the object first (a missing one is then a
// NotFound); dockctl does not look it up. scale's are dockctl's: kubectl's
// is the server's reply to a request for a scale subresource the kind
// lacks ("Error from server (NotFound): the server could not find the
// requested resource").
var kindRefusals = map[string]func(r apiResource, name string) string{
	"scale": func(r apiResource, name string) string {
		return fmt.Sprintf("%s %q cannot be scaled: only deployments have replicas here", r.qualified(), name)
	},
	"rollout status": func(r apiResource, _ string) string {
		return "no status viewer has been implemented for " + r.groupKind()
	},
	"rollout history": func(r apiResource, _ string) string {
		return fmt.Sprintf("no history viewer has been implemented for %q", r.groupKind())
	},
	"rollout undo": func(r apiResource, _ string) string {
		return fmt.Sprintf("no rollbacker has been implemented for %q", r.groupKind())
	},
	"rollout restart": func(r apiResource, name string) string {
		return fmt.Sprintf("%s %q restarting is not supported", r.qualified(), name)
	},
	"rollout pause": func(r apiResource, name string) string {
		return fmt.Sprintf("%s %q pausing is not supported", r.qualified(), name)
	},
	"rollout resume": func(r apiResource, name string) string {
		return fmt.Sprintf("%s %q resuming is not supported", r.qualified(), name)
	},
	"set env":       notTemplated,
	"set resources": notTemplated,
	"set image": func(r apiResource, name string) string {
		if r.kind == "Pod" {
			return "" // kubectl sets a pod's image; dockctl's pods are its deployments'
		}
		return fmt.Sprintf("%s/%s the object is not a pod or does not have a pod template: *v1.%s", r.resource, name, r.kind)
	},
}

// notTemplated is kubectl set's refusal of an object without a pod
// template.
func notTemplated(r apiResource, name string) string {
	return fmt.Sprintf("%s/%s the object is not a pod or does not have a pod template: *v1.%s", r.resource, name, r.kind)
}

// refuseKind words a kindError of cmd as kubectl's cmd does
// (kindRefusals); any other error is returned as it is.
func refuseKind(cmd *cobra.Command, err error) error {
	var ke *kindError
	if !errors.As(err, &ke) {
		return err
	}
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	if f, ok := kindRefusals[path]; ok {
		if msg := f(apiResourceOf(ke.kind), ke.name); msg != "" {
			return errors.New(msg)
		}
	}
	return err
}
