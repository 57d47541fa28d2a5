package sluice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/state"
)

// tenCents prices output at $20,000 per million tokens: the fake's five
// output tokens cost $0.10, and so does a worst case of max_tokens 5.
func tenCents(string) (spend.Price, bool) { return spend.Price{Output: 20000}, true }

func spendRig(t *testing.T, script string, limit float64) (*rig, spend.Ledger) {
	r := newRig(t, script, fastPolicy())
	l := spend.NewLedger(state.NewMemory())
	r.tr.Meter = &spend.Meter{Budgets: []spend.Budget{{Name: "daily", LimitUSD: limit}}, Ledger: l, Prices: tenCents}
	return r, l
}

func spendBody(maxTokens int) string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, maxTokens)
}

// meterOf returns the spend.Meter of a rig's Transport.
func meterOf(r *rig) *spend.Meter { return r.tr.Meter.(*spend.Meter) }

func dailyKey() string {
	b := spend.Budget{Name: "daily"}
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
			case errors.Is(err, spend.ErrExhausted):
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
	synctest.Test(t, func(t *testing.T) {
		r := newFakeRig(t, "slow:100ms", fastPolicy())
		l := spend.NewLedger(state.NewMemory())
		r.tr.Meter = &spend.Meter{Budgets: []spend.Budget{{Name: "daily", LimitUSD: 0.30}}, Ledger: l, Prices: tenCents}
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
		synctest.Wait() // the first call is upstream, its hold taken
		if _, held, _ := l.Read(dailyKey()); math.Abs(held-0.20) > 1e-9 {
			t.Fatalf("the first call's hold shows as $%v in the ledger, want $0.20", held)
		}
		if _, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(10))); !errors.Is(err, spend.ErrExhausted) {
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
		var be *spend.BudgetError
		_, err = r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(10)))
		if !errors.As(err, &be) || be.Budget != "daily" || be.Resets.Before(time.Now()) || math.Abs(be.Remaining-0.10) > 1e-9 {
			t.Errorf("err %v, want a *spend.BudgetError naming daily with $0.10 left", err)
		}
	})
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
	meterOf(r).Prices = func(m string) (spend.Price, bool) { return spend.Price{}, false }
	_, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
	if !errors.Is(err, spend.ErrExhausted) || !errors.Is(err, spend.ErrUnpriced) || !strings.Contains(err.Error(), "gpt-4o-mini") {
		t.Fatalf("err %v, want a refusal naming the unpriced model", err)
	}
	if r.srv.Calls() != 0 {
		t.Error("an unpriced call reached upstream")
	}
	meterOf(r).Budgets[0].AllowUnpriced = true
	resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
	if err != nil {
		t.Fatalf("with unpriced allowed: %v", err)
	}
	readAll(t, resp)
}

func contextCancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
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

func (downLedger) Reserve(string, float64, float64, time.Duration) (spend.Hold, float64, bool, error) {
	return spend.Hold{}, 0, false, errDown
}
func (downLedger) Settle(string, spend.Hold, float64) error { return errDown }
func (downLedger) Read(string) (float64, float64, error)    { return 0, 0, errDown }

func TestLedgerDownFailsClosedUnlessAllowed(t *testing.T) {
	r, _ := spendRig(t, "200", 1)
	meterOf(r).Ledger = downLedger{}
	_, err := r.tr.RoundTrip(r.request("/v1/chat/completions", spendBody(5)))
	if !errors.Is(err, spend.ErrExhausted) || !errors.Is(err, errDown) || r.srv.Calls() != 0 {
		t.Fatalf("err %v after %d upstream calls, want a refusal wrapping the store's error and no call", err, r.srv.Calls())
	}
	r2, _ := spendRig(t, "200", 1)
	meterOf(r2).Ledger = downLedger{}
	meterOf(r2).Budgets[0].AllowOnLedgerError = true
	resp, err := r2.tr.RoundTrip(r2.request("/v1/chat/completions", spendBody(5)))
	if err != nil {
		t.Fatalf("with on_store_error allow: %v", err)
	}
	readAll(t, resp)
}
