//go:build linux

package limit

import (
	"math"
	"os"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/state"
)

// newFileStore returns a File on a state directory of its own.
func newFileStore(t *testing.T) *File {
	t.Helper()
	f, err := NewFile(openState(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFileConcurrentQueue is TestConcurrentQueue on a File: the same
// admissions at the same instants.
func TestFileConcurrentQueue(t *testing.T) {
	leaktest.Check(t)
	f := newFileStore(t)
	synctest.Test(t, func(t *testing.T) {
		checkQueueOrder(t, &Limiter{Store: f, Limits: concLimit(3)})
		f.Close() // the sweep Acquire started in the bubble
	})
}

// TestFileEntries: the entries of a concurrency record, with the liveness
// of other processes set by the test.
func TestFileEntries(t *testing.T) {
	f := newFileStore(t)
	live := map[int64]bool{}
	f.alive = func(h int64) bool { return live[h] }
	other := func(pid int) int64 { return makeHolder(pid, 7) }
	set := func(key string, i int, e int64) {
		t.Helper()
		old, _ := f.inFlight.Load(key, i)
		if ok, err := f.inFlight.CompareAndSwap(key, i, old, e); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	sum := func(key string) int64 {
		t.Helper()
		n, err := f.InFlight(key)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A dead process's 2 slots count for Acquire until the key is full
	// (then the first Acquire that finds it so frees them); InFlight,
	// which finds them whenever the key is not empty, frees them at once.
	live[other(101)] = false
	set("a", 5, other(101)|2)
	if _, ok, _ := f.Acquire("a", 3, 0); !ok {
		t.Fatalf("a slot beside a dead process's 2, limit 3: refused; want ok")
	}
	if e, _ := f.inFlight.Load("a", 5); e != other(101)|2 {
		t.Fatalf("the dead's entry is %x after an Acquire under the limit, want it kept (%x)", e, other(101)|2)
	}
	if n := sum("a"); n != 1 {
		t.Fatalf("InFlight beside a dead process's 2 slots: %d, want this process's 1 (the dead's freed)", n)
	}
	if _, ok, _ := f.Acquire("a", 3, 0); !ok || sum("a") != 2 {
		t.Fatalf("a second slot: ok %v, %d taken; want ok, 2 taken", ok, sum("a"))
	}
	// A live process's slots are kept: the limit holds.
	live[other(102)] = true
	set("a", 6, other(102)|1)
	if _, ok, _ := f.Acquire("a", 3, 0); ok || sum("a") != 3 {
		t.Fatalf("a 4th slot under 3 with a live holder: ok %v, %d taken; want refused, 3", ok, sum("a"))
	}
	f.Release("a", 0)
	f.Release("a", 0)
	if err := f.Release("a", 0); err == nil || sum("a") != 1 {
		t.Fatalf("a 3rd release of 2 slots: %v, %d taken; want an error and the live holder's 1", err, sum("a"))
	}
	if e, _ := f.inFlight.Load("a", 0); e != 0 {
		t.Fatalf("this process's entry holds %x after its last release, want 0 (free)", e)
	}

	// Every entry held by a live process: a call is refused as for a full
	// key, whatever the limit, until one of them ends.
	for i := range state.NumCounters {
		live[other(200+i)] = true
		set("b", i, other(200+i)|1)
	}
	if _, ok, err := f.Acquire("b", 1000, 0); ok || err != nil {
		t.Fatalf("%d entries held by live processes: ok %v (%v), want refused", state.NumCounters, ok, err)
	}
	live[other(200)] = false
	if _, ok, _ := f.Acquire("b", 1000, 0); !ok || sum("b") != state.NumCounters {
		t.Fatalf("one of them dead: ok %v, %d taken; want ok, %d", ok, sum("b"), state.NumCounters)
	}
}

// TestProcessAlive: this process is alive; an entry with its pid but
// another start time is a process given the pid again, dead; a child that
// ended is dead, reaped or still a zombie.
func TestProcessAlive(t *testing.T) {
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	if !processAlive(me) {
		t.Fatal("this process is not alive")
	}
	if holderTag(me) == 0 {
		t.Fatal("no start time read from /proc")
	}
	other := holderTag(me) + 1
	if other >= 1<<tagBits {
		other = 1
	}
	if reused := makeHolder(os.Getpid(), other); processAlive(reused) {
		t.Fatal("a holder with this pid and another start time is alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := makeHolder(cmd.Process.Pid, startTag(cmd.Process.Pid))
	for i := 0; processAlive(child); i++ { // a zombie once it exits
		if i > 500 {
			t.Fatal("a child that exited (a zombie) is alive after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Wait()
	if processAlive(child) {
		t.Fatal("a reaped child is alive")
	}
}

// TestFileSweepsFreeConcurrencyRecords: the sweep removes a concurrency
// record whose entries are all free, and keeps one with a slot taken.
func TestFileSweepsFreeConcurrencyRecords(t *testing.T) {
	f := newFileStore(t)
	f.nextSweep.Store(math.MaxInt64) // no sweep in the background
	f.Acquire("held", 3, 0)
	f.Acquire("freed", 3, 0)
	f.Release("freed", 0)
	removed, err := f.sweepInFlight()
	names, _ := f.inFlight.Names()
	if err != nil || removed != 1 || len(names) != 1 || names[0] != "held" {
		t.Fatalf("sweep removed %d (%v), left %v; want 1 removed, [held] left", removed, err, names)
	}
	if n, _ := f.InFlight("held"); n != 1 {
		t.Fatalf("%d slots of the kept record, want 1", n)
	}
}
