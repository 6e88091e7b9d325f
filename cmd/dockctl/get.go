package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

type getOptions struct {
	output   string
	selector string
	// allNamespaces is -A: every namespace, with a NAMESPACE column.
	allNamespaces bool
}

// inScope reports whether an object of namespace ns is listed: every one
// with -A, else those of -n's namespace.
func (o *getOptions) inScope(g *globalOptions, ns string) bool {
	return o.allNamespaces || ns == g.namespace
}

// scope is the namespace the listing looked in, for its messages: "" for
// all of them.
func (o *getOptions) scope(g *globalOptions) string {
	if o.allNamespaces {
		return ""
	}
	return g.namespace
}

func newGetCommand(g *globalOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get deployments|pods|containers|namespaces|services|endpoints|configmaps|secrets|pvc [NAME] [-l SELECTOR] [-n NAMESPACE | -A]",
		Short: "List deployments, pods, containers, namespaces, services, endpoints, configmaps or secrets with their live status",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name := kindAliases[args[0]], ""
			if len(args) == 2 {
				name = args[1]
			} else if k, n, ok := strings.Cut(args[0], "/"); ok {
				kind, name = kindAliases[k], n
			}
			list := getters[kind]
			if list == nil {
				return fmt.Errorf("unknown resource %q: expected deployments, pods, containers, namespaces, services, endpoints, configmaps, secrets or persistentvolumeclaims", args[0])
			}
			if o.selector != "" && name != "" {
				return fmt.Errorf("a name cannot be given with a selector (-l), as in kubectl")
			}
			if o.allNamespaces && name != "" && kind != kindNamespace {
				return fmt.Errorf("a resource cannot be retrieved by name across all namespaces, as in kubectl")
			}
			return list(cmd, g, o, name)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table|wide|json|yaml (pods, namespaces, services and endpoints also name)")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace (a NAMESPACE column comes first)")
	// A plain string, not a slice: "app in (a,b)" must not be split on its comma.
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector (=, ==, !=, in, notin, KEY, !KEY): deployments, services and endpoints by their metadata.labels, "+
		"pods by their template's labels, containers by their labels (for pods and containers deployment=NAME is short for "+
		"io.dockctl.deployment=NAME, revision=HASH for io.dockctl.template-hash=HASH)")
	return cmd
}

// getters list each kind get knows (kindAliases names them), all of them
// or the one named.
var getters = map[string]func(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error{
	kindDeployment: getDeployments, kindPod: getPods, kindContainer: getContainers, kindNamespace: getNamespaces,
	kindService: getServices, kindEndpoints: getEndpoints,
	kindConfigMap: getConfigMaps, kindSecret: getSecrets,
	kindClaim: getClaims, // claims_cli.go
}

// listing is how every get begins: the selector parsed (by parse), with
// withName the output format checked (-o name is one), the snapshot taken
// and the records it could not read warned about.
func (o *getOptions) listing(cmd *cobra.Command, g *globalOptions, parse func(string) (labels.Selector, error), withName bool) (labels.Selector, *snapshot, error) {
	sel, err := parse(o.selector)
	if err != nil {
		return nil, nil, err
	}
	if withName {
		switch o.output {
		case "", "table", "wide", "json", "yaml", "name":
		default:
			return nil, nil, fmt.Errorf("unknown output format %q (table, wide, json, yaml, name)", o.output)
		}
	}
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		return nil, nil, err
	}
	for _, err := range snap.recordErrs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	return sel, snap, nil
}

func getDeployments(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseSelector, false)
	if err != nil {
		return err
	}
	var recs []*store.Record
	for _, r := range snap.records {
		if o.inScope(g, r.NamespaceOrDefault()) && (name == "" || r.Name == name) && sel.Matches(labels.Set(r.Deployment.Metadata.Labels)) {
			recs = append(recs, r)
		}
	}
	if name != "" && len(recs) == 0 {
		return snap.missing(g, g.namespace, name)
	}
	if len(recs) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		fmt.Fprintf(cmd.ErrOrStderr(), "No deployments found in %s.\n", g.where(o.scope(g)))
		return nil
	}
	return renderDeployments(cmd.OutOrStdout(), snap, recs, o.output, name != "", o.allNamespaces)
}

// nsColumn is the NAMESPACE column kubectl puts first with -A: its header,
// or a row's cell.
func nsColumn(allNamespaces bool, ns string) string {
	if !allNamespaces {
		return ""
	}
	return ns + "\t"
}

// renderDeployments prints deployments in one of the output formats; its
// output is the contract scripts rely on (golden-tested). With
// allNamespaces the table starts with a NAMESPACE column, as kubectl's.
func renderDeployments(out io.Writer, snap *snapshot, recs []*store.Record, output string, single, allNamespaces bool) error {
	switch output {
	case "table", "wide", "":
		tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		header := nsColumn(allNamespaces, "NAMESPACE") + "NAME\tREADY\tUP-TO-DATE\tAVAILABLE\tAGE"
		if output == "wide" {
			header += "\tIMAGE\tTEMPLATE-HASH\tGENERATION\tOBSERVED"
		}
		fmt.Fprintln(tw, header)
		for _, r := range recs {
			d := snap.deploymentObject(r)
			st := d.Status
			line := fmt.Sprintf("%s%s\t%d/%d\t%d\t%d\t%s", nsColumn(allNamespaces, r.NamespaceOrDefault()), r.Name, st.ReadyReplicas, d.Replicas(), st.UpdatedReplicas,
				st.AvailableReplicas, age(snap.now.Sub(r.CreatedAt)))
			if output == "wide" {
				observed := "<unknown>"
				if st.ObservedGeneration > 0 {
					observed = fmt.Sprint(st.ObservedGeneration)
					if !snap.controllerRunning {
						observed += " (stale?)"
					}
				}
				line += fmt.Sprintf("\t%s\t%s\t%d\t%s", images(d), shortHash(d), r.Generation, observed)
			}
			fmt.Fprintln(tw, line)
		}
		return tw.Flush()
	default:
		items := make([]any, 0, len(recs))
		for _, r := range recs {
			items = append(items, snap.deploymentObject(r))
		}
		return printObjects(out, output, items, single)
	}
}

// images lists the images of a deployment's app containers, as kubectl's
// IMAGES column does.
func images(d *manifests.Deployment) string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}

func getPods(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseContainerSelector, true)
	if err != nil {
		return err
	}
	var pods []podEntry
	for _, e := range snap.allPods() {
		if o.inScope(g, e.Namespace) && (name == "" || e.Name == name) && sel.Matches(labels.Set(e.labels())) {
			pods = append(pods, e)
		}
	}
	if name != "" && len(pods) == 0 {
		return notFoundIn(g, "pod", g.namespace, name, store.ErrNotFound)
	}
	if len(pods) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		fmt.Fprintf(cmd.ErrOrStderr(), "No pods found in %s.\n", g.where(o.scope(g)))
		return nil
	}
	return renderPods(cmd.OutOrStdout(), snap, pods, o.output, name != "", o.allNamespaces)
}

// renderPods prints pods in one of the output formats (golden-tested): the
// table as kubectl's, -o wide with the deployment, revision and app
// containers, -o json|yaml as v1 Pods, -o name as pod/NAME.
func renderPods(out io.Writer, snap *snapshot, pods []podEntry, output string, single, allNamespaces bool) error {
	switch output {
	case "table", "wide", "":
		tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		header := nsColumn(allNamespaces, "NAMESPACE") + "NAME\tREADY\tSTATUS\tRESTARTS\tAGE"
		if output == "wide" {
			header += "\tDEPLOYMENT\tREVISION\tCONTAINERS"
		}
		fmt.Fprintln(tw, header)
		for _, e := range pods {
			line := fmt.Sprintf("%s%s\t%d/%d\t%s\t%d\t%s", nsColumn(allNamespaces, e.Namespace), e.Name, e.Ready, e.Total, e.statusWord(), e.Restarts, age(snap.now.Sub(e.Created)))
			if output == "wide" {
				line += fmt.Sprintf("\t%s\t%s\t%s", orNone(e.Deployment), orNone(e.Hash), joinOrNone(e.appContainerNames()))
			}
			fmt.Fprintln(tw, line)
		}
		return tw.Flush()
	case "name":
		for _, e := range pods {
			if _, err := fmt.Fprintf(out, "pod/%s\n", e.Name); err != nil {
				return err
			}
		}
		return nil
	default:
		items := make([]any, 0, len(pods))
		for i := range pods {
			items = append(items, pods[i].podObject())
		}
		return printObjects(out, output, items, single)
	}
}

func getContainers(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	sel, snap, err := o.listing(cmd, g, parseContainerSelector, false)
	if err != nil {
		return err
	}
	var objs []containerObject
	for _, c := range append(slices.Clip(snap.containers), snap.helpers...) {
		if !o.inScope(g, containerNamespace(c)) || (name != "" && c.Name != name) || !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		objs = append(objs, snap.containerObject(c))
	}
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].Namespace != objs[j].Namespace {
			return objs[i].Namespace < objs[j].Namespace
		}
		return objs[i].Name < objs[j].Name
	})
	if name != "" && len(objs) == 0 {
		return notFoundIn(g, "container", g.namespace, name, store.ErrNotFound)
	}
	if len(objs) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		fmt.Fprintf(cmd.ErrOrStderr(), "No containers found in %s.\n", g.where(o.scope(g)))
		return nil
	}
	return renderContainers(cmd.OutOrStdout(), snap, objs, o.output, o.allNamespaces)
}

// renderContainers prints containers in one of the output formats.
func renderContainers(out io.Writer, snap *snapshot, objs []containerObject, output string, allNamespaces bool) error {
	switch output {
	case "table", "wide", "":
		tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		header := nsColumn(allNamespaces, "NAMESPACE") + "NAME\tREADY\tSTATUS\tRESTARTS\tAGE"
		if output == "wide" {
			header += "\tPOD\tDEPLOYMENT\tREVISION\tIMAGE\tPORTS"
		}
		fmt.Fprintln(tw, header)
		for _, obj := range objs {
			ready := "0/1"
			if obj.Ready {
				ready = "1/1"
			}
			status := obj.Phase
			if obj.Orphan {
				status += " (orphan)"
			}
			line := fmt.Sprintf("%s%s\t%s\t%s\t%d\t%s", nsColumn(allNamespaces, obj.Namespace), obj.Name, ready, status, obj.Restarts, age(snap.now.Sub(obj.Created)))
			if output == "wide" {
				ports := strings.Join(obj.Ports, ",")
				if ports == "" {
					ports = "<none>"
				}
				line += fmt.Sprintf("\t%s\t%s\t%s\t%s\t%s", orNone(obj.Pod), orNone(obj.Deployment), orNone(obj.TemplateHash), obj.Image, ports)
			}
			fmt.Fprintln(tw, line)
		}
		return tw.Flush()
	default:
		items := make([]any, 0, len(objs))
		for _, obj := range objs {
			items = append(items, obj)
		}
		return printObjects(out, output, items, false)
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
