package sluice

import (
	"errors"

	"github.com/sluice-llm/sluice/hook"

	"github.com/sluice-llm/sluice/dialect"
)

// Meter caps and prices the calls of a Transport. Package spend provides
// one, spend.Meter; the engine knows it only through these two methods, in
// the values of package hook and the dialect of the call, so that neither
// depends on the other.
type Meter interface {
	// Reserve is called once before a call's first attempt, with what it
	// asks: its caller, the provider, the models it may reach (Models: the
	// request's first, then each fallback's), the size of the body, the
	// max_tokens it names (0 if none) and its total timeout. It returns what is
	// left under the tightest cap, in USD (negative when none applies), and
	// settle, which the Transport calls once, when the call ends, with what
	// its attempts cost (nil when there is nothing to settle).
	//
	// An error refuses the call: RoundTrip returns it without an attempt,
	// and logs one line with outcome budget_exhausted. If the error has a
	// method Class() string, that names the refusal in the line's error
	// field (else "budget_exhausted"); if it has a method Refuser() string,
	// the refusals of one refuser are folded into one line a second.
	Reserve(ask hook.Ask) (remaining float64, settle func(costUSD float64), err error)

	// Count is called for each attempt whose answer is handed to the
	// caller, with the dialect the call speaks, in which the answer reports
	// its usage (d.Usage, d.StreamUsage). The Transport writes count every
	// byte of the answer the caller reads, in order, and calls end once at
	// the answer's end for what the attempt cost in USD, which the
	// attempt's log line carries and settle is told, and the tokens it used
	// (0 if unknown), which the Limiter's done is told. Both nil: the
	// attempt is not metered.
	Count(d dialect.Dialect, model string, stream bool, bodyBytes int) (count func(p []byte), end func() (costUSD float64, tokens int64))
}

// reserve asks the Meter to hold the call's worst case.
func (c *call) reserve() error {
	t := c.t
	models := make([]string, 1, 1+len(t.Fallbacks))
	models[0] = c.in.Model
	for _, tg := range t.Fallbacks {
		if tg.Model != "" {
			models = append(models, tg.Model)
		}
	}
	remaining, settle, err := t.Meter.Reserve(hook.Ask{Caller: c.caller, Provider: c.provider, Models: models,
		BodyBytes: len(c.in.Bytes), MaxTokens: c.in.MaxTokens, Total: c.policy.Timeout.Total})
	if err != nil {
		return err
	}
	c.remaining, c.settleFn = remaining, settle
	return nil
}

// logMeterRefusal logs a call the Meter refused.
func (c *call) logMeterRefusal(err error) {
	class := "budget_exhausted"
	var cl interface{ Class() string }
	if errors.As(err, &cl) {
		class = cl.Class()
	}
	key := "meter:" + class
	var rf interface{ Refuser() string }
	if errors.As(err, &rf) {
		key += ":" + rf.Refuser()
	}
	c.logUnsent(key, 1, OutcomeBudgetExhausted, class, c.breakerState())
}
