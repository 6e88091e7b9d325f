package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The routing kinds (docs/design.md §10, the gateway): Ingress,
// IngressClass, GatewayClass, Gateway, HTTPRoute and ReferenceGrant, as
// the store keeps them, each with the status the gateway controller wrote
// (store.ReadRoutingStatus). get prints kubectl's columns (an Ingress's
// from kubectl's printers, the Gateway API kinds' from their CRDs'
// additionalPrinterColumns); -o json|yaml the objects with their status.

// The CLI's words of the routing kinds.
const (
	kindIngress        = "ingress"
	kindIngressClass   = "ingressclass"
	kindGatewayClass   = "gatewayclass"
	kindGateway        = "gateway"
	kindHTTPRoute      = "httproute"
	kindReferenceGrant = "referencegrant"
)

// routingObject is one stored routing object with its status.
type routingObject struct {
	obj    *store.StoredObject
	status json.RawMessage
}

// routingListing lists the live objects of the store's kind in get's
// scope (a cluster-scoped kind's in every namespace: it has none), named
// name if given and matching -l, each with its status.
func routingListing(cmd *cobra.Command, g *globalOptions, o *getOptions, kind, name string) ([]routingObject, error) {
	sel, err := parseSelector(o.selector)
	if err != nil {
		return nil, err
	}
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	objs, errs := st.ListObjects(kind)
	for _, err := range errs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	cluster := manifests.ClusterScoped(kind)
	var out []routingObject
	for _, so := range objs {
		m := so.Meta
		if so.Deleted || (!cluster && !o.inScope(g, m.NamespaceOrDefault())) || (name != "" && m.Name != name) || !sel.Matches(labels.Set(m.Labels)) {
			continue
		}
		ref := store.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name}
		status, err := st.ReadRoutingStatus(ref)
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
		}
		out = append(out, routingObject{obj: so, status: status})
	}
	return out, nil
}

// apiObject is the object as the API returns it: its stored fields, a
// namespaced one's namespace spelled out, and its status.
func (r routingObject) apiObject() (any, error) {
	b, err := json.Marshal(r.obj.Object)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		created := r.obj.Created
		md["creationTimestamp"] = created.UTC().Format(time.RFC3339)
		if kind, _ := m["kind"].(string); !manifests.ClusterScoped(kind) {
			md["namespace"] = r.obj.Meta.NamespaceOrDefault()
		}
	}
	if len(r.status) > 0 {
		var st any
		if err := json.Unmarshal(r.status, &st); err != nil {
			return nil, fmt.Errorf("status of %s: %w", r.obj.Meta.Name, err)
		}
		m["status"] = st
	}
	return m, nil
}

// routingGetter is the getter of a routing kind: its table's kind (-o
// name's prefix), columns and cells.
func routingGetter(storeKind, cliKind string, columns []string, cells func(r routingObject) []string) getter {
	return func(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
		objs, err := routingListing(cmd, g, o, storeKind, name)
		if err != nil {
			return err
		}
		cluster := manifests.ClusterScoped(storeKind)
		switch {
		case len(objs) > 0:
		case name != "":
			return notFoundIn(g, storeKind, g.namespace, name, store.ErrNotFound)
		case o.output == "table" || o.output == "wide" || o.output == "":
			o.noResources(cmd.ErrOrStderr(), g, !cluster)
			return nil
		}
		now := time.Now()
		api := apiResources[cliKind]
		// -o name: kubectl's kind.group/NAME (ingress.networking.k8s.io/web).
		t := &table{kind: cliKind + "." + api.group, columns: append(append([]string{"NAME"}, columns...), "AGE")}
		for _, r := range objs {
			m := r.obj.Meta
			ns := ""
			if !cluster {
				ns = m.NamespaceOrDefault()
			}
			t.rows = append(t.rows, row{namespace: ns, name: m.Name, labels: m.Labels, id: createdID(r.obj.Created),
				cells:  append(append([]string{m.Name}, cells(r)...), age(now.Sub(r.obj.Created))),
				object: r.apiObject})
		}
		return o.printer.print(cmd.OutOrStdout(), t, name != "", o.allNamespaces && !cluster)
	}
}

// routingKindInfos are the routing kinds' entries of the CLI's table
// (kinds.go): get, describe, delete, patch and label, with kubectl's
// aliases.
func routingKindInfos() []*kindInfo {
	entry := func(name string, aliases []string, api apiResource, storeKind string, get getter, order int) *kindInfo {
		return &kindInfo{name: name, aliases: aliases, api: api, get: get,
			store: storeKind, manifest: storeKind, event: storeKind,
			describe: routingDescriber(storeKind), delete: true, completed: true, writeOrder: order}
	}
	const net, gw = "networking.k8s.io", manifests.GatewayGroup
	return []*kindInfo{
		entry(kindIngress, []string{"ingresses", "ing", "ingress.networking.k8s.io", "ingresses.networking.k8s.io"},
			apiResource{"Ingress", "ingresses", net, "v1", true}, store.KindIngress, getIngresses, 16),
		entry(kindIngressClass, []string{"ingressclasses", "ingressclass.networking.k8s.io", "ingressclasses.networking.k8s.io"},
			apiResource{"IngressClass", "ingressclasses", net, "v1", false}, store.KindIngressClass, getIngressClasses, 17),
		entry(kindGatewayClass, []string{"gatewayclasses", "gc", "gatewayclass.gateway.networking.k8s.io", "gatewayclasses.gateway.networking.k8s.io"},
			apiResource{"GatewayClass", "gatewayclasses", gw, "v1", false}, store.KindGatewayClass, getGatewayClasses, 18),
		entry(kindGateway, []string{"gateways", "gtw", "gateway.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io"},
			apiResource{"Gateway", "gateways", gw, "v1", true}, store.KindGateway, getGateways, 19),
		entry(kindHTTPRoute, []string{"httproutes", "httproute.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io"},
			apiResource{"HTTPRoute", "httproutes", gw, "v1", true}, store.KindHTTPRoute, getHTTPRoutes, 20),
		entry(kindReferenceGrant, []string{"referencegrants", "refgrant", "referencegrant.gateway.networking.k8s.io", "referencegrants.gateway.networking.k8s.io"},
			apiResource{"ReferenceGrant", "referencegrants", gw, "v1beta1", true}, store.KindReferenceGrant, getReferenceGrants, 21),
	}
}

var (
	getIngresses = routingGetter(store.KindIngress, kindIngress, []string{"CLASS", "HOSTS", "ADDRESS", "PORTS"}, ingressCells)
	// IngressClass: kubectl's CONTROLLER PARAMETERS (dockctl's have no
	// parameters).
	getIngressClasses = routingGetter(store.KindIngressClass, kindIngressClass, []string{"CONTROLLER", "PARAMETERS"}, func(r routingObject) []string {
		return []string{r.obj.Object.(*manifests.IngressClass).Spec.Controller, "<none>"}
	})
	getGatewayClasses = routingGetter(store.KindGatewayClass, kindGatewayClass, []string{"CONTROLLER", "ACCEPTED"}, func(r routingObject) []string {
		var st manifests.GatewayClassStatus
		_ = json.Unmarshal(r.status, &st)
		return []string{r.obj.Object.(*manifests.GatewayClass).Spec.ControllerName, conditionStatus(st.Conditions, "Accepted")}
	})
	getGateways = routingGetter(store.KindGateway, kindGateway, []string{"CLASS", "ADDRESS", "PROGRAMMED"}, func(r routingObject) []string {
		var st manifests.GatewayStatus
		_ = json.Unmarshal(r.status, &st)
		addr := ""
		if len(st.Addresses) > 0 {
			addr = st.Addresses[0].Value
		}
		return []string{r.obj.Object.(*manifests.Gateway).Spec.GatewayClassName, addr, conditionStatus(st.Conditions, "Programmed")}
	})
	// HTTPRoute: the CRD's HOSTNAMES column is the JSON of
	// .spec.hostnames, as kubectl prints an array column.
	getHTTPRoutes = routingGetter(store.KindHTTPRoute, kindHTTPRoute, []string{"HOSTNAMES"}, func(r routingObject) []string {
		hs := r.obj.Object.(*manifests.HTTPRoute).Spec.Hostnames
		if len(hs) == 0 {
			return []string{""}
		}
		b, _ := json.Marshal(hs)
		return []string{string(b)}
	})
	getReferenceGrants = routingGetter(store.KindReferenceGrant, kindReferenceGrant, nil, func(routingObject) []string { return nil })
)

// ingressCells are kubectl's columns of an Ingress: CLASS (<none> when
// unset), HOSTS (the rules' hosts, * for a rule without one), ADDRESS
// (status.loadBalancer.ingress), PORTS (80, and 443 with tls).
func ingressCells(r routingObject) []string {
	in := r.obj.Object.(*manifests.Ingress)
	class := "<none>"
	if in.Spec.IngressClassName != nil {
		class = *in.Spec.IngressClassName
	}
	var hosts []string
	for _, rule := range in.Spec.Rules {
		h := rule.Host
		if h == "" {
			h = "*"
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		hosts = []string{"*"}
	}
	var st manifests.IngressStatus
	_ = json.Unmarshal(r.status, &st)
	var addrs []string
	for _, a := range st.LoadBalancer.Ingress {
		if a.IP != "" {
			addrs = append(addrs, a.IP)
		} else if a.Hostname != "" {
			addrs = append(addrs, a.Hostname)
		}
	}
	ports := "80"
	if len(in.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []string{class, strings.Join(hosts, ","), strings.Join(addrs, ","), ports}
}

// conditionStatus is the status of condition t, Unknown when absent (as
// the CRD's column shows an unset one empty; Unknown says the controller
// has not reported).
func conditionStatus(cs []manifests.Condition, t string) string {
	if c := manifests.FindCondition(cs, t); c != nil {
		return c.Status
	}
	return "Unknown"
}

// routingDescriber describes a routing object: the header every describe
// prints, the object's spec as YAML-like lines (its rules, listeners,
// backends), then its status conditions; the events follow (describe.go).
func routingDescriber(storeKind string) describer {
	return func(cmd *cobra.Command, g *globalOptions, name string) error {
		st, err := g.readStore()
		if err != nil {
			return err
		}
		ref := store.ObjectRef{Kind: storeKind, Namespace: g.namespace, Name: name}
		so, err := st.LookupObject(ref)
		if err == nil && so.Deleted {
			err = store.ErrNotFound
		}
		if err != nil {
			return notFoundIn(g, storeKind, g.namespace, name, err)
		}
		status, err := st.ReadRoutingStatus(ref)
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
		}
		describeRouting(cmd.OutOrStdout(), g.instance, routingObject{obj: so, status: status})
		return nil
	}
}

func describeRouting(w io.Writer, instance string, r routingObject) {
	describeHeader(w, instance, r.obj.Meta)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	switch o := r.obj.Object.(type) {
	case *manifests.Ingress:
		cells := ingressCells(r)
		fmt.Fprintf(tw, "Ingress Class:\t%s\n", cells[0])
		fmt.Fprintf(tw, "Address:\t%s\n", cells[2])
		if b := o.Spec.DefaultBackend; b != nil {
			fmt.Fprintf(tw, "Default backend:\t%s\n", ingressBackend(b))
		} else {
			fmt.Fprintf(tw, "Default backend:\t<default>\n")
		}
		for _, t := range o.Spec.TLS {
			fmt.Fprintf(tw, "TLS:\t%s terminates %s\n", t.SecretName, strings.Join(t.Hosts, ","))
		}
		fmt.Fprintf(tw, "Rules:\n  Host\tPath\tBackends\n  ----\t----\t--------\n")
		for _, rule := range o.Spec.Rules {
			host := rule.Host
			if host == "" {
				host = "*"
			}
			if rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", host, p.Path, ingressBackend(&p.Backend))
			}
		}
	case *manifests.IngressClass:
		fmt.Fprintf(tw, "Controller:\t%s\n", o.Spec.Controller)
	case *manifests.GatewayClass:
		fmt.Fprintf(tw, "Controller:\t%s\n", o.Spec.ControllerName)
	case *manifests.Gateway:
		fmt.Fprintf(tw, "Class:\t%s\n", o.Spec.GatewayClassName)
		fmt.Fprintf(tw, "Listeners:\n")
		for _, l := range o.Spec.Listeners {
			host := "*"
			if l.Hostname != nil {
				host = *l.Hostname
			}
			fmt.Fprintf(tw, "  %s\t%s/%d\t%s\n", l.Name, l.Protocol, l.Port, host)
		}
	case *manifests.HTTPRoute:
		var parents []string
		for _, p := range o.Spec.ParentRefs {
			parents = append(parents, p.Name)
		}
		fmt.Fprintf(tw, "Parents:\t%s\n", joinOrNone(parents))
		fmt.Fprintf(tw, "Hostnames:\t%s\n", joinOrNone(o.Spec.Hostnames))
		fmt.Fprintf(tw, "Rules:\n")
		for i, rule := range o.Spec.Rules {
			var backends []string
			for _, b := range rule.BackendRefs {
				port := ""
				if b.Port != nil {
					port = fmt.Sprintf(":%d", *b.Port)
				}
				weight := int32(1)
				if b.Weight != nil {
					weight = *b.Weight
				}
				backends = append(backends, fmt.Sprintf("%s%s (weight %d)", b.Name, port, weight))
			}
			var matches []string
			for _, m := range rule.Matches {
				if m.Path != nil && m.Path.Value != nil && m.Path.Type != nil {
					matches = append(matches, *m.Path.Type+" "+*m.Path.Value)
				}
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\n", i, joinOrNone(matches), joinOrNone(backends))
		}
	}
	tw.Flush()
	describeRoutingStatus(w, r.status)
}

// describeRoutingStatus prints the conditions of a status, whatever its
// kind: the object's own, its listeners' and its parents'.
func describeRoutingStatus(w io.Writer, raw json.RawMessage) {
	var st struct {
		manifests.GatewayStatus
		Parents []manifests.RouteParentStatus `json:"parents"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &st) != nil {
		fmt.Fprintln(w, "Status:       <none: no controller has reported>")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	print := func(scope string, cs []manifests.Condition) {
		for _, c := range cs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", scope, c.Type, c.Status, c.Reason, c.Message)
		}
	}
	fmt.Fprintln(tw, "Conditions:\n  Scope\tType\tStatus\tReason\tMessage\n  -----\t----\t------\t------\t-------")
	print("-", st.Conditions)
	for _, l := range st.Listeners {
		print("listener "+l.Name, l.Conditions)
	}
	for _, p := range st.Parents {
		print("parent "+p.ParentRef.Name, p.Conditions)
	}
	tw.Flush()
}

func ingressBackend(b *manifests.IngressBackend) string {
	if b.Service == nil {
		return "<none>"
	}
	port := b.Service.Port.Name
	if b.Service.Port.Number != 0 {
		port = fmt.Sprint(b.Service.Port.Number)
	}
	return b.Service.Name + ":" + port
}
