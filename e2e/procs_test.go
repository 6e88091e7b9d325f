//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Docker object set leaves processes as well as objects: a container's
// processes, its containerd shim, and for a private daemon the dockerd and
// containerd themselves. The leftovers checks count them too, found by
// what ties them to the test — never by a program's name, which would
// match other users' daemons and shims on a shared machine.

// proc is one process of the machine, as /proc shows it.
type proc struct {
	pid, ppid int
	cmd       string // command line, arguments joined by spaces
}

func (p proc) String() string { return fmt.Sprintf("pid %d (%s)", p.pid, p.cmd) }

// procsOf lists the live processes tied to a test's objects: any process
// whose command line, working directory or executable names a path under
// one of dirs (a private daemon's directory: its dockerd and containerd,
// and each shim by its -address and bundle), or whose command line or
// cgroup names one of the container IDs ids (a shim by its -id, a
// container's processes by their cgroup), and every descendant of one.
// The test process itself is never listed.
func procsOf(dirs, ids []string) []proc {
	all := allProcs()
	matched := map[int]bool{}
	self := os.Getpid()
	for _, p := range all {
		if p.pid == self {
			continue
		}
		if procNames(p, dirs, ids) {
			matched[p.pid] = true
		}
	}
	// Descendants: a container's processes below a matched shim.
	for changed := true; changed; {
		changed = false
		for _, p := range all {
			if !matched[p.pid] && matched[p.ppid] && p.pid != self {
				matched[p.pid], changed = true, true
			}
		}
	}
	var out []proc
	for _, p := range all {
		if matched[p.pid] {
			out = append(out, p)
		}
	}
	return out
}

func procNames(p proc, dirs, ids []string) bool {
	under := func(s string) bool {
		for _, d := range dirs {
			if d != "" && (s == d || strings.Contains(s, d+"/") || strings.Contains(s, d+" ") || strings.HasSuffix(s, d)) {
				return true
			}
		}
		return false
	}
	names := func(s string) bool {
		for _, id := range ids {
			if id != "" && strings.Contains(s, id) {
				return true
			}
		}
		return false
	}
	if under(p.cmd) || names(p.cmd) {
		return true
	}
	base := filepath.Join("/proc", strconv.Itoa(p.pid))
	if cwd, err := os.Readlink(filepath.Join(base, "cwd")); err == nil && under(cwd) {
		return true
	}
	if exe, err := os.Readlink(filepath.Join(base, "exe")); err == nil && under(exe) {
		return true
	}
	if cg, err := os.ReadFile(filepath.Join(base, "cgroup")); err == nil && names(string(cg)) {
		return true
	}
	return false
}

// allProcs lists the live processes (zombies, which hold nothing and are
// their parent's to reap, are left out).
func allProcs() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if cmd == "" {
			cmd = "[" + string(stat[strings.IndexByte(string(stat), '(')+1:i]) + "]"
		}
		out = append(out, proc{pid: pid, ppid: ppid, cmd: cmd})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// killProcs sends SIGKILL to each of ps and waits until none of them is
// alive any longer. It returns those still alive after the wait.
func killProcs(ps []proc) []proc {
	for _, p := range ps {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		alive := stillAlive(ps)
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stillAlive returns those of ps whose process is still there: the same
// PID with the same command line (a PID reused by another process does
// not count), not a zombie.
func stillAlive(ps []proc) []proc {
	now := map[int]string{}
	for _, p := range allProcs() {
		now[p.pid] = p.cmd
	}
	var out []proc
	for _, p := range ps {
		if cmd, ok := now[p.pid]; ok && cmd == p.cmd {
			out = append(out, p)
		}
	}
	return out
}

// waitNoProcs waits (up to timeout) until no process is tied to dirs or
// ids, and reports as left behind, then kills, any still there: a shim
// exits shortly after its container was removed, not at once.
func waitNoProcs(t testing.TB, timeout time.Duration, what string, dirs, ids []string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ps := procsOf(dirs, ids)
		if len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: %d processes of %s: %s", len(ps), what, procList(ps))
			if alive := killProcs(ps); len(alive) > 0 {
				t.Errorf("and still alive after SIGKILL: %s", procList(alive))
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func procList(ps []proc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}
