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
//	svcclient answers TIMEOUT URL WANT [URL WANT]...
//	                          GET each URL, all at once, a new attempt
//	                          every 100 ms (each on a new connection, at
//	                          most 1 s), until it answers 200 with a body
//	                          containing its WANT, or TIMEOUT passes:
//	                          when each first did, by the client's clock
//	                          (the host's: a container has no clock of its
//	                          own), so that a test polling from outside
//	                          times each Service's first answer to 100 ms
//	                          whatever its exec's own latency
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
	"strings"
	"sync"
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
	Answers  []Answer `json:"answers,omitempty"`
}

// Answer is one URL's outcome of the answers command: At (Unix
// nanoseconds) is when it first answered as wanted, 0 if it did not
// within the timeout; Last is its last failure then.
type Answer struct {
	URL  string `json:"url"`
	At   int64  `json:"at,omitempty"`
	Last string `json:"last,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		<-ctx.Done()
		return
	}
	if os.Args[1] == "answers" {
		r, err := answers(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "svcclient answers:", err)
			os.Exit(2)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: svcclient [resolve NAME | rcode NAME | get URL | answers TIMEOUT URL WANT...]")
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

// answers implements the answers command (args: TIMEOUT URL WANT ...).
// Attempts overlap: one that waits on an address nobody holds yet (a
// proxy or a DNS server not yet started) does not hold back the next,
// so a URL's time is its first good answer's, not a timeout's.
func answers(args []string) (Result, error) {
	if len(args) < 3 || len(args)%2 != 1 {
		return Result{}, errors.New("want TIMEOUT URL WANT [URL WANT]...")
	}
	timeout, err := time.ParseDuration(args[0])
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	out := make([]Answer, (len(args)-1)/2)
	var wg sync.WaitGroup
	for i := range out {
		url, want := args[1+2*i], args[2+2*i]
		out[i].URL = url
		wg.Go(func() { out[i] = firstAnswer(ctx, url, want) })
	}
	wg.Wait()
	return Result{Answers: out, Millis: time.Since(start).Milliseconds()}, nil
}

// firstAnswer starts a GET of url every 100 ms until one answers 200
// with want in its body or ctx ends.
func firstAnswer(ctx context.Context, url, want string) Answer {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type attempt struct {
		at  time.Time
		err error
	}
	results := make(chan attempt, 16)
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	try := func() {
		a := attempt{err: errors.New("canceled")}
		defer func() {
			select {
			case results <- a:
			case <-ctx.Done():
			}
		}()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			a.err = err
			return
		}
		resp, err := c.Do(req)
		if err != nil {
			a.err = err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		switch {
		case err != nil:
			a.err = err
		case resp.StatusCode != http.StatusOK:
			a.err = fmt.Errorf("status %d", resp.StatusCode)
		case !strings.Contains(string(b), want):
			a.err = fmt.Errorf("no %q in %q", want, b)
		default:
			a = attempt{at: time.Now()}
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	go try()
	ans := Answer{URL: url}
	for {
		select {
		case a := <-results:
			if a.err == nil {
				ans.At, ans.Last = a.at.UnixNano(), ""
				return ans
			}
			ans.Last = a.err.Error()
		case <-tick.C:
			go try()
		case <-ctx.Done():
			return ans
		}
	}
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
