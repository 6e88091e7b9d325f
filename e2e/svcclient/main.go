//go:build e2e

// Command svcclient is the e2e tests' client inside the instance network:
// a static binary in an image FROM scratch (no shell, no nslookup, no
// curl), run as a replica so that it gets the resolver settings of a pod
// (search list, ndots:5), and driven with `docker exec`:
//
//	svcclient                 wait for SIGTERM (the replica's main process)
//	svcclient resolve NAME    look NAME up with Go's own resolver, which
//	                          reads /etc/resolv.conf as glibc does
//	svcclient rcode NAME      one A query for the fully qualified NAME to
//	                          the first nameserver of /etc/resolv.conf,
//	                          reporting the answer's RCODE: Go's resolver
//	                          says "no such host" both for a name that
//	                          does not exist (NXDOMAIN) and for one with
//	                          no record of the type (NOERROR, no answer)
//	svcclient get URL         one HTTP GET on a new connection
//
// Each command prints one JSON object on stdout and exits 0: the test
// judges the result, the client only reports it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// Result is what every command prints; the e2e tests decode it.
type Result struct {
	IPs      []string `json:"ips,omitempty"`
	NotFound bool     `json:"notFound,omitempty"` // the resolver found no address (NXDOMAIN or NODATA)
	Rcode    string   `json:"rcode,omitempty"`    // rcode: the answer's RCODE (NOERROR, NXDOMAIN, …)
	Status   int      `json:"status,omitempty"`
	Body     string   `json:"body,omitempty"`
	Err      string   `json:"err,omitempty"`
	Millis   int64    `json:"millis"` // how long the lookup or request took
}

func main() {
	if len(os.Args) < 2 {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		<-ctx.Done()
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: svcclient [resolve NAME | rcode NAME | get URL]")
		os.Exit(2)
	}
	var r Result
	start := time.Now()
	switch os.Args[1] {
	case "resolve":
		r = resolve(os.Args[2])
	case "rcode":
		r = rcode(os.Args[2])
	case "get":
		r = get(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: svcclient [resolve NAME | rcode NAME | get URL]")
		os.Exit(2)
	}
	r.Millis = time.Since(start).Milliseconds()
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

func resolve(name string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := &net.Resolver{PreferGo: true}
	ips, err := r.LookupHost(ctx, name)
	if err != nil {
		var de *net.DNSError
		return Result{Err: err.Error(), NotFound: errors.As(err, &de) && de.IsNotFound}
	}
	sort.Strings(ips)
	return Result{IPs: ips}
}

func rcode(name string) Result {
	conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil {
		return Result{Err: err.Error()}
	}
	if len(conf.Servers) == 0 {
		return Result{Err: "no nameserver in /etc/resolv.conf"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	in, _, err := new(dns.Client).ExchangeContext(ctx, m, net.JoinHostPort(conf.Servers[0], conf.Port))
	if err != nil {
		return Result{Err: err.Error()}
	}
	r := Result{Rcode: dns.RcodeToString[in.Rcode]}
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); ok {
			r.IPs = append(r.IPs, a.A.String())
		}
	}
	sort.Strings(r.IPs)
	return r
}

func get(url string) Result {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return Result{Err: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Result{Status: resp.StatusCode, Err: err.Error()}
	}
	return Result{Status: resp.StatusCode, Body: string(b)}
}
