package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/events"
)

// repairReplicas is the size of every repaired set: one replica of three is
// killed (BENCHMARKS.md, Repair latency).
const repairReplicas = 3

// settle is how long a set must stay complete before the next kill, so
// that the follow-up work of the previous repair (the controller's sync
// triggered by the replacement's own start event) is not measured.
const settle = 500 * time.Millisecond

// benchRepair measures, side by side: dockctl's repair, a bare create+start
// (what `docker run -d` costs the engine), and the lower bound (a minimal
// reviver reacting to `destroy`).
func benchRepair(ctx context.Context, e *env, s settings, rep *report) error {
	// Bare docker run -d first: the reference the others are compared to.
	bare, err := measureBareRun(ctx, e, s.Kills, "")
	if err != nil {
		rep.na("repair", "bare docker run -d", err.Error())
	} else {
		rep.latencies("repair", "bare docker run -d (create+start → start event)", bare)
	}

	lb, err := measureLowerBound(ctx, e, s.Kills, events.ActionDestroy, "")
	if err != nil {
		rep.na("repair", "lower bound", err.Error())
	} else {
		rep.latencies("repair", "lower bound: reviver on destroy (rm -f → start)", lb)
	}
	if s.LowerBoundDie {
		// rm -f emits kill → die → destroy, and destroy only once the
		// removal is done: a controller reacting to die can start its
		// create while Docker is still removing, and beat the destroy
		// reviver. This is the tighter bound for any event-driven repair.
		lbd, err := measureLowerBound(ctx, e, s.Kills, events.ActionDie, "")
		if err != nil {
			rep.na("repair", "lower bound on die", err.Error())
		} else {
			rep.latencies("repair", "lower bound: reviver on die (rm -f → start)", lbd)
		}
		rep.ratio("dockctl repair p50 / lower bound on die p50", "repair/dockctl (rm -f → replacement start) p50",
			"repair/lower bound: reviver on die (rm -f → start) p50", nil)
	}

	// The same two bounds on a user-defined bridge network: dockctl's
	// replicas join its instance network (docs/design.md §10), and Docker's
	// start on a user network costs more (an endpoint, the embedded DNS
	// server's rules in the container), so dockctl is compared with the
	// bound on the kind of network its replicas are on.
	if un, err := e.benchNetwork(ctx); err != nil {
		rep.na("repair", repairBareUser, err.Error())
	} else {
		if bu, err := measureBareRun(ctx, e, s.Kills, un); err != nil {
			rep.na("repair", repairBareUser, err.Error())
		} else {
			rep.latencies("repair", repairBareUser, bu)
		}
		if lbu, err := measureLowerBound(ctx, e, s.Kills, events.ActionDestroy, un); err != nil {
			rep.na("repair", repairLowerUser, err.Error())
		} else {
			rep.latencies("repair", repairLowerUser, lbu)
		}
	}

	dk, err := measureDockctlRepair(ctx, e, "repair", s.Kills)
	if err != nil {
		rep.na("repair", "dockctl", err.Error())
	} else {
		rep.latencies("repair", "dockctl (rm -f → replacement start)", dk)
		noteNetworks(ctx, e, rep, "repair", "io.dockctl.deployment=repair")
	}
	rep.ratio("dockctl repair p50 / bare docker run p50", "repair/dockctl (rm -f → replacement start) p50",
		"repair/bare docker run -d (create+start → start event) p50", atMost(2, "issue 2"))
	rep.ratio("dockctl repair p50 / lower bound p50", "repair/dockctl (rm -f → replacement start) p50",
		"repair/lower bound: reviver on destroy (rm -f → start) p50", atMost(1.15, "issue 5"))
	rep.ratio("dockctl repair p90 / lower bound p90", "repair/dockctl (rm -f → replacement start) p90",
		"repair/lower bound: reviver on destroy (rm -f → start) p90", nil)
	rep.ratio("dockctl repair p50 / lower bound on a user network p50", "repair/dockctl (rm -f → replacement start) p50",
		"repair/"+repairLowerUser+" p50", atMost(1.15, "issue 5, on the same network"))
	rep.ratio("dockctl repair p90 / lower bound on a user network p90", "repair/dockctl (rm -f → replacement start) p90",
		"repair/"+repairLowerUser+" p90", nil)
	rep.ratio("start cost, user network / default bridge: bare run p50", "repair/"+repairBareUser+" p50",
		"repair/bare docker run -d (create+start → start event) p50", nil)
	rep.ratio("start cost, user network / default bridge: lower bound p50", "repair/"+repairLowerUser+" p50",
		"repair/lower bound: reviver on destroy (rm -f → start) p50", nil)
	return nil
}

const (
	repairBareUser  = "bare docker run -d, user-defined network (create+start → start event)"
	repairLowerUser = "lower bound, user-defined network: reviver on destroy (rm -f → start)"
)

// noteNetworks notes which networks dockctl's replicas (the running
// containers matching selector) are on, so that the reader knows which
// bound — default bridge or user network — is the like-for-like one: a
// dockctl without the instance network puts them on the default bridge.
func noteNetworks(ctx context.Context, e *env, rep *report, section, selector string) {
	cs, err := e.list(ctx, selector)
	if err != nil || len(running(cs)) == 0 {
		rep.note("%s: could not tell which network dockctl's replicas are on: %v", section, err)
		return
	}
	info, err := e.cli.ContainerInspect(ctx, running(cs)[0])
	if err != nil {
		rep.note("%s: could not tell which network dockctl's replicas are on: %v", section, err)
		return
	}
	nets := sortedKeys(info.NetworkSettings.Networks)
	onUser := false
	for _, n := range nets {
		if n != "bridge" && n != "host" && n != "none" {
			onUser = true
		}
	}
	if onUser {
		rep.note("%s: dockctl's replicas are on %s: compare with the user-network bound", section, strings.Join(nets, ", "))
	} else {
		rep.note("%s: dockctl's replicas are on %s (no instance network in this dockctl): compare with the default-bridge bound", section, strings.Join(nets, ", "))
	}
}

// measureBareRun times create+start of one container through the API,
// from just before the create call to the daemon's `start` event, n times,
// on network ("": the default bridge).
func measureBareRun(ctx context.Context, e *env, n int, network string) ([]time.Duration, error) {
	set := "bare"
	if network != "" {
		set = "bare-usernet"
	}
	var out []time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("dockbench-%s-%s-%d", e.runID, set, i)
		w := e.hub.watch()
		t0 := time.Now()
		id, err := e.createStartOn(ctx, name, e.labels(set), network)
		if err != nil {
			w.close()
			return nil, err
		}
		t1, err := w.until(ctx, 30*time.Second, func(m events.Message) bool {
			return m.Action == events.ActionStart && m.Actor.ID == id
		})
		w.close()
		if err != nil {
			return nil, err
		}
		out = append(out, t1.Sub(t0))
		if err := e.remove(ctx, id); err != nil {
			return nil, err
		}
		time.Sleep(settle / 5)
	}
	return out, nil
}

// measureLowerBound runs the least a repairing controller must do: on the
// given event (destroy, the repair figure's start as BENCHMARKS.md defines
// it, or die) of one of its containers, create and start a replacement
// through the API — no list, no state, no planning. Its containers are on
// network ("": the default bridge).
func measureLowerBound(ctx context.Context, e *env, n int, on events.Action, network string) ([]time.Duration, error) {
	set := "lowerbound-" + string(on)
	if network != "" {
		set += "-usernet"
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	w := e.hub.watch()
	reviverErr := make(chan error, 1)
	go func() {
		defer w.close()
		seq := 0
		for {
			_, err := w.until(rctx, 24*time.Hour, func(m events.Message) bool {
				return m.Action == on && m.Actor.Attributes[setLabel] == set
			})
			if err != nil {
				if rctx.Err() == nil {
					reviverErr <- err
				}
				return
			}
			seq++
			if _, err := e.createStartOn(rctx, fmt.Sprintf("dockbench-%s-%s-r%d", e.runID, set, seq), e.labels(set), network); err != nil && rctx.Err() == nil {
				reviverErr <- err
				return
			}
		}
	}()
	for i := 0; i < repairReplicas; i++ {
		if _, err := e.createStartOn(ctx, fmt.Sprintf("dockbench-%s-%s-%d", e.runID, set, i), e.labels(set), network); err != nil {
			return nil, err
		}
	}
	lat, err := measureKills(ctx, e, n, repairReplicas, setLabel, set, 30*time.Second)
	select {
	case rerr := <-reviverErr:
		return nil, fmt.Errorf("reviver: %w", rerr)
	default:
	}
	return lat, err
}

// measureDockctlRepair kills replicas of a 3-replica deployment under a
// controller with the default resync period, so that every repair comes
// from the event path and none from a resync. name is the controller's and
// the deployment's: the repair section and the pods section (which repeats
// this measurement beside its pods) each have their own.
func measureDockctlRepair(ctx context.Context, e *env, name string, n int) ([]time.Duration, error) {
	c, err := e.startController(ctx, name, 30*time.Second, "")
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := c.apply(ctx, e.manifest(name, repairReplicas, "v1")); err != nil {
		return nil, err
	}
	return measureKills(ctx, e, n, repairReplicas, "io.dockctl.deployment", name, 30*time.Second)
}

// measureKills is the one repair measurement shared by dockctl, the lower
// bound and Swarm: wait for the set to be complete and quiet, `rm -f` one
// running member through the API, and time from just before that call to
// the daemon's `start` event of a container of the set that was not there
// before.
func measureKills(ctx context.Context, e *env, n, want int, key, value string, timeout time.Duration) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		ids, err := e.waitRunning(ctx, want, 60*time.Second, key+"="+value)
		if err != nil {
			return nil, err
		}
		time.Sleep(settle)
		if ids, err = e.waitRunning(ctx, want, 60*time.Second, key+"="+value); err != nil {
			return nil, err
		}
		old := map[string]bool{}
		for _, id := range ids {
			old[id] = true
		}
		victim := ids[i%len(ids)]
		w := e.hub.watch()
		t0 := time.Now()
		if err := e.remove(ctx, victim); err != nil {
			w.close()
			return nil, err
		}
		t1, err := w.until(ctx, timeout, func(m events.Message) bool {
			return m.Action == events.ActionStart && m.Actor.Attributes[key] == value && !old[m.Actor.ID]
		})
		w.close()
		if err != nil {
			return nil, fmt.Errorf("kill %d: waiting for the replacement: %w", i+1, err)
		}
		out = append(out, t1.Sub(t0))
		logf("  %s=%s kill %d/%d: %s", key, value, i+1, n, t1.Sub(t0).Round(time.Millisecond))
	}
	return out, nil
}
