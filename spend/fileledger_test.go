//go:build linux

package spend

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/state"
)

// counterLedgerAt returns a NewFileLedger over the state directory dir, on
// clock, and the directory's File.
func counterLedgerAt(t *testing.T, dir string, clock *fakeClock) (*counterLedger, *state.File) {
	t.Helper()
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewFileLedger(st)
	if err != nil {
		t.Fatal(err)
	}
	cl := l.(*counterLedger)
	if clock != nil {
		cl.now = clock.now
	}
	t.Cleanup(func() {
		cl.sweeps.Wait()
		st.Close()
	})
	return cl, st
}

// filesEnding lists the files of dir whose name ends in ext.
func filesEnding(t *testing.T, dir, ext string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ext) {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestFileLedgerTakesNoLock shows the point of the counters: once a key's
// record exists, a reservation and its settlement make no system call
// (no flock, no fstat), and the sums stay exact.
func TestFileLedgerTakesNoLock(t *testing.T) {
	l, _ := counterLedgerAt(t, t.TempDir(), nil)
	h, _, ok, err := l.Reserve("k", 0.10, 100, time.Minute)
	if !ok || err != nil {
		t.Fatalf("first hold: %v %v", ok, err)
	}
	l.Settle("k", h, 0.10)
	l.sweeps.Wait() // the first reservation started a sweep of the directory
	before := state.Syscalls()
	for range 100 {
		h, _, ok, err := l.Reserve("k", 0.10, 100, time.Minute)
		if !ok || err != nil {
			t.Fatalf("hold: %v %v", ok, err)
		}
		if err := l.Settle("k", h, 0.05); err != nil {
			t.Fatal(err)
		}
	}
	if n := state.Syscalls() - before; n != 0 {
		t.Errorf("100 reservations and settlements made %d system calls, want 0", n)
	}
	spent, held, _ := l.Read("k")
	if math.Abs(spent-5.10) > 1e-9 || held != 0 {
		t.Errorf("spent %v held %v, want 5.10 and 0", spent, held)
	}
}

// TestFileLedgerExactUnderConcurrency: 64 goroutines holding $0.10 under
// $1.00 in one process, over two ledgers of the same directory.
func TestFileLedgerExactUnderConcurrency(t *testing.T) {
	dir := t.TempDir()
	a, _ := counterLedgerAt(t, dir, nil)
	b, _ := counterLedgerAt(t, dir, nil)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		l := []*counterLedger{a, b}[i%2]
		wg.Go(func() {
			h, _, ok, err := l.Reserve("daily", 0.10, 1.00, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				admitted.Add(1)
				l.Settle("daily", h, 0.10)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 10 {
		t.Fatalf("%d holds of $0.10 admitted under $1.00, want exactly 10", admitted.Load())
	}
	if spent, held, _ := a.Read("daily"); math.Abs(spent-1.0) > 1e-9 || held != 0 {
		t.Fatalf("spent %v held %v, want 1.00 and 0", spent, held)
	}
}

// TestFileLedgerReclaimsBetweenTTLAndNineEighths: a hold never settled is
// given back no earlier than its ttl, and no later than 9/8 of it.
func TestFileLedgerReclaimsBetweenTTLAndNineEighths(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	l, _ := counterLedgerAt(t, t.TempDir(), clock)
	h, _, ok, _ := l.Reserve("k", 1.0, 1.0, time.Minute)
	if !ok {
		t.Fatal("first hold refused")
	}
	if h.Until < clock.now().Add(time.Minute).UnixNano() {
		t.Fatalf("hold reclaimed at %v, before its ttl", time.Unix(0, h.Until))
	}
	clock.add(time.Minute - time.Nanosecond)
	if _, _, ok, _ := l.Reserve("k", 0.5, 1.0, time.Minute); ok {
		t.Fatal("a hold was reclaimed before its ttl")
	}
	clock.add(time.Minute/8 + time.Nanosecond)
	if _, _, ok, _ := l.Reserve("k", 0.5, 1.0, time.Minute); !ok {
		t.Fatal("a dead holder's reservation was not reclaimed by 9/8 of its ttl")
	}
	// The late settlement of the reclaimed hold counts its cost once.
	if err := l.Settle("k", h, 0.25); err != nil {
		t.Fatal(err)
	}
	spent, held, _ := l.Read("k")
	if math.Abs(spent-0.25) > 1e-9 || math.Abs(held-0.5) > 1e-9 {
		t.Fatalf("spent %v held %v, want 0.25 and 0.5", spent, held)
	}
	// Used is spent plus held: exactly 0.25 more fits, and no more.
	if _, _, ok, _ := l.Reserve("k", 0.25+1e-9, 1.0, time.Minute); ok {
		t.Fatal("a hold crossed the cap after a late settlement")
	}
	if _, _, ok, _ := l.Reserve("k", 0.25, 1.0, time.Minute); !ok {
		t.Fatal("what is left under the cap is not usable")
	}
}

// TestFileLedgerNeverReclaimsEarly holds with many different ttls, more
// than the groups a key has: each is reclaimed no earlier than its own ttl.
func TestFileLedgerNeverReclaimsEarly(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	l, _ := counterLedgerAt(t, t.TempDir(), clock)
	for i := range 40 {
		ttl := time.Duration(5+(i*7)%40) * time.Second // longer and shorter in turn
		h, _, ok, err := l.Reserve("k", 0.01, 100, ttl)
		if !ok || err != nil {
			t.Fatalf("hold %d: %v %v", i, ok, err)
		}
		if want := clock.now().Add(ttl).UnixNano(); h.Until < want {
			t.Fatalf("hold %d (ttl %v) is reclaimed %v early", i, ttl, time.Duration(want-h.Until))
		}
		clock.add(100 * time.Millisecond)
	}
	if _, held, _ := l.Read("k"); math.Abs(held-0.40) > 1e-9 {
		t.Fatalf("held %v, want 0.40", held)
	}
}

// TestFileLedgerAdoptsRecords: what NewLedger kept in the directory is
// folded into the counters once, and its record files removed.
func TestFileLedgerAdoptsRecords(t *testing.T) {
	dir := t.TempDir()
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := NewLedger(st)
	h, _, _, _ := old.Reserve("budget:daily:all:2026-11-30", 0.30, 1.0, time.Minute)
	old.Settle("budget:daily:all:2026-11-30", h, 0.30)
	old.Reserve("budget:daily:all:2026-11-30", 0.20, 1.0, time.Hour) // in flight
	st.Close()
	if n := len(filesEnding(t, dir, ".record")); n != 1 {
		t.Fatalf("%d record files before, want 1", n)
	}

	l, _ := counterLedgerAt(t, dir, nil)
	spent, held, _ := l.Read("budget:daily:all:2026-11-30")
	if math.Abs(spent-0.30) > 1e-9 || math.Abs(held-0.20) > 1e-9 {
		t.Fatalf("adopted spent %v held %v, want 0.30 and 0.20", spent, held)
	}
	if n := len(filesEnding(t, dir, ".record")); n != 0 {
		t.Errorf("%d record files left after adopting them", n)
	}
	again, _ := counterLedgerAt(t, dir, nil) // a second process: nothing to adopt twice
	if spent, _, _ := again.Read("budget:daily:all:2026-11-30"); math.Abs(spent-0.30) > 1e-9 {
		t.Errorf("spent %v after a second ledger opened, want 0.30", spent)
	}
	if _, _, ok, _ := l.Reserve("budget:daily:all:2026-11-30", 0.50, 1.0, time.Minute); !ok {
		t.Error("the $0.50 left under the cap is not usable")
	}
	if _, _, ok, _ := l.Reserve("budget:daily:all:2026-11-30", 0.01, 1.0, time.Minute); ok {
		t.Error("a hold crossed the cap after adoption")
	}
}

// TestFileLedgerSweepsEndedPeriods: the record of a period that is over,
// with nothing held, is removed by the ledger's sweep; a current one stays.
func TestFileLedgerSweepsEndedPeriods(t *testing.T) {
	leaktest.Check(t)
	dir := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 11, 30, 23, 50, 0, 0, time.UTC)}
	l, _ := counterLedgerAt(t, dir, clock)
	ends := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	h, _, _, _ := l.ReserveUntil("budget:daily:all:2026-11-30", 0.1, 10, time.Minute, ends)
	l.Settle("budget:daily:all:2026-11-30", h, 0.1)
	l.sweeps.Wait()
	if n := len(filesEnding(t, dir, fileLedgerExt)); n != 1 {
		t.Fatalf("%d ledger files, want 1 (the period is not over)", n)
	}
	clock.add(time.Hour) // the next day; the next sweep is due
	h, _, _, _ = l.ReserveUntil("budget:daily:all:2026-12-01", 0.1, 10, time.Minute, ends.AddDate(0, 0, 1))
	l.sweeps.Wait()
	files := filesEnding(t, dir, fileLedgerExt)
	if len(files) != 1 || !strings.Contains(files[0], "2026-12-01") {
		t.Fatalf("ledger files %v, want only the current day's", files)
	}
	if spent, _, _ := l.Read("budget:daily:all:2026-11-30"); spent != 0 {
		t.Errorf("the swept day reads $%v spent, want 0", spent)
	}
	l.Settle("budget:daily:all:2026-12-01", h, 0)
	if _, err := os.Stat(filepath.Join(dir, ".generations")); err != nil {
		t.Error(err)
	}
}

// TestFileLedgerLateSettleAfterGroupReused: a hold settled after its group
// was reclaimed and taken by a new hold must not take the new hold's money
// out of the group (the group's generation tells them apart).
func TestFileLedgerLateSettleAfterGroupReused(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	l, _ := counterLedgerAt(t, t.TempDir(), clock)
	old, _, ok, _ := l.Reserve("k", 0.3, 1.0, time.Minute)
	if !ok {
		t.Fatal("first hold refused")
	}
	clock.add(2 * time.Minute) // its holder died: the next reservation that does not fit reclaims it
	h, _, ok, _ := l.Reserve("k", 0.9, 1.0, time.Minute)
	if !ok {
		t.Fatal("the dead holder's hold was not reclaimed")
	}
	if h.group != old.group {
		t.Fatalf("the new hold took group %d, not the reclaimed %d: the test does not cover what it means to", h.group, old.group)
	}
	l.Settle("k", old, 0.3) // late: its money was spent all the same
	spent, held, _ := l.Read("k")
	if math.Abs(spent-0.3) > 1e-9 || math.Abs(held-0.9) > 1e-9 {
		t.Fatalf("spent %v held %v, want 0.3 and 0.9", spent, held)
	}
	if _, _, ok, _ := l.Reserve("k", 0.01, 1.0, time.Minute); ok {
		t.Fatal("a hold was admitted over the cap after a late settlement")
	}
}

// TestFileLedgerLateSettleAfterRecordRemoved: a hold reclaimed, its record
// then removed by the sweep (nothing used or spent) and made anew by a new
// hold, settled late: the new hold's money stays held (the new record's
// groups do not share the old one's generations).
func TestFileLedgerLateSettleAfterRecordRemoved(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	l, _ := counterLedgerAt(t, t.TempDir(), clock)
	l.nextSweep.Store(math.MaxInt64) // no sweep but the one below
	old, _, ok, _ := l.Reserve("k", 0.3, 1.0, time.Minute)
	if !ok {
		t.Fatal("first hold refused")
	}
	clock.add(2 * time.Minute) // its holder is late: its group is reclaimed
	now := clock.now().UnixNano()
	if err := l.reclaim("k", now); err != nil {
		t.Fatal(err)
	}
	if n, err := l.c.RemoveRecords(func(_ string, c []int64) bool { return fileRecordDone(c, now) }); n != 1 || err != nil {
		t.Fatalf("the sweep removed %d records (%v), want the reclaimed one", n, err)
	}
	h, _, ok, _ := l.Reserve("k", 0.9, 1.0, time.Minute)
	if !ok || h.group != old.group {
		t.Fatalf("new hold: ok %v, group %d; want the old hold's group %d for the test to mean anything", ok, h.group, old.group)
	}
	l.Settle("k", old, 0.3)
	spent, held, _ := l.Read("k")
	if math.Abs(spent-0.3) > 1e-9 || math.Abs(held-0.9) > 1e-9 {
		t.Fatalf("spent %v held %v, want 0.3 and 0.9", spent, held)
	}
}
