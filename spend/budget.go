package spend

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Budget is a spend cap: at most LimitUSD per period and scope. The zero
// value of each optional field takes the default written in its doc.
type Budget struct {
	// Name names the cap in errors, keys and metrics.
	Name string

	// LimitUSD is the cap, in US dollars per period.
	LimitUSD float64

	// Period is "day" or "month" (calendar periods in UTC), or a fixed
	// length such as "6h" (windows counted from the Unix epoch).
	// If empty, "day".
	Period string

	// Scope says what one cap covers: "all" traffic, each client "key"
	// (hook.Caller.ID), each "model" or each "provider". If empty, "all".
	Scope string

	// AllowUnpriced admits calls to a model that has no price, at no cost.
	// If false, such calls are refused: an unpriced model could spend
	// without limit.
	AllowUnpriced bool

	// AllowOnLedgerError admits calls while the ledger cannot be reached.
	// If false, the cap fails closed.
	AllowOnLedgerError bool
}

// Window returns the id of the period containing now and when it ends.
func (b *Budget) Window(now time.Time) (id string, resets time.Time) {
	now = now.UTC()
	switch b.Period {
	case "", "day":
		start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return start.Format("2006-01-02"), start.AddDate(0, 0, 1)
	case "month":
		start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start.Format("2006-01"), start.AddDate(0, 1, 0)
	}
	d, err := time.ParseDuration(b.Period)
	if err != nil || d <= 0 {
		d = 24 * time.Hour
	}
	n := now.UnixNano() / int64(d)
	return strconv.FormatInt(n, 10), time.Unix(0, (n+1)*int64(d)).UTC()
}

// Key returns the ledger key under which the budget counts a call at now,
// and when that key's period ends. The call is named by what the budget's
// Scope splits calls by: the client (hook.Caller.ID), the model or the
// provider; a budget scoped "all" ignores them. Key is the one place the
// key's format is written: "budget:<name>:<scope>:<period id>", where
// scope is "all", "key=<client>", "model=<model>" or "provider=<provider>".
func (b *Budget) Key(now time.Time, client, model, provider string) (key string, resets time.Time) {
	win, resets := b.Window(now)
	return b.keyIn(win, client, model, provider), resets
}

// keyIn is Key in the period whose id is win.
func (b *Budget) keyIn(win, client, model, provider string) string {
	switch b.Scope {
	case "key":
		return "budget:" + b.Name + ":key=" + client + ":" + win
	case "model":
		return "budget:" + b.Name + ":model=" + model + ":" + win
	case "provider":
		return "budget:" + b.Name + ":provider=" + provider + ":" + win
	}
	return "budget:" + b.Name + ":all:" + win
}

// window is a budget's period as a Meter last worked it out, and its key
// when the budget is scoped "all", so that neither is made again on every
// call of the period.
type window struct {
	from, to int64 // Unix ns: times known to be in the period, [from, to)
	id       string
	resets   time.Time
	allKey   string
}

// windowAt returns b's period containing now, from cache when it holds.
func (b *Budget) windowAt(cache *atomic.Pointer[window], now time.Time) *window {
	t := now.UnixNano()
	if w := cache.Load(); w != nil && w.from <= t && t < w.to {
		return w
	}
	id, resets := b.Window(now)
	// Any time from now to resets is in the same period: from is now, not
	// the period's start, which is not needed.
	w := &window{from: t, to: resets.UnixNano(), id: id, resets: resets, allKey: b.keyIn(id, "", "", "")}
	cache.Store(w)
	return w
}

// ErrExhausted is the error, matched with errors.Is, of a call refused
// because its worst-case cost would cross a spend cap. The error is a
// *BudgetError.
var ErrExhausted = errors.New("sluice: budget exhausted")

// ErrUnpriced is wrapped by the *BudgetError of a call to a model with no
// price under a budget that does not allow unpriced models.
var ErrUnpriced = errors.New("model has no price")

// BudgetError is the error of a call refused by a spend cap.
type BudgetError struct {
	// Budget names the cap.
	Budget string
	// Remaining is what was left under it, in USD.
	Remaining float64
	// Resets is when its period ends.
	Resets time.Time
	// WorstCase is the call's worst-case cost, in USD: what it would have
	// held.
	WorstCase float64
	// AssumedMaxTokens is the output, in tokens, assumed for that worst
	// case because the request named no max_tokens (Meter.DefaultMaxTokens);
	// 0 when the request named its own.
	AssumedMaxTokens int64
	// Err is set when the call could not be priced (ErrUnpriced), or the
	// ledger could not be reached and the cap fails closed.
	Err error
}

// Error names the budget, what is left and when it resets.
func (e *BudgetError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("sluice: budget %s: %v", e.Budget, e.Err)
	}
	msg := fmt.Sprintf("sluice: budget %s exhausted: $%.6g left, less than the call's worst case $%.6g; resets %s",
		e.Budget, e.Remaining, e.WorstCase, e.Resets.UTC().Format(time.RFC3339))
	if e.AssumedMaxTokens > 0 {
		msg += fmt.Sprintf(" (%s)", e.Assumption())
	}
	return msg
}

// Assumption says, when the worst case assumed an output size, what was
// assumed and how to reserve less; "" otherwise.
func (e *BudgetError) Assumption() string {
	if e.AssumedMaxTokens <= 0 {
		return ""
	}
	return fmt.Sprintf("the request sets no max_tokens, so %d output tokens were assumed; set max_tokens to reserve less", e.AssumedMaxTokens)
}

// Is reports whether target is ErrExhausted.
func (e *BudgetError) Is(target error) bool { return target == ErrExhausted }

// Unwrap returns the cause, if any.
func (e *BudgetError) Unwrap() error { return e.Err }

// Class names the refusal in the attempt log: "unpriced_model" for a
// model with no price, else "budget_exhausted".
func (e *BudgetError) Class() string {
	if errors.Is(e.Err, ErrUnpriced) {
		return "unpriced_model"
	}
	return "budget_exhausted"
}

// Refuser names what refused the call, for the attempt log to fold the
// refusals of one cap into one line a second: the budget.
func (e *BudgetError) Refuser() string { return "budget:" + e.Budget }
