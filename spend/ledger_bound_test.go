//go:build linux

package spend

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/state"
)

// fakeClock is a ledger clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func fileLedger(t *testing.T, dir string, clock *fakeClock) (*recordLedger, *state.File) {
	t.Helper()
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(st).(*recordLedger)
	l.now = clock.now
	t.Cleanup(func() {
		l.sweeps.Wait()
		st.Close()
	})
	return l, st
}

func recordFiles(t *testing.T, dir string) []string { return filesEnding(t, dir, ".record") }

func openFDCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1
}

func TestLedgerRemovesRecordsOfEndedPeriods(t *testing.T) {
	leaktest.Check(t)
	dir := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 11, 30, 23, 50, 0, 0, time.UTC)}
	l, _ := fileLedger(t, dir, clock)
	ends := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const settled, inFlight, died = "budget:d:key=a:2026-11-30", "budget:d:key=b:2026-11-30", "budget:d:key=c:2026-11-30"
	h, _, _, _ := l.ReserveUntil(settled, 0.10, 1, time.Minute, ends)
	l.Settle(settled, h, 0.05)
	hb, _, _, _ := l.ReserveUntil(inFlight, 0.10, 1, 30*time.Minute, ends)
	hc, _, _, _ := l.ReserveUntil(died, 0.10, 1, time.Minute, ends)
	l.sweeps.Wait()
	if got := len(recordFiles(t, dir)); got != 3 {
		t.Fatalf("%d record files during the period, want 3", got)
	}
	if spent, _, _ := l.Read(settled); math.Abs(spent-0.05) > 1e-9 {
		t.Fatalf("spent %v during the period, want 0.05 kept", spent)
	}

	clock.add(11 * time.Minute) // the period is over, and a sweep is due
	l.ReserveUntil("budget:d:key=a:2026-12-01", 0.10, 1, time.Minute, ends.Add(24*time.Hour))
	l.sweeps.Wait()
	files := recordFiles(t, dir)
	if len(files) != 2 || !strings.Contains(strings.Join(files, " "), "key%3Db%3A2026-11-30") {
		t.Fatalf("after the period ended: record files %v; want the new period's and the one still holding a call", files)
	}
	l.Settle(inFlight, hb, 0.07) // the call in flight ends: nothing left to keep
	l.Settle(died, hc, 0.09)     // a hold reclaimed and swept, settled late: not recreated
	if files := recordFiles(t, dir); len(files) != 1 {
		t.Fatalf("after the late settlements: record files %v; want only the new period's", files)
	}
	if hc.Ends != ends.UnixNano() {
		t.Fatalf("hold ends at %d, want the period's end %d", hc.Ends, ends.UnixNano())
	}
}

func TestLedgerRecordWithNothingSpentIsNotKept(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l, _ := fileLedger(t, dir, clock)
	ends := clock.now().Add(time.Hour)
	h, _, ok, _ := l.ReserveUntil("k", 0.10, 1, time.Minute, ends)
	if !ok || len(recordFiles(t, dir)) != 1 {
		t.Fatal("a hold was not recorded")
	}
	l.Settle("k", h, 0) // a failed call releases its hold
	if files := recordFiles(t, dir); len(files) != 0 {
		t.Fatalf("record files %v after the only hold was released at no cost, want none", files)
	}
	if _, _, ok, _ := l.ReserveUntil("k2", 5, 1, time.Minute, ends); ok || len(recordFiles(t, dir)) != 0 {
		t.Fatal("a refused reservation left a record")
	}
}

func TestLedgerOldRecordsStillRead(t *testing.T) {
	m := state.NewMemory()
	old := binary.LittleEndian.AppendUint64(nil, uint64(nanoUSD(0.25))) // spent, no holds, no end
	m.Transform("k", func([]byte) ([]byte, error) { return old, nil })
	l := NewLedger(m).(*recordLedger)
	if spent, held, _ := l.Read("k"); math.Abs(spent-0.25) > 1e-9 || held != 0 {
		t.Fatalf("a record written before periods were kept reads %v, %v; want 0.25 spent", spent, held)
	}
	l.sweeps.Wait()
}

// 10,000 client keys, each reserved and settled once in its own short
// period, through a ledger over the file store: descriptors stay within
// the store's MaxOpen and record files within the keys of the periods a
// sweep has not yet reached.
func TestLedgerTenThousandClientKeysStayBounded(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1.8e9, 0)}
	l, _ := fileLedger(t, dir, clock)
	const (
		keys    = 10000
		step    = 10 * time.Second
		period  = time.Minute
		maxOpen = 64 // state.FileOptions.MaxOpen's default
	)
	start := openFDCount(t)
	peakFDs, peakFiles := 0, 0
	for i := range keys {
		now := clock.now()
		ends := now.Truncate(period).Add(period)
		key := fmt.Sprintf("budget:daily:key=%08x:%d", i*2654435761, now.Unix()/int64(period/time.Second))
		h, _, ok, err := l.ReserveUntil(key, 0.01, 1, time.Minute, ends)
		if !ok || err != nil {
			t.Fatalf("key %d: reservation refused: %v", i, err)
		}
		l.Settle(key, h, 0.004)
		// A sweep started by this reservation ends before the clock moves
		// on: ten seconds of the fake clock pass in microseconds, which a
		// busy machine's sweep would otherwise lag behind.
		l.sweeps.Wait()
		clock.add(step)
		if i%100 == 0 {
			peakFDs = max(peakFDs, openFDCount(t)-start)
			peakFiles = max(peakFiles, len(recordFiles(t, dir)))
		}
	}
	l.sweeps.Wait()
	bound := int((ledgerSweepEvery+period)/step) + 2
	t.Logf("%d keys: peak %d descriptors above the start (bound %d), peak %d record files (bound %d)",
		keys, peakFDs, maxOpen, peakFiles, bound)
	if peakFDs > maxOpen+4 { // the store's files, and a few of the runtime's
		t.Errorf("descriptors grew by %d, want at most %d", peakFDs, maxOpen+4)
	}
	if peakFiles > bound {
		t.Errorf("%d record files at the peak, want at most %d", peakFiles, bound)
	}
}

func TestSpendTellsTheLedgerWhenThePeriodEnds(t *testing.T) {
	leaktest.Check(t)
	l := NewLedger(state.NewMemory())
	m := &Meter{Budgets: []Budget{{Name: "daily", LimitUSD: 10}}, Ledger: l,
		Prices: func(string) (Price, bool) { return Price{Output: 20000}, true }}
	_, settle, err := m.Reserve(hook.Ask{Provider: "openai", Models: []string{"gpt-4o-mini"}, BodyBytes: 80, MaxTokens: 5, Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	settle(0.10)
	key, resets := (&Budget{Name: "daily"}).Key(time.Now(), "", "", "")
	var rec ledgerRecord
	l.(*recordLedger).t.Transform(key, func(old []byte) ([]byte, error) {
		rec = decodeRecord(old)
		return old, nil
	})
	if rec.ends != resets.UnixNano() {
		t.Fatalf("record ends at %v, want the period's end %v", time.Unix(0, rec.ends).UTC(), resets)
	}
	l.(*recordLedger).sweeps.Wait()
}
