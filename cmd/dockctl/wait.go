package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/store"
)

// waitRolledOut polls until every named deployment has all replicas updated
// and available and nothing else, as `kubectl rollout status` waits.
func waitRolledOut(ctx context.Context, g *globalOptions, st *store.Store, names []string, timeout time.Duration, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := g.docker(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	reported := map[string]string{}
	for {
		cs, err := cli.ListContainers(ctx, g.instance)
		if err != nil {
			return err
		}
		pending := 0
		for _, name := range names {
			rec, err := st.Get(name)
			if err != nil {
				return err
			}
			d := &rec.Deployment
			hash := manifests.TemplateHash(&d.Spec.Template)
			var mine = cs[:0:0]
			for _, c := range cs {
				if c.Deployment == name {
					mine = append(mine, c)
				}
			}
			status, _ := st.ReadStatus(name)
			available := map[string]bool{}
			for id, v := range reconciler.ViewContainers(d, status, mine, time.Now()) {
				available[id] = v.Available
			}
			s := reconciler.ComputeStatus(d, hash, mine, available)
			want := d.Replicas()
			line := fmt.Sprintf("deployment/%s: %d/%d updated, %d available, %d total", name, s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas)
			done := reconciler.RolloutComplete(d, s)
			if done {
				line = fmt.Sprintf("deployment/%s successfully rolled out", name)
			} else {
				pending++
			}
			if reported[name] != line {
				fmt.Fprintln(out, line)
				reported[name] = line
			}
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %d deployment(s): is `dockctl controller` running for instance %q?", timeout, pending, g.instance)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
