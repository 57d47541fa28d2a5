package sluice

import (
	"context"
	"errors"
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

// tenCents prices output at $20,000 per million tokens: the fake's five
// output tokens cost $0.10, and so does a worst case of max_tokens 5.
func tenCents(string) (Price, bool) { return Price{Output: 20000}, true }

func spendRig(t *testing.T, script string, limit float64) (*rig, Ledger) {
	r := newRig(t, script, fastPolicy())
	l := NewLedger(state.NewMemory())
	r.tr.Spend = &Spend{Budgets: []Budget{{Name: "daily", LimitUSD: limit}}, Ledger: l, Prices: tenCents}
	return r, l
}

func spendBody(maxTokens int) string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, maxTokens)
}

func dailyKey() string {
	b := Budget{Name: "daily"}
	win, _ := b.Window(time.Now())
	return "budget:daily:all:" + win
}

func TestSpendCapUnderConcurrency(t *testing.T) {
	r, l := spendRig(t, "200", 1.00)
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
			switch {
			case err == nil:
				readAll(t, resp)
				admitted.Add(1)
			case errors.Is(err, ErrBudgetExhausted):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if admitted.Load() != 10 || refused.Load() != 54 {
		t.Fatalf("admitted %d, refused %d; want exactly 10 and 54", admitted.Load(), refused.Load())
	}
	spent, held, err := l.Read(dailyKey())
	if err != nil || spent > 1.00 || math.Abs(spent-1.00) > 1e-9 || held != 0 {
		t.Fatalf("ledger spent %v held %v (%v); want $1.00 and nothing held", spent, held, err)
	}
	var logged float64
	for _, line := range r.lines() {
		c, _ := line["cost_usd"].(float64)
		logged += c
		if line["outcome"] == "budget_exhausted" && line["status"] != 0.0 {
			t.Errorf("a refusal reached upstream: %v", line)
		}
	}
	if math.Abs(logged-spent) > 1e-9 {
		t.Errorf("attempt log sums $%v, ledger says $%v", logged, spent)
	}
	if r.srv.Calls() != 10 {
		t.Errorf("upstream calls %d, want 10", r.srv.Calls())
	}
}

func TestSpendSettlesToActualCost(t *testing.T) {
	r, l := spendRig(t, "slow:100ms", 0.30)
	// max_tokens 10: $0.20 held; the answer's 5 tokens cost $0.10.
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(10)))
		if err != nil {
			t.Error(err)
			return
		}
		if got := resp.Header.Get("Sluice-Budget-Remaining"); got != "0.100000" {
			t.Errorf("Sluice-Budget-Remaining %q, want 0.100000", got)
		}
		readAll(t, resp)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, held, _ := l.Read(dailyKey()); held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call's hold never showed in the ledger")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(10))); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("a second $0.20 hold while $0.20 is held under $0.30: %v, want refused", err)
	}
	<-done
	resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(10)))
	if err != nil {
		t.Fatalf("after settling to $0.10, a $0.20 hold fits under $0.30: %v", err)
	}
	readAll(t, resp)
	spent, held, _ := l.Read(dailyKey())
	if math.Abs(spent-0.20) > 1e-9 || held != 0 {
		t.Errorf("spent %v held %v, want 0.20 and 0", spent, held)
	}
	var be *BudgetError
	_, err = r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(10)))
	if !errors.As(err, &be) || be.Budget != "daily" || be.Resets.Before(time.Now()) || math.Abs(be.Remaining-0.10) > 1e-9 {
		t.Errorf("err %v, want a *BudgetError naming daily with $0.10 left", err)
	}
}

func TestFailedAndCancelledCallsLeaveNoHold(t *testing.T) {
	r, l := spendRig(t, "503", 1000)
	r.tr.Policy.Retry.MaxAttempts = 1
	for i := range 1000 {
		req := r.request("/v1/chat/completions", spendBody(5))
		if i%2 == 1 {
			ctx, cancel := contextCancelled()
			req = req.WithContext(ctx)
			defer cancel()
		}
		if resp, err := r.tr.RoundTrip(req); err == nil {
			readAll(t, resp)
		}
	}
	spent, held, _ := l.Read(dailyKey())
	if held != 0 || spent != 0 {
		t.Errorf("after 1000 failed or cancelled calls: spent %v held %v, want 0 and 0", spent, held)
	}
}

func TestUnpricedModel(t *testing.T) {
	r, _ := spendRig(t, "200", 1)
	r.tr.Spend.Prices = func(m string) (Price, bool) { return Price{}, false }
	_, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
	if !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, ErrUnpriced) || !strings.Contains(err.Error(), "gpt-4o-mini") {
		t.Fatalf("err %v, want a refusal naming the unpriced model", err)
	}
	if r.srv.Calls() != 0 {
		t.Error("an unpriced call reached upstream")
	}
	r.tr.Spend.Budgets[0].AllowUnpriced = true
	resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
	if err != nil {
		t.Fatalf("with unpriced allowed: %v", err)
	}
	readAll(t, resp)
}

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

// TestFileLedgerAcrossProcesses runs 8 processes × 8 goroutines holding
// $0.10 each under a $1.00 cap on one file store.
func TestFileLedgerAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	var procs []*exec.Cmd
	var outs []*strings.Builder
	for range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChild$")
		cmd.Env = append(os.Environ(), "SLUICE_LEDGER_CHILD=reserve", "SLUICE_LEDGER_DIR="+dir)
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
	spent, held, _ := NewLedger(st).Read("budget:test")
	if math.Abs(spent-1.00) > 1e-9 || held != 0 {
		t.Errorf("ledger spent %v held %v, want 1.00 and 0", spent, held)
	}
}

func TestFileLedgerReclaimsAfterKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChild$")
	cmd.Env = append(os.Environ(), "SLUICE_LEDGER_CHILD=hold", "SLUICE_LEDGER_DIR="+dir)
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
	l := NewLedger(st)
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
	l := NewLedger(st)
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

func contextCancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
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

func TestStreamWithoutUsageChargedPerEvent(t *testing.T) {
	r, l := spendRig(t, "stream:events=7", 10)
	// A stream without stream_options.include_usage reports no usage: its
	// output is estimated at one token per event.
	resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions",
		`{"model":"gpt-4o-mini","stream":true,"max_tokens":50,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	events := strings.Count(body, "\n\n")
	spent, _, _ := l.Read(dailyKey())
	if want := float64(events) * 20000 / 1e6; math.Abs(spent-want) > 1e-9 {
		t.Errorf("spent $%v for %d events, want $%v (one output token per event)", spent, events, want)
	}
}

// downLedger is a ledger whose store cannot be reached.
type downLedger struct{}

var errDown = errors.New("store unreachable")

func (downLedger) Reserve(string, float64, float64, time.Duration) (Hold, float64, bool, error) {
	return Hold{}, 0, false, errDown
}
func (downLedger) Settle(string, Hold, float64) error    { return errDown }
func (downLedger) Read(string) (float64, float64, error) { return 0, 0, errDown }

func TestLedgerDownFailsClosedUnlessAllowed(t *testing.T) {
	r, _ := spendRig(t, "200", 1)
	r.tr.Spend.Ledger = downLedger{}
	_, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
	if !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, errDown) || r.srv.Calls() != 0 {
		t.Fatalf("err %v after %d upstream calls, want a refusal wrapping the store's error and no call", err, r.srv.Calls())
	}
	r2, _ := spendRig(t, "200", 1)
	r2.tr.Spend.Ledger = downLedger{}
	r2.tr.Spend.Budgets[0].AllowOnLedgerError = true
	resp, err := r2.tr.RoundTrip(r2.request("/v1/chat/completions", spendBody(5)))
	if err != nil {
		t.Fatalf("with on_store_error allow: %v", err)
	}
	readAll(t, resp)
}
