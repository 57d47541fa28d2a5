package spend

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/rest"
	"github.com/sluice-llm/sluice/state"
)

// flakyLedger is a Memory ledger that fails while down is set, and counts
// the reservations it was asked for.
type flakyLedger struct {
	Ledger
	asked atomic.Int64
	down  atomic.Bool
}

var errLedgerDown = errors.New("ledger down")

func (l *flakyLedger) Reserve(key string, amount, limit float64, ttl time.Duration) (Hold, float64, bool, error) {
	l.asked.Add(1)
	if l.down.Load() {
		return Hold{}, 0, false, errLedgerDown
	}
	return l.Ledger.Reserve(key, amount, limit, ttl)
}

// After the ledger fails, the Meter does not ask it for rest.Period: each
// call meanwhile is refused at once (the budget fails closed) or allowed
// at once (on_store_error: allow), with the ledger's last error, so that a
// Redis that hangs costs one call a second its timeout. Rested, the ledger
// is asked again, and holds again once it answers.
func TestLedgerRestsAfterFailure(t *testing.T) {
	for _, allow := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			l := &flakyLedger{Ledger: NewLedger(state.NewMemory())}
			l.down.Store(true)
			m := &Meter{Budgets: []Budget{{Name: "daily", LimitUSD: 100, AllowOnLedgerError: allow}}, Ledger: l,
				Prices: func(string) (Price, bool) { return Price{Input: 1, Output: 1}, true }}
			reserve := func() (func(float64), error) {
				_, settle, err := m.Reserve(hook.Ask{Provider: "openai", Models: []string{"m"}, BodyBytes: 100, MaxTokens: 10, Total: time.Minute})
				return settle, err
			}
			for i := range 50 {
				_, err := reserve()
				if allow && err != nil || !allow && !errors.Is(err, errLedgerDown) {
					t.Fatalf("allow %v, call %d: %v; want %s", allow, i, err, map[bool]string{true: "no error", false: "a refusal wrapping the ledger's error"}[allow])
				}
			}
			if n := l.asked.Load(); n != 1 {
				t.Errorf("allow %v: a failed ledger was asked %d times by 50 calls within its rest, want once", allow, n)
			}
			l.down.Store(false)
			time.Sleep(rest.Period)
			settle, err := reserve()
			if err != nil || settle == nil || l.asked.Load() != 2 {
				t.Fatalf("allow %v: after the rest: %v (held: %v), ledger asked %d times; want a hold, asked again once", allow, err, settle != nil, l.asked.Load())
			}
			settle(0)
		})
	}
}
