package dockerx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// execAPI runs one exec: its multiplexed output, then its exit code once
// it has been inspected running a few times (Docker records the exit
// code moments after the output ends).
type execAPI struct {
	dockerAPI

	mu         sync.Mutex
	createErr  error
	stdout     []byte
	stderr     []byte
	hang       bool // the output never ends
	runningFor int  // inspections that still report it running
	exit       int
	opts       container.ExecOptions
	inspects   int
	closed     chan struct{}
	stdinLen   int    // bytes of stdin the command reads before it answers
	stdin      []byte // what it read
}

func (f *execAPI) ContainerExecCreate(_ context.Context, id string, o container.ExecOptions) (container.ExecCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opts = o
	return container.ExecCreateResponse{ID: "exec-" + id}, f.createErr
}

func (f *execAPI) ContainerExecAttach(context.Context, string, container.ExecAttachOptions) (types.HijackedResponse, error) {
	client, server := net.Pipe()
	f.closed = make(chan struct{})
	go func() {
		defer close(f.closed)
		defer server.Close()
		if f.stdinLen > 0 {
			buf := make([]byte, f.stdinLen)
			n, _ := io.ReadFull(server, buf)
			f.mu.Lock()
			f.stdin = buf[:n]
			f.mu.Unlock()
		}
		if !f.hang {
			var buf bytes.Buffer
			stdcopy.NewStdWriter(&buf, stdcopy.Stdout).Write(f.stdout)
			stdcopy.NewStdWriter(&buf, stdcopy.Stderr).Write(f.stderr)
			server.Write(buf.Bytes())
			return
		}
		// Hold the output open until the client closes the connection.
		_, _ = server.Read(make([]byte, 1))
	}()
	return types.HijackedResponse{Conn: client, Reader: bufio.NewReader(client)}, nil
}

func (f *execAPI) ContainerExecInspect(context.Context, string) (container.ExecInspect, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inspects++
	if f.inspects <= f.runningFor {
		return container.ExecInspect{Running: true}, nil
	}
	return container.ExecInspect{ExitCode: f.exit}, nil
}

func TestExecOutput(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxExecOutput+1000)
	for _, tt := range []struct {
		name     string
		f        *execAPI
		timeout  time.Duration
		wantExit int
		wantOut  []byte
		wantErr  string
		wantIs   error
	}{
		{name: "output and exit code, stderr apart", f: &execAPI{stdout: []byte(`{"generation":3}`), stderr: []byte("applied"), exit: 0, runningFor: 2},
			wantOut: []byte(`{"generation":3}`)},
		{name: "a failure's code", f: &execAPI{stdout: []byte("stale"), exit: 3}, wantExit: 3, wantOut: []byte("stale")},
		{name: "output capped", f: &execAPI{stdout: big, exit: 0}, wantOut: big[:MaxExecOutput]},
		{name: "no output", f: &execAPI{exit: 1}, wantExit: 1},
		{name: "container not running", f: &execAPI{createErr: cerrdefs.ErrConflict.WithMessage("Container c1 is not running")},
			wantIs: ErrConflict, wantErr: "exec in container c1: Container c1 is not running"},
		{name: "output never ends", f: &execAPI{hang: true}, timeout: 50 * time.Millisecond,
			wantIs: context.DeadlineExceeded, wantErr: "/dockctl helper push did not finish within 50ms"},
		{name: "still running after its output", f: &execAPI{runningFor: 1 << 30}, timeout: 50 * time.Millisecond,
			wantIs: context.DeadlineExceeded, wantErr: "did not finish within 50ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			c := newFakeClient(&fakeAPI{})
			c.api = tt.f
			cmd := []string{"/dockctl", "helper", "push"}
			exit, out, err := c.ExecOutput(context.Background(), "c1", cmd, timeout)
			if tt.f.closed != nil {
				<-tt.f.closed // the connection is closed, whatever happened
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tt.wantIs) {
					t.Fatalf("ExecOutput = %d, %q, %v; want an error containing %q (is %v)", exit, out, err, tt.wantErr, tt.wantIs)
				}
				return
			}
			if err != nil || exit != tt.wantExit || !bytes.Equal(out, tt.wantOut) {
				t.Errorf("ExecOutput = %d, %d bytes %.40q, %v; want %d, %d bytes %.40q", exit, len(out), out, err, tt.wantExit, len(tt.wantOut), tt.wantOut)
			}
			if o := tt.f.opts; !o.AttachStdout || !o.AttachStderr || o.AttachStdin || o.Tty || strings.Join(o.Cmd, " ") != strings.Join(cmd, " ") {
				t.Errorf("exec options %+v", o)
			}
		})
	}
}

func TestCappedBuffer(t *testing.T) {
	b := &cappedBuffer{max: 5}
	for _, w := range []string{"abc", "defg", "hij"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Errorf("Write(%q) = %d, %v: every write is complete", w, n, err)
		}
	}
	if b.String() != "abcde" {
		t.Errorf("kept %q, want the first 5 bytes", b.String())
	}
}

// TestExecInput: stdin is attached and written to the command, which
// answers after reading it; no stdin attaches none (TestExecOutput).
func TestExecInput(t *testing.T) {
	in := bytes.Repeat([]byte(`{"generation":7}`), 20000) // over an argument's 128 KiB
	f := &execAPI{stdout: []byte(`{"generation":7}`), stdinLen: len(in)}
	c := newFakeClient(&fakeAPI{})
	c.api = f
	exit, out, err := c.ExecInput(context.Background(), "c1", []string{"/dockctl", "helper", "push", "--config", "-"}, in, time.Minute)
	<-f.closed
	if err != nil || exit != 0 || string(out) != `{"generation":7}` {
		t.Fatalf("ExecInput = %d, %q, %v", exit, out, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.opts.AttachStdin || !bytes.Equal(f.stdin, in) {
		t.Errorf("AttachStdin %v; the command read %d bytes of %d", f.opts.AttachStdin, len(f.stdin), len(in))
	}
}
