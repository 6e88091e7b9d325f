package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	helperEnv   = "DOCKCTL_STORE_TEST_HELPER" // the state directory
	helperIDEnv = "DOCKCTL_STORE_TEST_HELPER_ID"
	helperNEnv  = "DOCKCTL_STORE_TEST_HELPER_N"
)

// applyLoop applies n distinct specs of the shared deployment "shared" plus
// one of its own deployment, and returns the generations Apply reported for
// "shared". Every spec is unique across all writers (id*1e6+i), so every
// apply must be a spec change and bump the generation by exactly one.
func applyLoop(s *Store, id, n int) ([]int64, error) {
	gens := make([]int64, 0, n)
	for i := range n {
		res, err := s.Apply(deps(
			dep("shared", replicas(int32(id*1_000_000+i))),
			dep(fmt.Sprintf("own-%d", id), replicas(int32(i+1))),
		), ApplyOptions{})
		if err != nil {
			return nil, err
		}
		if res[0].Action == Unchanged {
			return nil, fmt.Errorf("writer %d apply %d: a unique spec reported unchanged", id, i)
		}
		gens = append(gens, res[0].Generation)
	}
	return gens, nil
}

// runHelper is the body of a helper process: it prints one generation a line.
func runHelper() int {
	id, _ := strconv.Atoi(os.Getenv(helperIDEnv))
	n, _ := strconv.Atoi(os.Getenv(helperNEnv))
	s, err := Open(os.Getenv(helperEnv), "default")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	gens, err := applyLoop(s, id, n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := bufio.NewWriter(os.Stdout)
	for _, g := range gens {
		fmt.Fprintln(w, g)
	}
	if err := w.Flush(); err != nil {
		return 2
	}
	return 0
}

// checkSerialised verifies what serialised writers guarantee: each writer
// saw strictly increasing generations, and together they saw every
// generation from 1 to total exactly once (no lost update, no reuse).
func checkSerialised(t *testing.T, s *Store, perWriter [][]int64, total int) {
	t.Helper()
	var all []int64
	for w, gens := range perWriter {
		for i := 1; i < len(gens); i++ {
			if gens[i] <= gens[i-1] {
				t.Errorf("writer %d: generation went from %d to %d", w, gens[i-1], gens[i])
			}
		}
		all = append(all, gens...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) != total {
		t.Fatalf("%d applies reported, want %d", len(all), total)
	}
	for i, g := range all {
		if g != int64(i+1) {
			t.Fatalf("generations are not 1..%d without gaps or repeats: position %d holds %d", total, i, g)
		}
	}
	rec, err := s.Get("", "shared")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Generation != int64(total) {
		t.Errorf("final generation %d, want %d", rec.Generation, total)
	}
	for w := range perWriter {
		own, err := s.Get("", fmt.Sprintf("own-%d", w))
		if err != nil || own.Generation != int64(len(perWriter[w])) {
			t.Errorf("own-%d = %v, %v; want generation %d", w, own, err, len(perWriter[w]))
		}
	}
	if tf := tempFiles(t, s.Dir()); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}

// readContinuously reads the shared record until stop is closed and counts
// failures: with atomic renames a reader never sees a torn file.
func readContinuously(s *Store, stop <-chan struct{}, wg *sync.WaitGroup, reads, failures *atomic.Int64, firstErr *atomic.Value) {
	defer wg.Done()
	for {
		select {
		case <-stop:
			return
		default:
		}
		_, err := s.Lookup("", "shared")
		if err != nil && !errors.Is(err, ErrNotFound) {
			failures.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		}
		reads.Add(1)
	}
}

func TestConcurrentApplyGoroutines(t *testing.T) {
	const writers, n = 8, 15
	s := openTemp(t)
	reader, err := OpenReadOnly(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	var reads, failures atomic.Int64
	var firstErr atomic.Value
	rwg.Add(1)
	go readContinuously(reader, stop, &rwg, &reads, &failures, &firstErr)

	perWriter := make([][]int64, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the writers share the Store value, half open their own,
			// covering both the in-process mutex and the flock.
			ws := s
			if w%2 == 1 {
				if ws, errs[w] = Open(s.Dir(), "default"); errs[w] != nil {
					return
				}
			}
			perWriter[w], errs[w] = applyLoop(ws, w, n)
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	if failures.Load() > 0 {
		t.Errorf("%d of %d concurrent reads failed, first: %v", failures.Load(), reads.Load(), firstErr.Load())
	}
	checkSerialised(t, s, perWriter, writers*n)
}

func TestConcurrentApplyProcesses(t *testing.T) {
	const procs, n = 2, 25
	s := openTemp(t)
	reader, err := OpenReadOnly(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	var reads, failures atomic.Int64
	var firstErr atomic.Value
	rwg.Add(1)
	go readContinuously(reader, stop, &rwg, &reads, &failures, &firstErr)

	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	errOuts := make([]*bytes.Buffer, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(),
			helperEnv+"="+s.Dir(),
			helperIDEnv+"="+strconv.Itoa(p),
			helperNEnv+"="+strconv.Itoa(n),
		)
		outs[p], errOuts[p] = &bytes.Buffer{}, &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[p], errOuts[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[p] = cmd
	}
	perWriter := make([][]int64, procs)
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v: %s", p, err, errOuts[p])
		}
		sc := bufio.NewScanner(outs[p])
		for sc.Scan() {
			g, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				t.Fatalf("helper %d output %q: %v", p, sc.Text(), err)
			}
			perWriter[p] = append(perWriter[p], g)
		}
	}
	close(stop)
	rwg.Wait()
	if failures.Load() > 0 {
		t.Errorf("%d of %d concurrent reads failed, first: %v", failures.Load(), reads.Load(), firstErr.Load())
	}
	checkSerialised(t, s, perWriter, procs*n)
}
