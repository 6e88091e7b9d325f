package holder

import (
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata")

// The listings pin every byte of every binary (their first line carries the
// file's sha256): a change to a program shows up here, instruction by
// instruction, and must be checked again (objdump, and qemu_test.go for
// arm64) before the golden file is updated.
func TestListingGolden(t *testing.T) {
	for _, goarch := range Arches() {
		t.Run(goarch, func(t *testing.T) {
			got, err := listing(goarch)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", goarch+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("listing of %s differs from %s (run with -update after checking it):\n%s", goarch, path, got)
			}
		})
	}
}

func TestBinaryIsAStaticELF(t *testing.T) {
	for _, tt := range []struct {
		goarch  string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		t.Run(tt.goarch, func(t *testing.T) {
			b, err := Binary(tt.goarch)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Binary(tt.goarch)
			if err != nil || !bytes.Equal(b, again) {
				t.Fatalf("two calls gave different binaries (%v)", err)
			}
			if len(b) > 1024 {
				t.Errorf("binary is %d bytes, want a few hundred", len(b))
			}
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Type != elf.ET_EXEC || f.Machine != tt.machine || f.OSABI != elf.ELFOSABI_NONE {
				t.Errorf("header: class %v data %v type %v machine %v abi %v", f.Class, f.Data, f.Type, f.Machine, f.OSABI)
			}
			if len(f.Progs) != 2 {
				t.Fatalf("%d program headers, want PT_LOAD and PT_GNU_STACK", len(f.Progs))
			}
			load, stack := f.Progs[0], f.Progs[1]
			if load.Type != elf.PT_LOAD || load.Flags != elf.PF_R|elf.PF_X || load.Off != 0 || load.Filesz != uint64(len(b)) || load.Memsz != load.Filesz {
				t.Errorf("load segment %+v: want the whole file, read+execute, nothing writable", load.ProgHeader)
			}
			if f.Entry != load.Vaddr+codeStart {
				t.Errorf("entry %#x, want the first byte after the headers (%#x)", f.Entry, load.Vaddr+codeStart)
			}
			if load.Vaddr%load.Align != 0 {
				t.Errorf("segment at %#x is not aligned to %#x", load.Vaddr, load.Align)
			}
			if stack.Type != elf.PT_GNU_STACK || stack.Flags&elf.PF_X != 0 {
				t.Errorf("stack header %+v: want PT_GNU_STACK without execute", stack.ProgHeader)
			}
			if len(f.Sections) != 0 {
				t.Errorf("%d sections, want none", len(f.Sections))
			}
		})
	}
}

func TestBinaryRefusesUnknownArchitectures(t *testing.T) {
	for _, goarch := range []string{"386", "arm", "riscv64", "s390x", ""} {
		_, err := Binary(goarch)
		if err == nil {
			t.Errorf("Binary(%q) succeeded", goarch)
			continue
		}
		want := fmt.Sprintf("no holder binary for linux/%s: dockctl can run pod holders on amd64, arm64 only", goarch)
		if err.Error() != want {
			t.Errorf("Binary(%q) = %q, want %q", goarch, err, want)
		}
	}
}

// writeHolder writes this machine's holder to an executable file.
func writeHolder(t *testing.T) string {
	t.Helper()
	b, err := Binary(runtime.GOARCH)
	if err != nil {
		t.Fatalf("Binary(%s): %v", runtime.GOARCH, err)
	}
	path := filepath.Join(t.TempDir(), "holder")
	if err := os.WriteFile(path, b, 0o555); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor polls cond until it holds or a generous deadline passes (the
// machine is shared: never a timed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procStatus reads one field of /proc/PID/status ("" if the process is
// gone).
func procStatus(pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// handlersInstalled reports whether pid catches SIGINT, SIGTERM and
// SIGCHLD: bit n-1 of SigCgt is signal n.
func handlersInstalled(pid int) bool {
	caught, err := strconv.ParseUint(procStatus(pid, "SigCgt"), 16, 64)
	if err != nil {
		return false
	}
	want := uint64(1)<<(sigINT-1) | 1<<(sigTERM-1) | 1<<(sigCHLD-1)
	return caught&want == want
}

// exitsZero waits for cmd and checks that it exited with status 0, not
// through a signal.
func exitsZero(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("holder ended with %v, want exit status 0", ee.ProcessState)
		}
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("holder did not exit on its signal")
	}
}

func TestHolderExitsZeroOnSignal(t *testing.T) {
	path := writeHolder(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(path)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			waitFor(t, "the handlers", func() bool { return handlersInstalled(pid) })
			if got := procStatus(pid, "SigBlk"); got != "0000000000000000" {
				t.Errorf("SigBlk = %s, want every signal unblocked", got)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			exitsZero(t, cmd)
		})
	}
}

// TestMain doubles as the helpers of TestHolderReapsChildren, selected by
// the environment: see execWithChildren.
func TestMain(m *testing.M) {
	switch os.Getenv("HOLDER_TEST_ROLE") {
	case "exec":
		os.Exit(execWithChildren(strings.Split(os.Getenv("HOLDER_TEST_ARGV"), "\n")))
	case "exit":
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// execWithChildren starts two children, waits until the first has exited
// (a zombie: nobody waits for it), prints both pids and execs the holder in
// its own place, so the holder starts as a PID 1 inherits orphans: with a
// zombie whose SIGCHLD it never saw (only its start-up pass can reap it)
// and a live child (its SIGCHLD handler must reap that one).
func execWithChildren(argv []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The zombie's SIGCHLD must be consumed here: a signal still pending
	// at exec would reach the holder's handler, and the start-up pass
	// would go untested.
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	var pids []int
	for _, role := range []string{"exit", "sleep"} {
		pid, err := syscall.ForkExec(self, []string{self}, &syscall.ProcAttr{Env: []string{"HOLDER_TEST_ROLE=" + role}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		pids = append(pids, pid)
	}
	<-chld
	for !strings.HasPrefix(procStatus(pids[0], "State"), "Z") {
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("%d %d\n", pids[0], pids[1])
	err = syscall.Exec(argv[0], argv, nil)
	fmt.Fprintln(os.Stderr, err)
	return 2
}

func TestHolderReapsChildren(t *testing.T) {
	testReaping(t, []string{writeHolder(t)}, os.Stderr, handlersInstalled)
}

// testReaping runs the holder (argv) through execWithChildren; ready
// tells when it has installed its handlers.
func testReaping(t *testing.T, argv []string, stderr io.Writer, ready func(pid int) bool) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = []string{"HOLDER_TEST_ROLE=exec", "HOLDER_TEST_ARGV=" + strings.Join(argv, "\n")}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	holder := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var zombie, live int
	if _, err := fmt.Fscan(out, &zombie, &live); err != nil {
		t.Fatalf("reading the children's pids: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(live, syscall.SIGKILL) })
	waitFor(t, "the holder to replace the helper", func() bool { return ready(holder) })
	if ppid := procStatus(live, "PPid"); ppid != strconv.Itoa(holder) {
		t.Fatalf("the live child's parent is %s, want the holder %d", ppid, holder)
	}
	gone := func(pid int) func() bool {
		return func() bool { return procStatus(pid, "State") == "" }
	}
	waitFor(t, "the zombie it started with to be reaped", gone(zombie))
	if err := syscall.Kill(live, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed child to be reaped", gone(live))
	if state := procStatus(holder, "State"); !strings.HasPrefix(state, "S") {
		t.Fatalf("holder state %q after reaping, want sleeping", state)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitsZero(t, cmd)
}

// The holder needs no memory but its stack and one page of code.
func TestHolderIsTiny(t *testing.T) {
	cmd := exec.Command(writeHolder(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	waitFor(t, "the handlers", func() bool { return handlersInstalled(pid) })
	rss := procStatus(pid, "VmRSS")
	kb, err := strconv.Atoi(strings.TrimSuffix(rss, " kB"))
	if err != nil {
		t.Fatalf("VmRSS %q: %v", rss, err)
	}
	t.Logf("holder RSS: %d kB", kb)
	if kb > 256 {
		t.Errorf("holder RSS %d kB, want far below 1 MiB", kb)
	}
}
