//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/errdefs"

	"github.com/dockctl/dockctl/manifests"
)

// TestChaos is the chaos run (`make chaos`). Three deployments run under
// a controller container while, every ~500 ms (jittered), one random
// disruption hits them: a replica removed (`docker rm -f`), stopped
// (`docker stop -t 1`) or killed (`docker kill`), a labelled stray created
// and started, the controller restarted (stopped with SIGTERM or SIGKILL,
// a few more disruptions while it is down, then a new controller container
// on the same state directory), a template change (a rolling update) or a
// scale to 1–4 replicas. Every create and destroy event of the instance is
// recorded, and from them the exact count of each deployment's containers
// at every instant: it must never exceed the bound of the phase the
// deployment is in — its replicas when nothing rolls out, replicas +
// maxSurge while a template change rolls out, the larger of the old and new
// replicas while a scale is under way. The largest over-count is reported.
//
// When the time is up the disruptions stop and the test waits (bounded) for
// exact convergence: every deployment has exactly `replicas` containers, all
// running and of its current template hash, and no stray is left. The
// containers nobody disrupted must never have been removed or restarted,
// and the two bystanders (an unlabelled container and one of another
// instance) must be untouched.
//
// CHAOS_DURATION (a Go duration, default 20s: the short version `make test`
// runs) sets how long disruptions go on; `make chaos` runs 2m. CHAOS_SEED
// replays a run: the seed, printed first thing, fixes the sequence of kinds,
// delays and picks (a pick is an index into the name-sorted list of
// candidates, so a replay disrupts the same way even though what Docker
// reports at that instant may differ).
//
// Strays: the test names every stray it creates chaosStrayPrefix+…, and the
// sampler leaves those names out of the counts — a stray is the test's
// doing, not the controller's, and it lives until the controller has had a
// chance to remove it. How long strays lived (from the create event, or
// from the controller's return if it was down, to the destroy event) is
// reported separately. Strays still count for convergence.
func TestChaos(t *testing.T) {
	duration, seed := chaosParams(t)
	x := &chaosRun{t: t, seed: seed, duration: duration, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	x.say("chaos: seed %d, duration %s (replay: CHAOS_SEED=%d CHAOS_DURATION=%s make chaos)", seed, duration, seed, duration)

	x.e = newEnv(t)
	e := x.e
	x.deps = []*chaosDeployment{
		// The default strategy (25%/25%) rounds maxSurge up: 1 for 1 to 4
		// replicas, the range the scale disruption keeps to.
		{name: "a", replicas: 3, maxSurge: 1},
		{name: "b", replicas: 2, maxSurge: 1},
		{name: "c", replicas: 4, maxSurge: 1, strategy: "    type: RollingUpdate\n    rollingUpdate: {maxSurge: 1}"},
	}
	for _, d := range x.deps {
		d.hash = chaosHash(t, d)
		d.peak = d.replicas
		d.bounds = []chaosBound{{bound: d.replicas}} // the first scale-up included
	}
	x.bystanders = map[string]string{
		"unlabelled": bystander(t, "e2e-chaos-unlabelled-"+e.instance, map[string]string{}),
		"other instance": bystander(t, "e2e-chaos-other-"+e.instance, map[string]string{
			"io.dockctl.instance": "other-" + e.instance, "io.dockctl.deployment": "a",
		}),
	}
	t.Cleanup(func() { removeByLabel(t, "io.dockctl.instance=other-"+e.instance) })
	x.bystanderStart = map[string]string{}
	for what, id := range x.bystanders {
		info, err := dockerCli.ContainerInspect(context.Background(), id)
		if err != nil {
			t.Fatalf("inspect bystander %s: %v", what, err)
		}
		x.bystanderStart[id] = info.State.StartedAt
	}
	chaosPinImage(t, controllerImage, "e2e-chaos-pin-"+e.instance)
	// Cleanups run last-in first-out: this one runs before newEnv's, while
	// the containers still exist, and keeps every controller's log.
	t.Cleanup(x.dumpLogsOnFailure)

	x.events = chaosWatchEvents(t, "io.dockctl.instance="+e.instance)
	x.sampler = chaosStartSampler(x) // the first scale-up is sampled too
	x.startController()

	var manifest strings.Builder
	for _, d := range x.deps {
		manifest.WriteString("---\n" + chaosManifest(d))
	}
	e.apply(manifest.String())
	if ok, state := x.waitConverged(2 * time.Minute); !ok {
		t.Fatalf("the deployments never came up: %s", state)
	}
	for _, d := range x.deps {
		if got := e.deploymentContainers(d.name)[0].Labels["io.dockctl.template-hash"]; got != d.hash {
			t.Fatalf("%s: containers have template hash %s, the manifest hashes to %s", d.name, got, d.hash)
		}
	}
	x.say("chaos: %s ready; disrupting for %s", x.describeDeps(), duration)

	began := time.Now()
	x.disrupt(began.Add(duration))
	x.disruptedFor = time.Since(began)
	lastDisruption := time.Now()

	converged, state := x.waitConverged(2 * time.Minute)
	x.convergence = time.Since(lastDisruption)
	if converged {
		x.endTransitions(false) // notes when the rollouts and scales still under way converged
		// Until its new containers have settled (are available), a
		// rollout may keep, and recreate, an old revision's replica (a
		// controller restarted mid-rollout does): stable is judged once
		// that time has passed and the instance converged again.
		time.Sleep(chaosSettle)
		if converged, state = x.waitConverged(time.Minute); !converged {
			x.violation("no exact convergence again after the settle time; last state: %s", state)
		}
		// Two resync periods (2s) later nothing may have moved.
		settled := x.snapshotIDs()
		time.Sleep(5 * time.Second)
		if ok, now := x.converged(); !ok || x.snapshotIDs() != settled {
			x.violation("not stable after convergence: %s (converged as %s)", now, settled)
		}
		x.endTransitions(true)
		x.checkStatus()
	} else {
		x.violation("no exact convergence within 2m of the last disruption; last state: %s", state)
	}
	time.Sleep(500 * time.Millisecond) // let the last events arrive
	x.sampler.stop()
	x.events.stop()
	if x.sampler.samples() == 0 {
		x.violation("the container sampler took no sample (%d failed lists): no count or dead container was ever measured", x.sampler.failures())
	}
	x.checkBystanders()
	x.checkReplicas()
	if over, where := x.overCount(); over > 0 {
		x.violation("a deployment had %d container(s) more than its phase allows%s", over, where)
	}
	x.collectControllerLog()
	x.summary(converged)
	for _, v := range x.violations {
		t.Error(v)
	}
}

// chaosStrayPrefix starts the name of every stray the chaos test creates.
const chaosStrayPrefix = "e2e-chaos-stray-"

type chaosKind int

const (
	chaosRemove chaosKind = iota
	chaosStop
	chaosKill
	chaosStray
	chaosRestart
	chaosTemplate // a template change: a rolling update
	chaosScale    // a scale to 1–4 replicas
	chaosKinds
)

var chaosKindNames = [chaosKinds]string{"rm -f", "stop", "kill", "stray", "controller restart", "template change", "scale"}

// chaosDeck is drawn without replacement and reshuffled when empty, so that
// every kind comes up at least once in any twelve draws (the short run
// covers them all) while the order stays random. Controller restarts are
// the rarest with template changes and scales: each one costs seconds.
var chaosDeck = []chaosKind{chaosRemove, chaosRemove, chaosRemove, chaosStop, chaosStop,
	chaosKill, chaosKill, chaosStray, chaosStray, chaosRestart, chaosTemplate, chaosScale}

type chaosDeployment struct {
	name     string
	replicas int
	maxSurge int
	strategy string // body of spec.strategy (see testDeployment), or empty for the default
	value    string // DOCKCTL_TEST_VALUE: what a template change changes
	hash     string // the current template's hash

	// The phase, and with it the bound on the count of containers. A
	// transition (template change or scale) lasts until the test sees the
	// deployment converged again.
	changing  bool      // a template change is rolling out
	peak      int       // the largest replicas since the last convergence
	changedAt time.Time // when the current transition began (zero: none)
	// convergedAt is when the test first saw the transition converged
	// (zero: not since it began, or not any more). The transition ends —
	// the bound drops — only once it has stayed converged past the
	// controller's settle time: until a new container has been ready
	// that long it is not available, and a rollout may still keep (and
	// recreate) a replica of an old revision, within replicas + maxSurge,
	// as Kubernetes keeps an old ReplicaSet's pods for availability.
	convergedAt time.Time
	kind        chaosKind // what began it (the first one, if several)
	// bounds is the bound's history, oldest first; each entry holds from
	// its time on. Only the test goroutine writes it; it is read once the
	// events have stopped.
	bounds []chaosBound
	// transitions are the times at which transitions began: a replica
	// removed after one may have been removed by the rollout or scale.
	transitions []time.Time
}

type chaosBound struct {
	at    time.Time
	bound int
}

func chaosManifest(d *chaosDeployment) string {
	return testDeployment{name: d.name, replicas: d.replicas, strategy: d.strategy, value: d.value}.manifest()
}

// chaosHash is the template hash of the deployment as declared now.
func chaosHash(t testing.TB, d *chaosDeployment) string {
	docs, err := manifests.Decode(d.name+".yaml", []byte(chaosManifest(d)))
	if err != nil || len(docs) != 1 {
		t.Fatalf("chaos manifest of %s: %v", d.name, err)
	}
	return docs[0].Deployment.TemplateHash()
}

// bound is what the deployment may count in its current phase.
func (d *chaosDeployment) bound() int {
	if d.changing {
		return d.peak + d.maxSurge
	}
	return d.peak
}

func (d *chaosDeployment) setBound(at time.Time) {
	if b := d.bound(); b != d.bounds[len(d.bounds)-1].bound {
		d.bounds = append(d.bounds, chaosBound{at: at, bound: b})
	}
}

// boundAt is the bound in force at t.
func (d *chaosDeployment) boundAt(t time.Time) int {
	b := d.bounds[0].bound
	for _, e := range d.bounds[1:] {
		if e.at.After(t) {
			break
		}
		b = e.bound
	}
	return b
}

// chaosPinImage creates (never starts) a container of the image for the
// length of the test. The test starts controller containers again and again
// from that tag, and other e2e runs on the same machine remove it when they
// end; Docker refuses to remove an image a container uses unless forced.
func chaosPinImage(t testing.TB, ref, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := dockerCli.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: []string{"version"},
		Labels: map[string]string{"io.dockctl.e2e-chaos-pin": name}}, nil, nil, nil, name)
	if err != nil {
		t.Fatalf("pin %s: %v", ref, err)
	}
	t.Cleanup(func() {
		// -v: the controller image declares VOLUME /state, so this
		// container has an anonymous volume that must not outlive it.
		_ = dockerCli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
}

// chaosParams reads CHAOS_DURATION and CHAOS_SEED.
func chaosParams(t testing.TB) (time.Duration, uint64) {
	duration := 20 * time.Second
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CHAOS_DURATION=%q: want a positive Go duration such as 2m", v)
		}
		duration = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: want an unsigned integer", v)
		}
		seed = s
	}
	return duration, seed
}

// chaosDisruption is one disruption injected. Its repair is timed from
// the Docker events: from its effect (the victim's die or destroy, the
// stray's create) — or from the last controller (re)start before the
// repair, if later — to the victim's next start, its replacement's first
// start, or the stray's destroy.
type chaosDisruption struct {
	kind   chaosKind
	dep    string
	victim string    // container ID (rm -f, stop, kill) or name (stray)
	began  time.Time // before the Docker call
	upAt   time.Time // set if the controller was down: when it was back
}

type chaosRun struct {
	t        testing.TB
	e        *env
	seed     uint64
	duration time.Duration
	rng      *rand.Rand
	deck     []chaosKind
	deps     []*chaosDeployment

	bystanders     map[string]string // what → ID
	bystanderStart map[string]string // ID → State.StartedAt
	sampler        *chaosSampler
	events         *chaosEvents

	controllerDown bool
	ups            []time.Time // when each controller container was up
	sigterms       int
	sigkills       int
	controllerLogs []string // one per controller container, in order
	collected      bool     // the running controller's log is in controllerLogs

	disruptions     []chaosDisruption
	attempted       [chaosKinds]int
	noTarget        [chaosKinds]int
	failed          [chaosKinds]int
	whileDown       int
	templates       int                         // template changes made
	transitionTimes [chaosKinds][]time.Duration // template change or scale → converged
	targeted        map[string]bool             // container IDs the test stopped, killed or removed
	removed         map[string]bool             // container IDs the test removed
	// removing is when the test began removing each container it removed:
	// from then on it no longer counts (overCount).
	removing     map[string]time.Time
	strays       int
	began        time.Time
	disruptedFor time.Duration
	convergence  time.Duration
	injectErrs   []string

	lostReplicas      []string // removed by the controller though the test never touched them
	restartedReplicas []string // started more than once though the test never touched them
	replacedStopped   []string // stopped or killed by the test, then removed by the controller instead of started
	touchedBystanders []string
	violations        []string
}

// say reports a line both in the test log and on standard output, so that
// `make chaos` shows it even without -v.
func (x *chaosRun) say(format string, args ...any) {
	x.t.Helper()
	msg := fmt.Sprintf(format, args...)
	x.t.Log(msg)
	fmt.Println(msg)
}

func (x *chaosRun) violation(format string, args ...any) {
	x.violations = append(x.violations, fmt.Sprintf(format, args...))
}

func (x *chaosRun) describeDeps() string {
	var parts []string
	for _, d := range x.deps {
		parts = append(parts, fmt.Sprintf("%s %d replicas (maxSurge %d, hash %s)", d.name, d.replicas, d.maxSurge, d.hash))
	}
	return strings.Join(parts, ", ")
}

// startController starts a controller container through the harness. The
// test stops the same replicas again and again within seconds, and the
// controller counts an exit within 10s of its own start as a crash, backing
// off exponentially: the backoff is capped at 10s so that what is measured
// is convergence, not a crash-loop backoff of minutes.
func (x *chaosRun) startController() time.Time {
	x.e.startController("--crash-backoff-max", "10s")
	x.controllerDown, x.collected = false, false
	up := time.Now()
	x.ups = append(x.ups, up)
	return up
}

// stopController stops the controller container (SIGKILL first if kill)
// and keeps its log.
func (x *chaosRun) stopController(kill bool) {
	x.t.Helper()
	if kill {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dockerCli.ContainerKill(ctx, x.e.controller.GetContainerID(), "KILL"); err != nil {
			x.t.Fatalf("SIGKILL the controller: %v", err)
		}
		x.sigkills++
	} else {
		x.sigterms++
	}
	x.controllerLogs = append(x.controllerLogs, x.e.controllerLog())
	x.e.stopController()
	x.controllerDown = true
}

func (x *chaosRun) collectControllerLog() {
	if x.e.controller != nil && !x.collected {
		x.controllerLogs = append(x.controllerLogs, x.e.controllerLog())
		x.collected = true
	}
}

func (x *chaosRun) jitter() time.Duration {
	return 250*time.Millisecond + time.Duration(x.rng.Int64N(int64(500*time.Millisecond)))
}

func (x *chaosRun) draw() chaosKind {
	if len(x.deck) == 0 {
		x.deck = slices.Clone(chaosDeck)
		x.rng.Shuffle(len(x.deck), func(i, j int) { x.deck[i], x.deck[j] = x.deck[j], x.deck[i] })
	}
	k := x.deck[0]
	x.deck = x.deck[1:]
	return k
}

// disrupt injects disruptions until the deadline, one every 250–750 ms
// from the start of the previous one (at once if that one took longer).
func (x *chaosRun) disrupt(deadline time.Time) {
	x.targeted, x.removed, x.removing = map[string]bool{}, map[string]bool{}, map[string]time.Time{}
	x.began = time.Now()
	next := x.began
	for {
		next = next.Add(x.jitter())
		if now := time.Now(); next.Before(now) {
			next = now // the previous one overran its slot: no catching up
		}
		if !next.Before(deadline) {
			return
		}
		time.Sleep(time.Until(next))
		x.endTransitions(false)
		switch k := x.draw(); k {
		case chaosRestart:
			x.restartController()
			next = time.Now() // the downtime had its own pauses
		case chaosTemplate, chaosScale:
			x.change(k)
		default:
			x.inject(k)
		}
	}
}

// logf notes one step of the run in the test log (not on standard output),
// timed from the first disruption.
func (x *chaosRun) logf(format string, args ...any) {
	x.t.Helper()
	now := time.Now()
	x.t.Logf("%s +%6.2fs "+format, append([]any{now.UTC().Format("15:04:05.000"), now.Sub(x.began).Seconds()}, args...)...)
}

// restartController stops the controller, injects 0 to 2 more disruptions
// while it is down, and starts a new one on the same state directory.
func (x *chaosRun) restartController() {
	x.attempted[chaosRestart]++
	kill := x.rng.IntN(2) == 0
	stopped := time.Now()
	x.stopController(kill)
	n := x.rng.IntN(3)
	x.logf("controller stopped (SIGKILL %v); %d disruptions while it is down", kill, n)
	for range n {
		time.Sleep(x.jitter())
		x.inject(chaosKind(x.rng.IntN(int(chaosRestart))))
	}
	time.Sleep(x.jitter())
	up := x.startController()
	x.logf("controller started again")
	x.disruptions = append(x.disruptions, chaosDisruption{kind: chaosRestart, began: stopped, upAt: up})
	// What happened while it was down is repaired from now on.
	for i := range x.disruptions {
		if x.disruptions[i].began.After(stopped) {
			x.disruptions[i].upAt = up
		}
	}
}

// inject performs one disruption of a replica or a stray. The random draws
// are the same whatever Docker reports, so that a seed replays the same
// sequence of choices.
func (x *chaosRun) inject(k chaosKind) {
	x.attempted[k]++
	defer func(start time.Time) {
		if d := time.Since(start); d > 3*time.Second {
			x.logf("(that %s took %s: Docker is slow)", chaosKindNames[k], d.Round(time.Millisecond))
		}
	}(time.Now())
	di := x.rng.IntN(len(x.deps))
	pick := x.rng.Uint64()
	d := x.deps[di]
	rec := chaosDisruption{kind: k, dep: d.name, began: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if k == chaosStray {
		name := fmt.Sprintf("%s%s-%d", chaosStrayPrefix, x.e.instance, x.strays)
		resp, err := dockerCli.ContainerCreate(ctx, &container.Config{Image: workloadImage, Labels: map[string]string{
			"io.dockctl.instance": x.e.instance, "io.dockctl.deployment": d.name,
		}}, nil, nil, nil, name)
		if err != nil {
			x.failed[k]++
			x.injectErrs = append(x.injectErrs, fmt.Sprintf("create stray %s: %v", name, err))
			return
		}
		x.logf("stray %s for %s", name, d.name)
		x.strays++
		// The controller may remove the stray between create and start (its
		// create event is enough): then the start fails, which is fine.
		if err := dockerCli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil && !errdefs.IsNotFound(err) && !strings.Contains(err.Error(), "removal") {
			x.injectErrs = append(x.injectErrs, fmt.Sprintf("start stray %s: %v", name, err))
		}
		if x.controllerDown {
			x.whileDown++
		}
		rec.victim = name
		x.disruptions = append(x.disruptions, rec)
		return
	}

	var candidates []container.Summary
	for _, c := range x.e.deploymentContainers(d.name) {
		if chaosIsStray(c) || (k != chaosRemove && c.State != "running") {
			continue
		}
		candidates = append(candidates, c)
	}
	if len(candidates) == 0 {
		x.logf("%s: no candidate in %s", chaosKindNames[k], d.name)
		x.noTarget[k]++
		return
	}
	victim := candidates[pick%uint64(len(candidates))]
	x.logf("%s %s (%.12s, %s)", chaosKindNames[k], strings.TrimPrefix(victim.Names[0], "/"), victim.ID, victim.State)
	var err error
	switch k {
	case chaosRemove:
		began := time.Now()
		err = dockerCli.ContainerRemove(ctx, victim.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil {
			x.removed[victim.ID] = true
			x.removing[victim.ID] = began
		}
	case chaosStop:
		timeout := 1
		err = dockerCli.ContainerStop(ctx, victim.ID, container.StopOptions{Timeout: &timeout})
	case chaosKill:
		err = dockerCli.ContainerKill(ctx, victim.ID, "KILL")
	}
	if err != nil {
		// A race with the controller or with Docker (the victim was just
		// removed, or is no longer running) is part of the game; it is
		// counted, not fatal. The test did nothing to the victim, so its
		// history is still checked as an untouched replica's.
		x.failed[k]++
		x.injectErrs = append(x.injectErrs, fmt.Sprintf("%s %s: %v", chaosKindNames[k], strings.TrimPrefix(victim.Names[0], "/"), err))
		return
	}
	x.targeted[victim.ID] = true
	if x.controllerDown {
		x.whileDown++
	}
	rec.victim = victim.ID
	x.disruptions = append(x.disruptions, rec)
}

// change applies a template change or a scale to one deployment, raising
// its bound (before the apply, so that no create can come first) until the
// test sees it converged again, and settled (endTransitions).
func (x *chaosRun) change(k chaosKind) {
	x.attempted[k]++
	d := x.deps[x.rng.IntN(len(x.deps))]
	replicas := 1 + x.rng.IntN(4)
	now := time.Now()
	if d.changedAt.IsZero() {
		d.changedAt, d.kind = now, k
	}
	d.transitions = append(d.transitions, now)
	d.convergedAt = time.Time{} // converged again only after this one too
	if k == chaosTemplate {
		x.templates++
		d.value = fmt.Sprintf("v%d", x.templates)
		d.hash = chaosHash(x.t, d)
		d.changing = true
		x.logf("template change of %s to %s (hash %s)", d.name, d.value, d.hash)
	} else {
		d.replicas = replicas
		x.logf("scale %s to %d", d.name, d.replicas)
	}
	d.peak = max(d.peak, d.replicas)
	d.setBound(now)
	if _, err := x.e.dockctl(chaosManifest(d), "apply", "-f", "-"); err != nil {
		x.t.Fatalf("apply %s: %v", d.name, err)
	}
	if x.controllerDown {
		x.whileDown++
	}
}

// chaosSettle is how long a transition must stay converged before it
// ends: the controller's default settle time (reconciler.DefaultSettleTime,
// 5 s) and a margin.
const chaosSettle = 6 * time.Second

// endTransitions ends the transition of every deployment that has
// converged and stayed so for chaosSettle (or at all, when settled: the
// run is over and was seen stable): its bound drops back to its replicas.
// The transition's time is counted to when it was first seen converged.
func (x *chaosRun) endTransitions(settled bool) {
	cs := containers(x.t, "io.dockctl.instance="+x.e.instance)
	now := time.Now()
	for _, d := range x.deps {
		if d.changedAt.IsZero() {
			continue
		}
		if !chaosDepConverged(d, cs) {
			d.convergedAt = time.Time{}
			continue
		}
		if d.convergedAt.IsZero() {
			d.convergedAt = now
		}
		if !settled && now.Sub(d.convergedAt) < chaosSettle {
			continue
		}
		took := d.convergedAt.Sub(d.changedAt)
		x.transitionTimes[d.kind] = append(x.transitionTimes[d.kind], took)
		x.logf("%s converged %s after its %s began", d.name, took.Round(time.Millisecond), chaosKindNames[d.kind])
		d.changing, d.peak, d.changedAt, d.convergedAt = false, d.replicas, time.Time{}, time.Time{}
		d.setBound(now)
	}
}

// overCount replays the create and destroy events in order and returns
// the largest count − bound over every instant and deployment, strays
// left out (they are the test's doing), and where it was seen. A
// container the test removed stops counting when the test began removing
// it: Docker drops a removed container from its list before it stamps
// the `destroy` event, so a controller that lists in between rightly
// replaces it, and under load the replacement's `create` can be stamped
// before the victim's `destroy`. No controller can know of the removal
// before the test began it, so nothing it did too early is hidden.
func (x *chaosRun) overCount() (int, string) {
	x.events.mu.Lock()
	defer x.events.mu.Unlock()
	evs := slices.Clone(x.events.counted)
	for i, ev := range evs {
		if began, ok := x.removing[ev.id]; ok && ev.delta < 0 && began.Before(ev.at) {
			evs[i].at = began
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	count := map[string]int{}
	worst, where := -1<<30, ""
	for _, ev := range evs {
		i := slices.IndexFunc(x.deps, func(d *chaosDeployment) bool { return d.name == ev.dep })
		if i < 0 {
			continue
		}
		count[ev.dep] += ev.delta
		if over := count[ev.dep] - x.deps[i].boundAt(ev.at); over > worst {
			worst = over
			if over > 0 {
				where = fmt.Sprintf("; worst at %s, %s: %d containers, bound %d", ev.at.UTC().Format("15:04:05.000"), ev.dep, count[ev.dep], x.deps[i].boundAt(ev.at))
			}
		}
	}
	return worst, where
}

// chaosDepConverged reports whether d has exactly its replicas, all
// running, of its current template, strays aside.
func chaosDepConverged(d *chaosDeployment, cs []container.Summary) bool {
	n, good := 0, 0
	for _, c := range cs {
		if c.Labels["io.dockctl.deployment"] != d.name || chaosIsStray(c) {
			continue
		}
		n++
		if c.State == "running" && c.Labels["io.dockctl.template-hash"] == d.hash {
			good++
		}
	}
	return n == d.replicas && good == d.replicas
}

// changedSince reports whether a transition of deployment dep began at or
// before t.
func (x *chaosRun) changedSince(dep string, t time.Time) bool {
	for _, d := range x.deps {
		if d.name == dep && len(d.transitions) > 0 && !d.transitions[0].After(t) {
			return true
		}
	}
	return false
}

func chaosIsStray(c container.Summary) bool {
	return len(c.Names) > 0 && strings.HasPrefix(strings.TrimPrefix(c.Names[0], "/"), chaosStrayPrefix)
}

// converged reports whether every deployment has exactly its replicas,
// all running and of its current template hash, and no stray is left.
func (x *chaosRun) converged() (bool, string) {
	cs := containers(x.t, "io.dockctl.instance="+x.e.instance)
	ok := true
	var parts []string
	for _, d := range x.deps {
		var mine []container.Summary
		good := 0
		for _, c := range cs {
			if c.Labels["io.dockctl.deployment"] != d.name {
				continue
			}
			mine = append(mine, c)
			if c.State == "running" && !chaosIsStray(c) && (d.hash == "" || c.Labels["io.dockctl.template-hash"] == d.hash) {
				good++
			}
		}
		if len(mine) != d.replicas || good != d.replicas {
			ok = false
		}
		parts = append(parts, d.name+": "+describe(mine))
	}
	for _, c := range cs {
		if isHelper(c.Labels["io.dockctl.role"]) {
			continue // the instance's DNS server, not a replica
		}
		if dep := c.Labels["io.dockctl.deployment"]; !slices.ContainsFunc(x.deps, func(d *chaosDeployment) bool { return d.name == dep }) {
			ok = false
			parts = append(parts, "unexpected: "+describe([]container.Summary{c}))
		}
	}
	return ok, strings.Join(parts, "; ")
}

func (x *chaosRun) waitConverged(timeout time.Duration) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, state := x.converged()
		if ok || time.Now().After(deadline) {
			return ok, state
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// snapshotIDs is the instance's containers as a comparable string: IDs
// and states.
func (x *chaosRun) snapshotIDs() string {
	var parts []string
	for _, c := range containers(x.t, "io.dockctl.instance="+x.e.instance) {
		parts = append(parts, fmt.Sprintf("%.12s:%s", c.ID, c.State))
	}
	return strings.Join(parts, " ")
}

// checkStatus reads the deployments back through the CLI: each must report
// all its replicas ready.
func (x *chaosRun) checkStatus() {
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for {
		last = ""
		for _, d := range x.deps {
			out, err := x.e.dockctl("", "get", "deployments", d.name, "-o", "json")
			var v struct {
				Status struct {
					Replicas      int `json:"replicas"`
					ReadyReplicas int `json:"readyReplicas"`
				} `json:"status"`
			}
			if err == nil {
				err = json.Unmarshal([]byte(out), &v)
			}
			if err != nil || v.Status.Replicas != d.replicas || v.Status.ReadyReplicas != d.replicas {
				last += fmt.Sprintf("%s (want %d/%d ready): %v %s\n", d.name, d.replicas, d.replicas, err, out)
			}
		}
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			x.violation("dockctl get deployments disagrees after convergence:\n%s", last)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (x *chaosRun) checkBystanders() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for what, id := range x.bystanders {
		info, err := dockerCli.ContainerInspect(ctx, id)
		switch {
		case err != nil:
			x.touchedBystanders = append(x.touchedBystanders, fmt.Sprintf("%s: %v", what, err))
		case !info.State.Running || info.RestartCount != 0 || info.State.StartedAt != x.bystanderStart[id]:
			x.touchedBystanders = append(x.touchedBystanders, fmt.Sprintf("%s %s: running=%v restarts=%d started %s (was %s)",
				what, info.Name, info.State.Running, info.RestartCount, info.State.StartedAt, x.bystanderStart[id]))
		}
	}
	if len(x.touchedBystanders) > 0 {
		x.violation("bystanders touched: %v", x.touchedBystanders)
	}
}

// checkReplicas goes through every replica's event history: one the test
// never touched must have been started once and never removed, and one the
// test stopped or killed must have been started again, not replaced.
func (x *chaosRun) checkReplicas() {
	dead := x.sampler.deadIDs()
	x.events.mu.Lock()
	defer x.events.mu.Unlock()
	for id, h := range x.events.byID {
		if strings.HasPrefix(h.name, chaosStrayPrefix) {
			continue
		}
		label := fmt.Sprintf("%s (%.12s)", h.name, id)
		// A rollout or a scale-down removes replicas nobody disrupted.
		rolled := !h.destroyed.IsZero() && x.changedSince(h.dep, h.destroyed)
		switch {
		case rolled:
		case !x.targeted[id] && !h.destroyed.IsZero() && !dead[id]:
			x.lostReplicas = append(x.lostReplicas, label)
		case !x.targeted[id] && len(h.starts) > 1:
			x.restartedReplicas = append(x.restartedReplicas, fmt.Sprintf("%s started %d times", label, len(h.starts)))
		case x.targeted[id] && !x.removed[id] && !h.destroyed.IsZero() && !dead[id]:
			x.replacedStopped = append(x.replacedStopped, label)
		}
	}
	sort.Strings(x.lostReplicas)
	sort.Strings(x.restartedReplicas)
	sort.Strings(x.replacedStopped)
	if len(x.events.errs) > 0 {
		x.violation("the event stream broke, the replica checks are incomplete: %v", x.events.errs)
	}
	if len(x.lostReplicas) > 0 {
		x.violation("replicas the test never touched were removed: %v", x.lostReplicas)
	}
	if len(x.restartedReplicas) > 0 {
		x.violation("replicas the test never touched were restarted: %v", x.restartedReplicas)
	}
	if len(x.replacedStopped) > 0 {
		x.violation("stopped or killed replicas were replaced instead of started again: %v", x.replacedStopped)
	}
}

// chaosRepairs are the repair times of one kind of disruption.
type chaosRepairs struct {
	times      []time.Duration
	superseded int // the victim was removed (by the test) before it was started again
	unrepaired int // no repair seen before the end
	nothing    int // controller restarts with no disruption while it was down
}

// repairTimes times every disruption's repair from the Docker events (see
// chaosDisruption). A removed replica's replacement is the earliest-started
// new replica of its deployment created after the removal began that no
// earlier removal claimed. A controller restart's repair is the latest
// repair of the disruptions made while it was down, timed from its return.
func (x *chaosRun) repairTimes() [chaosKinds]chaosRepairs {
	x.events.mu.Lock()
	defer x.events.mu.Unlock()
	var out [chaosKinds]chaosRepairs
	claimed := map[string]bool{}
	ends := make([]time.Time, len(x.disruptions))
	for i, dr := range x.disruptions {
		r := &out[dr.kind]
		var effect, end time.Time
		switch dr.kind {
		case chaosRestart, chaosTemplate, chaosScale:
			continue
		case chaosStop, chaosKill:
			h := x.events.byID[dr.victim]
			if h == nil {
				r.unrepaired++
				continue
			}
			if effect = chaosFirstAfter(h.dies, dr.began); !effect.IsZero() {
				end = chaosFirstAfter(h.starts, effect)
			}
			if end.IsZero() {
				if !h.destroyed.IsZero() && x.removed[dr.victim] {
					r.superseded++
				} else {
					r.unrepaired++
				}
				continue
			}
		case chaosRemove:
			h := x.events.byID[dr.victim]
			if h != nil {
				if effect = chaosFirstAfter(h.dies, dr.began); effect.IsZero() {
					effect = h.destroyed
				}
			}
			bestID := ""
			for id, c := range x.events.byID {
				if c.dep != dr.dep || strings.HasPrefix(c.name, chaosStrayPrefix) || claimed[id] || c.created.Before(dr.began) || len(c.starts) == 0 {
					continue
				}
				if bestID == "" || c.starts[0].Before(x.events.byID[bestID].starts[0]) {
					bestID = id
				}
			}
			if effect.IsZero() || bestID == "" {
				r.unrepaired++
				continue
			}
			claimed[bestID] = true
			end = x.events.byID[bestID].starts[0]
		case chaosStray:
			h := x.events.byName[dr.victim]
			if h == nil || h.destroyed.IsZero() {
				r.unrepaired++
				continue
			}
			effect, end = h.created, h.destroyed
		}
		from := effect
		for _, up := range x.ups {
			if up.After(from) && up.Before(end) {
				from = up // a controller restart came in between
			}
		}
		r.times = append(r.times, max(end.Sub(from), 0))
		ends[i] = end
		x.t.Logf("repair: %-6s %s %.12s: effect %s, repaired %s: %s", chaosKindNames[dr.kind], dr.dep, dr.victim,
			effect.UTC().Format("15:04:05.000"), end.UTC().Format("15:04:05.000"), max(end.Sub(from), 0).Round(time.Millisecond))
	}
	for _, k := range []chaosKind{chaosTemplate, chaosScale} {
		out[k].times = x.transitionTimes[k]
	}
	r := &out[chaosRestart]
	for _, dr := range x.disruptions {
		if dr.kind != chaosRestart {
			continue
		}
		var last time.Time
		n, missing := 0, false
		for j, o := range x.disruptions {
			if o.kind == chaosRestart || !o.upAt.Equal(dr.upAt) {
				continue
			}
			n++
			if ends[j].IsZero() {
				missing = true
			} else if ends[j].After(last) {
				last = ends[j]
			}
		}
		switch {
		case n == 0:
			r.nothing++
		case missing:
			r.unrepaired++
		default:
			r.times = append(r.times, max(last.Sub(dr.upAt), 0))
		}
	}
	return out
}

// chaosFirstAfter returns the first time in ts (in order) not before t.
func chaosFirstAfter(ts []time.Time, t time.Time) time.Time {
	for _, x := range ts {
		if !x.Before(t) {
			return x
		}
	}
	return time.Time{}
}

var chaosPlannedOp = regexp.MustCompile(`msg=planned .*\bop=(\w+)`)

func (x *chaosRun) summary(converged bool) {
	total := 0
	for _, n := range x.attempted {
		total += n
	}
	x.say("chaos summary (instance %s)", x.e.instance)
	x.say("  seed:         %d   (replay: CHAOS_SEED=%d CHAOS_DURATION=%s make chaos)", x.seed, x.seed, x.duration)
	x.say("  duration:     %s requested, %s disrupting", x.duration, x.disruptedFor.Round(time.Millisecond))
	repairs := x.repairTimes()
	every := time.Duration(0)
	if total > 0 {
		every = x.disruptedFor / time.Duration(total)
	}
	x.say("  disruptions:  %d attempted (one per %s on average: the next starts 250–750 ms after the previous one began, or when it ends if later), %d while the controller was down",
		total, every.Round(time.Millisecond), x.whileDown)
	x.say("    repairs are timed from the effect or, if later, the controller's last (re)start:")
	x.say("    die → next start (stop, kill), die → replacement started (rm -f), create → destroy (stray),")
	x.say("    back up → last disruption made while down repaired (controller restart),")
	x.say("    apply → converged (template change, scale; overlapping ones of a deployment end together)")
	for k := range chaosKinds {
		r := repairs[k]
		extra := ""
		if k == chaosRestart {
			extra = fmt.Sprintf(" (%d SIGTERM, %d SIGKILL; %d with nothing to repair)", x.sigterms, x.sigkills, r.nothing)
		}
		x.say("    %-19s %3d%s; repair median %s, worst %s%s%s%s%s",
			chaosKindNames[k]+":", x.attempted[k], extra, chaosMedian(r.times), chaosWorst(r.times),
			chaosIfNonZero(", %d without a target", x.noTarget[k]), chaosIfNonZero(", %d raced", x.failed[k]),
			chaosIfNonZero(", %d superseded by a removal", r.superseded), chaosIfNonZero(", %d repair not seen", r.unrepaired))
	}
	over, worst := x.overCount()
	x.say("  largest over-count: %d (max of count − bound at every create and destroy event, strays excluded;\n"+
		"    the bound is replicas, + maxSurge while a template change rolls out, the larger replicas while a scale is under way)%s",
		max(over, 0), worst)
	x.say("  list samples: %d, %d failed", x.sampler.samples(), x.sampler.failures())
	x.say("  max containers seen: %s", x.sampler.maxima())
	x.say("  strays:       %d created, lived median %s, worst %s (left out of the counts above)",
		x.strays, chaosMedian(repairs[chaosStray].times), chaosWorst(repairs[chaosStray].times))
	if converged {
		x.say("  convergence:  %s after the last disruption", x.convergence.Round(time.Millisecond))
	} else {
		x.say("  convergence:  NONE within %s of the last disruption", x.convergence.Round(time.Millisecond))
	}
	ops := map[string]int{}
	syncErrors := 0
	var notable []string
	for _, log := range x.controllerLogs {
		for _, m := range chaosPlannedOp.FindAllStringSubmatch(log, -1) {
			ops[m[1]]++
		}
		syncErrors += strings.Count(log, "sync failed")
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				notable = append(notable, line)
			}
		}
	}
	if len(notable) > 0 {
		x.t.Logf("controller warnings and errors:\n  %s", strings.Join(notable, "\n  "))
	}
	x.say("  controller:   %d containers, planned create %d, start %d, remove %d, unpause %d; %d sync errors",
		len(x.controllerLogs), ops["create"], ops["start"], ops["remove"], ops["unpause"], syncErrors)
	x.say("  lost or wrongly touched: %d replicas removed untouched, %d restarted untouched, %d stopped replaced, %d bystanders",
		len(x.lostReplicas), len(x.restartedReplicas), len(x.replacedStopped), len(x.touchedBystanders))
	if len(x.injectErrs) > 0 {
		x.t.Logf("raced disruptions:\n  %s", strings.Join(x.injectErrs, "\n  "))
	}
}

func chaosMedian(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return m.Round(time.Millisecond).String()
}

func chaosWorst(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	return slices.Max(ds).Round(time.Millisecond).String()
}

func chaosIfNonZero(format string, n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(format, n)
}

// dumpLogsOnFailure writes every controller container's log to a file that
// outlives the test, and shows the tail of each.
func (x *chaosRun) dumpLogsOnFailure() {
	if !x.t.Failed() && os.Getenv("CHAOS_KEEP_LOGS") == "" {
		return
	}
	x.collectControllerLog()
	path := filepath.Join(os.TempDir(), "dockctl-chaos-"+x.e.instance+".log")
	var all strings.Builder
	for i, l := range x.controllerLogs {
		fmt.Fprintf(&all, "===== controller %d =====\n%s\n", i+1, l)
		if x.t.Failed() {
			x.t.Logf("controller %d, last lines:\n%s", i+1, chaosTail(l, 40))
		}
	}
	if err := os.WriteFile(path, []byte(all.String()), 0o644); err == nil {
		x.t.Logf("every controller's full log: %s", path)
	}
}

func chaosTail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// chaosSampler lists the instance's containers every 100 ms and records
// the largest count of each deployment, strays left out, and the
// containers seen dead. (The bound is checked from events: a list can
// miss a peak.)
type chaosSampler struct {
	x      *chaosRun
	mu     sync.Mutex
	n      int
	fails  int
	max    []int
	names  []string        // the deployments, in x.deps order
	dead   map[string]bool // IDs seen in state dead: the controller rightly removes those
	cancel context.CancelFunc
	done   chan struct{}
}

func chaosStartSampler(x *chaosRun) *chaosSampler {
	ctx, cancel := context.WithCancel(context.Background())
	names := make([]string, len(x.deps))
	for i, d := range x.deps {
		names[i] = d.name
	}
	s := &chaosSampler{x: x, names: names, max: make([]int, len(x.deps)), dead: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	args := filters.NewArgs(filters.Arg("label", "io.dockctl.instance="+x.e.instance))
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
			cs, err := dockerCli.ContainerList(lctx, container.ListOptions{All: true, Filters: args})
			lcancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.mu.Lock()
				s.fails++
				s.mu.Unlock()
			} else {
				s.record(cs)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	x.t.Cleanup(s.stop)
	return s
}

func (s *chaosSampler) record(cs []container.Summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	for _, c := range cs {
		if c.State == "dead" {
			s.dead[c.ID] = true
		}
	}
	for di, name := range s.names {
		count := 0
		for _, c := range cs {
			if c.Labels["io.dockctl.deployment"] == name && !chaosIsStray(c) {
				count++
			}
		}
		s.max[di] = max(s.max[di], count)
	}
}

func (s *chaosSampler) stop() {
	s.cancel()
	<-s.done
}

func (s *chaosSampler) deadIDs() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.dead)
}

func (s *chaosSampler) samples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *chaosSampler) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fails
}

func (s *chaosSampler) maxima() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for di, d := range s.x.deps {
		parts = append(parts, fmt.Sprintf("%s %d (replicas %d at the end, maxSurge %d)", d.name, s.max[di], d.replicas, d.maxSurge))
	}
	return strings.Join(parts, ", ")
}

// chaosEvents records the container events of the instance: per container,
// its name, how often it was started, and when it was destroyed.
type chaosEvents struct {
	mu      sync.Mutex
	counted []chaosCountEvent // creates (+1) and destroys (−1) of replicas, strays left out
	byID    map[string]*chaosHistory
	byName  map[string]*chaosHistory // the latest container of that name
	errs    []error
	cancel  context.CancelFunc
	done    chan struct{}
}

type chaosCountEvent struct {
	at    time.Time
	dep   string
	delta int
	id    string // the container's
}

type chaosHistory struct {
	name      string
	dep       string
	created   time.Time
	starts    []time.Time
	dies      []time.Time
	destroyed time.Time
}

func chaosWatchEvents(t testing.TB, label string) *chaosEvents {
	ctx, cancel := context.WithCancel(context.Background())
	w := &chaosEvents{byID: map[string]*chaosHistory{}, byName: map[string]*chaosHistory{}, cancel: cancel, done: make(chan struct{})}
	args := filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("label", label),
		filters.Arg("event", "create"),
		filters.Arg("event", "start"),
		filters.Arg("event", "die"),
		filters.Arg("event", "destroy"),
	)
	// Since replays what happened between now and the subscription being
	// registered, so that nothing falls between the two.
	since := fmt.Sprintf("%d", time.Now().Add(-time.Second).Unix())
	msgs, errs := dockerCli.Events(ctx, events.ListOptions{Filters: args, Since: since})
	go func() {
		defer close(w.done)
		for {
			select {
			case m := <-msgs:
				w.record(m)
			case err := <-errs:
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					w.mu.Lock()
					w.errs = append(w.errs, err)
					w.mu.Unlock()
				}
				return
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *chaosEvents) record(m events.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.byID[m.Actor.ID]
	if h == nil {
		h = &chaosHistory{name: m.Actor.Attributes["name"], dep: m.Actor.Attributes["io.dockctl.deployment"]}
		w.byID[m.Actor.ID] = h
		w.byName[h.name] = h
	}
	at := time.Unix(0, m.TimeNano)
	counts := h.dep != "" && !strings.HasPrefix(h.name, chaosStrayPrefix)
	switch m.Action {
	case events.ActionCreate:
		h.created = at
		if counts {
			w.counted = append(w.counted, chaosCountEvent{at, h.dep, 1, m.Actor.ID})
		}
	case events.ActionStart:
		h.starts = append(h.starts, at)
	case events.ActionDie:
		h.dies = append(h.dies, at)
	case events.ActionDestroy:
		h.destroyed = at
		if counts {
			w.counted = append(w.counted, chaosCountEvent{at, h.dep, -1, m.Actor.ID})
		}
	}
}

func (w *chaosEvents) stop() {
	w.cancel()
	<-w.done
}
