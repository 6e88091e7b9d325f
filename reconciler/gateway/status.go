package gateway

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// objectStatus is one routing object's status to write and the events
// its change reports.
type objectStatus struct {
	status any // a manifests status type
	// problems are Warning events (reason, message) of the object: an
	// Ingress not served, a path lost to an older Ingress…
	problems []event
}

type event struct{ reason, message string }

// statusesOf maps a compiled table onto the routing objects' statuses in
// the API's shape (manifests.IngressStatus, GatewayStatus,
// HTTPRouteStatus, GatewayClassStatus): conditions carry the generation
// they observed, and keep their lastTransitionTime while their status
// stays (metav1.Condition's rule), from prev. address is where the
// gateway publishes (--service-address); programmed says whether the
// gateway helper acknowledged the config, without which no Ingress shows
// an address (nothing answers there yet).
func statusesOf(in gatewayroutes.Input, t *gatewayroutes.Table, address string, programmed bool, prev map[store.ObjectRef]json.RawMessage, now time.Time) map[store.ObjectRef]objectStatus {
	out := map[store.ObjectRef]objectStatus{}
	conds := func(ref store.ObjectRef, gen int64, cs []gatewayroutes.Condition, old []manifests.Condition) []manifests.Condition {
		res := make([]manifests.Condition, len(cs))
		for i, c := range cs {
			res[i] = manifests.Condition{Type: c.Type, Status: c.Status, ObservedGeneration: gen, Reason: c.Reason, Message: c.Message, LastTransitionTime: now.UTC().Truncate(time.Second)}
			if o := manifests.FindCondition(old, c.Type); o != nil && o.Status == c.Status {
				res[i].LastTransitionTime = o.LastTransitionTime
			}
		}
		return res
	}
	for _, gc := range in.GatewayClasses {
		cs, ok := t.Status.GatewayClasses[gc.Metadata.Name]
		if !ok {
			continue // another controller's class: not ours to report on
		}
		ref := store.ObjectRef{Kind: store.KindGatewayClass, Name: gc.Metadata.Name}
		var old manifests.GatewayClassStatus
		_ = json.Unmarshal(prev[ref], &old)
		out[ref] = objectStatus{status: manifests.GatewayClassStatus{Conditions: conds(ref, gc.Metadata.Generation, cs, old.Conditions)}}
	}
	for _, gw := range in.Gateways {
		gref := gatewayroutes.ObjectRef{Namespace: gw.Metadata.NamespaceOrDefault(), Name: gw.Metadata.Name}
		st, ok := t.Status.Gateways[gref]
		if !ok {
			continue
		}
		ref := store.ObjectRef{Kind: store.KindGateway, Namespace: gref.Namespace, Name: gref.Name}
		var old manifests.GatewayStatus
		_ = json.Unmarshal(prev[ref], &old)
		next := manifests.GatewayStatus{Conditions: conds(ref, gw.Metadata.Generation, st.Conditions, old.Conditions)}
		if programmed {
			next.Addresses = []manifests.GatewayStatusAddress{{Type: "IPAddress", Value: address}}
		}
		for _, l := range st.Listeners {
			var oldL []manifests.Condition
			for _, o := range old.Listeners {
				if o.Name == l.Name {
					oldL = o.Conditions
				}
			}
			next.Listeners = append(next.Listeners, manifests.ListenerStatus{Name: l.Name, AttachedRoutes: l.AttachedRoutes,
				SupportedKinds: []manifests.RouteGroupKind{{Group: ptr(manifests.GatewayGroup), Kind: manifests.KindHTTPRoute}},
				Conditions:     conds(ref, gw.Metadata.Generation, l.Conditions, oldL)})
		}
		out[ref] = objectStatus{status: next}
	}
	for _, r := range in.HTTPRoutes {
		rref := gatewayroutes.ObjectRef{Namespace: r.Metadata.NamespaceOrDefault(), Name: r.Metadata.Name}
		parents, ok := t.Status.HTTPRoutes[rref]
		if !ok {
			continue
		}
		ref := store.ObjectRef{Kind: store.KindHTTPRoute, Namespace: rref.Namespace, Name: rref.Name}
		var old manifests.HTTPRouteStatus
		_ = json.Unmarshal(prev[ref], &old)
		next := manifests.HTTPRouteStatus{Parents: []manifests.RouteParentStatus{}}
		for _, p := range parents {
			pr := manifests.StatusParentRef{Group: manifests.GatewayGroup, Kind: manifests.KindGateway, Namespace: p.ParentRef.Namespace, Name: p.ParentRef.Name, SectionName: p.Section}
			var oldC []manifests.Condition
			for _, o := range old.Parents {
				if o.ParentRef == pr {
					oldC = o.Conditions
				}
			}
			next.Parents = append(next.Parents, manifests.RouteParentStatus{ParentRef: pr, ControllerName: gatewayroutes.DefaultControllerName,
				Conditions: conds(ref, r.Metadata.Generation, p.Conditions, oldC)})
		}
		out[ref] = objectStatus{status: next}
	}
	for _, ing := range in.Ingresses {
		iref := gatewayroutes.ObjectRef{Namespace: ing.Metadata.NamespaceOrDefault(), Name: ing.Metadata.Name}
		st, ok := t.Status.Ingresses[iref]
		if !ok {
			continue
		}
		ref := store.ObjectRef{Kind: store.KindIngress, Namespace: iref.Namespace, Name: iref.Name}
		next := manifests.IngressStatus{}
		if st.Served && programmed {
			next.LoadBalancer.Ingress = []manifests.IngressLoadBalancerIngress{{IP: address}}
		}
		os := objectStatus{status: next}
		for _, p := range st.Problems {
			os.problems = append(os.problems, problemEvent(p))
		}
		out[ref] = os
	}
	return out
}

// problemEvent words a compile problem ("Reason: message") as an event.
func problemEvent(p string) event {
	reason, msg, ok := strings.Cut(p, ": ")
	if !ok || strings.ContainsAny(reason, " /") {
		return event{reason: "Invalid", message: p}
	}
	return event{reason: reason, message: msg}
}

// encodeStatus is the JSON of a status, or an error naming the object.
func encodeStatus(ref store.ObjectRef, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", ref, err)
	}
	return b, nil
}

// sortedRefs are the keys of m, sorted, so that writes and events come
// in a stable order.
func sortedRefs[V any](m map[store.ObjectRef]V) []store.ObjectRef {
	out := make([]store.ObjectRef, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

func ptr[T any](v T) *T { return &v }
