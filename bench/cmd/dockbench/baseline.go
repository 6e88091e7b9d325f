package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The baseline comparison (-baseline REV, make bench BENCH_BASELINE=REV):
// dockctl built from another revision of this repository runs the same
// measurements as the tree's, in the same run, on the same machine, so
// that the ratio after/before is read from one set of conditions. It
// covers repair after rm -f, scale 0 → N → 0 and the idle cost; each
// binary gets the same sizes, its own controller, instance and state
// directory, and the order alternates from one measurement to the next
// (before first, then after first, …), so that neither binary always runs
// first on a machine that warms up or quietens down during the run.

// side is one of the two binaries compared.
type side struct {
	label string // "before" or "after"
	bin   string
}

// baseline is the revision compared against and its binary.
type baseline struct {
	rev    string // as given
	commit string // what it resolved to
	bin    string
}

// checkRevision refuses a -baseline value git would read as an option, or
// that cannot name a revision; git itself judges the rest.
func checkRevision(rev string) error {
	switch {
	case rev == "":
		return errors.New("-baseline: empty revision")
	case strings.HasPrefix(rev, "-"):
		return fmt.Errorf("-baseline %q: a revision cannot start with '-'", rev)
	case strings.ContainsAny(rev, " \t\r\n"):
		return fmt.Errorf("-baseline %q: a revision has no white space", rev)
	}
	return nil
}

// order is the order of the two sides in the i-th measurement.
func order(i int, before, after side) [2]side {
	if i%2 == 0 {
		return [2]side{before, after}
	}
	return [2]side{after, before}
}

// baselineRatios are the after/before ratios of the comparison: the
// figure of this tree over the same figure of the baseline (below 1:
// faster, lighter).
func baselineRatios(scaleN int) []ratio {
	var out []ratio
	add := func(section, figure string) {
		out = append(out, ratio{
			Name: fmt.Sprintf("after/before: %s: %s", section, figure),
			Num:  baselineSection(section, "after") + "/" + figure,
			Den:  baselineSection(section, "before") + "/" + figure,
		})
	}
	add(baselineRepair, dockctlRepair+" p50")
	add(baselineRepair, dockctlRepair+" p90")
	add(baselineScale, fmt.Sprintf("dockctl 0 → %d", scaleN))
	add(baselineScale, fmt.Sprintf("dockctl %d → 0", scaleN))
	add(baselineIdle, "controller CPU, % of one core")
	add(baselineIdle, "controller RSS at end (VmRSS)")
	add(baselineIdle, "controller peak RSS (VmHWM, whole life)")
	add(baselineIdle, "API calls (proxy count): list")
	return out
}

const (
	baselineRepair = "repair after rm -f"
	baselineScale  = "scale"
	baselineIdle   = "idle cost"
	dockctlRepair  = "dockctl (rm -f → replacement start)"
)

// baselineSection is the report section of one side's figures.
func baselineSection(section, label string) string { return section + ", " + label }

// buildBaseline builds dockctl from rev as make build does: from a
// detached git worktree of this repository in the run's temporary
// directory, removed once the binary is built (and at cleanup, should the
// build be cut short).
func (e *env) buildBaseline(ctx context.Context, rev string) (baseline, error) {
	if err := checkRevision(rev); err != nil {
		return baseline{}, err
	}
	out, err := e.git(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return baseline{}, fmt.Errorf("-baseline %s: not a commit of this repository: %w", rev, err)
	}
	b := baseline{rev: rev, commit: strings.TrimSpace(out), bin: filepath.Join(e.tmp, "bin", "dockctl-baseline")}
	src := filepath.Join(e.tmp, "baseline-src")
	if _, err := e.git(ctx, "worktree", "add", "--detach", src, b.commit); err != nil {
		return baseline{}, fmt.Errorf("-baseline %s: %w", rev, err)
	}
	var once sync.Once
	remove := func() error {
		var err error
		once.Do(func() {
			_, err = e.git(context.Background(), "worktree", "remove", "--force", src)
		})
		return err
	}
	e.cleanups.push("remove the baseline worktree "+src, remove)
	short := b.commit[:min(len(b.commit), 12)]
	if err := goBuildIn(ctx, src, "./cmd/dockctl", b.bin, "-s -w -X main.version=baseline-"+short); err != nil {
		_ = remove()
		return baseline{}, fmt.Errorf("-baseline %s: %w", rev, err)
	}
	if err := remove(); err != nil {
		return baseline{}, fmt.Errorf("-baseline %s: remove its worktree: %w", rev, err)
	}
	logf("built the baseline %s (%s) as %s", rev, short, b.bin)
	return b, nil
}

func (e *env) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = e.root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// benchBaseline runs the three measurements for both binaries, in
// alternating order, each on a clean engine.
func benchBaseline(ctx context.Context, e *env, s settings, rep *report, b baseline) error {
	before := side{label: "before", bin: b.bin}
	after := side{label: "after", bin: e.dockctlBin}
	defer func() { e.dockctlBin = after.bin }()
	rep.note("baseline: before = %s (%s), after = this tree; measurements alternate which runs first", b.rev, b.commit)
	n := s.Scale[0].N
	measurements := []struct {
		section string
		run     func(sd side) error
	}{
		{baselineRepair, func(sd side) error {
			lat, err := measureDockctlRepair(ctx, e, "repair-"+sd.label, s.Kills)
			if err != nil {
				return err
			}
			rep.latencies(baselineSection(baselineRepair, sd.label), dockctlRepair, lat)
			return nil
		}},
		{baselineScale, func(sd side) error {
			name := "scale-" + sd.label
			up, down, err := measureDockctlScaleOf(ctx, e, name, e.manifest(name, 0, "v1"), n, 1)
			if err != nil {
				return err
			}
			rep.duration(baselineSection(baselineScale, sd.label), fmt.Sprintf("dockctl 0 → %d", n), up)
			rep.duration(baselineSection(baselineScale, sd.label), fmt.Sprintf("dockctl %d → 0", n), down)
			return nil
		}},
		{baselineIdle, func(sd side) error {
			return measureSteady(ctx, e, s, rep, baselineSection(baselineIdle, sd.label), "idle-"+sd.label)
		}},
	}
	var errs []error
	for i, m := range measurements {
		for _, sd := range order(i, before, after) {
			logf("  %s, %s", m.section, sd.label)
			e.dockctlBin = sd.bin
			if err := m.run(sd); err != nil {
				rep.na(baselineSection(m.section, sd.label), "dockctl", err.Error())
				errs = append(errs, fmt.Errorf("%s, %s: %w", m.section, sd.label, err))
			}
			// Each measurement starts from a clean engine, whatever the
			// previous one left.
			e.stopControllers()
			if err := e.removeAll(context.Background()); err != nil {
				rep.note("baseline: cleanup after %s, %s: %v", m.section, sd.label, err)
			}
		}
	}
	for _, q := range baselineRatios(n) {
		rep.ratio(q.Name, q.Num, q.Den, q.Goal)
	}
	return errors.Join(errs...)
}
