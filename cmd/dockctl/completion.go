package main

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
)

// newCompletionCommand is `dockctl completion bash|zsh|fish|powershell`,
// cobra's generators under kubectl's name. Defining it keeps cobra from
// adding its default one, so that it has help and an example like the rest.
func newCompletionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or powershell",
		Long: "Print a script that makes the shell complete dockctl's commands, flags, kinds, object names\n" +
			"(from the state directory), namespaces (-n), containers (-c) and output formats (-o).\n\n" +
			"bash needs the bash-completion package; zsh needs `compinit` to have run.",
		Example: `  # bash: this shell, then every new one
  source <(dockctl completion bash)
  dockctl completion bash > ~/.local/share/bash-completion/completions/dockctl

  # zsh: this shell, then every new one
  source <(dockctl completion zsh)
  dockctl completion zsh > "${fpath[1]}/_dockctl"

  # fish
  dockctl completion fish > ~/.config/fish/completions/dockctl.fish`,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// kubectl's words.
			switch {
			case len(args) == 0:
				return usageErrorf(cmd, "Shell not specified.")
			case len(args) > 1:
				return usageErrorf(cmd, "Too many arguments. Expected only the shell type.")
			case !slices.Contains(cmd.ValidArgs, args[0]):
				return usageErrorf(cmd, "Unsupported shell type %q.", args[0])
			}
			out, root := cmd.OutOrStdout(), cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
}

// completionDockerTimeout bounds the Docker calls of a completion (the
// pods of `logs`, the containers of a pod): past it, nothing is offered.
const completionDockerTimeout = 1500 * time.Millisecond

// outputFormats are what get's -o accepts (newPrinter); the ones that take
// a value end with "=".
var outputFormats = []string{"table", "wide", "json", "yaml", "name", "jsonpath=", "jsonpath-as-json=", "custom-columns=", "custom-columns-file=", "go-template=", "go-template-file="}

// registerCompletions gives the commands of root their completions of
// arguments and flags. It never fails a completion: what cannot be read is
// not offered.
func registerCompletions(root *cobra.Command, g *globalOptions) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(g.completeNames(kindNamespace), toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("instance", cobra.NoFileCompletions)
	_ = root.RegisterFlagCompletionFunc("state-dir", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "get":
			cmd.ValidArgsFunction = g.kindThenName(getKinds, 2)
			_ = cmd.RegisterFlagCompletionFunc("output", completeOutput)
		case "describe", "delete":
			kinds := descKinds
			if cmd.Name() == "delete" {
				kinds = deleteKindWords
			}
			cmd.ValidArgsFunction = g.kindThenName(kinds, 2)
		case "label", "annotate":
			cmd.ValidArgsFunction = g.metaArgs()
		case "scale":
			cmd.ValidArgsFunction = g.kindThenName(deployKinds, 2)
		case "rollout":
			cmd.ValidArgsFunction = cobra.NoFileCompletions
			for _, sub := range cmd.Commands() {
				sub.ValidArgsFunction = g.kindThenName(deployKinds, 2)
			}
		case "set":
			for _, sub := range cmd.Commands() {
				sub.ValidArgsFunction = g.setImageArgs()
			}
		case "logs":
			cmd.ValidArgsFunction = g.logsArgs()
			_ = cmd.RegisterFlagCompletionFunc("container", g.completeLogsContainer)
		case "exec", "port-forward":
			// As logs': the pod (or deployment, or Service); then the
			// command or the ports are the user's.
			cmd.ValidArgsFunction = g.podTargetArgs()
			if cmd.Name() == "exec" {
				_ = cmd.RegisterFlagCompletionFunc("container", g.completeLogsContainer)
			}
		case "create":
			cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(args) == 0 {
					return []string{"namespace"}, cobra.ShellCompDirectiveNoFileComp
				}
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		case "top":
			// Its kinds are subcommands, which cobra completes; their names:
			for _, sub := range cmd.Commands() {
				sub.ValidArgsFunction = g.nameOfKind(kindAliases[sub.Name()])
				_ = sub.RegisterFlagCompletionFunc("sort-by", cobra.FixedCompletions([]string{"cpu", "memory"}, cobra.ShellCompDirectiveNoFileComp))
			}
		case "version", "controller", "diff", "apply", "install", "uninstall":
			cmd.ValidArgsFunction = cobra.NoFileCompletions
		}
	}
}

// nameOfKind completes one NAME of kind, for a command whose kind is its
// own name (top pods, top deployments).
func (g *globalOptions) nameOfKind(kind string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(g.completeNames(kind), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeOutput completes -o: a format that takes a value ends with "=",
// and when only such formats match no space follows.
func completeOutput(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	valued := true
	for _, f := range outputFormats {
		if strings.HasPrefix(f, toComplete) {
			out = append(out, f)
			valued = valued && strings.HasSuffix(f, "=")
		}
	}
	d := cobra.ShellCompDirectiveNoFileComp
	if len(out) > 0 && valued {
		d |= cobra.ShellCompDirectiveNoSpace
	}
	return out, d
}

// kindThenName completes `KIND NAME` and `KIND/NAME` for one of kinds, up
// to max arguments.
func (g *globalOptions) kindThenName(kinds []string, max int) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case len(args) >= max || (len(args) == 1 && strings.Contains(args[0], "/")):
			return nil, cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1:
			return withPrefix(g.namesOf(kinds, args[0]), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return g.kindsOrSlashed(kinds, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// kindsOrSlashed completes a first argument: the kinds, or with a "KIND/"
// typed, KIND/NAME for each object of it.
func (g *globalOptions) kindsOrSlashed(kinds []string, toComplete string) []string {
	if k, _, ok := strings.Cut(toComplete, "/"); ok {
		var out []string
		for _, n := range g.namesOf(kinds, k) {
			out = append(out, k+"/"+n)
		}
		return withPrefix(out, toComplete)
	}
	return kindWords(kinds, toComplete)
}

// kindWords are the kinds toComplete begins; when none of their plurals
// does, kubectl's other spellings (svc, deploy, pvc…) that it begins.
func kindWords(kinds []string, toComplete string) []string {
	var out []string
	for _, k := range kinds {
		if strings.HasPrefix(k, toComplete) {
			out = append(out, k)
		}
	}
	if len(out) > 0 {
		return out
	}
	for alias, k := range kindAliases {
		if strings.HasPrefix(alias, toComplete) && slices.Contains(kinds, pluralOf(k)) {
			out = append(out, alias)
		}
	}
	sort.Strings(out)
	return out
}

// pluralOf is the plural of the kinds of getKinds a normalized kind is.
func pluralOf(kind string) string {
	for _, k := range getKinds {
		if kindAliases[k] == kind {
			return k
		}
	}
	return ""
}

// namesOf names the objects of the kind word (any of kubectl's spellings)
// if it is one of kinds; nothing otherwise.
func (g *globalOptions) namesOf(kinds []string, word string) []string {
	kind := kindAliases[word]
	if kind == "" || !slices.Contains(kinds, pluralOf(kind)) {
		return nil
	}
	return g.completeNames(kind)
}

// completeNames lists the live objects of kind in -n's namespace: the
// kind's own lister of names (Docker's objects, bounded by
// completionDockerTimeout), else from the state directory. Errors give
// nothing.
func (g *globalOptions) completeNames(kind string) []string {
	k := kindByName(kind)
	switch {
	case k == nil:
		return nil
	case k.names != nil:
		return k.names(g)
	case k.store == "":
		return nil
	}
	st, err := g.readStore()
	if err != nil {
		return nil
	}
	refs, _ := selectObjects(st, k.store, g.namespace, labels.Everything())
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out
}

// completePodNames names the pods of -n's namespace, from Docker.
func (g *globalOptions) completePodNames() []string {
	snap := g.completionSnapshot()
	if snap == nil {
		return nil
	}
	var out []string
	for _, e := range snap.allPods() {
		if e.Namespace == g.namespace && !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// completeContainerNames names the containers of -n's namespace, from
// Docker.
func (g *globalOptions) completeContainerNames() []string {
	snap := g.completionSnapshot()
	if snap == nil {
		return nil
	}
	var out []string
	for _, c := range append(slices.Clip(snap.containers), snap.helpers...) {
		if containerNamespace(c) == g.namespace {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

// completeEndpointsNames names the endpoints: a service's have its name.
func (g *globalOptions) completeEndpointsNames() []string {
	return g.completeNames(kindService)
}

// completionSnapshot is a snapshot taken within completionDockerTimeout,
// or nil.
func (g *globalOptions) completionSnapshot() *snapshot {
	ctx, cancel := context.WithTimeout(context.Background(), completionDockerTimeout)
	defer cancel()
	done := make(chan *snapshot, 1)
	go func() {
		snap, err := takeSnapshot(ctx, g)
		if err != nil {
			snap = nil
		}
		done <- snap
	}()
	select {
	case snap := <-done:
		return snap
	case <-ctx.Done():
		return nil
	}
}

// metaArgs completes label's and annotate's `KIND NAME`; the KEY=VAL
// pairs after them are the user's.
func (g *globalOptions) metaArgs() cobra.CompletionFunc {
	names := g.kindThenName(storeKindWords, 2)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var resource []string
		for _, a := range args {
			if !strings.Contains(a, "=") && !(strings.HasSuffix(a, "-") && a != "-") {
				resource = append(resource, a)
			}
		}
		return names(cmd, resource, toComplete)
	}
}

// setImageArgs completes `set image deployment/NAME CONTAINER=IMAGE…`:
// the deployment, then its containers followed by "=".
func (g *globalOptions) setImageArgs() cobra.CompletionFunc {
	names := g.kindThenName(deployKinds, 2)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var resource []string
		for _, a := range args {
			if !strings.Contains(a, "=") {
				resource = append(resource, a)
			}
		}
		if len(resource) == 2 || (len(resource) == 1 && strings.Contains(resource[0], "/")) {
			if strings.Contains(toComplete, "=") {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, c := range g.templateContainers(kindDeployment, resourceName(resource)) {
				out = append(out, c+"=")
			}
			return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		return names(cmd, resource, toComplete)
	}
}

// resourceName is the name of `KIND NAME` or `KIND/NAME`.
func resourceName(resource []string) string {
	if len(resource) == 2 {
		return resource[1]
	}
	_, n, _ := strings.Cut(resource[0], "/")
	return n
}

// logsArgs completes logs' `deployment/NAME | pod/NAME | POD [CONTAINER]`.
func (g *globalOptions) logsArgs() cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return g.podOrSlashed(pluralsOf(logsKinds), toComplete), cobra.ShellCompDirectiveNoFileComp
		case 1:
			if kind, name, _, err := logsArgs(args); err == nil && kind == kindPod && !strings.Contains(args[0], "/") {
				return withPrefix(g.templateContainers(kindPod, name), toComplete), cobra.ShellCompDirectiveNoFileComp
			}
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// podOrSlashed completes a first argument that names a pod: with a
// "KIND/" typed, KIND/NAME for each object of kinds; else deployment/NAME
// for each deployment, and the pods.
func (g *globalOptions) podOrSlashed(kinds []string, toComplete string) []string {
	if strings.Contains(toComplete, "/") {
		return g.kindsOrSlashed(kinds, toComplete)
	}
	var out []string
	for _, n := range g.completeNames(kindDeployment) {
		out = append(out, "deployment/"+n)
	}
	return withPrefix(append(out, g.completeNames(kindPod)...), toComplete)
}

// podTargetArgs completes exec's and port-forward's `POD | TYPE/NAME`
// (pods, deployments, Services); what follows is the user's.
func (g *globalOptions) podTargetArgs() cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return g.podOrSlashed(pluralsOf(podTargetKinds), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeLogsContainer completes logs' -c: the containers of the pod or
// deployment the arguments name.
func (g *globalOptions) completeLogsContainer(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	kind, name, _, err := logsArgs(args)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(g.templateContainers(kind, name), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// withPrefix keeps the words that begin with prefix, as kubectl's
// completions do.
func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// templateContainers names the containers, init containers first, of the
// template of deployment name (from the store) or of pod name (its
// revision's, from Docker within completionDockerTimeout).
func (g *globalOptions) templateContainers(kind, name string) []string {
	if k := kindByName(kind); k != nil && k.containerNames != nil {
		return k.containerNames(g, name)
	}
	return nil
}

// deploymentContainerNames are templateContainers of a deployment.
func (g *globalOptions) deploymentContainerNames(name string) []string {
	var out []string
	st, err := g.readStore()
	if err != nil {
		return nil
	}
	r, err := st.Lookup(g.namespace, name)
	if err != nil || r.Deleted {
		return nil
	}
	spec := r.Deployment.Spec.Template.Spec
	for _, c := range append(slices.Clip(spec.InitContainers), spec.Containers...) {
		out = append(out, c.Name)
	}
	return out
}

// podContainerNames are templateContainers of a pod.
func (g *globalOptions) podContainerNames(name string) []string {
	var out []string
	snap := g.completionSnapshot()
	if snap == nil {
		return nil
	}
	e, err := snap.pod(g, g.namespace, name)
	if err != nil {
		return nil
	}
	for _, pc := range e.Containers {
		if n := pc.DisplayName(); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
