package services

import (
	"context"
	"errors"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/reconciler/reconcile"
	"github.com/dockctl/dockctl/store"
)

// The DNS reconciler: one DNS server per instance (INSTANCE_dns, at the
// network's DNS address, which every pod has as its resolver), serving a
// record for every live Service (dnsrecords.go). It is a helper like a
// proxy (serviceplan.go): created with its config, then pushed to. It
// runs while anything of the instance may resolve through it — a live
// Service or deployment, or any pod the tracker holds, whatever its owner
// — and is removed once nothing is left, so that deleting everything
// leaves the host as it was. The tracker queues it when its first pod
// comes and when its last one goes: a deletion needs no resync to end.

// syncDNS is one observe → plan → execute pass for the DNS server.
func (s *Controller) syncDNS(ctx context.Context) (reconcile.Result, error) {
	if !s.tracker.Synced() {
		return reconcile.Result{}, nil
	}
	observed, err := s.listHelpers(ctx, dockerx.RoleDNS)
	if err != nil {
		return reconcile.Result{}, err
	}
	layout, netErr, netSeen := s.layout()
	if layout == nil {
		s.noteWaiting(DNSKey, netErr, netSeen)
		return reconcile.Result{RequeueAfter: networkRetry}, nil
	}
	s.mu.Lock()
	delete(s.waiting, DNSKey)
	s.mu.Unlock()
	recs, errs := s.store.ListServices()
	for _, err := range errs {
		s.log.Error("unreadable service record: its name is not served", "err", err)
	}
	var records []helperapi.DNSRecord
	live := false // a live Service wants the server, even one with no record
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		live = true
		svc := defaultService(&r.Service)
		var ready []store.EndpointStatus
		if svc.IsHeadless() {
			ready, _, _ = s.tracker.endpointsAt(svc)
		}
		records = append(records, serviceDNSRecords(svc, s.alloc.clusterIP(s.store, serviceKey(svc)), ready)...)
	}
	// A pod still stopping (a deleted deployment's, draining) or one of a
	// workload with no Service resolves through the server too.
	wanted := live || len(errs) > 0 || s.tracker.HasPods()
	if !wanted {
		deps, depErrs := s.cfg.Deployments.ListAll()
		wanted = len(depErrs) > 0 // never removed on the strength of an unreadable record
		for _, d := range deps {
			wanted = wanted || !d.Deleted
		}
	}

	cfg := dnsConfig(records)
	content, render := renderer(cfg, func(c *helperapi.DNSConfig, g int64) { c.Generation = g })
	s.mu.Lock()
	pushed := s.pushed[DNSKey]
	gen := max(s.dnsGen, s.floor[DNSKey])
	if pushed != nil {
		gen = max(gen, pushed.Generation)
	}
	before := s.dnsRecords
	s.mu.Unlock()
	pin := helperPlanInput{Observed: observed, Pushed: pushed, Generation: gen, Unwanted: "no service or deployment left"}
	if wanted {
		network := dockerx.NetworkName(s.cfg.Instance)
		ip := layout.DNSIP.String()
		pin.Want = &helperWant{Name: dnsName(s.cfg.Instance), Hash: dnsConfigHash(network, ip), Mode: helperapi.ModeDNS,
			Content: content, Render: render, Change: recordChange(before, cfg.Records), Stub: renderStub(dnsConfig(nil)),
			Request: dockerx.HelperRequest{Instance: s.cfg.Instance, Role: dockerx.RoleDNS, Network: dockerx.PodNetwork{Name: network, IPv4: ip}}}
	}
	plan := planHelper(pin)
	deferFor := s.deferCreate(DNSKey, plan, observed) // deferral.go
	if deferFor > 0 {
		plan = HelperPlan{}
	}
	s.logPlan(DNSKey, plan)
	done, err := s.execute(ctx, DNSKey, plan, content, render)
	wait := plan.Wait || errors.Is(err, errNameBeingFreed)
	if wait {
		err = nil
	}
	s.mu.Lock()
	if done != nil {
		s.dnsGen = max(s.dnsGen, done.Generation)
		s.dnsRecords = cfg.Records
	}
	if !wanted && err == nil {
		delete(s.pushed, DNSKey)
	}
	s.mu.Unlock()
	if wait {
		return reconcile.Result{RequeueAfter: nameRetry}, nil
	}
	return reconcile.Result{RequeueAfter: deferFor}, err
}
