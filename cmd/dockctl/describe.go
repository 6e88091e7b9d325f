package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/manifests"
)

func newDescribeCommand(g *globalOptions) *cobra.Command {
	return deploymentCommand("describe deployment NAME", "Show a deployment's spec, status, conditions and containers", func(cmd *cobra.Command, name string) error {
		snap, err := takeSnapshot(cmd.Context(), g)
		if err != nil {
			return err
		}
		for _, r := range snap.records {
			if r.Name == name {
				describe(cmd.OutOrStdout(), snap, snap.deploymentObject(r), snap.statuses[name] != nil)
				return nil
			}
		}
		return snap.missing(name)
	})
}

func describe(w io.Writer, snap *snapshot, d *manifests.Deployment, haveStatus bool) {
	st := d.Status
	c := d.Container()
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	p := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	p("Name", d.Metadata.Name)
	p("Instance", snap.instance)
	p("CreationTimestamp", d.Metadata.CreationTimestamp.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	p("Labels", kv(d.Metadata.Labels))
	p("Annotations", kv(d.Metadata.Annotations))
	var selector map[string]string
	if d.Spec.Selector != nil { // a hand-edited record may lack it
		selector = d.Spec.Selector.MatchLabels
	}
	p("Selector", kv(selector))
	p("Replicas", fmt.Sprintf("%d desired | %d updated | %d total | %d available | %d unavailable",
		d.Replicas(), st.UpdatedReplicas, st.Replicas, st.AvailableReplicas, st.UnavailableReplicas))
	p("StrategyType", d.Spec.Strategy.Type)
	p("MinReadySeconds", fmt.Sprint(d.Spec.MinReadySeconds))
	observed := "<unknown: no controller has synced this deployment>"
	if haveStatus {
		observed = fmt.Sprint(st.ObservedGeneration)
		if !snap.controllerRunning {
			observed += ", recorded by a controller that is not running now: conditions may be stale"
		}
	}
	p("Generation", fmt.Sprintf("%d (observed: %s)", d.Metadata.Generation, observed))
	p("Template hash", manifests.TemplateHash(&d.Spec.Template))
	tw.Flush()
	fmt.Fprintf(w, "Pod Template:\n  Labels: %s\n  Container %s:\n", kv(d.Spec.Template.Metadata.Labels), c.Name)
	fmt.Fprintf(w, "    Image:    %s (pull: %s)\n", c.Image, c.ImagePullPolicy)
	if len(c.Command) > 0 {
		fmt.Fprintf(w, "    Command:  %s\n", strings.Join(c.Command, " "))
	}
	if len(c.Args) > 0 {
		fmt.Fprintf(w, "    Args:     %s\n", strings.Join(c.Args, " "))
	}
	for _, port := range c.Ports {
		fmt.Fprintf(w, "    Port:     %d/%s", port.ContainerPort, port.Protocol)
		if port.HostPort != 0 {
			fmt.Fprintf(w, " (host %s:%d)", orDefault(port.HostIP, "0.0.0.0"), port.HostPort)
		}
		fmt.Fprintln(w)
	}
	if len(c.Env) > 0 {
		fmt.Fprintln(w, "    Environment:")
		for _, e := range c.Env {
			fmt.Fprintf(w, "      %s=%s\n", e.Name, e.Value)
		}
	}
	if len(st.Conditions) > 0 {
		fmt.Fprintln(w, "Conditions:")
		ct := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(ct, "  Type\tStatus\tReason\tMessage")
		fmt.Fprintln(ct, "  ----\t------\t------\t-------")
		for _, cond := range st.Conditions {
			fmt.Fprintf(ct, "  %s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
		ct.Flush()
	}
	fmt.Fprintln(w, "Containers:")
	cs := snap.containersOf(d.Metadata.Name)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	if len(cs) == 0 {
		fmt.Fprintln(w, "  <none>")
		return
	}
	ct := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(ct, "  Name\tStatus\tReady\tRestarts\tAge\tRevision")
	for _, ctr := range cs {
		obj := snap.containerObject(ctr)
		fmt.Fprintf(ct, "  %s\t%s\t%v\t%d\t%s\t%s\n", obj.Name, obj.Phase, obj.Ready, obj.Restarts,
			age(snap.now.Sub(obj.Created)), orNone(obj.TemplateHash))
	}
	ct.Flush()
}

func kv(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
