package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/podruntime"
	"github.com/dockctl/dockctl/store"
)

func newDescribeCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe KIND NAME… | KIND/NAME…",
		Short: "Show an object in detail: spec, status, conditions, its pods' containers and states, and its events",
		Long: "Show an object in detail, as kubectl describe: a deployment's spec, status, conditions and containers, a pod's\n" +
			"containers and their states, a service's ports, endpoints and conditions… and the events about it. " + kindsSentence(descKinds),
		Example: `  # Describe deployment web
  dockctl describe deployment web

  # Describe a pod of namespace team
  dockctl describe pod/api-5d8f9c7b6a-0 -n team

  # Describe service web and its endpoints, namespace team, secret creds (values hidden) and claim data
  dockctl describe svc web
  dockctl describe endpoints web
  dockctl describe ns team
  dockctl describe secret creds
  dockctl describe pvc data`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("You must specify the type of resource to describe. %s", suggestAPIResources(cmd)) // kubectl's words
			}
			objs, err := objectArgs(args, describeKinds...)
			if err != nil {
				return err
			}
			if objs[0].name == "" {
				// kubectl describes every object of the kind; dockctl
				// needs a name.
				return errors.New("resource(s) were provided, but no name was specified")
			}
			// As kubectl: each object found, a blank line between two,
			// then a NotFound for each missing one.
			if st, err := g.readStore(); err == nil {
				warnNoController(cmd.ErrOrStderr(), st, g.instance, noControllerRead, time.Now()) // heartbeat.go
			}
			out := cmd.OutOrStdout()
			var errs []error
			described := 0
			for _, obj := range objs {
				var buf bytes.Buffer
				cmd.SetOut(&buf)
				err := describeObject(cmd, g, obj.kind, obj.name)
				cmd.SetOut(out)
				if errors.Is(err, store.ErrNotFound) {
					errs = append(errs, err)
					continue
				}
				if err != nil {
					return err
				}
				if !kindByName(obj.kind).describeNoEvents { // kubectl's NamespaceDescriber shows none
					describeEvents(&buf, g, obj.kind, obj.name) // events.go: kubectl's last section
				}
				if described++; described > 1 {
					fmt.Fprint(out, "\n\n")
				}
				if _, err := out.Write(buf.Bytes()); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
}

// describeObject prints everything describe shows of an object but its
// events: its kind's describer (kinds.go).
func describeObject(cmd *cobra.Command, g *globalOptions, kind, name string) error {
	return kindByName(kind).describe(cmd, g, name)
}

// describer prints what describe shows of the object name of one kind,
// in -n's namespace, but its events.
type describer func(cmd *cobra.Command, g *globalOptions, name string) error

func describeDeploymentObject(cmd *cobra.Command, g *globalOptions, name string) error {
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		return err
	}
	key := store.Key(g.namespace, name)
	if r := snap.record(key); r != nil {
		describe(cmd.OutOrStdout(), snap, snap.deploymentObject(r), snap.statuses[key] != nil)
		return nil
	}
	return snap.missing(g, g.namespace, name)
}

func describePodObject(cmd *cobra.Command, g *globalOptions, name string) error {
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		return err
	}
	e, err := snap.pod(g, g.namespace, name)
	if err != nil {
		return err
	}
	describePod(cmd.OutOrStdout(), snap, e)
	return nil
}

func describeServiceObject(cmd *cobra.Command, g *globalOptions, name string) error {
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		return err
	}
	e, ok := snap.service(g.namespace, name)
	if !ok {
		return snap.missingService(g, store.KindService, g.namespace, name)
	}
	describeService(cmd.OutOrStdout(), snap, e)
	return nil
}

func describeEndpointsObject(cmd *cobra.Command, g *globalOptions, name string) error {
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		return err
	}
	// As get endpoints: only a Service with a selector has managed
	// endpoints.
	e, ok := snap.service(g.namespace, name)
	if !ok || len(e.rec.Service.Spec.Selector) == 0 {
		return snap.missingService(g, "Endpoints", g.namespace, name)
	}
	describeEndpoints(cmd.OutOrStdout(), snap, e) // services.go
	return nil
}

func describeNamespaceObject(cmd *cobra.Command, g *globalOptions, name string) error {
	snap, err := takeSnapshot(cmd.Context(), g)
	if err != nil {
		return err
	}
	for _, e := range snap.listNamespaces() {
		if e.rec.Namespace.Metadata.Name == name {
			describeNamespace(cmd.OutOrStdout(), snap, e) // namespaces.go
			return nil
		}
	}
	return notFoundIn(g, store.KindNamespace, "", name, store.ErrNotFound)
}

// describeConfigMapObject and describeSecretObject need no Docker
// (configs_cli.go).
func describeConfigMapObject(cmd *cobra.Command, g *globalOptions, name string) error {
	return describeConfigObject(cmd, g, kindConfigMap, name)
}

func describeSecretObject(cmd *cobra.Command, g *globalOptions, name string) error {
	return describeConfigObject(cmd, g, kindSecret, name)
}

func describe(w io.Writer, snap *snapshot, d *manifests.Deployment, haveStatus bool) {
	st := d.Status
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	p := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	p("Name", d.Metadata.Name)
	p("Namespace", d.Metadata.NamespaceOrDefault())
	p("Instance", snap.instance)
	p("CreationTimestamp", d.Metadata.CreationTimestamp.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	p("Labels", kv(d.Metadata.Labels))
	p("Annotations", kv(d.Metadata.Annotations))
	p("Managed-By", managedBy(d.Metadata.ManagedFields))
	var selector map[string]string
	if d.Spec.Selector != nil { // a hand-edited record may lack it
		selector = d.Spec.Selector.MatchLabels
	}
	p("Selector", kv(selector))
	// The Services whose endpoints its pods are (kubectl shows none; on one
	// host it is the question before a scale-down or a rollout).
	p("Services", joinOrNone(snap.servicesSelecting(d.Metadata.NamespaceOrDefault(), d.Spec.Template.Metadata.Labels)))
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
	fmt.Fprintf(w, "Pod Template:\n  Labels: %s\n", kv(d.Spec.Template.Metadata.Labels))
	// As kubectl's: the init containers (sidecars among them), then the
	// app containers, each under its name.
	for _, sec := range []struct {
		title string
		cs    []manifests.Container
	}{{"Init Containers", d.Spec.Template.Spec.InitContainers}, {"Containers", d.Spec.Template.Spec.Containers}} {
		if len(sec.cs) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s:\n", sec.title)
		for i := range sec.cs {
			describeTemplateContainer(w, &d.Spec.Template.Spec, &sec.cs[i])
		}
	}
	if len(st.Conditions) > 0 {
		rows := make([][4]string, 0, len(st.Conditions))
		for _, cond := range st.Conditions {
			rows = append(rows, [4]string{cond.Type, cond.Status, cond.Reason, cond.Message})
		}
		conditionTable(w, rows)
	}
	fmt.Fprintln(w, "Containers:")
	cs := snap.ownedContainersOf(store.Key(d.Metadata.Namespace, d.Metadata.Name))
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

// conditionTable prints conditions (type, status, reason, message) as
// kubectl's describe does.
func conditionTable(w io.Writer, rows [][4]string) {
	fmt.Fprintln(w, "Conditions:")
	ct := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(ct, "  Type\tStatus\tReason\tMessage")
	fmt.Fprintln(ct, "  ----\t------\t------\t-------")
	for _, r := range rows {
		fmt.Fprintf(ct, "  %s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3])
	}
	ct.Flush()
}

// describeTemplateContainer prints one container of a pod template.
func describeTemplateContainer(w io.Writer, ps *manifests.PodSpec, c *manifests.Container) {
	fmt.Fprintf(w, "   %s:\n", c.Name)
	fmt.Fprintf(w, "    Image:    %s (pull: %s)\n", c.Image, c.ImagePullPolicy)
	if c.IsSidecar() {
		fmt.Fprintf(w, "    Restart:  %s (sidecar)\n", c.RestartPolicy)
	}
	if len(c.Command) > 0 {
		fmt.Fprintf(w, "    Command:  %s\n", strings.Join(c.Command, " "))
	}
	if len(c.Args) > 0 {
		fmt.Fprintf(w, "    Args:     %s\n", strings.Join(c.Args, " "))
	}
	for _, port := range c.Ports {
		fmt.Fprintf(w, "    Port:     %s\n", portString(port))
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	describeLimitsAndProbes(tw, templateKube(c))
	tw.Flush()
	describeEnv(w, c) // configs_cli.go
	if len(c.VolumeMounts) > 0 {
		fmt.Fprintln(w, "    Mounts:")
		for _, m := range c.VolumeMounts {
			fmt.Fprintf(w, "      %s\n", mountString(ps, m))
		}
	}
}

// portString words a template port as describe shows it.
func portString(p manifests.ContainerPort) string {
	s := fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)
	if p.HostPort != 0 {
		s += fmt.Sprintf(" (host %s:%d)", orDefault(p.HostIP, "0.0.0.0"), p.HostPort)
	}
	return s
}

// mountString words a volume mount as kubectl's describe does: read-only
// when the mount says so or the volume is a file volume (its containers
// mount it read-only, as the kubelet does), and the subPath as path="…".
func mountString(ps *manifests.PodSpec, m manifests.VolumeMount) string {
	mode := "rw"
	if m.ReadOnly || slices.ContainsFunc(ps.Volumes, func(v manifests.Volume) bool { return v.Name == m.Name && v.IsFileVolume() }) {
		mode = "ro"
	}
	if m.SubPath != "" {
		mode += fmt.Sprintf(",path=%q", m.SubPath)
	}
	return fmt.Sprintf("%s from %s (%s)", m.MountPath, m.Name, mode)
}

// describePod prints a pod as kubectl's describe does: who it is, then
// each init container and app container with its state, then its
// conditions.
func describePod(w io.Writer, snap *snapshot, e podEntry) {
	snap.inspect([]podEntry{e}) // its containers' start times
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(indent int, k, v string) { fmt.Fprintf(tw, "%s%s:\t%s\n", strings.Repeat(" ", indent), k, v) }
	p(0, "Name", e.Name)
	p(0, "Namespace", e.Namespace)
	p(0, "Instance", snap.instance)
	dep := e.Owner.Name
	switch {
	case e.ownerless:
		// Left by its owner's deletion with --cascade=orphan: no
		// controller, as kubectl shows a pod without ownerReferences
		// (a Deployment's: no deployment).
		dep = ""
	case e.Owner.Kind != manifests.Kind:
		// A workload's pod: kubectl's line for its controller.
		p(0, "Controlled By", e.Owner.Kind+"/"+e.Owner.Name)
	case e.orphan:
		dep += " (unknown to this instance: an orphan)"
	case e.deleted:
		dep += " (deleted)"
	}
	if e.Owner.Kind == manifests.Kind {
		p(0, "Deployment", orNone(dep))
	}
	revision := orNone(e.Hash)
	if r := e.rec.Revision(e.Hash); r != nil {
		revision = fmt.Sprintf("%d (%s)", r.Number, e.Hash)
	}
	p(0, "Revision", revision)
	// As kubectl's: the node (the Docker host) and its address.
	node := orNone(snap.nodeName())
	if node != "<none>" && snap.hostIP != "" {
		node += "/" + snap.hostIP
	}
	p(0, "Node", node)
	p(0, "Start Time", e.Created.Format(time.RFC1123Z))
	multi := func(k string, m map[string]string) {
		if len(m) == 0 {
			p(0, k, "<none>")
			return
		}
		for i, kv := range pairs(m) {
			if i == 0 {
				p(0, k, kv)
			} else {
				fmt.Fprintf(tw, "\t%s\n", kv)
			}
		}
	}
	multi("Labels", e.labels())
	multi("Annotations", e.annotations())
	status := string(e.Phase())
	if e.Status != status {
		status += " (" + e.statusWord() + ")"
	}
	p(0, "Status", status)
	if w := e.Waiting; w != nil && w.Reason == podruntime.WaitPending {
		// Not admitted, as a pod that cannot be scheduled: why, at pod level.
		p(0, "Message", w.Message)
	}
	ip := e.podIP(snap)
	p(0, "IP", ip)
	if ip == "" {
		p(0, "IPs", "<none>")
	} else {
		fmt.Fprintln(tw, "IPs:")
		p(2, "IP", ip)
	}
	if h := e.Holder; h != nil {
		p(0, "Holder", fmt.Sprintf("%s (%s, %s)", h.Name, shortID(h.ID), containerStatus(*h)))
	} else if e.HasHolder() {
		p(0, "Holder", "<none>: gone, the pod is replaced")
	}
	for _, sec := range []struct {
		title string
		init  bool
	}{{"Init Containers", true}, {"Containers", false}} {
		first := true
		for _, pc := range e.Containers {
			if pc.Init != sec.init {
				continue
			}
			if first {
				fmt.Fprintf(tw, "%s:\n", sec.title)
				first = false
			}
			describePodContainer(tw, snap, &e, pc)
		}
	}
	fmt.Fprintln(tw, "Conditions:")
	fmt.Fprintln(tw, "  Type\tStatus")
	for _, c := range e.Conditions() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.Type, c.Status)
	}
	var volumes []manifests.Volume
	if e.template != nil {
		volumes = e.template.Spec.Volumes
	}
	describeVolumes(tw, volumes)
	tw.Flush()
}

// describeVolumes prints a pod's volumes as kubectl's describe does: each
// under its name, with its type and source in kubectl's words (a Secret
// volume by its name, never its data).
func describeVolumes(tw io.Writer, volumes []manifests.Volume) {
	if len(volumes) == 0 {
		fmt.Fprintln(tw, "Volumes:\t<none>")
		return
	}
	p := func(k, v string) { fmt.Fprintf(tw, "    %s:\t%s\n", k, v) }
	optional := func(b *bool) string { return fmt.Sprint(b != nil && *b) }
	fmt.Fprintln(tw, "Volumes:")
	for _, v := range volumes {
		fmt.Fprintf(tw, "  %s:\n", v.Name)
		switch {
		case v.HostPath != nil:
			p("Type", "HostPath (bare host directory volume)")
			p("Path", v.HostPath.Path)
			p("HostPathType", orNone(v.HostPath.Type))
		case v.EmptyDir != nil:
			limit := "<unset>"
			if q := v.EmptyDir.SizeLimit; q != nil && !q.IsZero() {
				limit = q.String()
			}
			p("Type", "EmptyDir (a temporary directory that shares a pod's lifetime)")
			p("Medium", v.EmptyDir.Medium)
			p("SizeLimit", limit)
		case v.Secret != nil:
			p("Type", "Secret (a volume populated by a Secret)")
			p("SecretName", v.Secret.SecretName)
			p("Optional", optional(v.Secret.Optional))
		case v.ConfigMap != nil:
			p("Type", "ConfigMap (a volume populated by a ConfigMap)")
			p("Name", v.ConfigMap.Name)
			p("Optional", optional(v.ConfigMap.Optional))
		case v.Projected != nil:
			p("Type", "Projected (a volume that contains injected data from multiple sources)")
			for _, src := range v.Projected.Sources {
				switch {
				case src.Secret != nil:
					p("SecretName", src.Secret.Name)
					p("Optional", optional(src.Secret.Optional))
				case src.ConfigMap != nil:
					p("ConfigMapName", src.ConfigMap.Name)
					p("Optional", optional(src.ConfigMap.Optional))
				case src.DownwardAPI != nil:
					p("DownwardAPI", "true")
				}
			}
		case v.DownwardAPI != nil:
			p("Type", "DownwardAPI (a volume populated by information about the pod)")
			fmt.Fprintln(tw, "    Items:")
			for _, item := range v.DownwardAPI.Items {
				switch {
				case item.FieldRef != nil:
					fmt.Fprintf(tw, "      %s -> %s\n", item.FieldRef.FieldPath, item.Path)
				case item.ResourceFieldRef != nil:
					fmt.Fprintf(tw, "      %s -> %s\n", item.ResourceFieldRef.Resource, item.Path)
				}
			}
		case v.PersistentVolumeClaim != nil:
			p("Type", "PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)")
			p("ClaimName", v.PersistentVolumeClaim.ClaimName)
			p("ReadOnly", fmt.Sprint(v.PersistentVolumeClaim.ReadOnly))
		default:
			fmt.Fprintln(tw, "  <unknown>")
		}
	}
}

// describePodContainer prints one container of a pod: its Docker identity,
// image, state (and last state), readiness and restarts.
func describePodContainer(tw io.Writer, snap *snapshot, e *podEntry, pc podruntime.PodContainer) {
	p := func(indent int, k, v string) { fmt.Fprintf(tw, "%s%s:\t%s\n", strings.Repeat(" ", indent), k, v) }
	fmt.Fprintf(tw, "  %s:\n", pc.DisplayName())
	tc := e.templateContainer(pc)
	c := pc.Container
	if c != nil {
		p(4, "Container ID", shortID(c.ID))
		p(4, "Container", c.Name)
	} else {
		p(4, "Container ID", "<none>")
	}
	image := ""
	if tc != nil {
		image = tc.Image
	} else if c != nil {
		image = c.Image
	}
	p(4, "Image", orNone(image))
	if pc.Sidecar {
		p(4, "Restart Policy", manifests.ContainerRestartPolicyAlways)
	}
	if tc != nil {
		for i, port := range tc.Ports {
			if i == 0 {
				p(4, "Port", portString(port))
			} else {
				fmt.Fprintf(tw, "\t%s\n", portString(port))
			}
		}
	}
	state, last := e.ContainerState(pc)
	containerTimes(&state, &last, snap.containerDetails(c))
	describeState(tw, "State", state)
	if last.Terminated != nil {
		describeState(tw, "Last State", last)
	}
	p(4, "Ready", boolWord(e.ContainerReady(pc)))
	p(4, "Restart Count", fmt.Sprint(pc.View.Restarts))
	if tc != nil {
		describeLimitsAndProbes(tw, templateKube(tc))
		describeEnv(tw, tc) // configs_cli.go: references, never a Secret's value
		for i, m := range tc.VolumeMounts {
			if i == 0 {
				p(4, "Mounts", mountString(&e.template.Spec, m))
			} else {
				fmt.Fprintf(tw, "\t%s\n", mountString(&e.template.Spec, m))
			}
		}
	}
}

// describeState prints a container state as kubectl's describe does: the
// state's name, then its reason and exit code, and when it started (and
// finished), indented; a time Docker did not tell is left out.
func describeState(tw io.Writer, title string, s corev1.ContainerState) {
	p := func(indent int, k, v string) { fmt.Fprintf(tw, "%s%s:\t%s\n", strings.Repeat(" ", indent), k, v) }
	at := func(k string, t metav1.Time) {
		if !t.IsZero() {
			p(6, k, t.Format(time.RFC1123Z))
		}
	}
	switch {
	case s.Running != nil:
		p(4, title, "Running")
		at("Started", s.Running.StartedAt)
	case s.Waiting != nil:
		p(4, title, "Waiting")
		p(6, "Reason", s.Waiting.Reason)
	case s.Terminated != nil:
		p(4, title, "Terminated")
		p(6, "Reason", s.Terminated.Reason)
		if s.Terminated.Message != "" {
			p(6, "Message", s.Terminated.Message)
		}
		p(6, "Exit Code", fmt.Sprint(s.Terminated.ExitCode))
		at("Started", s.Terminated.StartedAt)
		at("Finished", s.Terminated.FinishedAt)
	}
}

// describeLimitsAndProbes prints a container's limits and requests, then
// its probes, in kubectl's describe words, tab-separated for w to line
// them up.
func describeLimitsAndProbes(w io.Writer, c corev1.Container) {
	for _, r := range []struct {
		title string
		list  corev1.ResourceList
	}{{"Limits", c.Resources.Limits}, {"Requests", c.Resources.Requests}} {
		if len(r.list) == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s:\n", r.title)
		for _, name := range slices.Sorted(maps.Keys(r.list)) {
			q := r.list[name]
			fmt.Fprintf(w, "      %s:\t%s\n", name, q.String())
		}
	}
	for _, pr := range []struct {
		title string
		probe *corev1.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if pr.probe != nil {
			fmt.Fprintf(w, "    %s:\t%s\n", pr.title, describeProbe(pr.probe))
		}
	}
}

// describeProbe words a probe as kubectl's describe does: its action,
// then its timing ("delay=0s timeout=1s period=10s #success=1
// #failure=3", kubectl 1.34's words).
func describeProbe(p *corev1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	switch {
	case p.Exec != nil:
		return fmt.Sprintf("exec %v %s", p.Exec.Command, attrs)
	case p.HTTPGet != nil:
		u := url.URL{Scheme: strings.ToLower(string(p.HTTPGet.Scheme)), Host: p.HTTPGet.Host, Path: p.HTTPGet.Path}
		if port := p.HTTPGet.Port.String(); port != "" {
			u.Host = net.JoinHostPort(p.HTTPGet.Host, port)
		}
		return fmt.Sprintf("http-get %s %s", u.String(), attrs)
	case p.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", p.TCPSocket.Host, p.TCPSocket.Port.String(), attrs)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d %s %s", p.GRPC.Port, service, attrs)
	}
	return "unknown " + attrs
}

func boolWord(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// multiline prints a map as kubectl's printLabelsMultiline does: its first
// pair after the key, each other on a line of its own, <none> when empty.
func multiline(tw io.Writer, key string, m map[string]string) {
	ps := pairs(m)
	if len(ps) == 0 {
		fmt.Fprintf(tw, "%s:\t<none>\n", key)
		return
	}
	for i, kv := range ps {
		if i == 0 {
			fmt.Fprintf(tw, "%s:\t%s\n", key, kv)
		} else {
			fmt.Fprintf(tw, "\t%s\n", kv)
		}
	}
}

// maxAnnotationLen is kubectl describe's: a longer annotation (its key,
// ": " and its value) is printed under its key, each line cut to it.
const maxAnnotationLen = 140

// annotationsMultiline prints annotations as kubectl's
// printAnnotationsMultiline does: "key: value" (not a label's key=value),
// the first after the title and each other on a line of its own, sorted;
// a value of several lines or longer than maxAnnotationLen under its key,
// each line indented by two and cut at maxAnnotationLen-2 ("..."); the
// last-applied configuration left out; <none> when none is left.
func annotationsMultiline(tw io.Writer, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != lastApplied {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		fmt.Fprint(tw, "Annotations:\t<none>\n")
		return
	}
	sort.Strings(keys)
	fmt.Fprint(tw, "Annotations:\t")
	for i, k := range keys {
		if i != 0 {
			fmt.Fprint(tw, "\t")
		}
		v := strings.TrimSuffix(m[k], "\n")
		if len(v)+len(k)+2 <= maxAnnotationLen && !strings.Contains(v, "\n") {
			fmt.Fprintf(tw, "%s: %s\n", k, v)
			continue
		}
		fmt.Fprintf(tw, "%s:\n", k)
		for _, line := range strings.Split(v, "\n") {
			if len(line) > maxAnnotationLen-2 {
				line = line[:maxAnnotationLen-2] + "..."
			}
			fmt.Fprintf(tw, "\t  %s\n", line)
		}
	}
}

func kv(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	return strings.Join(pairs(m), ",")
}

// pairs lists a map's KEY=VALUE pairs, sorted by key.
func pairs(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return parts
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// managedBy is describe's Managed-By line: the manager (apply, or
// manifests:PATH: what may delete the object when it leaves its files),
// then the commands that changed it since.
func managedBy(entries []manifests.ManagedFieldsEntry) string {
	s, ups := store.ManagerApply, []string(nil)
	for _, e := range entries {
		if e.Operation == store.OperationApply {
			s = e.Manager
		} else {
			ups = append(ups, e.Manager)
		}
	}
	if len(ups) > 0 {
		s += " (changed since by " + strings.Join(ups, ", ") + ")"
	}
	return s
}
