package sluice

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/spend"
)

// countingLedger counts every use of the ledger it wraps.
type countingLedger struct {
	spend.Ledger
	uses atomic.Int32
}

func (l *countingLedger) Reserve(key string, amount, limit float64, ttl time.Duration) (spend.Hold, float64, bool, error) {
	l.uses.Add(1)
	return l.Ledger.Reserve(key, amount, limit, ttl)
}

func (l *countingLedger) Settle(key string, h spend.Hold, cost float64) error {
	l.uses.Add(1)
	return l.Ledger.Settle(key, h, cost)
}

func (l *countingLedger) Read(key string) (float64, float64, error) {
	l.uses.Add(1)
	return l.Ledger.Read(key)
}

// A Meter with Prices and no Budgets prices every call, plain or streamed,
// on its log line, and never asks its ledger: nothing is reserved, settled
// or refused.
func TestPricesWithoutBudgetsPriceEveryCall(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	l := &countingLedger{Ledger: downLedger{}} // any use would also fail
	r.tr.Meter = &spend.Meter{Ledger: l, Prices: tenCents}
	for _, b := range []string{spendBody(5), `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[]}`} {
		resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", b))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if h := resp.Header.Get("Sluice-Budget-Remaining"); h != "" {
			t.Errorf("Sluice-Budget-Remaining %q with no budget", h)
		}
	}
	lines := r.lines()
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2: %v", len(lines), lines)
	}
	for _, line := range lines {
		if line["outcome"] != "ok" || line["cost_usd"] != 0.10 {
			t.Errorf("line %v: want an ok call with cost_usd 0.1", line)
		}
	}
	if n := l.uses.Load(); n != 0 {
		t.Errorf("the ledger was used %d times under no budget, want 0", n)
	}
}
