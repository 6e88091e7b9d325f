package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/testenv"
)

// openPTY opens a pseudo-terminal: its master (what a terminal emulator
// holds: keys are written there) and its slave (exec's stdin).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testenv.Unavailable(t, "no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

func setWinsize(t *testing.T, f *os.File, rows, cols uint16) {
	t.Helper()
	if err := unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
}

// ttyStream is a command with a terminal: what it read, the sizes it
// was given, and an output that ends when the test says.
type ttyStream struct {
	mu      sync.Mutex
	stdin   bytes.Buffer
	sizes   []dockerx.TerminalSize
	finish  chan int
	code    int
	outText string
}

func (s *ttyStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdin.Write(p)
}
func (s *ttyStream) CloseWrite() error { return nil }
func (s *ttyStream) Output(stdout, _ io.Writer) error {
	s.code = <-s.finish
	_, err := io.WriteString(stdout, s.outText)
	return err
}
func (s *ttyStream) Resize(_ context.Context, size dockerx.TerminalSize) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = append(s.sizes, size)
	return nil
}
func (s *ttyStream) Wait(context.Context) (int, error) { return s.code, nil }
func (s *ttyStream) Close() error                      { return nil }

func (s *ttyStream) read() (string, []dockerx.TerminalSize) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdin.String(), append([]dockerx.TerminalSize(nil), s.sizes...)
}

// exec -it on a real pseudo-terminal: raw while the command runs (keys,
// Ctrl-C included, go to it at once), its size given at start and on
// SIGWINCH, the terminal restored at the end.
func TestExecTerminal(t *testing.T) {
	master, pts := openPTY(t)
	setWinsize(t, pts, 24, 80)
	var out, errOut bytes.Buffer
	term := setupTerminal(&execOptions{stdin: true, tty: true}, pts, &out, &errOut)
	if !term.tty || errOut.Len() != 0 {
		t.Fatalf("a terminal as stdin: tty %v, %q", term.tty, errOut.String())
	}
	if got := term.size(); got != (dockerx.TerminalSize{Height: 24, Width: 80}) {
		t.Errorf("size %+v, want 24×80", got)
	}
	if t2 := setupTerminal(&execOptions{stdin: false, tty: true}, pts, &out, &errOut); t2.tty || errOut.Len() != 0 {
		t.Errorf("-t without -i: tty %v, %q; want none, silently (kubectl)", t2.tty, errOut.String())
	}
	lflag := func() uint32 {
		tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		return tio.Lflag
	}
	before := lflag()
	if before&(unix.ICANON|unix.ECHO|unix.ISIG) == 0 {
		t.Fatalf("the pseudo-terminal starts raw: lflag %#x", before)
	}
	s := &ttyStream{finish: make(chan int), outText: "$ bye\r\n"}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := term.run(context.Background(), s, pts, &out, &errOut)
		done <- result{code, err}
	}()
	waitUntil(t, "raw mode", func() bool { return lflag()&(unix.ICANON|unix.ECHO|unix.ISIG) == 0 })
	waitUntil(t, "the initial size", func() bool {
		_, sizes := s.read()
		return reflect.DeepEqual(sizes, []dockerx.TerminalSize{{Height: 24, Width: 80}})
	})
	if _, err := master.Write([]byte("ls\x03")); err != nil { // no newline; Ctrl-C
		t.Fatal(err)
	}
	waitUntil(t, "the keys, as typed", func() bool { in, _ := s.read(); return in == "ls\x03" })
	setWinsize(t, pts, 50, 132)
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the new size", func() bool {
		_, sizes := s.read()
		return len(sizes) == 2 && sizes[1] == dockerx.TerminalSize{Height: 50, Width: 132}
	})
	s.finish <- 7
	r := <-done
	if r.err != nil || r.code != 7 || out.String() != "$ bye\r\n" {
		t.Errorf("run = %d, %v, output %q; want 7 and the command's output", r.code, r.err, out.String())
	}
	if after := lflag(); after != before {
		t.Errorf("terminal not restored: lflag %#x, was %#x", after, before)
	}
}
