package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// fakeTarget serves whatever it is given, or refuses generations listed in
// refuse; it records what the state file held when each Apply ran.
type fakeTarget struct {
	mu        sync.Mutex
	gen       int64
	applied   []int64
	refuse    map[int64]bool
	statePath string
	stateSeen []string
}

func (f *fakeTarget) Apply(raw json.RawMessage) (int64, error) {
	gen, err := generationOf(raw)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statePath != "" {
		b, _ := os.ReadFile(f.statePath)
		f.stateSeen = append(f.stateSeen, string(b))
	}
	if f.refuse[gen] {
		return 0, fmt.Errorf("generation %d refused", gen)
	}
	f.gen = gen
	f.applied = append(f.applied, gen)
	return gen, nil
}

func (f *fakeTarget) Generation() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

func (f *fakeTarget) appliedList() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.applied...)
}

func genConfig(gen int64) string {
	return fmt.Sprintf(`{"generation":%d,"service":"default/web"}`, gen)
}

// startControl runs a control server for target on a fresh socket and
// state file, and returns both.
func startControl(t *testing.T, target Target) (socket, statePath string) {
	t.Helper()
	socket = testSocket(t)
	statePath = filepath.Join(t.TempDir(), "run", "dockctl", "config.json")
	if ft, ok := target.(*fakeTarget); ok {
		ft.statePath = statePath
	}
	ln, err := ListenControl(socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewControlServer(target, statePath, testLog(t)).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control server: %v", err)
		}
	})
	return socket, statePath
}

func readState(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestControlPush(t *testing.T) {
	tests := []struct {
		name        string
		push        string
		refuse      bool
		wantExit    int
		wantAck     int64 // the generation served afterwards
		wantApplied bool
	}{
		{name: "newer applied", push: genConfig(6), wantExit: helperapi.ExitOK, wantAck: 6, wantApplied: true},
		{name: "equal re-acknowledged", push: genConfig(5), wantExit: helperapi.ExitOK, wantAck: 5, wantApplied: true},
		{name: "older refused as stale", push: genConfig(4), wantExit: helperapi.ExitStale, wantAck: 5},
		{name: "refused by the target", push: genConfig(7), refuse: true, wantExit: helperapi.ExitFailed, wantAck: 5},
		{name: "no generation", push: `{"service":"default/web"}`, wantExit: helperapi.ExitFailed},
		{name: "not JSON", push: `{"generation":`, wantExit: helperapi.ExitFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := &fakeTarget{gen: 5, refuse: map[int64]bool{7: tc.refuse}}
			socket, statePath := startControl(t, target)
			prior := genConfig(5)
			if err := WriteState(statePath, []byte(prior)); err != nil {
				t.Fatal(err)
			}
			ack, code, err := Push(socket, []byte(tc.push), deadline)
			if code != tc.wantExit {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.wantExit)
			}
			if (err == nil) != (code == helperapi.ExitOK) {
				t.Errorf("exit %d with error %v", code, err)
			}
			if tc.wantAck != 0 && ack.Generation != tc.wantAck {
				t.Errorf("ack generation %d, want %d", ack.Generation, tc.wantAck)
			}
			applied := target.appliedList()
			if got := len(applied) == 1; got != tc.wantApplied {
				t.Errorf("applied %v, want applied: %v", applied, tc.wantApplied)
			}
			// The state file holds what was acknowledged, and nothing else:
			// read right after the ack, it must already be there.
			want := prior
			if tc.wantApplied {
				want = tc.push
			}
			if got := readState(t, statePath); got != want {
				t.Errorf("state file %q, want %q", got, want)
			}
		})
	}
}

func TestControlStateWrittenAfterApplyBeforeAck(t *testing.T) {
	target := &fakeTarget{}
	socket, statePath := startControl(t, target)
	for _, gen := range []int64{1, 2} {
		if _, code, err := Push(socket, []byte(genConfig(gen)), deadline); code != helperapi.ExitOK {
			t.Fatalf("push %d: exit %d: %v", gen, code, err)
		}
		if got := readState(t, statePath); got != genConfig(gen) {
			t.Fatalf("after the ack of %d the state file holds %q", gen, got)
		}
	}
	// When each Apply ran, the state file still held the previous config:
	// a config is recorded only once served.
	target.mu.Lock()
	defer target.mu.Unlock()
	if want := []string{"", genConfig(1)}; fmt.Sprint(target.stateSeen) != fmt.Sprint(want) {
		t.Errorf("state file during the applies: %q, want %q", target.stateSeen, want)
	}
	if _, err := os.Stat(filepath.Dir(statePath)); err != nil {
		t.Errorf("state directory not created: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(statePath))
	if len(entries) != 1 {
		t.Errorf("state directory holds %d entries, want only the state file (no temp files left)", len(entries))
	}
}

// A config served but not recorded in the state file is not acknowledged:
// a restarted helper starts from the state file, and would serve an older
// config than the one the controller took as pushed. The push fails, and
// the controller pushes again; once the state file can be written, the
// same push is acknowledged.
func TestControlPushNotRecordedIsNotAcknowledged(t *testing.T) {
	target := &fakeTarget{}
	socket, statePath := startControl(t, target)
	// The state file's directory is a regular file: no write can succeed,
	// whoever runs the test.
	dir := filepath.Dir(statePath)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code, err := Push(socket, []byte(genConfig(1)), deadline); code == helperapi.ExitOK || err == nil {
		t.Fatalf("push of a config that could not be recorded: exit %d, err %v; want a failure", code, err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if ack, code, err := Push(socket, []byte(genConfig(1)), deadline); code != helperapi.ExitOK || ack.Generation != 1 {
		t.Fatalf("the same push once the state file can be written: exit %d, ack %d, err %v; want 1 acknowledged", code, ack.Generation, err)
	}
	if got := readState(t, statePath); got != genConfig(1) {
		t.Errorf("state file %q after the acknowledged push, want %q", got, genConfig(1))
	}
}

func TestControlPushesAreSerialised(t *testing.T) {
	target := &fakeTarget{}
	socket, statePath := startControl(t, target)
	var wg sync.WaitGroup
	for gen := int64(1); gen <= 20; gen++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, code, err := Push(socket, []byte(genConfig(gen)), deadline)
			if code != helperapi.ExitOK && code != helperapi.ExitStale {
				t.Errorf("push %d: exit %d: %v", gen, code, err)
			}
		}()
	}
	wg.Wait()
	// Whatever the order of arrival, generations were applied in
	// increasing order and the last one is served and recorded.
	applied := target.appliedList()
	for i := 1; i < len(applied); i++ {
		if applied[i] < applied[i-1] {
			t.Fatalf("applied out of order: %v", applied)
		}
	}
	if g := target.Generation(); g != 20 {
		t.Errorf("serving %d, want 20", g)
	}
	if got := readState(t, statePath); got != genConfig(20) {
		t.Errorf("state file %q", got)
	}
}

func TestStartPicksNewestConfig(t *testing.T) {
	tests := []struct {
		name      string
		flag      int64
		state     string // "" none
		refuse    []int64
		wantGen   int64
		wantState string
	}{
		{name: "no state file", flag: 3, wantGen: 3, wantState: genConfig(3)},
		{name: "state file newer", flag: 3, state: genConfig(5), wantGen: 5, wantState: genConfig(5)},
		{name: "flag newer", flag: 7, state: genConfig(5), wantGen: 7, wantState: genConfig(7)},
		{name: "equal: the flag", flag: 5, state: `{"generation":5,"service":"x"}`, wantGen: 5, wantState: genConfig(5)},
		{name: "state file corrupt", flag: 3, state: `{"generation":`, wantGen: 3, wantState: genConfig(3)},
		{name: "newer state refused by the target", flag: 3, state: genConfig(5), refuse: []int64{5}, wantGen: 3, wantState: genConfig(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if tc.state != "" {
				if err := os.WriteFile(path, []byte(tc.state+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			target := &fakeTarget{refuse: map[int64]bool{}}
			for _, g := range tc.refuse {
				target.refuse[g] = true
			}
			err := start(genConfig(tc.flag), path, testLog(t), func(raw json.RawMessage) error {
				_, err := target.Apply(raw)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if g := target.Generation(); g != tc.wantGen {
				t.Errorf("serving %d, want %d", g, tc.wantGen)
			}
			if got := readState(t, path); got != tc.wantState {
				t.Errorf("state file %q, want %q", got, tc.wantState)
			}
		})
	}
	t.Run("nothing applies", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		target := &fakeTarget{refuse: map[int64]bool{3: true}}
		err := start(genConfig(3), path, testLog(t), func(raw json.RawMessage) error {
			_, err := target.Apply(raw)
			return err
		})
		if err == nil {
			t.Fatal("start succeeded with no config applied")
		}
	})
}

func TestPushCommand(t *testing.T) {
	tests := []struct {
		name       string
		args       func(socket string) []string
		wantExit   int
		wantStdout string
		wantStderr string
	}{
		{"applied", func(s string) []string { return []string{"push", "--config", genConfig(6), "--control-socket", s} },
			helperapi.ExitOK, `{"generation":6}` + "\n", ""},
		{"stale", func(s string) []string { return []string{"push", "--config", genConfig(4), "--control-socket", s} },
			helperapi.ExitStale, `{"generation":5}` + "\n", "stale config"},
		{"refused", func(s string) []string { return []string{"push", "--config", genConfig(7), "--control-socket", s} },
			helperapi.ExitFailed, "", "generation 7 refused"},
		{"invalid", func(s string) []string { return []string{"push", "--config", `[1,2]`, "--control-socket", s} },
			helperapi.ExitFailed, "", "config"},
		{"no server", func(s string) []string {
			return []string{"push", "--config", genConfig(6), "--control-socket", s + "-nobody"}
		}, helperapi.ExitFailed, "", "no helper answering"},
		{"no config", func(s string) []string { return []string{"push", "--control-socket", s} },
			helperapi.ExitUsage, "", "--config is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := &fakeTarget{gen: 5, refuse: map[int64]bool{7: true}}
			socket, _ := startControl(t, target)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args(socket), nil, &stdout, &stderr)
			if code != tc.wantExit {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantExit, stderr.String())
			}
			if stdout.String() != tc.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
	t.Run("config from stdin", func(t *testing.T) {
		target := &fakeTarget{gen: 5}
		socket, _ := startControl(t, target)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"push", "--config", "-", "--control-socket", socket}, strings.NewReader(genConfig(9)), &stdout, &stderr)
		if code != helperapi.ExitOK || stdout.String() != "{\"generation\":9}\n" {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and generation 9 acknowledged", code, stdout.String(), stderr.String())
		}
	})
	t.Run("server never answers", func(t *testing.T) {
		socket := testSocket(t)
		ln, err := ListenControl(socket)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			<-t.Context().Done()
		}()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"push", "--config", genConfig(1), "--control-socket", socket, "--timeout", "200ms"}, nil, &stdout, &stderr)
		if code != helperapi.ExitFailed || !strings.Contains(stderr.String(), "no acknowledgement") {
			t.Errorf("exit %d, stderr %q; want exit 1, no acknowledgement", code, stderr.String())
		}
	})
}

// TestServeProxy runs the serving loop of the proxy mode: it starts from
// --config, takes a push, records it, and stops with exit 0.
func TestServeProxy(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	p := newTestProxy(t, ProxyOptions{})
	cfg1, _ := helperapi.Marshal(config(1, tcpPort(80, a.endpoint())))
	cfg2, _ := helperapi.Marshal(config(2, tcpPort(80, b.endpoint())))
	f := serveFlags{
		config:    cfg1,
		stateFile: filepath.Join(t.TempDir(), "config.json"),
		socket:    testSocket(t),
		grace:     deadline,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- serve(ctx, f, testLog(t), proxyTarget{p}, nil, p.Shutdown)
	}()
	waitFor(t, "the initial config", func() bool { return p.Generation() == 1 })
	if got := once(t, p.Addr(helperapi.TCP, 80)); got != "a" {
		t.Fatalf("reached %q, want a", got)
	}
	var ack helperapi.Ack
	waitFor(t, "the push to be acknowledged", func() bool {
		var code int
		ack, code, _ = Push(f.socket, []byte(cfg2), deadline)
		return code == helperapi.ExitOK
	})
	if ack.Generation != 2 {
		t.Errorf("ack %d, want 2", ack.Generation)
	}
	if got := once(t, p.Addr(helperapi.TCP, 80)); got != "b" {
		t.Fatalf("reached %q after the push, want b", got)
	}
	if got := readState(t, f.stateFile); got != cfg2 {
		t.Errorf("state file %q", got)
	}
	// A config of another kind is refused, not served as an empty one.
	if _, code, _ := Push(f.socket, []byte(`{"generation":3,"domain":"cluster.local","records":[]}`), deadline); code != helperapi.ExitFailed {
		t.Errorf("a DNS config pushed to the proxy: exit %d, want %d", code, helperapi.ExitFailed)
	}
	cancel()
	if code := <-done; code != helperapi.ExitOK {
		t.Errorf("exit %d after a graceful stop", code)
	}
	if c, err := net.Dial("unix", f.socket); err == nil {
		c.Close()
		t.Error("the control socket still accepts after the stop")
	}
}

// TestProxyMode runs `helper proxy` itself (a config without ports, so
// that no fixed port is bound) through a push and a stop.
func TestProxyMode(t *testing.T) {
	socket := testSocket(t)
	state := filepath.Join(t.TempDir(), "config.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "--config", `{"generation":1,"service":"default/web","ports":[]}`,
			"--control-socket", socket, "--state-file", state, "--listen-host", "127.0.0.1"}, nil, &bytes.Buffer{}, &stderr)
	}()
	waitFor(t, "the push to be acknowledged", func() bool {
		_, code, _ := Push(socket, []byte(`{"generation":2,"service":"default/web","ports":[]}`), deadline)
		return code == helperapi.ExitOK
	})
	cancel()
	if code := <-done; code != helperapi.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	// Logs are JSON lines.
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
	if got := readState(t, state); !strings.Contains(got, `"generation":2`) {
		t.Errorf("state file %q", got)
	}
}

// fakeDNS stands in for clusterdns.Server.
type fakeDNS struct {
	mu     sync.Mutex
	gen    int64
	addr   string
	served chan struct{}
}

func (d *fakeDNS) Serve(ctx context.Context, addr string) error {
	d.mu.Lock()
	d.addr = addr
	d.mu.Unlock()
	close(d.served)
	<-ctx.Done()
	return nil
}

func (d *fakeDNS) Apply(cfg helperapi.DNSConfig) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen = cfg.Generation
	return nil
}

func (d *fakeDNS) Generation() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gen
}

func TestDNSMode(t *testing.T) {
	dns := &fakeDNS{served: make(chan struct{})}
	defer func(old func(helperapi.DNSConfig, *slog.Logger) (dnsServer, error)) { newDNSServer = old }(newDNSServer)
	newDNSServer = func(cfg helperapi.DNSConfig, _ *slog.Logger) (dnsServer, error) {
		dns.Apply(cfg)
		return dns, nil
	}
	socket := testSocket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dns", "--config", `{"generation":1,"domain":"cluster.local","records":[]}`,
			"--control-socket", socket, "--state-file", filepath.Join(t.TempDir(), "config.json"), "--listen", "127.0.0.1:0"},
			nil, &bytes.Buffer{}, &stderr)
	}()
	select {
	case <-dns.served:
	case code := <-done:
		t.Fatalf("dns mode exited %d: %s", code, stderr.String())
	}
	ack, code, err := Push(socket, []byte(`{"generation":2,"domain":"cluster.local","records":[{"name":"web.default.svc.cluster.local","ips":["10.222.8.2"]}]}`), deadline)
	if code != helperapi.ExitOK || ack.Generation != 2 {
		t.Fatalf("push: exit %d, ack %d: %v", code, ack.Generation, err)
	}
	if _, code, _ := Push(socket, []byte(genConfig(3)), deadline); code != helperapi.ExitFailed {
		t.Errorf("a proxy config pushed to the DNS server: exit %d, want %d", code, helperapi.ExitFailed)
	}
	cancel()
	if code := <-done; code != helperapi.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	if dns.addr != "127.0.0.1:0" || dns.Generation() != 2 {
		t.Errorf("served on %q at generation %d", dns.addr, dns.Generation())
	}
}

func TestMainUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"nothing", nil, helperapi.ExitUsage},
		{"unknown mode", []string{"frobnicate"}, helperapi.ExitUsage},
		{"help", []string{"--help"}, helperapi.ExitOK},
		{"mode help", []string{"proxy", "-h"}, helperapi.ExitOK},
		{"proxy without config", []string{"proxy"}, helperapi.ExitUsage},
		{"proxy with stray argument", []string{"proxy", "--config", "{}", "extra"}, helperapi.ExitUsage},
		{"proxy with a bad log level", []string{"proxy", "--config", "{}", "--log-level", "loud"}, helperapi.ExitUsage},
		{"proxy with unknown flag", []string{"proxy", "--frob"}, helperapi.ExitUsage},
		{"dns without config", []string{"dns"}, helperapi.ExitUsage},
		{"push without config", []string{"push"}, helperapi.ExitUsage},
		{"probe without spec", []string{"probe"}, helperapi.ExitUsage},
		{"probe with a bad spec", []string{"probe", "--spec", `{"kind":"tcp","bogus":1}`}, helperapi.ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(context.Background(), tc.args, nil, &stdout, &stderr); got != tc.want {
				t.Errorf("exit %d, want %d; stderr: %s", got, tc.want, stderr.String())
			}
		})
	}
}

// A publisher (`helper proxy --host-ports`, in the host's network
// namespace) listens for pushes on a file socket, replacing the one a
// previous run of its container left; its ack names a port it could not
// bind, and it serves the others.
func TestProxyModeHostPortsAckNamesUnboundPorts(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "run", "dockctl", "control.sock")
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(socket, nil, 0o600); err != nil { // the previous run's
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	held := taken.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "--config", `{"generation":1,"service":"publisher","ports":[]}`, "--host-ports",
			"--control-socket", socket, "--state-file", filepath.Join(dir, "config.json"), "--listen-host", "127.0.0.1"}, nil, &bytes.Buffer{}, &stderr)
	}()
	var ack helperapi.Ack
	waitFor(t, "the push to be acknowledged", func() bool {
		var code int
		ack, code, _ = Push(socket, []byte(fmt.Sprintf(`{"generation":2,"service":"publisher","ports":[{"protocol":"TCP","port":%d,"endpoints":[]}]}`, held)), deadline)
		return code == helperapi.ExitOK
	})
	if len(ack.Unbound) != 1 || ack.Unbound[0].Port != held || ack.Unbound[0].Protocol != helperapi.TCP {
		t.Errorf("ack %+v, want port %d/TCP unbound", ack, held)
	}
	cancel()
	if code := <-done; code != helperapi.ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
}
