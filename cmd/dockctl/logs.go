package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

func newLogsCommand(g *globalOptions) *cobra.Command {
	var (
		follow bool
		tail   string
	)
	cmd := deploymentCommand("logs deployment/NAME [-f] [--tail N]", "Print the logs of every replica, each line prefixed with its container", func(cmd *cobra.Command, name string) error {
		ctx := cmd.Context()
		cli, err := g.docker(ctx)
		if err != nil {
			return err
		}
		defer cli.Close()
		cs, err := cli.ListContainers(ctx, g.instance)
		if err != nil {
			return err
		}
		var ids, names []string
		for _, c := range cs {
			if c.Deployment == name {
				ids = append(ids, c.ID)
				names = append(names, c.Name)
			}
		}
		if len(ids) == 0 {
			return fmt.Errorf("deployment %q has no containers in instance %q", name, g.instance)
		}
		sort.Sort(byName{ids, names})
		out := &lockedWriter{w: cmd.OutOrStdout()}
		var wg sync.WaitGroup
		errs := make([]error, len(ids))
		for i := range ids {
			rc, err := cli.Logs(ctx, ids[i], follow, tail)
			if err != nil {
				return fmt.Errorf("logs %s: %w", names[i], err)
			}
			wg.Add(1)
			go func(i int, rc io.ReadCloser) {
				defer wg.Done()
				defer rc.Close()
				errs[i] = prefixLines(out, rc, "["+names[i]+"] ")
			}(i, rc)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && ctx.Err() == nil {
				return err
			}
		}
		return nil
	})
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream new lines as they are written")
	cmd.Flags().StringVar(&tail, "tail", "all", "lines from the end of each replica's log (all or N)")
	return cmd
}

type byName struct{ ids, names []string }

func (b byName) Len() int           { return len(b.ids) }
func (b byName) Less(i, j int) bool { return b.names[i] < b.names[j] }
func (b byName) Swap(i, j int) {
	b.ids[i], b.ids[j] = b.ids[j], b.ids[i]
	b.names[i], b.names[j] = b.names[j], b.names[i]
}

// lockedWriter keeps lines from different replicas whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func prefixLines(w *lockedWriter, r io.Reader, prefix string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		w.mu.Lock()
		_, err := io.WriteString(w.w, prefix+strings.TrimRight(sc.Text(), "\r")+"\n")
		w.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return sc.Err()
}
