package spend

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/state"
)

func TestBudgetWindow(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		period, now, id, resets string
	}{
		{"day", "2026-11-30T23:59:59Z", "2026-11-30", "2026-12-01T00:00:00Z"},
		{"", "2026-12-01T00:00:00Z", "2026-12-01", "2026-12-02T00:00:00Z"},
		{"day", "2026-11-30T23:30:00-02:00", "2026-12-01", "2026-12-02T00:00:00Z"},
		{"month", "2026-12-31T12:00:00Z", "2026-12", "2027-01-01T00:00:00Z"},
		{"6h", "2026-11-30T05:59:59Z", strconv.FormatInt(at("2026-11-30T00:00:00Z").Unix()/(6*3600), 10), "2026-11-30T06:00:00Z"},
	}
	for _, tt := range tests {
		b := Budget{Period: tt.period}
		id, resets := b.Window(at(tt.now))
		if id != tt.id || !resets.Equal(at(tt.resets)) {
			t.Errorf("%s at %s: %s, %s; want %s, %s", tt.period, tt.now, id, resets, tt.id, tt.resets)
		}
	}
}

func TestLedgerRollsOverAndReclaims(t *testing.T) {
	now := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	l := &recordLedger{t: state.NewMemory(), now: func() time.Time { return now }}
	b := Budget{Name: "daily"}
	key := func() string { w, _ := b.Window(now); return "budget:daily:all:" + w }
	if _, _, ok, _ := l.Reserve(key(), 1.0, 1.0, time.Minute); !ok {
		t.Fatal("first hold refused")
	}
	if _, _, ok, _ := l.Reserve(key(), 0.01, 1.0, time.Minute); ok {
		t.Fatal("a hold over the cap was taken")
	}
	now = now.Add(time.Minute) // midnight UTC: a new day, a new key
	if _, _, ok, _ := l.Reserve(key(), 1.0, 1.0, time.Minute); !ok {
		t.Fatal("the new day's budget is not fresh")
	}
	if _, _, ok, _ := l.Reserve(key(), 0.5, 1.0, time.Minute); ok {
		t.Fatal("a hold should not fit while the first is held")
	}
	now = now.Add(time.Minute - time.Nanosecond)
	if _, _, ok, _ := l.Reserve(key(), 0.5, 1.0, time.Minute); ok {
		t.Fatal("a hold was reclaimed before its ttl")
	}
	now = now.Add(time.Nanosecond) // the holder never settled: reclaimed
	if _, _, ok, _ := l.Reserve(key(), 0.5, 1.0, time.Minute); !ok {
		t.Fatal("a dead holder's reservation was not reclaimed after its ttl")
	}
}

// ledgerKinds are the ledgers kept in a state directory: NewLedger over its
// records, and NewFileLedger over its counters.
var ledgerKinds = []string{"records", "counters"}

// openLedger returns a ledger of kind over st.
func openLedger(t testing.TB, st *state.File, kind string) Ledger {
	t.Helper()
	if kind == "records" {
		return NewLedger(st)
	}
	l, err := NewFileLedger(st)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestFileLedgerAcrossProcesses runs 8 processes × 8 goroutines holding
// $0.10 each under a $1.00 cap on one file store.
func TestFileLedgerAcrossProcesses(t *testing.T) {
	for _, kind := range ledgerKinds {
		t.Run(kind, func(t *testing.T) { testFileLedgerAcrossProcesses(t, kind) })
	}
}

func testFileLedgerAcrossProcesses(t *testing.T, kind string) {
	dir := t.TempDir()
	var procs []*exec.Cmd
	var outs []*strings.Builder
	for range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChild$")
		cmd.Env = append(os.Environ(), "SLUICE_LEDGER_CHILD=reserve", "SLUICE_LEDGER_DIR="+dir, "SLUICE_LEDGER_KIND="+kind)
		out := &strings.Builder{}
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, out)
	}
	admitted := 0
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v: %s", i, err, outs[i])
		}
		n, err := strconv.Atoi(strings.TrimSpace(lastLine(outs[i].String())))
		if err != nil {
			t.Fatalf("child %d said %q", i, outs[i])
		}
		admitted += n
	}
	if admitted != 10 {
		t.Fatalf("%d holds of $0.10 admitted under $1.00 across 8 processes, want exactly 10", admitted)
	}
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spent, held, _ := openLedger(t, st, kind).Read("budget:test")
	if math.Abs(spent-1.00) > 1e-9 || held != 0 {
		t.Errorf("ledger spent %v held %v, want 1.00 and 0", spent, held)
	}
}

func TestFileLedgerReclaimsAfterKill(t *testing.T) {
	for _, kind := range ledgerKinds {
		t.Run(kind, func(t *testing.T) { testFileLedgerReclaimsAfterKill(t, kind) })
	}
}

func testFileLedgerReclaimsAfterKill(t *testing.T, kind string) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChild$")
	cmd.Env = append(os.Environ(), "SLUICE_LEDGER_CHILD=hold", "SLUICE_LEDGER_DIR="+dir, "SLUICE_LEDGER_KIND="+kind)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // "held"
	if !strings.Contains(string(buf[:n]), "held") {
		t.Fatalf("child said %q", buf[:n])
	}
	killed := time.Now()
	cmd.Process.Kill() // kill -9 while holding $1.00
	cmd.Wait()
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := openLedger(t, st, kind)
	if _, _, ok, _ := l.Reserve("budget:test", 0.5, 1.0, time.Second); ok && time.Since(killed) < 500*time.Millisecond {
		t.Fatal("the dead holder's reservation was reclaimed before its ttl")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, _, ok, _ := l.Reserve("budget:test", 0.5, 1.0, time.Second); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead holder's reservation was never reclaimed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLedgerChild is a child process of the file ledger tests.
func TestLedgerChild(t *testing.T) {
	role := os.Getenv("SLUICE_LEDGER_CHILD")
	if role == "" {
		t.Skip("run by TestFileLedger*")
	}
	st, err := state.OpenFile(os.Getenv("SLUICE_LEDGER_DIR"), state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, st, os.Getenv("SLUICE_LEDGER_KIND"))
	switch role {
	case "reserve":
		var admitted atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if h, _, ok, err := l.Reserve("budget:test", 0.10, 1.00, time.Minute); err != nil {
					t.Error(err)
				} else if ok {
					admitted.Add(1)
					l.Settle("budget:test", h, 0.10)
				}
			})
		}
		wg.Wait()
		fmt.Println(admitted.Load())
	case "hold":
		if _, _, ok, _ := l.Reserve("budget:test", 1.0, 1.0, 700*time.Millisecond); !ok {
			t.Fatal("hold refused")
		}
		fmt.Println("held")
		os.Stdout.Sync()
		time.Sleep(time.Minute)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, err := strconv.Atoi(strings.TrimSpace(lines[i])); err == nil {
			return lines[i]
		}
	}
	return ""
}

func TestLedgerRecordStaysSmall(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &recordLedger{t: state.NewMemory(), now: func() time.Time { return now }}
	var holds []Hold
	for i := range 1000 {
		now = now.Add(time.Duration(i%37) * time.Microsecond)
		h, _, ok, err := l.Reserve("k", 0.001, 100, time.Duration(1+i%5)*time.Second)
		if !ok || err != nil {
			t.Fatalf("hold %d refused: %v", i, err)
		}
		holds = append(holds, h)
	}
	var size int
	l.t.Transform("k", func(old []byte) ([]byte, error) { size = len(old); return old, nil })
	if size > 224 {
		t.Fatalf("record of 1000 holds is %d bytes, want ≤ 224", size)
	}
	if _, held, _ := l.Read("k"); math.Abs(held-1.0) > 1e-9 {
		t.Fatalf("held %v, want 1.0", held)
	}
	for _, h := range holds {
		l.Settle("k", h, 0.0005)
	}
	spent, held, _ := l.Read("k")
	if held != 0 || math.Abs(spent-0.5) > 1e-9 {
		t.Errorf("after settling: spent %v held %v, want 0.5 and 0", spent, held)
	}
}
