package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dockctl/dockctl/internal/gatewayroutes"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// Key is the one key of the gateway's loop: every routing object, Service
// and Secret of the instance feeds one compiled table, so any change of
// them syncs the whole table again (it is pure and cheap).
const Key = "gateway"

// Store is what the controller reads and writes of the state directory.
type Store interface {
	ListObjects(kind string) ([]*store.StoredObject, []error)
	ListServices() ([]*store.ServiceRecord, []error)
	ListSecrets() ([]*store.SecretRecord, []error)
	ListNamespaces() ([]*store.NamespaceRecord, error)
	ReadRoutingStatus(ref store.ObjectRef) (json.RawMessage, error)
	WriteRoutingStatus(ref store.ObjectRef, status json.RawMessage) error
}

// Recorder records events (reconciler.EventRecorder).
type Recorder interface {
	Event(obj store.InvolvedObject, eventType, reason, message string)
}

// Config is the controller's settings.
type Config struct {
	Store    Store
	Recorder Recorder
	Logger   *slog.Logger
	// Address is where the gateway publishes (--service-address).
	Address string
	// Routes are the compile options: controller name, served ingress
	// classes (--ingress-class), HTTP and HTTPS ports.
	Routes gatewayroutes.Options
	// Programmed tells whether the gateway helper acknowledged the
	// config of generation gen; nil: never (no data plane).
	Programmed func(gen int64) bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// ACME enables automatic HTTPS (acme.go); nil: none.
	ACME *ACMEConfig
}

// DataPlane is the gateway helper's side (package services, which runs
// it as it runs the Services' proxies): it is handed every compiled table
// and says which table generation the helper acknowledged.
type DataPlane interface {
	// ServeGateway hands it the table of generation gen; notify is called
	// once the helper acknowledged a new table generation.
	ServeGateway(t *gatewayroutes.Table, gen int64, notify func())
	GatewayProgrammed(gen int64) bool
	// GatewayUnavailable are the ports it could not publish, with why;
	// notify is called when they change too.
	GatewayUnavailable() map[int]string
}

// SetDataPlane connects the data plane; notify queues this controller's
// sync (its loop is the caller's). Called before the loop starts.
func (c *Controller) SetDataPlane(dp DataPlane, notify func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dp, c.notify = dp, notify
	if c.cfg.Programmed == nil {
		c.cfg.Programmed = dp.GatewayProgrammed
	}
	if c.acme != nil {
		c.acme.mu.Lock()
		c.acme.notify, c.acme.programmed = notify, c.cfg.Programmed
		c.acme.mu.Unlock()
	}
}

// Controller compiles the routing objects and writes their status.
type Controller struct {
	cfg Config
	mu  sync.Mutex
	// reported are the problems last reported per object, so that a
	// resync records no event again for what did not change.
	reported map[store.ObjectRef][]event
	// gen counts the configs compiled, as the generation pushed.
	gen  int64
	last []byte
	// dp serves the compiled tables (nil: no data plane); notify queues
	// a sync once it acknowledged one.
	dp     DataPlane
	notify func()
	// acme runs the ACME orders (nil without Config.ACME).
	acme *acmeManager
}

// New returns a controller of cfg.
func New(cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Controller{cfg: cfg, reported: map[store.ObjectRef][]event{}}
	if cfg.ACME != nil {
		c.acme = newACMEManager(*cfg.ACME, cfg.Now, cfg.Logger)
		c.acme.programmed = cfg.Programmed
	}
	return c
}

// Reconcile syncs the gateway (reconcile.Reconciler): reads every routing
// object, compiles the table, writes the statuses that changed and
// records the problems that are new.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Key != Key {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("gateway: unknown key %q", req.Key))
	}
	in, secrets, err := c.input()
	if err != nil {
		return reconcile.Result{}, err
	}
	table := gatewayroutes.Compile(in, c.cfg.Routes)
	var (
		wants        []certWant
		acmeProblems map[store.ObjectRef][]event
		retry        time.Duration
	)
	if c.acme != nil {
		// docs/design.md §10, ACME: orders start (or renew) here, and
		// their challenges and certificates join the config.
		wants = acmeWants(in, table, secrets)
		acmeProblems, retry = c.acme.plan(wants, secrets, c.cfg.Now())
		addACME(&table.Config, c.cfg.Routes, wants, in.TLSSecrets, c.acme.pending())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cfgJSON, err := json.Marshal(table.Config)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("gateway config: %w", err)
	}
	if !slices.Equal(cfgJSON, c.last) {
		c.gen++
		c.last = cfgJSON
	}
	if c.dp != nil {
		// Every sync hands the table over: a Secret's new content or an
		// endpoint is resolved there, not compiled here.
		c.dp.ServeGateway(table, c.gen, c.notify)
	}
	if c.acme != nil {
		c.acme.served(table.Config.ACMEChallenges, c.gen)
	}
	programmed := c.cfg.Programmed != nil && c.cfg.Programmed(c.gen)
	if c.dp != nil {
		// Listener conditions only: the config does not depend on it.
		in.Unavailable = c.dp.GatewayUnavailable()
	}
	if programmed || len(in.Unavailable) > 0 {
		// The Gateways' Programmed condition: the helper serves this
		// table (the config does not depend on it).
		if programmed {
			in.Programmed = map[gatewayroutes.ObjectRef]bool{}
			for _, gw := range in.Gateways {
				in.Programmed[gatewayroutes.ObjectRef{Namespace: gw.Metadata.NamespaceOrDefault(), Name: gw.Metadata.Name}] = true
			}
		}
		table = gatewayroutes.Compile(in, c.cfg.Routes)
	}
	prev := c.previousStatuses(in)
	statuses := statusesOf(in, table, c.cfg.Address, programmed, prev, c.cfg.Now())
	if c.acme != nil {
		for ref, ps := range acmeProblems {
			if st, ok := statuses[ref]; ok {
				st.problems = append(st.problems, ps...)
				statuses[ref] = st
			}
		}
		gens, prevConds := map[store.ObjectRef]int64{}, map[store.ObjectRef][]manifests.Condition{}
		for _, gw := range in.Gateways {
			ref := store.ObjectRef{Kind: store.KindGateway, Namespace: gw.Metadata.NamespaceOrDefault(), Name: gw.Metadata.Name}
			gens[ref] = gw.Metadata.Generation
			var old manifests.GatewayStatus
			_ = json.Unmarshal(prev[ref], &old)
			prevConds[ref] = old.Conditions
		}
		c.acme.acmeGatewayConditions(statuses, wants, secrets, gens, prevConds, c.cfg.Now())
	}
	var errs []error
	for _, ref := range sortedRefs(statuses) {
		st := statuses[ref]
		raw, err := encodeStatus(ref, st.status)
		if err == nil {
			err = c.cfg.Store.WriteRoutingStatus(ref, raw)
		}
		if err != nil {
			errs = append(errs, err)
		}
		c.report(ref, st.problems)
	}
	for ref := range c.reported {
		if _, ok := statuses[ref]; !ok {
			delete(c.reported, ref) // gone: a new one reports again
		}
	}
	return reconcile.Result{RequeueAfter: retry}, errors.Join(errs...)
}

// report records the problems of ref that were not reported at the last
// sync, as Warning events.
func (c *Controller) report(ref store.ObjectRef, problems []event) {
	old := c.reported[ref]
	for _, p := range problems {
		if !slices.Contains(old, p) && c.cfg.Recorder != nil {
			c.cfg.Recorder.Event(store.InvolvedObject{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}, "Warning", p.reason, p.message)
		}
	}
	if len(problems) == 0 {
		delete(c.reported, ref)
		return
	}
	c.reported[ref] = problems
}

// refOf is the store's reference to the routing object of kind with
// metadata m (a cluster-scoped kind has no namespace).
func refOf(kind string, m *manifests.ObjectMeta) store.ObjectRef {
	ns := m.NamespaceOrDefault()
	if manifests.ClusterScoped(kind) {
		ns = ""
	}
	return store.ObjectRef{Kind: kind, Namespace: ns, Name: m.Name}
}

// previousStatuses reads the statuses last written for the routing
// objects of in, the ones statusesOf reports on (a condition keeps its
// lastTransitionTime while its status stays): from the objects input
// listed, not from a second listing of the store in the same sync.
func (c *Controller) previousStatuses(in gatewayroutes.Input) map[store.ObjectRef]json.RawMessage {
	prev := map[store.ObjectRef]json.RawMessage{}
	read := func(kind string, m *manifests.ObjectMeta) {
		ref := refOf(kind, m)
		if raw, err := c.cfg.Store.ReadRoutingStatus(ref); err == nil && raw != nil {
			prev[ref] = raw
		}
	}
	for _, o := range in.GatewayClasses {
		read(store.KindGatewayClass, &o.Metadata)
	}
	for _, o := range in.Gateways {
		read(store.KindGateway, &o.Metadata)
	}
	for _, o := range in.HTTPRoutes {
		read(store.KindHTTPRoute, &o.Metadata)
	}
	for _, o := range in.Ingresses {
		read(store.KindIngress, &o.Metadata)
	}
	return prev
}

// input reads what the compile depends on: the live routing objects, the
// Services' ports, the kubernetes.io/tls Secrets and the namespaces'
// labels. An unreadable record fails the sync (it is retried): compiling
// without it could drop a route that exists.
func (c *Controller) input() (gatewayroutes.Input, map[gatewayroutes.ObjectRef]*manifests.Secret, error) {
	in := gatewayroutes.Input{
		Services:        map[gatewayroutes.ObjectRef]gatewayroutes.Service{},
		TLSSecrets:      map[gatewayroutes.ObjectRef]bool{},
		NamespaceLabels: map[string]map[string]string{},
	}
	// secrets are the live kubernetes.io/tls Secrets, whose certificates
	// ACME renews (the compile needs only their names).
	secrets := map[gatewayroutes.ObjectRef]*manifests.Secret{}
	var errs []error
	list := func(kind string) []*store.StoredObject {
		objs, es := c.cfg.Store.ListObjects(kind)
		errs = append(errs, es...)
		var live []*store.StoredObject
		for _, o := range objs {
			if !o.Deleted {
				live = append(live, o)
			}
		}
		return live
	}
	for _, o := range list(store.KindIngress) {
		in.Ingresses = append(in.Ingresses, o.Object.(*manifests.Ingress))
	}
	for _, o := range list(store.KindIngressClass) {
		in.IngressClasses = append(in.IngressClasses, o.Object.(*manifests.IngressClass))
	}
	for _, o := range list(store.KindGatewayClass) {
		in.GatewayClasses = append(in.GatewayClasses, o.Object.(*manifests.GatewayClass))
	}
	for _, o := range list(store.KindGateway) {
		in.Gateways = append(in.Gateways, o.Object.(*manifests.Gateway))
	}
	for _, o := range list(store.KindHTTPRoute) {
		in.HTTPRoutes = append(in.HTTPRoutes, o.Object.(*manifests.HTTPRoute))
	}
	for _, o := range list(store.KindReferenceGrant) {
		in.ReferenceGrants = append(in.ReferenceGrants, o.Object.(*manifests.ReferenceGrant))
	}
	svcs, es := c.cfg.Store.ListServices()
	errs = append(errs, es...)
	for _, r := range svcs {
		if r.Deleted {
			continue
		}
		var s gatewayroutes.Service
		for _, p := range r.Service.Spec.Ports {
			s.Ports = append(s.Ports, gatewayroutes.ServicePort{Name: p.Name, Port: p.Port, AppProtocol: p.AppProtocol})
		}
		in.Services[gatewayroutes.ObjectRef{Namespace: r.Service.Metadata.NamespaceOrDefault(), Name: r.Service.Metadata.Name}] = s
	}
	secs, es := c.cfg.Store.ListSecrets()
	errs = append(errs, es...)
	for _, r := range secs {
		if !r.Deleted && r.Object.Type == manifests.SecretTypeTLS {
			ref := gatewayroutes.ObjectRef{Namespace: r.Object.Metadata.NamespaceOrDefault(), Name: r.Object.Metadata.Name}
			in.TLSSecrets[ref] = true
			secrets[ref] = &r.Object
		}
	}
	nss, err := c.cfg.Store.ListNamespaces()
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range nss {
		if !n.Deleted {
			in.NamespaceLabels[n.Namespace.Metadata.Name] = n.Namespace.Metadata.Labels
		}
	}
	if _, ok := in.NamespaceLabels[manifests.DefaultNamespace]; !ok {
		in.NamespaceLabels[manifests.DefaultNamespace] = nil
	}
	return in, secrets, errors.Join(errs...)
}
