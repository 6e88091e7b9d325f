// Command dnsprobe times name lookups from inside a container, as a
// program in a replica makes them: Go's own resolver reading the
// container's /etc/resolv.conf (nameservers, search list, ndots, timeouts),
// no cache. dockbench builds it static into an image FROM scratch, starts
// it as `dnsprobe sleep` with a replica's DNS settings, and runs
// `dnsprobe lookup` in it with docker exec, so that the exec's own cost is
// not part of any figure.
//
//	dnsprobe sleep                                   wait for SIGTERM
//	dnsprobe lookup [-n N] [-timeout D] NAME...      N lookups of each name
//
// lookup prints one JSON object per lookup on stdout:
// {"name":…,"ms":…,"result":"ok"|"not found"|"timeout"|"error","detail":…}.
// The names are looked up concurrently, each name's lookups one after the
// other; a name whose lookup timed out is not looked up again.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: dnsprobe sleep | dnsprobe lookup [-n N] [-timeout D] NAME...")
		return 2
	}
	switch args[0] {
	case "sleep":
		// As PID 1 a signal without a handler is ignored: catch SIGTERM so
		// that a stop is prompt.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		<-ctx.Done()
		return 0
	case "lookup":
		return lookup(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "dnsprobe: unknown command %q\n", args[0])
	return 2
}

// Result is one lookup.
type Result struct {
	Name   string  `json:"name"`
	Ms     float64 `json:"ms"`
	Result string  `json:"result"`
	Detail string  `json:"detail,omitempty"`
}

func lookup(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lookup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 3, "lookups of each name")
	timeout := fs.Duration("timeout", 15*time.Second, "give up on one lookup after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 || *n < 1 {
		fmt.Fprintln(stderr, "dnsprobe lookup: give at least one name and -n ≥ 1")
		return 2
	}
	r := &net.Resolver{PreferGo: true}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	enc := json.NewEncoder(stdout)
	for _, name := range fs.Args() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < *n; i++ {
				res := lookupOnce(r, name, *timeout)
				mu.Lock()
				_ = enc.Encode(res)
				mu.Unlock()
				if res.Result == "timeout" {
					// Once is the figure; repeating only costs the run
					// another full timeout.
					break
				}
			}
		}()
	}
	wg.Wait()
	return 0
}

func lookupOnce(r *net.Resolver, name string, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t0 := time.Now()
	addrs, err := r.LookupHost(ctx, name)
	res := Result{Name: name, Ms: float64(time.Since(t0)) / float64(time.Millisecond)}
	var de *net.DNSError
	switch {
	case err == nil:
		res.Result, res.Detail = "ok", strings.Join(addrs, " ")
	case errors.As(err, &de) && de.IsNotFound:
		res.Result, res.Detail = "not found", de.Error()
	case errors.As(err, &de) && de.IsTimeout, errors.Is(err, context.DeadlineExceeded):
		res.Result, res.Detail = "timeout", err.Error()
	default:
		res.Result, res.Detail = "error", err.Error()
	}
	return res
}
