package spend

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/rest"
	"github.com/sluice-llm/sluice/state"
)

// Meter caps what the calls of a sluice.Transport may cost, and prices
// them: set it as the Transport's Meter. Before a call, its worst case
// (input estimated from the body's size, plus max_tokens of output) is
// reserved under every budget that applies, and the call is refused if that
// would cross a cap; when the call ends, the reservation is settled to the
// cost read from the answers' usage. With Prices and no Budgets, a Meter
// prices calls for the attempt log without capping them.
//
// Set the fields before the first call and do not change them after. A
// Meter is safe for concurrent use.
type Meter struct {
	// Budgets are the caps. A call must fit under all of them.
	Budgets []Budget

	// Ledger keeps the spend. Share one (over a file or Redis store) to
	// cap several processes together. If nil, a ledger private to the
	// Meter.
	Ledger Ledger

	// Prices returns a model's price. If nil, no model is priced.
	Prices func(model string) (Price, bool)

	// DefaultMaxTokens is the output assumed for the worst case of a
	// request that does not say its max_tokens. If zero, 4096.
	DefaultMaxTokens int

	once    sync.Once
	ledger  Ledger
	windows []atomic.Pointer[window] // per budget, its current period
	rest    rest.Rest                // the Ledger's, after it failed
}

func (m *Meter) init() {
	m.once.Do(func() {
		m.windows = make([]atomic.Pointer[window], len(m.Budgets))
		m.ledger = m.Ledger
		if m.ledger == nil {
			m.ledger = NewLedger(state.NewMemory())
		}
	})
}

// Reserve holds the worst-case cost of a call under every budget that
// applies to it, or none: what the call asks names its caller (for
// budgets scoped per key), its provider, the models it may reach (the
// request's first, then its fallbacks'), the size of its body, the
// max_tokens it names (0 if none) and how long it may last (Total), after
// which a hold its holder never settled is reclaimed. It returns what is left under
// the tightest cap after the hold (negative when no cap applies), and
// settle, to be called once when the call ends with what its attempts cost
// (nil when nothing is held). A call that does not fit is refused with a
// *BudgetError. Reserve is the sluice.Meter method a Transport calls.
func (m *Meter) Reserve(ask hook.Ask) (remaining float64, settle func(costUSD float64), err error) {
	provider, models, ttl := ask.Provider, ask.Models, ask.Total
	if len(m.Budgets) == 0 {
		return -1, nil, nil
	}
	m.init()
	price, priced := m.worstPrice(models)
	amount, assumed := 0.0, int64(0)
	if priced {
		amount, assumed = m.estimate(ask.BodyBytes, ask.MaxTokens, price)
	}
	model := ""
	if len(models) > 0 {
		model = models[0]
	}
	r := &reservation{ledger: m.ledger, remaining: -1}
	r.holds = r.one[:0]
	now := time.Now()
	id := ask.Caller.ID
	for i := range m.Budgets {
		b := &m.Budgets[i]
		if !priced && !b.AllowUnpriced {
			r.settle(0)
			return 0, nil, &BudgetError{Budget: b.Name, Err: fmt.Errorf("%w: %q (add it to prices, or allow unpriced models in budget %s)", ErrUnpriced, model, b.Name)}
		}
		w := b.windowAt(&m.windows[i], now)
		key, resets := w.allKey, w.resets
		if b.Scope != "" && b.Scope != "all" {
			key = b.keyIn(w.id, id, model, provider)
		}
		var h Hold
		var left float64
		ok, err := false, m.rest.Err(now) // a ledger that failed rests: refused or allowed at once
		if err == nil {
			if h, left, ok, err = reserveIn(m.ledger, key, amount, b.LimitUSD, ttl, resets); err != nil {
				m.rest.Fail(now, err)
			}
		}
		switch {
		case err != nil && b.AllowOnLedgerError:
			continue
		case err != nil:
			r.settle(0)
			return 0, nil, &BudgetError{Budget: b.Name, Resets: resets, Err: fmt.Errorf("ledger unreachable, failing closed: %w", err)}
		case !ok:
			r.settle(0)
			return 0, nil, &BudgetError{Budget: b.Name, Remaining: max(left, 0), Resets: resets,
				WorstCase: amount, AssumedMaxTokens: assumed}
		}
		r.holds = append(r.holds, hold{key: key, h: h})
		if r.remaining < 0 || left < r.remaining {
			r.remaining = left
		}
	}
	if len(r.holds) == 0 {
		return r.remaining, nil, nil
	}
	return r.remaining, r.settle, nil
}

// estimate returns the worst-case cost of a request at price p: its body
// bytes / 4 as input tokens (a generous count: JSON syntax is not tokens),
// plus its max_tokens (or the default) of output. assumed is the default
// output when the request named none, else 0.
func (m *Meter) estimate(bodyBytes int, maxTokens int64, p Price) (cost float64, assumed int64) {
	out := maxTokens
	if out <= 0 {
		out = int64(m.DefaultMaxTokens)
		if out <= 0 {
			out = 4096
		}
		assumed = out
	}
	return p.Cost(Usage{Input: int64(bodyBytes+3) / 4, Output: out}), assumed
}

// worstPrice returns the highest price among models, so that a fallback to
// a dearer model stays within the reservation.
func (m *Meter) worstPrice(models []string) (Price, bool) {
	if m.Prices == nil {
		return Price{}, false
	}
	var best Price
	for _, name := range models {
		p, ok := m.Prices(name)
		if !ok {
			return Price{}, false
		}
		best.Input, best.Output = max(best.Input, p.Input), max(best.Output, p.Output)
		best.CacheRead, best.CacheWrite = max(best.CacheRead, p.CacheRead), max(best.CacheWrite, p.CacheWrite)
	}
	return best, true
}

// hold is one hold a reservation has under one budget key.
type hold struct {
	key string
	h   Hold
}

// reservation is what a call holds under its budgets.
type reservation struct {
	ledger    Ledger
	holds     []hold
	one       [1]hold // holds' first, in the reservation's allocation
	remaining float64
	mu        sync.Mutex
}

// settle replaces every hold by cost, once; a cost of 0 releases them.
func (r *reservation) settle(costUSD float64) {
	r.mu.Lock()
	holds := r.holds
	r.holds = nil
	r.mu.Unlock()
	for _, h := range holds {
		r.ledger.Settle(h.key, h.h, costUSD)
	}
}

// Count returns how one answered attempt of model is metered: count is
// written every byte of the answer handed to the caller, in order, and end,
// called once at the answer's end, says what the attempt cost at model's
// price and how many tokens it used, from the usage the answer reported in
// its dialect d (nil reads it as OpenAI's) or else an estimate (the input
// from bodyBytes, the request's size; the output at one token per stream
// event, or the answer's bytes / 4). A model with no price costs 0, and its
// tokens are still read: a rate limit settles on them (see Usage.Tokens).
// Count is the sluice.Meter method a Transport calls.
func (m *Meter) Count(d dialect.Dialect, model string, stream bool, bodyBytes int) (count func(p []byte), end func() (costUSD float64, tokens int64)) {
	var p Price
	if m.Prices != nil {
		p, _ = m.Prices(model)
	}
	if d == nil {
		d = dialect.OpenAI
	}
	if stream {
		r := d.StreamUsage()
		count = func(b []byte) { r.Write(b) }
		end = func() (float64, int64) { // the usage seen, or one output token per event
			u, seen := r.Usage()
			if !seen {
				u = Usage{Input: int64(bodyBytes+3) / 4, Output: int64(r.Events())}
			}
			return p.Cost(u), u.Tokens()
		}
		return count, end
	}
	t := &tap{d: d, price: p, bodyBytes: bodyBytes}
	return t.write, t.end
}

// tap reads the usage of a JSON answer from the bytes handed to the
// caller, whole at its end.
type tap struct {
	d         dialect.Dialect
	price     Price
	bodyBytes int
	json      []byte // the answer, up to maxUsageBody; apart from the tap, as memory the collector need not scan
	n         int64  // bytes seen
}

const maxUsageBody = 8 << 20

func (t *tap) write(p []byte) {
	t.n += int64(len(p))
	if len(t.json)+len(p) <= maxUsageBody {
		t.json = append(t.json, p...)
	}
}

// end prices the usage seen, or an estimate of it when the answer
// reported none, and counts its tokens.
func (t *tap) end() (float64, int64) {
	u, seen := t.d.Usage(t.json)
	if !seen {
		u = Usage{Input: int64(t.bodyBytes+3) / 4, Output: (t.n + 3) / 4}
	}
	return t.price.Cost(u), u.Tokens()
}
