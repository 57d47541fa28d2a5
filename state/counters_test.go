//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCountersAddLoadCompareAndSwap(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	c := f.Counters(".count")
	if v, err := c.Load("spend/day", 0); v != 0 || err != nil {
		t.Fatalf("Load of a record never written = %d, %v; want 0", v, err)
	}
	if exists(filepath.Join(dir, "spend%2Fday.count")) {
		t.Fatal("a Load created the record's file")
	}
	if v, err := c.Add("spend/day", 3, 5); v != 5 || err != nil {
		t.Fatalf("Add = %d, %v; want 5", v, err)
	}
	if v, err := c.Add("spend/day", 3, -2); v != 3 || err != nil {
		t.Fatalf("Add -2 = %d, %v; want 3", v, err)
	}
	if _, err := c.Add("spend/day", 3, -4); !errors.Is(err, ErrCountRange) {
		t.Fatalf("Add below zero: %v, want ErrCountRange", err)
	}
	if _, err := c.Add("spend/day", 3, MaxCount); !errors.Is(err, ErrCountRange) {
		t.Fatalf("Add above MaxCount: %v, want ErrCountRange", err)
	}
	if ok, err := c.CompareAndSwap("spend/day", 3, 2, 9); ok || err != nil {
		t.Fatalf("CompareAndSwap from a wrong old = %v, %v; want false", ok, err)
	}
	if ok, err := c.CompareAndSwap("spend/day", 3, 3, 9); !ok || err != nil {
		t.Fatalf("CompareAndSwap = %v, %v; want true", ok, err)
	}
	for i, want := range map[int]int64{0: 0, 3: 9, NumCounters - 1: 0} {
		if v, _ := c.Load("spend/day", i); v != want {
			t.Errorf("counter %d = %d, want %d", i, v, want)
		}
	}
	for _, i := range []int{-1, NumCounters} {
		if _, err := c.Add("spend/day", i, 1); err == nil {
			t.Errorf("Add to counter %d: no error", i)
		}
	}
	other, _ := openTestFile(t, dir)
	if v, _ := other.Counters(".count").Load("spend/day", 3); v != 9 {
		t.Fatalf("another File loads %d, want 9", v)
	}
	if got, _ := f.Counters(".count").Names(); len(got) != 1 {
		t.Fatalf("the kind names %q", got)
	}
}

func TestCountersKindsApart(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	f.Kind(".plain", KindOptions{})
	f.Counters(".count")
	for _, call := range []func(){
		func() { f.Counters(".plain") },
		func() { f.Kind(".count", KindOptions{}) },
		func() { f.Counters(".record") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a kind of counters was mixed with another kind")
				}
			}()
			call()
		}()
	}
}

func TestCountersFastPathNoSyscallNoAlloc(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	c := f.Counters(".count")
	c.Add("k", 0, 1)
	calls := Syscalls()
	allocs := testing.AllocsPerRun(10000, func() {
		if _, err := c.Add("k", 0, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Add("k", 0, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Load("k", 0); err != nil {
			t.Fatal(err)
		}
	})
	if n := Syscalls() - calls; n != 0 {
		t.Errorf("%d system calls over 10000 Adds and Loads, want 0", n)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per Add, Add and Load, want 0", allocs)
	}
}

// Goroutines of two Files (two processes, as far as locks and mappings
// go) add to one counter while a third File removes the record again and
// again: every unit added is either in a removed record's counts or in
// the record left at the end.
func TestCountersRemoveRacingAddsLosesNothing(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	r, _ := openTestFile(t, dir)
	const adders, each = 4, 2000
	var wg sync.WaitGroup
	for i := range adders {
		c := []*File{a, b}[i%2].Counters(".count")
		wg.Go(func() {
			for range each {
				if _, err := c.Add("k", 1, 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var stop atomic.Bool
	var removed int64
	var removals int
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc := r.Counters(".count")
		for !stop.Load() {
			ok, err := rc.Remove("k", func(counts []int64) bool {
				removed += counts[1]
				return true
			})
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				removals++
			}
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-done
	left, _ := a.Counters(".count").Load("k", 1)
	t.Logf("%d removals took %d, %d left", removals, removed, left)
	if got := removed + left; got != adders*each {
		t.Fatalf("removed %d + left %d = %d, want %d", removed, left, got, adders*each)
	}
}

func TestCountersRemoveRecordsAndKeep(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	ca, cb := a.Counters(".count"), b.Counters(".count")
	for i := range 6 {
		ca.Add(fmt.Sprint("k", i), 0, int64(i))
	}
	n, err := cb.RemoveRecords(func(name string, counts []int64) bool { return counts[0]%2 == 0 })
	if err != nil || n != 3 {
		t.Fatalf("RemoveRecords = %d, %v; want 3", n, err)
	}
	for i := range 6 {
		want := int64(i)
		if i%2 == 0 {
			want = 0
		}
		if v, _ := ca.Load(fmt.Sprint("k", i), 0); v != want {
			t.Errorf("k%d = %d after the sweep, want %d", i, v, want)
		}
		if ok := exists(filepath.Join(dir, fmt.Sprint("k", i, ".count"))); ok != (i%2 == 1) {
			t.Errorf("k%d's file present = %v after the sweep", i, ok)
		}
	}
	if v, _ := ca.Add("k1", 0, 1); v != 2 {
		t.Fatalf("a kept record, unsealed, adds to %d, want 2", v)
	}
	if v, _ := ca.Add("k0", 0, 1); v != 1 {
		t.Fatalf("a removed record, made again, adds to %d, want 1", v)
	}
}

// A record Remove keeps is left unlocked: another File that has not mapped
// it yet takes the lock to map it, and must not wait forever.
func TestCountersRemoveKeptLeavesUnlocked(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	ca, cb := a.Counters(".count"), b.Counters(".count")
	if _, err := ca.Add("k", 0, 5); err != nil {
		t.Fatal(err)
	}
	if removed, err := ca.Remove("k", func([]int64) bool { return false }); removed || err != nil {
		t.Fatalf("Remove = %v, %v; want kept", removed, err)
	}
	done := make(chan int64, 1)
	go func() {
		v, _ := cb.Add("k", 0, 1)
		done <- v
	}()
	select {
	case v := <-done:
		if v != 6 {
			t.Errorf("the kept record adds to %d, want 6", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second File's first Add on a kept record waited 10 s for the lock")
	}
}

// A maintainer that died holding counters sealed leaves them to the next
// change under the lock, which unseals them.
func TestCountersSealedByDeadMaintainerUnsealed(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	c := f.Counters(".count")
	c.Add("k", 0, 7)
	s, _ := f.slot(c.k, "k")
	atomic.OrUint64(&s.m.w[headerWords], sealed)
	if v, err := c.Add("k", 0, 1); v != 8 || err != nil {
		t.Fatalf("Add on a counter left sealed = %d, %v; want 8", v, err)
	}
}

// The multi-process tests run this test binary again as child processes
// sharing one state directory, each doing what STATE_CHILD says once the
// parent writes a line to its stdin:
//
//	add        STATE_N units added one at a time to counter 0 of "k"
//	reserve    units of counter 0 of "k" taken one at a time while the
//	           total stays at most STATE_N; prints how many it took
//	remove     removes "k" again and again until stdin closes; prints
//	           the sum of counter 0 over the records it removed
func TestCountersUpdate(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	c := f.Counters(".count")
	if err := c.Update("k", func([]int64) bool { t.Fatal("shown a record with no file"); return false }); err != nil {
		t.Fatal(err)
	}
	c.Add("k", 0, 10)
	c.Add("k", 1, 4)
	err := c.Update("k", func(n []int64) bool {
		n[0] -= n[1]
		n[1] = 0
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if v0, _ := c.Load("k", 0); v0 != 6 {
		t.Errorf("counter 0 = %d after the update, want 6", v0)
	}
	if v1, _ := c.Load("k", 1); v1 != 0 {
		t.Errorf("counter 1 = %d after the update, want 0", v1)
	}
	// A value below zero writes nothing; the counters stay usable.
	if err := c.Update("k", func(n []int64) bool { n[0], n[2] = 99, -1; return true }); !errors.Is(err, ErrCountRange) {
		t.Fatalf("update below zero: %v, want ErrCountRange", err)
	}
	if v0, err := c.Add("k", 0, 1); v0 != 7 || err != nil {
		t.Errorf("Add after a refused update = %d, %v; want 7", v0, err)
	}
	// Another File on the directory (another process's view) sees it.
	g, _ := openTestFile(t, dir)
	if v0, _ := g.Counters(".count").Load("k", 0); v0 != 7 {
		t.Errorf("another File reads %d, want 7", v0)
	}
}

func TestMain(m *testing.M) {
	if role := os.Getenv("STATE_CHILD"); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

func runChild(role string) int {
	f, err := OpenFile(os.Getenv("STATE_DIR"), FileOptions{})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer f.Close()
	c := f.Counters(".count")
	n, _ := strconv.ParseInt(os.Getenv("STATE_N"), 10, 64)
	in := bufio.NewScanner(os.Stdin)
	in.Scan() // go
	var out int64
	switch role {
	case "add":
		for range n {
			if _, err := c.Add("k", 0, 1); err != nil {
				fmt.Println("error", err)
				return 1
			}
		}
	case "reserve":
		for {
			held, err := c.Load("k", 0)
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			if held+1 > n {
				break
			}
			if ok, err := c.CompareAndSwap("k", 0, held, held+1); err != nil {
				fmt.Println("error", err)
				return 1
			} else if ok {
				out++
			}
		}
	case "remove":
		stop := make(chan struct{})
		go func() {
			in.Scan() // stdin closed
			close(stop)
		}()
		for {
			select {
			case <-stop:
				fmt.Println("ok", out)
				return 0
			default:
			}
			if _, err := c.Remove("k", func(counts []int64) bool { out += counts[0]; return true }); err != nil {
				fmt.Println("error", err)
				return 1
			}
		}
	}
	fmt.Println("ok", out)
	return 0
}

// child is one child process as the parent drives it.
type child struct {
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Scanner
}

func startChild(t *testing.T, dir, role string, n int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STATE_CHILD="+role, "STATE_DIR="+dir, fmt.Sprint("STATE_N=", n))
	cmd.Stderr = os.Stderr
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = pr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	t.Cleanup(func() {
		pw.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &child{cmd: cmd, in: pw, out: bufio.NewScanner(out)}
}

func (c *child) start(t *testing.T) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, "go"); err != nil {
		t.Fatal(err)
	}
}

// result waits, at most a minute, for the child's line and returns its
// number.
func (c *child) result(t *testing.T) int64 {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		c.out.Scan()
		line <- c.out.Text()
	}()
	select {
	case l := <-line:
		f := strings.Fields(l)
		if len(f) != 2 || f[0] != "ok" {
			t.Fatalf("child %d: %q", c.cmd.Process.Pid, l)
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		return n
	case <-time.After(time.Minute):
		t.Fatalf("child %d: no answer in a minute", c.cmd.Process.Pid)
	}
	return 0
}

func TestMultiProcessCountersAddsRacingRemovals(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := t.TempDir()
	const adders, each = 3, 5000
	var kids []*child
	for range adders {
		kids = append(kids, startChild(t, dir, "add", each))
	}
	remover := startChild(t, dir, "remove", 0)
	for _, k := range append(kids, remover) {
		k.start(t)
	}
	for _, k := range kids {
		k.result(t)
	}
	remover.in.Close()
	removed := remover.result(t)
	f, _ := openTestFile(t, dir)
	left, err := f.Counters(".count").Load("k", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %d, left %d", removed, left)
	if removed+left != adders*each {
		t.Fatalf("removed %d + left %d = %d, want %d added", removed, left, removed+left, adders*each)
	}
}

func TestMultiProcessCountersReserveUpToLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := t.TempDir()
	const limit = 4000
	var kids []*child
	for range 4 {
		kids = append(kids, startChild(t, dir, "reserve", limit))
	}
	for _, k := range kids {
		k.start(t)
	}
	var taken int64
	var each []int64
	for _, k := range kids {
		n := k.result(t)
		each = append(each, n)
		taken += n
	}
	f, _ := openTestFile(t, dir)
	held, _ := f.Counters(".count").Load("k", 0)
	t.Logf("reservations per process %v", each)
	if taken != limit || held != limit {
		t.Fatalf("%d reserved (%d held) across processes, want exactly the limit %d", taken, held, limit)
	}
}

func BenchmarkCountersAdd(b *testing.B) {
	f, err := OpenFile(b.TempDir(), FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := f.Counters(".count")
	c.Add("k", 0, 1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Add("k", 0, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCountersReserveSerial(b *testing.B) {
	f, err := OpenFile(b.TempDir(), FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := f.Counters(".count")
	c.Add("k", 0, 1)
	b.ReportAllocs()
	for b.Loop() {
		held, err := c.Load("k", 0)
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := c.CompareAndSwap("k", 0, held, held+1); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
