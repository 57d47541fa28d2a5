//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"errors"
	"slices"
	"testing"
)

// A Record does what the Counters methods do on its name, seen by another
// File (another process), and follows its record when another process
// removes the file and it is made again.
func TestRecordLikeCountersAcrossRemoval(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	ca, cb := a.Counters(".count"), b.Counters(".count")
	r, err := ca.Record("spend/day")
	if err != nil || r.Name() != "spend/day" {
		t.Fatalf("Record = %v, %v", r, err)
	}
	if v, err := r.Load(2); v != 0 || err != nil {
		t.Fatalf("Load of a record never written = %d, %v", v, err)
	}
	if v, err := r.Add(2, 7); v != 7 || err != nil {
		t.Fatalf("Add = %d, %v; want 7", v, err)
	}
	if _, err := r.Add(2, -8); !errors.Is(err, ErrCountRange) {
		t.Fatalf("Add below zero: %v, want ErrCountRange", err)
	}
	if ok, err := r.CompareAndSwap(2, 6, 1); ok || err != nil {
		t.Fatalf("CompareAndSwap from a wrong old = %v, %v", ok, err)
	}
	if ok, err := r.CompareAndSwap(2, 7, 9); !ok || err != nil {
		t.Fatalf("CompareAndSwap = %v, %v; want true", ok, err)
	}
	if _, err := r.CompareAndSwap(2, 9, -1); !errors.Is(err, ErrCountRange) {
		t.Fatalf("CompareAndSwap to -1: %v, want ErrCountRange", err)
	}
	if _, err := r.Add(NumCounters, 1); err == nil {
		t.Fatal("Add to a counter past the last: no error")
	}
	if v, _ := cb.Load("spend/day", 2); v != 9 {
		t.Fatalf("another File loads %d, want 9", v)
	}
	if ok, err := cb.Remove("spend/day", func([]int64) bool { return true }); !ok || err != nil {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
	if v, _ := r.Load(2); v != 0 {
		t.Fatalf("after the removal the Record loads %d, want 0", v)
	}
	if v, _ := r.Add(2, 4); v != 4 {
		t.Fatalf("the Record adds to %d after the removal, want 4", v)
	}
	if v, _ := cb.Load("spend/day", 2); v != 4 {
		t.Fatalf("the record made again holds %d for another File, want 4", v)
	}
}

// A Record whose slot the table dropped looks its name up again, once,
// and works through the table's slot from then on.
func TestRecordFollowsDroppedSlot(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	c := f.Counters(".count")
	r, _ := c.Record("idle")
	old := r.s.Load()
	f.prune() // clears the slot's use
	f.prune() // drops it: it has no file
	if !old.gone.Load() {
		t.Fatal("the slot was not dropped; the test is moot")
	}
	if v, err := r.Add(0, 3); v != 3 || err != nil {
		t.Fatalf("Add = %d, %v; want 3", v, err)
	}
	s, _ := f.slot(c.k, "idle")
	if r.s.Load() != s || s == old {
		t.Fatal("the Record still works through the dropped slot")
	}
	if v, _ := c.Load("idle", 0); v != 3 {
		t.Fatalf("Counters.Load = %d, want 3", v)
	}
}

// A Record's fast path makes no system call and allocates nothing; a
// closed File refuses it.
func TestRecordFastPathNoSyscallNoAlloc(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	r, _ := f.Counters(".count").Record("k")
	r.Add(0, 1)
	buf := make([]int64, 0, NumCounters)
	calls := Syscalls()
	allocs := testing.AllocsPerRun(10000, func() {
		r.Add(0, 1)
		r.Add(0, -1)
		r.Load(0)
		r.CompareAndSwap(0, 1, 1)
		buf, _ = r.Counts(buf[:0])
	})
	if n := Syscalls() - calls; n != 0 {
		t.Errorf("%d system calls over 10000 rounds, want 0", n)
	}
	if allocs != 0 {
		t.Errorf("%v allocations a round, want 0", allocs)
	}
	f.Close()
	if _, err := r.Add(0, 1); err == nil {
		t.Fatal("Add on a closed File: no error")
	}
}

// Counts reads what Load reads, for every counter: for a record with no
// file, and through another File that wrote it (the first read maps the
// file, on the slow path; the next ones take the fast path).
func TestRecordCounts(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	r, _ := a.Counters(".count").Record("k")
	got, err := r.Counts([]int64{42})
	if err != nil || len(got) != 1+NumCounters || got[0] != 42 || slices.ContainsFunc(got[1:], func(v int64) bool { return v != 0 }) {
		t.Fatalf("Counts of a record with no file = %v, %v; want 42 then %d zeros", got, err, NumCounters)
	}
	cb := b.Counters(".count")
	for i := range NumCounters {
		if _, err := cb.Add("k", i, int64(i*3+1)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		got, err := r.Counts(nil)
		if err != nil || len(got) != NumCounters {
			t.Fatalf("%s: Counts = %v, %v", when, got, err)
		}
		for i, v := range got {
			if want, _ := cb.Load("k", i); v != want {
				t.Fatalf("%s: counter %d = %d, Load says %d", when, i, v, want)
			}
		}
	}
	check("written by another File") // the first read maps the file: the slow path
	check("again")                   // the fast path
	cb.Add("k", 5, 90)
	check("after another change")
}

// A RecordCache hands out one Record per name, and keeps no more names
// than its size.
func TestRecordCache(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	rc := f.Counters(".count").Cache(3)
	a, err := rc.Record("a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := rc.Record("a"); again != a {
		t.Fatal("a second Record of one name is another Record")
	}
	for i := range 10 {
		r, err := rc.Record(string(rune('b' + i)))
		if err != nil || r.Name() != string(rune('b'+i)) {
			t.Fatalf("Record = %v, %v", r, err)
		}
		if n := rc.Len(); n < 1 || n > 3 {
			t.Fatalf("the cache keeps %d names, want 1 to 3", n)
		}
	}
}
