package dataplane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/dockctl/dockctl/internal/helperapi"
)

// A `dockctl port-forward` session runs one helper in the pod's network
// namespace: `helper port-forward` holds it, and every forwarded
// connection is an exec of `helper relay 127.0.0.1:PORT [::1]:PORT` in
// it, its stdin and stdout attached. Everything goes through the Docker API, so
// it works with the CLI in a container and against a remote daemon.

// runPortForward is `helper port-forward`, the main process of a
// session's helper: it exits once its stdin ends — the CLI's attach
// ended, whether the CLI stopped or was killed — or on SIGTERM, and
// Docker then removes the helper (dockerx.HelperRequest.Attached).
func runPortForward(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("helper "+helperapi.ModePortForward, flag.ContinueOnError)
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, stdin)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	return helperapi.ExitOK
}

// runRelay is `helper relay HOST:PORT [HOST:PORT…]`: one forwarded
// connection, to the first address that accepts it (the CLI gives the
// pod's IPv4 loopback, then its IPv6 one, as a CRI runtime's port-forward
// tries localhost over tcp4, then tcp6). Nobody listening is exit 1 with
// the first address's dial error on stderr, which the CLI reports as
// kubectl reports a connection it could not forward.
func runRelay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("helper "+helperapi.ModeRelay, flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("dial-timeout", 10*time.Second, "how long connecting to each HOST:PORT may take")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helperapi.ExitOK
		}
		return helperapi.ExitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "error: want HOST:PORT, the first of several that accepts")
		return helperapi.ExitUsage
	}
	for _, a := range fs.Args() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return helperapi.ExitUsage
		}
	}
	conn, err := Dial(ctx, *timeout, fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return helperapi.ExitFailed
	}
	if err := Relay(conn, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return helperapi.ExitFailed
	}
	return helperapi.ExitOK
}

// Dial connects to the first of addrs (HOST:PORT, tried in order, each
// within timeout) that accepts. When none does, the error is the first
// one's: the address the user's server is expected on, whose refusal
// says more than that of a fallback the pod may not even have.
func Dial(ctx context.Context, timeout time.Duration, addrs []string) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	var first error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, "tcp", a)
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = errors.New("no address to dial")
	}
	return nil, first
}

// Relay copies in to conn and conn to out, and closes conn. The end of in
// is passed on as a half-close (a client that sent its request and shut
// its write side still gets the answer); the end of conn's side ends the
// relay whatever in still holds, as kubectl's port-forward ends a
// connection once the pod's side is done. An error reading conn (a reset)
// is returned; one writing to it shows there too.
func Relay(conn net.Conn, in io.Reader, out io.Writer) error {
	defer conn.Close()
	go func() {
		// Its error shows on conn's side: a reset, or an end.
		if _, err := io.Copy(conn, in); err == nil {
			if cw, ok := conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
		}
	}()
	_, err := io.Copy(out, conn)
	return err
}
