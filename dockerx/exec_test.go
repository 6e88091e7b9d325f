package dockerx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"reflect"
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
	toEOF      bool   // the command reads stdin to its end before it answers
	pid        int    // its process once started; 0 with exit: Docker could not start it
	pendingFor int    // inspections before Docker has started (or failed to start) it
	tty        bool   // its output is the terminal's one stream
	resizes    []container.ResizeOptions
	attachOpts container.ExecAttachOptions
}

func (f *execAPI) ContainerExecCreate(_ context.Context, id string, o container.ExecOptions) (container.ExecCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opts = o
	return container.ExecCreateResponse{ID: "exec-" + id}, f.createErr
}

func (f *execAPI) ContainerExecAttach(_ context.Context, _ string, o container.ExecAttachOptions) (types.HijackedResponse, error) {
	f.mu.Lock()
	f.attachOpts = o
	f.mu.Unlock()
	f.closed = make(chan struct{})
	if f.toEOF {
		// A half-close needs a real connection (net.Pipe has none).
		client, server := tcpPair()
		go func() {
			defer close(f.closed)
			defer server.Close()
			b, _ := io.ReadAll(server)
			f.mu.Lock()
			f.stdin = b
			f.mu.Unlock()
			f.answer(server)
		}()
		return types.HijackedResponse{Conn: client, Reader: bufio.NewReader(client)}, nil
	}
	client, server := net.Pipe()
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
			f.answer(server)
			return
		}
		// Hold the output open until the client closes the connection.
		_, _ = server.Read(make([]byte, 1))
	}()
	return types.HijackedResponse{Conn: client, Reader: bufio.NewReader(client)}, nil
}

// answer writes the command's output: multiplexed, or with a TTY raw.
func (f *execAPI) answer(w io.Writer) {
	if f.tty {
		w.Write(append(append([]byte{}, f.stdout...), f.stderr...))
		return
	}
	var buf bytes.Buffer
	stdcopy.NewStdWriter(&buf, stdcopy.Stdout).Write(f.stdout)
	stdcopy.NewStdWriter(&buf, stdcopy.Stderr).Write(f.stderr)
	w.Write(buf.Bytes())
}

func (f *execAPI) ContainerExecInspect(context.Context, string) (container.ExecInspect, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inspects++
	if f.inspects <= f.pendingFor {
		// Docker says running before it has tried to start the process.
		return container.ExecInspect{Running: true}, nil
	}
	if f.inspects <= f.pendingFor+f.runningFor {
		return container.ExecInspect{Running: true, Pid: f.pid}, nil
	}
	return container.ExecInspect{ExitCode: f.exit, Pid: f.pid}, nil
}

func (f *execAPI) ContainerExecResize(_ context.Context, _ string, o container.ResizeOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resizes = append(f.resizes, o)
	return nil
}

// tcpPair is both ends of a loopback TCP connection.
func tcpPair() (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	return client, <-accepted
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

// TestExecAttach: an interactive command's streams, as `dockctl exec` and
// the port-forward relay use them.
func TestExecAttach(t *testing.T) {
	for _, tt := range []struct {
		name               string
		cfg                ExecConfig
		f                  *execAPI
		wantOut, wantErr   string
		wantExit           int
		wantStdin          string
		wantConsole        *[2]uint
		wantStartErr       string
		wantStartErrIs     error
		wantStartErrorCode int
	}{
		{name: "stdout and stderr apart, exit code", cfg: ExecConfig{Cmd: []string{"/workload", "cat"}},
			f: &execAPI{stdout: []byte("out"), stderr: []byte("usage"), exit: 2, pid: 42, runningFor: 1}, wantOut: "out", wantErr: "usage", wantExit: 2},
		{name: "started after a while, exited at once", cfg: ExecConfig{Cmd: []string{"true"}},
			f: &execAPI{pid: 42, pendingFor: 3}},
		{name: "stdin to its end", cfg: ExecConfig{Cmd: []string{"cat"}, Stdin: true},
			f: &execAPI{stdout: []byte("hi\n"), toEOF: true, pid: 42}, wantOut: "hi\n", wantStdin: "hi\n"},
		{name: "a terminal: one stream, its size", cfg: ExecConfig{Cmd: []string{"sh"}, TTY: true, Size: TerminalSize{Height: 24, Width: 80}},
			f: &execAPI{stdout: []byte("$ "), stderr: []byte("warning"), tty: true, pid: 42}, wantOut: "$ warning", wantConsole: &[2]uint{24, 80}},
		{name: "no such executable", cfg: ExecConfig{Cmd: []string{"nosuch"}},
			f:            &execAPI{pendingFor: 2, stdout: []byte("OCI runtime exec failed: exec failed: unable to start container process: exec: \"nosuch\": executable file not found in $PATH: unknown\r\n"), exit: 126},
			wantStartErr: `exec in container c1: OCI runtime exec failed: exec failed: unable to start container process: exec: "nosuch": executable file not found in $PATH: unknown`, wantStartErrorCode: 126},
		{name: "container not running", cfg: ExecConfig{Cmd: []string{"date"}},
			f:            &execAPI{createErr: cerrdefs.ErrConflict.WithMessage("Container c1 is not running")},
			wantStartErr: "exec in container c1: Container c1 is not running", wantStartErrIs: ErrConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClient(&fakeAPI{})
			c.api = tt.f
			ctx := context.Background()
			s, err := c.ExecAttach(ctx, "c1", tt.cfg)
			if tt.wantStartErr != "" {
				var se *ExecStartError
				switch {
				case err == nil || err.Error() != tt.wantStartErr:
					t.Fatalf("ExecAttach = %v, want the error %q", err, tt.wantStartErr)
				case tt.wantStartErrIs != nil && !errors.Is(err, tt.wantStartErrIs):
					t.Errorf("ExecAttach = %v, want it to be %v", err, tt.wantStartErrIs)
				case tt.wantStartErrorCode != 0 && (!errors.As(err, &se) || se.ExitCode != tt.wantStartErrorCode):
					t.Errorf("ExecAttach = %#v, want an ExecStartError with exit code %d", err, tt.wantStartErrorCode)
				}
				if tt.f.closed != nil {
					<-tt.f.closed
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tt.cfg.Stdin {
				if _, err := io.WriteString(s, tt.wantStdin); err != nil {
					t.Fatal(err)
				}
				if err := s.CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			if tt.cfg.TTY {
				if err := s.Resize(ctx, TerminalSize{Height: 50, Width: 132}); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			if err := s.Output(&out, &errOut); err != nil {
				t.Fatal(err)
			}
			code, err := s.Wait(ctx)
			if err != nil || code != tt.wantExit || out.String() != tt.wantOut || errOut.String() != tt.wantErr {
				t.Errorf("output %q, %q, exit %d, %v; want %q, %q, %d", out.String(), errOut.String(), code, err, tt.wantOut, tt.wantErr, tt.wantExit)
			}
			<-tt.f.closed
			tt.f.mu.Lock()
			defer tt.f.mu.Unlock()
			o := tt.f.opts
			if o.AttachStdin != tt.cfg.Stdin || !o.AttachStdout || !o.AttachStderr || o.Tty != tt.cfg.TTY || tt.f.attachOpts.Tty != tt.cfg.TTY {
				t.Errorf("exec options %+v, attach %+v", o, tt.f.attachOpts)
			}
			if string(tt.f.stdin) != tt.wantStdin {
				t.Errorf("the command read %q, want %q", tt.f.stdin, tt.wantStdin)
			}
			if !reflect.DeepEqual(o.ConsoleSize, tt.wantConsole) {
				t.Errorf("console size %v, want %v", o.ConsoleSize, tt.wantConsole)
			}
			if tt.cfg.TTY && !reflect.DeepEqual(tt.f.resizes, []container.ResizeOptions{{Height: 50, Width: 132}}) {
				t.Errorf("resizes %+v", tt.f.resizes)
			}
		})
	}
}
