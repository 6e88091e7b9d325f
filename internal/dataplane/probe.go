package dataplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dockctl/dockctl/internal/grpcprobe"
	"github.com/dockctl/dockctl/internal/helperapi"
)

// probeUserAgent is what kubelet sends as "kube-probe/MAJOR.MINOR".
const probeUserAgent = "kube-probe/dockctl"

// maxProbeBody is how much of a response kubelet reads (10 KiB).
const maxProbeBody = 10 << 10

// defaultProbeTimeout is Kubernetes' default timeoutSeconds.
const defaultProbeTimeout = time.Second

// ProbeResult is one probe's outcome: an exit status of helperapi's and the
// one line `helper probe` prints.
type ProbeResult struct {
	Exit    int
	Message string
}

// Probe runs spec once with kubelet's semantics.
func Probe(ctx context.Context, spec helperapi.ProbeSpec) ProbeResult {
	timeout := time.Duration(spec.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if spec.Port < 1 || spec.Port > 65535 {
		return ProbeResult{helperapi.ExitFailed, fmt.Sprintf("failure: port %d out of range", spec.Port)}
	}
	switch strings.ToLower(spec.Kind) {
	case "tcp":
		return probeTCP(ctx, spec)
	case "http":
		return probeHTTP(ctx, spec, timeout)
	case "grpc":
		if err := grpcprobe.Check(ctx, nil, spec.Address, spec.Port, spec.Service); err != nil {
			return failed(ctx, err)
		}
		return ProbeResult{helperapi.ExitOK, "success: service healthy"}
	default:
		return ProbeResult{helperapi.ExitUsage, fmt.Sprintf("failure: unknown probe kind %q (http, tcp or grpc)", spec.Kind)}
	}
}

func probeTCP(ctx context.Context, spec helperapi.ProbeSpec) ProbeResult {
	addr := net.JoinHostPort(spec.Address, strconv.Itoa(spec.Port))
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return failed(ctx, err)
	}
	c.Close()
	return ProbeResult{helperapi.ExitOK, "success: connected to " + addr}
}

func probeHTTP(ctx context.Context, spec helperapi.ProbeSpec, timeout time.Duration) ProbeResult {
	scheme := strings.ToLower(spec.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return ProbeResult{helperapi.ExitUsage, fmt.Sprintf("failure: unknown scheme %q (HTTP or HTTPS)", spec.Scheme)}
	}
	// As kubelet's formatURL: the path may carry a query.
	path := spec.Path
	if path == "" {
		path = "/"
	}
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(spec.Address, strconv.Itoa(spec.Port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ProbeResult{helperapi.ExitFailed, "failure: " + err.Error()}
	}
	for k, v := range spec.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", probeUserAgent)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "*/*")
	}
	switch {
	case req.Header.Get("Host") != "":
		req.Host = req.Header.Get("Host")
	case spec.Host != "":
		req.Host = spec.Host
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			// kubelet probes HTTPS without verifying the certificate, and
			// never through a proxy from the environment.
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet's semantics
			Proxy:              nil,
			DisableKeepAlives:  true,
			DisableCompression: true,
		},
		CheckRedirect: sameHostRedirects,
	}
	resp, err := client.Do(req)
	if err != nil {
		return failed(ctx, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody)); err != nil {
		return failed(ctx, err)
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return ProbeResult{helperapi.ExitOK, fmt.Sprintf("success: HTTP %d", code)}
	case code >= 300 && code < 400:
		// A redirect left unfollowed (to another host): kubelet's
		// "Probe terminated redirects" warning, which counts as success.
		return ProbeResult{helperapi.ExitOK, fmt.Sprintf("success: HTTP %d, warning: probe terminated redirects (to %s)", code, resp.Header.Get("Location"))}
	default:
		return ProbeResult{helperapi.ExitFailed, fmt.Sprintf("failure: HTTP probe failed with statuscode: %d", code)}
	}
}

// sameHostRedirects is kubelet's redirect policy: follow redirects to the
// same host (up to 10), stop at one to another host and judge that
// response.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// failed words a probe error, telling a timeout (ExitTimeout) apart.
func failed(ctx context.Context, err error) ProbeResult {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return ProbeResult{helperapi.ExitTimeout, "timeout: " + msg}
	}
	return ProbeResult{helperapi.ExitFailed, "failure: " + msg}
}
