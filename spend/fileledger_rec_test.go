//go:build linux

package spend

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestFileLedgerKeepsFewRecordsLookedUp: the records a ledger keeps looked
// up stay bounded however many keys pass, and a hold taken before the
// table was emptied still settles to the right key.
func TestFileLedgerKeepsFewRecordsLookedUp(t *testing.T) {
	l, _ := counterLedgerAt(t, t.TempDir(), nil)
	first, _, ok, err := l.Reserve("k-first", 0.5, 1, time.Minute)
	if !ok || err != nil {
		t.Fatalf("Reserve = %v, %v", ok, err)
	}
	for i := range maxRecs + 10 {
		if _, _, ok, err := l.Reserve(fmt.Sprint("k", i), 0.01, 1, time.Minute); !ok || err != nil {
			t.Fatalf("Reserve %d = %v, %v", i, ok, err)
		}
	}
	n := l.recs.Len()
	if n > maxRecs || n == 0 {
		t.Fatalf("%d records looked up after %d keys, want 1 to %d", n, maxRecs+11, maxRecs)
	}
	if err := l.Settle("k-first", first, 0.2); err != nil {
		t.Fatal(err)
	}
	spent, held, _ := l.Read("k-first")
	if math.Abs(spent-0.2) > 1e-9 || held != 0 {
		t.Fatalf("k-first: spent %v held %v, want 0.2 and 0", spent, held)
	}
}

// TestFileLedgerSettleOtherKey: a hold handed back under another key than
// the one it was taken under settles that key, not the hold's record.
func TestFileLedgerSettleOtherKey(t *testing.T) {
	l, _ := counterLedgerAt(t, t.TempDir(), nil)
	h, _, _, _ := l.Reserve("a", 0.5, 1, time.Minute)
	if _, _, ok, _ := l.Reserve("b", 0.5, 1, time.Minute); !ok {
		t.Fatal("b refused")
	}
	if err := l.Settle("b", h, 0.1); err != nil {
		t.Fatal(err)
	}
	if spent, _, _ := l.Read("a"); spent != 0 {
		t.Errorf("a spent %v, want 0: the settlement named b", spent)
	}
	if spent, _, _ := l.Read("b"); math.Abs(spent-0.1) > 1e-9 {
		t.Errorf("b spent %v, want 0.1", spent)
	}
}
