package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// Services as the read commands show them: the stored Service, what the
// controller recorded of it (store.ServiceStatus: its address, nodePorts,
// endpoints, conditions), and, for the address a LoadBalancer Service is
// published on, what Docker reports of its proxy. What the controller
// recorded is only as fresh as the controller: without a running one it is
// flagged "(stale?)", as `get deployments -o wide` flags its OBSERVED.

// serviceEntry is one live Service of the snapshot.
type serviceEntry struct {
	rec *store.ServiceRecord
	// status is nil while no controller has synced the Service.
	status *store.ServiceStatus
}

func (e serviceEntry) namespace() string { return e.rec.Service.Metadata.NamespaceOrDefault() }
func (e serviceEntry) name() string      { return e.rec.Service.Metadata.Name }

// spec is the Service as the API server would hold it: defaulted (the
// store keeps what the decoder defaulted; a hand-written record may lack
// it), in its namespace, with the record's server-set metadata.
func (e serviceEntry) spec() *manifests.Service {
	s := e.rec.Service.DeepCopy()
	manifests.SetServiceDefaults(s)
	s.Metadata.Namespace = e.namespace()
	s.Metadata.Generation = e.rec.Generation
	created := e.rec.Created
	s.Metadata.CreationTimestamp = &created
	s.Metadata.ManagedFields = e.rec.Entries()
	return s
}

// readServices reads the live Services and their statuses into the
// snapshot; what cannot be read is warned about as the deployments' records
// are.
func (s *snapshot) readServices(st *store.Store) {
	recs, errs := st.ListServices()
	s.recordErrs = append(s.recordErrs, errs...)
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		e := serviceEntry{rec: r}
		ns := r.Service.Metadata.NamespaceOrDefault()
		status, err := st.ReadServiceStatus(ns, r.Service.Metadata.Name)
		if err != nil {
			s.recordErrs = append(s.recordErrs, err)
		}
		e.status = status
		s.services = append(s.services, e)
	}
}

// service returns the live Service name of namespace ns.
func (s *snapshot) service(ns, name string) (serviceEntry, bool) {
	for _, e := range s.services {
		if e.namespace() == ns && e.name() == name {
			return e, true
		}
	}
	return serviceEntry{}, false
}

// missingService words why Service name of namespace ns is not in the
// snapshot, as kind (Service, or Endpoints for its endpoints): its record
// cannot be read (the store's error), or there is none.
func (s *snapshot) missingService(g *globalOptions, kind, ns, name string) error {
	if s.st != nil {
		if _, err := s.st.LookupService(ns, name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("service %q: %w", name, err)
		}
	}
	return notFoundIn(g, kind, ns, name, store.ErrNotFound)
}

// servicesSelecting names the live Services of namespace ns whose selector
// matches a pod template's labels, as Kubernetes' endpoints controller
// matches pods.
func (s *snapshot) servicesSelecting(ns string, podLabels map[string]string) []string {
	var out []string
	for _, e := range s.services {
		if e.namespace() == ns && manifests.SelectorMatches(e.rec.Service.Spec.Selector, podLabels) {
			out = append(out, e.name())
		}
	}
	return out
}

// isHelper reports whether a container is one of the instance's helpers (a
// Service's proxy, the DNS server, a port-forward session's relay): no
// deployment's replica, and no orphan.
func isHelper(c dockerx.Container) bool { return dockerx.IsHelperRole(c.Role) }

// clusterIP is the CLUSTER-IP column: None for a headless Service, the
// address the controller allocated, or <pending> until it did.
func (e serviceEntry) clusterIP() string {
	if e.rec.Service.IsHeadless() {
		return manifests.ClusterIPNone
	}
	if e.status != nil && e.status.ClusterIP != "" && e.status.ClusterIP != manifests.ClusterIPNone {
		return e.status.ClusterIP
	}
	return "<pending>"
}

// externalIPs are the addresses a LoadBalancer Service is published on:
// the host addresses of the ports its status says the instance's
// publisher serves for it (store.ServiceStatus.Published: those no other
// holds), while the publisher runs (docs/design.md §10, published
// ports) — where the controller's --service-address took effect. An
// earlier release published on the Service's proxy: the host addresses
// of that proxy's published ports, as Docker reports them. None while
// nothing is published (not yet synced, every port in conflict, no
// publisher running).
func (s *snapshot) externalIPs(e serviceEntry) []string {
	if e.rec.Service.Spec.Type != manifests.ServiceTypeLoadBalancer || e.rec.Service.IsHeadless() {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(ip string) {
		if ip == "" {
			ip = "0.0.0.0"
		}
		if !seen[ip] {
			seen[ip] = true
			out = append(out, ip)
		}
	}
	publisher := slices.ContainsFunc(s.helpers, func(c dockerx.Container) bool {
		return c.Role == dockerx.RolePublisher && c.State == dockerx.StateRunning
	})
	if publisher && e.status != nil {
		for _, p := range e.status.Published {
			// Only a port its spec has: a status the controller wrote
			// before the Service became a LoadBalancer lists a NodePort
			// Service's nodePorts, and its own ports are not served yet.
			if slices.ContainsFunc(e.rec.Service.Spec.Ports, func(sp manifests.ServicePort) bool {
				return (int(sp.Port) == p.Port || int(sp.NodePort) == p.Port) && strings.EqualFold(protocolOrTCP(sp.Protocol), p.Protocol)
			}) {
				add(p.HostIP)
			}
		}
	}
	for _, c := range s.helpers {
		if c.Role != dockerx.RoleProxy || containerNamespace(c) != e.namespace() || c.Service != e.name() || c.State != dockerx.StateRunning {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				add(p.HostIP)
			}
		}
	}
	if seen["0.0.0.0"] && seen["::"] {
		// Docker lists a binding on every address once per family.
		out = dropString(out, "::")
	}
	sort.Strings(out)
	return out
}

func dropString(in []string, s string) []string {
	return keep(in, func(v string) bool { return v != s })
}

// externalIP is the EXTERNAL-IP column, as kubectl's: <none> but for a
// LoadBalancer, whose address is <pending> until it is published.
func (s *snapshot) externalIP(e serviceEntry) string {
	if e.rec.Service.Spec.Type != manifests.ServiceTypeLoadBalancer {
		return "<none>"
	}
	if ips := s.externalIPs(e); len(ips) > 0 {
		return strings.Join(ips, ",")
	}
	return "<pending>"
}

// nodePort is the nodePort of Service port p: the one given, or the one
// the controller allocated (0: none).
func nodePort(p manifests.ServicePort, st *store.ServiceStatus) int32 {
	if p.NodePort != 0 || st == nil {
		return p.NodePort
	}
	for _, np := range st.NodePorts {
		if np.Port == p.Port && strings.EqualFold(np.Protocol, p.Protocol) {
			return np.NodePort
		}
	}
	return 0
}

// portsColumn is the PORT(S) column, as kubectl's makePortString: 80/TCP,
// or 80:31234/TCP with a nodePort.
func portsColumn(svc *manifests.Service, st *store.ServiceStatus) string {
	pieces := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		if np := nodePort(p, st); np != 0 {
			pieces = append(pieces, fmt.Sprintf("%d:%d/%s", p.Port, np, p.Protocol))
		} else {
			pieces = append(pieces, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return orNone(strings.Join(pieces, ","))
}

// serviceObject is the Service as `get -o json|yaml` prints it: a core/v1
// Service whose spec carries what the API server would have filled in (the
// allocated clusterIP and nodePorts, the defaults that hold on one host)
// and whose status carries the published address and the controller's
// conditions.
func (s *snapshot) serviceObject(e serviceEntry) (*corev1.Service, error) {
	svc := e.spec()
	b, err := json.Marshal(svc)
	if err != nil {
		return nil, fmt.Errorf("service %q: %w", svc.Metadata.Name, err)
	}
	// The fields of manifests.Service are core/v1's (tested): the
	// conversion is a decode.
	out := &corev1.Service{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("service %q as a v1 Service: %w", svc.Metadata.Name, err)
	}
	out.APIVersion, out.Kind = manifests.CoreAPIVersion, manifests.KindService
	sp := &out.Spec
	if ip := e.clusterIP(); ip != "<pending>" {
		sp.ClusterIP, sp.ClusterIPs = ip, []string{ip}
	}
	for i := range sp.Ports {
		sp.Ports[i].NodePort = nodePort(svc.Spec.Ports[i], e.status)
	}
	// What the API server fills in, and what holds on one host: one IPv4
	// address, no session affinity, every endpoint node-local.
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = corev1.ServiceAffinityNone
	}
	if len(sp.IPFamilies) == 0 {
		sp.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if sp.IPFamilyPolicy == nil {
		single := corev1.IPFamilyPolicySingleStack
		sp.IPFamilyPolicy = &single
	}
	if sp.InternalTrafficPolicy == nil {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		sp.InternalTrafficPolicy = &cluster
	}
	if sp.ExternalTrafficPolicy == "" && (sp.Type == corev1.ServiceTypeNodePort || sp.Type == corev1.ServiceTypeLoadBalancer) {
		sp.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	for _, ip := range s.externalIPs(e) {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if e.status != nil {
		for _, c := range e.status.Conditions {
			out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status),
				ObservedGeneration: e.status.ObservedGeneration, LastTransitionTime: metav1.NewTime(c.LastTransitionTime), Reason: c.Reason, Message: c.Message})
		}
	}
	return out, nil
}

// endpointsObject is a Service's endpoints as a core/v1 Endpoints, as
// Kubernetes' endpoints controller writes it: the Service's labels (and
// the headless label), and subsets of the addresses that share a set of
// ports, ready ones in addresses and the others in notReadyAddresses, each
// naming its pod; addresses sorted as the controller sorts them. Pods
// without an address yet are left out, as there.
func (s *snapshot) endpointsObject(e serviceEntry) *corev1.Endpoints {
	out := &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: manifests.CoreAPIVersion, Kind: "Endpoints"}}
	m := e.rec.Service.Metadata
	out.Name, out.Namespace = m.Name, e.namespace()
	out.CreationTimestamp = metav1.NewTime(e.rec.Created)
	if len(m.Labels) > 0 || e.rec.Service.IsHeadless() {
		out.Labels = map[string]string{}
		for k, v := range m.Labels {
			out.Labels[k] = v
		}
		if e.rec.Service.IsHeadless() {
			out.Labels[corev1.IsHeadlessService] = ""
		}
	}
	if e.status == nil {
		return out
	}
	bySet := map[string]*corev1.EndpointSubset{}
	var keys []string
	for _, ep := range e.status.Endpoints {
		if ep.IP == "" {
			continue
		}
		ports := make([]corev1.EndpointPort, 0, len(ep.Ports))
		for _, p := range ep.Ports {
			ports = append(ports, corev1.EndpointPort{Name: p.Name, Port: p.Port, Protocol: corev1.Protocol(p.Protocol)})
		}
		sort.Slice(ports, func(i, j int) bool {
			if ports[i].Name != ports[j].Name {
				return ports[i].Name < ports[j].Name
			}
			return ports[i].Port < ports[j].Port
		})
		var key strings.Builder
		for _, p := range ports {
			fmt.Fprintf(&key, "%s=%d/%s,", p.Name, p.Port, p.Protocol)
		}
		ss := bySet[key.String()]
		if ss == nil {
			ss = &corev1.EndpointSubset{Ports: ports}
			bySet[key.String()] = ss
			keys = append(keys, key.String())
		}
		addr := corev1.EndpointAddress{IP: ep.IP, Hostname: ep.Hostname, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: e.namespace(), Name: ep.Pod}}
		if ep.Ready {
			ss.Addresses = append(ss.Addresses, addr)
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, addr)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ss := bySet[k]
		sortAddresses(ss.Addresses)
		sortAddresses(ss.NotReadyAddresses)
		out.Subsets = append(out.Subsets, *ss)
	}
	return out
}

// sortAddresses sorts as Kubernetes' LessEndpointAddress: by the IP's
// text, then by pod.
func sortAddresses(as []corev1.EndpointAddress) {
	sort.Slice(as, func(i, j int) bool {
		if as[i].IP != as[j].IP {
			return as[i].IP < as[j].IP
		}
		return as[i].TargetRef.Name < as[j].TargetRef.Name
	})
}

// formatEndpoints lists the ready (or, with notReady, the not-ready)
// addresses of ep as kubectl's formatEndpoints does: IP:port for each port
// (of those named portNames, when not nil), the bare IP for a subset
// without ports, at most three, then "+ N more...", or <none>.
func formatEndpoints(ep *corev1.Endpoints, portNames map[string]bool, notReady bool) string {
	const max = 3
	var list []string
	count := 0
	add := func(s string) {
		count++
		if len(list) < max {
			list = append(list, s)
		}
	}
	for _, ss := range ep.Subsets {
		addrs := ss.Addresses
		if notReady {
			addrs = ss.NotReadyAddresses
		}
		if len(ss.Ports) == 0 {
			for _, a := range addrs {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			if portNames != nil && !portNames[p.Name] {
				continue
			}
			for _, a := range addrs {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	ret := strings.Join(list, ",")
	switch {
	case count > max:
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	case ret == "":
		return "<none>"
	}
	return ret
}

// staleMark is what a value the controller recorded gets while no
// controller runs: it may be out of date.
func (s *snapshot) staleMark() string {
	if s.controllerRunning {
		return ""
	}
	return " (stale?)"
}

// endpointsColumn is the ENDPOINTS column: kubectl's, <unknown> before the
// controller synced the Service, flagged when it may be stale.
func (s *snapshot) endpointsColumn(e serviceEntry) string {
	if e.status == nil {
		return "<unknown>"
	}
	return formatEndpoints(s.endpointsObject(e), nil, false) + s.staleMark()
}

func getServices(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	list, snap, err := o.serviceListing(cmd, g, name, false)
	if err != nil || list == nil {
		return err
	}
	return renderServices(cmd.OutOrStdout(), snap, list, o.printer, name != "", o.allNamespaces)
}

// getEndpoints lists the endpoints of the Services that have a selector:
// as Kubernetes, which keeps no Endpoints for the others (their endpoints
// are not managed).
func getEndpoints(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	list, snap, err := o.serviceListing(cmd, g, name, true)
	if err != nil || list == nil {
		return err
	}
	return renderEndpoints(cmd.OutOrStdout(), snap, list, o.printer, name != "", o.allNamespaces)
}

// serviceListing is how get services and get endpoints begin: the live
// Services in scope, named name, whose labels match -l (endpoints: only
// those with a selector). A nil list with a nil error means nothing to
// print (said on stderr).
func (o *getOptions) serviceListing(cmd *cobra.Command, g *globalOptions, name string, endpoints bool) ([]serviceEntry, *snapshot, error) {
	sel, snap, err := o.listing(cmd, g, parseSelector)
	if err != nil {
		return nil, nil, err
	}
	kind := store.KindService
	if endpoints {
		kind = "Endpoints"
	}
	var list []serviceEntry
	for _, e := range snap.services {
		if !o.inScope(g, e.namespace()) || name != "" && e.name() != name || endpoints && len(e.rec.Service.Spec.Selector) == 0 {
			continue
		}
		lbls := e.rec.Service.Metadata.Labels
		if endpoints {
			lbls = snap.endpointsObject(e).Labels
		}
		if sel.Matches(labels.Set(lbls)) {
			list = append(list, e)
		}
	}
	if name != "" && len(list) == 0 {
		return nil, nil, snap.missingService(g, kind, g.namespace, name)
	}
	if len(list) == 0 && (o.output == "table" || o.output == "wide" || o.output == "") {
		o.noResources(cmd.ErrOrStderr(), g, true)
		return nil, nil, nil
	}
	return list, snap, nil
}

// renderServices prints Services as kubectl does (golden-tested): NAME
// TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, -o wide adding SELECTOR, -o
// json|yaml v1 Services, -o name service/NAME.
func renderServices(out io.Writer, snap *snapshot, list []serviceEntry, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "service", columns: []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}, wide: []string{"SELECTOR"}}
	for _, e := range list {
		svc := e.spec()
		t.rows = append(t.rows, row{namespace: e.namespace(), name: e.name(), labels: svc.Metadata.Labels, id: createdID(e.rec.Created),
			cells: []string{e.name(), string(svc.Spec.Type), e.clusterIP(), snap.externalIP(e), portsColumn(svc, e.status),
				age(snap.now.Sub(e.rec.Created))},
			wide:   []string{kv(svc.Spec.Selector)},
			object: func() (any, error) { return snap.serviceObject(e) }})
	}
	return p.print(out, t, single, allNamespaces)
}

// renderEndpoints prints Services' endpoints as kubectl prints Endpoints
// (golden-tested): NAME ENDPOINTS AGE (-o wide adds nothing, as
// kubectl's), -o json|yaml v1 Endpoints, -o name endpoints/NAME.
func renderEndpoints(out io.Writer, snap *snapshot, list []serviceEntry, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "endpoints", columns: []string{"NAME", "ENDPOINTS", "AGE"}}
	for _, e := range list {
		ep := snap.endpointsObject(e)
		t.rows = append(t.rows, row{namespace: e.namespace(), name: e.name(), labels: ep.Labels, id: createdID(e.rec.Created),
			cells:  []string{e.name(), snap.endpointsColumn(e), age(snap.now.Sub(e.rec.Created))},
			object: func() (any, error) { return ep, nil }})
	}
	return p.print(out, t, single, allNamespaces)
}

// describeService prints a Service as kubectl's describe does, with what
// a drain needs besides: each port's ready endpoints (Endpoints) and the
// others (NotReadyEndpoints), then the controller's conditions (a port
// conflict, a proxy that failed).
func describeService(w io.Writer, snap *snapshot, e serviceEntry) {
	svc := e.spec()
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	p := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	p("Name", e.name())
	p("Namespace", e.namespace())
	p("Instance", snap.instance)
	p("CreationTimestamp", e.rec.Created.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	p("Labels", kv(svc.Metadata.Labels))
	p("Annotations", kv(svc.Metadata.Annotations))
	p("Managed-By", managedBy(svc.Metadata.ManagedFields))
	p("Selector", kv(svc.Spec.Selector))
	p("Type", svc.Spec.Type)
	p("IP Family Policy", orDefault(svc.Spec.IPFamilyPolicy, string(corev1.IPFamilyPolicySingleStack)))
	p("IP Families", string(corev1.IPv4Protocol))
	ip := e.clusterIP()
	p("IP", ip)
	if ip == "<pending>" {
		p("IPs", "<none>")
	} else {
		p("IPs", ip)
	}
	if svc.Spec.Type == manifests.ServiceTypeLoadBalancer {
		p("LoadBalancer Ingress", orDefault(strings.Join(snap.externalIPs(e), ", "), "<pending>"))
	}
	observed := "<unknown: no controller has synced this service>"
	if e.status != nil {
		observed = fmt.Sprint(e.status.ObservedGeneration)
		if !snap.controllerRunning {
			observed += ", recorded by a controller that is not running now: endpoints and conditions may be stale"
		}
	}
	p("Generation", fmt.Sprintf("%d (observed: %s)", e.rec.Generation, observed))
	ep := snap.endpointsObject(e)
	endpoints := func(names map[string]bool) {
		ready, notReady := formatEndpoints(ep, names, false), formatEndpoints(ep, names, true)
		if e.status == nil && len(svc.Spec.Selector) > 0 {
			ready, notReady = "<unknown>", "<unknown>"
		}
		p("Endpoints", ready)
		p("NotReadyEndpoints", notReady)
	}
	for _, sp := range svc.Spec.Ports {
		name := orDefault(sp.Name, "<unset>")
		fmt.Fprintf(tw, "Port:\t%s  %d/%s\n", name, sp.Port, sp.Protocol)
		p("TargetPort", sp.TargetPort.String()+"/"+sp.Protocol)
		if np := nodePort(sp, e.status); np != 0 {
			fmt.Fprintf(tw, "NodePort:\t%s  %d/%s\n", name, np, sp.Protocol)
		}
		endpoints(map[string]bool{sp.Name: true})
	}
	if len(svc.Spec.Ports) == 0 {
		endpoints(nil) // a headless Service may have no ports: its addresses
	}
	p("Session Affinity", orDefault(svc.Spec.SessionAffinity, string(corev1.ServiceAffinityNone)))
	if svc.Spec.Type == manifests.ServiceTypeNodePort || svc.Spec.Type == manifests.ServiceTypeLoadBalancer {
		p("External Traffic Policy", orDefault(svc.Spec.ExternalTrafficPolicy, string(corev1.ServiceExternalTrafficPolicyCluster)))
	}
	if e.status == nil || len(e.status.Conditions) == 0 {
		p("Conditions", "<none>")
	} else {
		tw.Flush()
		rows := make([][4]string, 0, len(e.status.Conditions))
		for _, c := range e.status.Conditions {
			rows = append(rows, [4]string{c.Type, c.Status, c.Reason, c.Message})
		}
		conditionTable(w, rows)
	}
	tw.Flush() // the Events section follows (describeEvents)
}

// describeEndpoints prints a Service's Endpoints as kubectl's
// EndpointsDescriber does: each subset's ready and not-ready addresses and
// its ports, a blank line after each (the Events section follows).
func describeEndpoints(w io.Writer, snap *snapshot, e serviceEntry) {
	ep := snap.endpointsObject(e)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", ep.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", ep.Namespace)
	fmt.Fprintf(tw, "Instance:\t%s\n", snap.instance)
	multiline(tw, "Labels", ep.Labels)
	annotationsMultiline(tw, ep.Annotations)
	// No tab after Subsets: as kubectl's, its line ends the column of
	// the lines above.
	switch {
	case e.status == nil:
		fmt.Fprintln(tw, "Subsets:  <unknown: no controller has synced this service>")
	case !snap.controllerRunning:
		fmt.Fprintln(tw, "Subsets:  (recorded by a controller that is not running now: may be stale)")
	default:
		fmt.Fprintln(tw, "Subsets:")
	}
	ips := func(as []corev1.EndpointAddress) string {
		out := make([]string, 0, len(as))
		for _, a := range as {
			out = append(out, a.IP)
		}
		return orDefault(strings.Join(out, ","), "<none>")
	}
	for _, ss := range ep.Subsets {
		fmt.Fprintf(tw, "  Addresses:\t%s\n", ips(ss.Addresses))
		fmt.Fprintf(tw, "  NotReadyAddresses:\t%s\n", ips(ss.NotReadyAddresses))
		if len(ss.Ports) > 0 {
			fmt.Fprintln(tw, "  Ports:")
			fmt.Fprintln(tw, "    Name\tPort\tProtocol")
			fmt.Fprintln(tw, "    ----\t----\t--------")
			for _, p := range ss.Ports {
				fmt.Fprintf(tw, "    %s\t%d\t%s\n", orDefault(p.Name, "<unset>"), p.Port, p.Protocol)
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
