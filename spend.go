package sluice

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/request"
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
	// (see WithClient), each "model" or each "provider". If empty, "all".
	Scope string

	// AllowUnpriced admits calls to a model that has no price, at no cost.
	// If false, such calls are refused: an unpriced model could spend
	// without limit.
	AllowUnpriced bool

	// AllowOnLedgerError admits calls while the ledger cannot be reached.
	// If false, the cap fails closed.
	AllowOnLedgerError bool
}

// ErrBudgetExhausted is the error, matched with errors.Is, of a call
// refused because its worst-case cost would cross a spend cap. The error
// is a *BudgetError.
var ErrBudgetExhausted = errors.New("sluice: budget exhausted")

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
	// case because the request named no max_tokens (Spend.DefaultMaxTokens);
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

// Is reports whether target is ErrBudgetExhausted.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }

// Unwrap returns the cause, if any.
func (e *BudgetError) Unwrap() error { return e.Err }

// ErrUnpriced is wrapped by the *BudgetError of a call to a model with no
// price under a budget that does not allow unpriced models.
var ErrUnpriced = errors.New("model has no price")

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

// Spend caps what the calls of a Transport may cost. Before a call, its
// worst case (input estimated from the body's size, plus max_tokens of
// output) is reserved under every budget that applies, and the call is
// refused if that would cross a cap; when the call ends, the reservation is
// settled to the cost read from the answers' usage.
type Spend struct {
	// Budgets are the caps. A call must fit under all of them.
	Budgets []Budget

	// Ledger keeps the spend. Share one (over a file or Redis store) to
	// cap several processes together. If nil, a ledger private to the
	// Transport.
	Ledger Ledger

	// Prices returns a model's price. If nil, no model is priced.
	Prices func(model string) (Price, bool)

	// DefaultMaxTokens is the output assumed for the worst case of a
	// request that does not say its max_tokens. If zero, 4096.
	DefaultMaxTokens int
}

type clientKey struct{}

// WithClient returns a context naming the caller for budgets scoped per
// key. Use an identity, not a secret: the gateway passes a hash of the
// client's token.
func WithClient(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientKey{}, id)
}

// hold is one reservation a call holds.
type hold struct {
	key string
	h   Hold
}

// estimate returns the worst-case cost of a request at price p: its body
// bytes / 4 as input tokens (a generous count: JSON syntax is not
// tokens), plus its max_tokens (or the default) of output. assumed is the
// default output when the request named none, else 0.
func (s *Spend) estimate(body []byte, p Price) (cost float64, assumed int64) {
	out := int64(s.DefaultMaxTokens)
	if out <= 0 {
		out = 4096
	}
	assumed = out
	for _, k := range [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if n, ok := request.Int(body, k); ok && n > 0 {
			out, assumed = n, 0
			break
		}
	}
	return p.Cost(Usage{Input: int64(len(body)+3) / 4, Output: out}), assumed
}

// price returns the highest price among the call's targets, so that a
// fallback to a dearer model stays within the reservation.
func (c *call) price() (Price, bool) {
	s := c.t.Spend
	if s.Prices == nil {
		return Price{}, false
	}
	models := []string{c.reqModel}
	for _, tg := range c.t.Fallbacks {
		if tg.Model != "" {
			models = append(models, tg.Model)
		}
	}
	var best Price
	for _, m := range models {
		p, ok := s.Prices(m)
		if !ok {
			return Price{}, false
		}
		best.Input, best.Output = max(best.Input, p.Input), max(best.Output, p.Output)
		best.CacheRead, best.CacheWrite = max(best.CacheRead, p.CacheRead), max(best.CacheWrite, p.CacheWrite)
	}
	return best, true
}

// scopeValue is what a budget's scope splits calls by.
func (c *call) scopeValue(b *Budget) string {
	switch b.Scope {
	case "key":
		id, _ := c.req.Context().Value(clientKey{}).(string)
		return "key=" + id
	case "model":
		return "model=" + c.reqModel
	case "provider":
		return "provider=" + c.provider
	}
	return "all"
}

// reserve takes the call's holds under every budget, or none.
func (c *call) reserve() error {
	s := c.t.Spend
	price, priced := c.price()
	amount, assumed := 0.0, int64(0)
	if priced {
		amount, assumed = s.estimate(c.reqBody, price)
	}
	now := time.Now()
	c.remaining = -1
	for i := range s.Budgets {
		b := &s.Budgets[i]
		if !priced && !b.AllowUnpriced {
			c.release()
			return &BudgetError{Budget: b.Name, Err: fmt.Errorf("%w: %q (add it to prices, or allow unpriced models in budget %s)", ErrUnpriced, c.reqModel, b.Name)}
		}
		win, resets := b.Window(now)
		key := "budget:" + b.Name + ":" + c.scopeValue(b) + ":" + win
		h, left, ok, err := reserveIn(c.t.ledger, key, amount, b.LimitUSD, c.policy.Timeout.Total, resets)
		switch {
		case err != nil && b.AllowOnLedgerError:
			continue
		case err != nil:
			c.release()
			return &BudgetError{Budget: b.Name, Resets: resets, Err: fmt.Errorf("ledger unreachable, failing closed: %w", err)}
		case !ok:
			c.release()
			return &BudgetError{Budget: b.Name, Remaining: max(left, 0), Resets: resets,
				WorstCase: amount, AssumedMaxTokens: assumed}
		}
		c.holds = append(c.holds, hold{key: key, h: h})
		if c.remaining < 0 || left < c.remaining {
			c.remaining = left
		}
	}
	return nil
}

// release gives back the holds taken so far, at no cost.
func (c *call) release() {
	for _, h := range c.holds {
		c.t.ledger.Settle(h.key, h.h, 0)
	}
	c.holds = nil
}

// settleSpend settles the call's holds to what it cost.
func (c *call) settleSpend() {
	for _, h := range c.holds {
		c.t.ledger.Settle(h.key, h.h, c.cost)
	}
	c.holds = nil
}

// attemptCost is what an answered attempt cost at its model's price: from
// the usage it reported, else from an estimate (the input from the
// request's size, the output from the answer's events or size).
func (c *call) attemptCost(u Usage) float64 {
	s := c.t.Spend
	if s == nil || s.Prices == nil {
		return 0
	}
	p, ok := s.Prices(c.model)
	if !ok {
		return 0
	}
	return p.Cost(u)
}

// logBudgetRefusal logs a call refused by a spend cap.
func (c *call) logBudgetRefusal(err error) {
	class := "budget_exhausted"
	if errors.Is(err, ErrUnpriced) {
		class = "unpriced_model"
	}
	key := "budget:" + class + ":"
	var be *BudgetError
	if errors.As(err, &be) {
		key += be.Budget
	}
	c.logUnsent(key, 1, OutcomeBudgetExhausted, class, breaker.Closed)
}
