package clusterdns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/internal/testenv"
)

// Go's resolver takes its search list and ndots only from /etc/resolv.conf.
// TestGoResolverSearchList therefore re-runs this test binary in a user and
// mount namespace where a resolv.conf of a pod's shape is bind-mounted over
// /etc/resolv.conf; the child (resolverChild) serves the test config and
// resolves the names it is given through Go's resolver.
const (
	childEnv      = "CLUSTERDNS_RESOLVER_CHILD"
	childNamesEnv = "CLUSTERDNS_RESOLVER_NAMES"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(resolverChild())
	}
	os.Exit(m.Run())
}

// resolverChild prints "name<TAB>result" per name: the sorted addresses, or
// "notfound", or "error: …".
func resolverChild() int {
	s, err := newServer(testConfig(1), nil, "/nonexistent")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, "127.0.0.1:0") }()
	select {
	case <-s.Ready():
	case err := <-done:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	addr := s.UDPAddr().String()
	r := &net.Resolver{PreferGo: true, StrictErrors: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr) // nameserver 127.0.0.1 means port 53: ours is elsewhere
		}}
	for _, name := range strings.Split(os.Getenv(childNamesEnv), ",") {
		ips, err := r.LookupHost(ctx, name)
		var de *net.DNSError
		switch {
		case errors.As(err, &de) && de.IsNotFound:
			fmt.Printf("%s\tnotfound\n", name)
		case err != nil:
			fmt.Printf("%s\terror: %v\n", name, err)
		default:
			slices.Sort(ips)
			fmt.Printf("%s\t%s\n", name, strings.Join(ips, ","))
		}
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestGoResolverSearchList(t *testing.T) {
	for _, tool := range []string{"unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, "%s not found: cannot give Go's resolver a pod's resolv.conf (TestSearchPathForms covers the expansion)", tool)
		}
	}
	if out, err := exec.Command("unshare", "-Urm", "true").CombinedOutput(); err != nil {
		testenv.Unavailable(t, "no unprivileged user+mount namespaces (%v: %s): cannot give Go's resolver a pod's resolv.conf "+
			"(TestSearchPathForms covers the expansion)", err, out)
	}
	web, webOther, db := "10.222.8.10", "10.222.8.11", "10.222.0.5,10.222.0.6,10.222.0.7"
	tests := []struct {
		ns   string
		want map[string]string // name → result line
	}{
		{"default", map[string]string{
			"web":                             web,
			"web.default":                     web,
			"web.default.svc":                 web,
			"web.default.svc.cluster.local":   web,
			"web.default.svc.cluster.local.":  web,
			"WEB.Default":                     web,
			"web.other":                       webOther,
			"db":                              db,
			"nope.default.svc.cluster.local.": "notfound",
			// NODATA for A and AAAA: no such host, without a search
			// (a relative name would go on to upstream, absent here).
			"empty.default.svc.cluster.local.": "notfound",
		}},
		{"other", map[string]string{
			"web":                           webOther,
			"web.other.svc":                 webOther,
			"web.default":                   web,
			"web.default.svc.cluster.local": web,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			rc := filepath.Join(t.TempDir(), "resolv.conf")
			content := fmt.Sprintf("nameserver 127.0.0.1\nsearch %s.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n", tt.ns)
			if err := os.WriteFile(rc, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			var names []string
			for n := range tt.want {
				names = append(names, n)
			}
			slices.Sort(names)
			ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
			defer cancel()
			cmd := exec.CommandContext(ctx, "unshare", "-Urm", "sh", "-c",
				`mount --bind "$0" /etc/resolv.conf && exec "$1" -test.run='^$'`, rc, os.Args[0])
			cmd.Env = append(os.Environ(), childEnv+"=1", childNamesEnv+"="+strings.Join(names, ","))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
			}
			got := map[string]string{}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if name, res, ok := strings.Cut(sc.Text(), "\t"); ok {
					got[name] = res
				}
			}
			for _, n := range names {
				if got[n] != tt.want[n] {
					t.Errorf("pod in %s resolves %q to %q, want %q", tt.ns, n, got[n], tt.want[n])
				}
			}
		})
	}
}
