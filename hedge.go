package sluice

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// Hedge says when a call whose first attempt has not begun to answer is
// hedged: a second attempt starts on the next target (the first fallback,
// else the same target), both race, and the first to answer — a stream's
// first event, an answer's headers — wins; the other is cancelled at once,
// its line's outcome OutcomeHedgeLost, what it cost counted. The zero
// value hedges nothing.
//
// A hedge is a call of its own to the Limiter, the Meter and the breaker:
// it is sent only when the target's breaker is closed, the Limiter has a
// slot at once and the Meter reserves for it, so that both attempts are
// covered before it goes; its lines carry hedge "sent". Hedges stay under
// MaxShare of the hedgeable calls of the last minute, so hedging switches
// itself off when every call is slow. A call that may not be sent twice
// (Transport.RetrySafe) is not hedged. A call with an Idempotency-Key
// under Transport.Answers is: the answer kept is the one the caller got,
// the hedge's or the first attempt's.
type Hedge struct {
	// After is how long the first attempt may go without answering before
	// the hedge starts: a fixed wait, or a quantile of the recent times to
	// first byte of the provider and model.
	After HedgeAfter

	// MaxShare caps the hedges at this share of the hedgeable calls over
	// the last minute. If zero, 0.05.
	MaxShare float64
}

// HedgeAfter is when a hedge starts: Wait, or, when Quantile is set, that
// quantile of the times to first byte of the provider and model's last
// answers in this process (at least 20 of them; before, no hedge).
type HedgeAfter struct {
	Wait     time.Duration
	Quantile float64 // in (0, 1): 0.95 is p95
}

// IsZero reports whether h starts no hedge.
func (h HedgeAfter) IsZero() bool { return h.Wait <= 0 && h.Quantile <= 0 }

// String writes h as a config writes it: 2s, or p95.
func (h HedgeAfter) String() string {
	if h.Quantile > 0 {
		return "p" + strconv.FormatFloat(h.Quantile*100, 'f', -1, 64)
	}
	return h.Wait.String()
}

// UnmarshalText reads a duration (2s, 500ms) or a percentile (p95, p99.9).
func (h *HedgeAfter) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if p, ok := strings.CutPrefix(s, "p"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f <= 0 || f >= 100 {
			return fmt.Errorf("%q is not a percentile (write e.g. p95)", s)
		}
		*h = HedgeAfter{Quantile: f / 100}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q is not a duration or a percentile (write e.g. 2s or p95)", s)
	}
	*h = HedgeAfter{Wait: d}
	return nil
}

// MarshalText writes h as String does.
func (h HedgeAfter) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// OutcomeHedgeLost is an attempt cancelled because the other attempt of
// its hedged call answered first.
const OutcomeHedgeLost Outcome = "hedge_lost"

// HedgeMark is what an attempt's line says of hedging (Attempt.Hedge).
type HedgeMark uint8

// The marks of Attempt.Hedge.
const (
	// HedgeNone: the call was not hedged, or not yet.
	HedgeNone HedgeMark = iota
	// HedgeSent marks the lines of a hedge's attempts.
	HedgeSent
	// HedgeRefused marks the line of a call whose hedge was not sent:
	// over MaxShare, the breaker not closed, no rate-limit slot at once,
	// or the Meter refused.
	HedgeRefused
)

var hedgeMarks = [...]string{"", "sent", "refused"}

// String returns the mark as the log writes it: "", sent or refused.
func (m HedgeMark) String() string {
	if int(m) < len(hedgeMarks) {
		return hedgeMarks[m]
	}
	return "unknown"
}

// MarshalText writes the mark as String does.
func (m HedgeMark) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mark String wrote.
func (m *HedgeMark) UnmarshalText(b []byte) error {
	for i, s := range hedgeMarks {
		if string(b) == s {
			*m = HedgeMark(i)
			return nil
		}
	}
	return fmt.Errorf("sluice: %q is no hedge mark (sent or refused)", b)
}

// hedges is what a Transport keeps for hedging: the recent times to
// first byte per provider and model, and the last minute's calls and
// hedges.
type hedges struct {
	mu     sync.Mutex
	ttfb   map[ttfbKey]*ttfbRing
	second int64       // the Unix second of slot[0]'s
	calls  [60]float64 // per second, the hedgeable calls
	sent   [60]float64 // and the hedges sent
}

// ttfbKey names a provider and model's times to first byte.
type ttfbKey struct{ provider, model string }

// ttfbRing holds a provider and model's last times to first byte.
type ttfbRing struct {
	ms [200]float64
	n  int // observed so far
}

const minTTFBs = 20 // the times needed before a quantile is trusted

// observe notes a time to first byte of provider and model.
func (h *hedges) observe(provider, model string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ttfb == nil {
		h.ttfb = map[ttfbKey]*ttfbRing{}
	}
	k := ttfbKey{provider, model}
	r := h.ttfb[k]
	if r == nil {
		if len(h.ttfb) >= maxBreakers { // bounded as the breakers are
			clear(h.ttfb)
		}
		r = &ttfbRing{}
		h.ttfb[k] = r
	}
	r.ms[r.n%len(r.ms)] = float64(d) / float64(time.Millisecond)
	r.n++
}

// wait returns how long a call to provider and model waits before it is
// hedged; false when it is not (no quantile known yet).
func (h *hedges) wait(after HedgeAfter, provider, model string) (time.Duration, bool) {
	if after.Quantile <= 0 {
		return after.Wait, after.Wait > 0
	}
	h.mu.Lock()
	r := h.ttfb[ttfbKey{provider, model}]
	if r == nil || r.n < minTTFBs {
		h.mu.Unlock()
		return 0, false
	}
	ms := slices.Clone(r.ms[:min(r.n, len(r.ms))])
	h.mu.Unlock()
	slices.Sort(ms)
	i := int(after.Quantile*float64(len(ms)-1) + 0.5)
	return time.Duration(ms[i] * float64(time.Millisecond)), true
}

// roll moves the minute's window to now, forgetting seconds gone.
func (h *hedges) roll(now int64) {
	if gap := now - h.second; gap > 0 {
		n := int(min(gap, 60))
		copy(h.calls[n:], h.calls[:60-n])
		copy(h.sent[n:], h.sent[:60-n])
		clear(h.calls[:n])
		clear(h.sent[:n])
		h.second = now
	}
}

// called counts a hedgeable call.
func (h *hedges) called() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roll(time.Now().Unix())
	h.calls[0]++
}

// take reports whether one more hedge stays under share of the last
// minute's hedgeable calls, and counts it if so.
func (h *hedges) take(share float64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roll(time.Now().Unix())
	var calls, sent float64
	for i := range h.calls {
		calls += h.calls[i]
		sent += h.sent[i]
	}
	if sent+1 > share*calls {
		return false
	}
	h.sent[0]++
	return true
}

// hedgeable reports whether the call may be hedged: the policy says when,
// and the request may be sent twice.
func (c *call) hedgeable() bool {
	return !c.policy.Hedge.After.IsZero() && c.idempotent
}

// ran is what run returned, or the panic it raised.
type ran struct {
	resp  *http.Response
	err   error
	panic any
}

func (r ran) good() bool {
	return r.panic == nil && r.err == nil && r.resp != nil && r.resp.StatusCode < 400
}

// get returns what run returned, or raises its panic again.
func (r ran) get() (*http.Response, error) {
	if r.panic != nil {
		panic(r.panic)
	}
	return r.resp, r.err
}

// start runs the attempt loop on its own goroutine; its outcome comes on
// the channel returned, a panic as a value.
func (c *call) start() <-chan ran {
	ch := make(chan ran, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				c.abandon()
				ch <- ran{panic: p}
			}
		}()
		resp, err := c.run(1)
		ch <- ran{resp: resp, err: err}
	}()
	return ch
}

// hedged runs a hedgeable call: its attempt loop, and, if it has not
// answered by the policy's wait, a hedge beside it; the first good answer
// wins, the other call is cancelled.
func (c *call) hedged(req *http.Request, b Body) (*http.Response, error) {
	t := c.t
	h := &t.hedges
	h.called()
	wait, ok := h.wait(c.policy.Hedge.After, c.provider, c.model)
	if !ok {
		return c.run(1)
	}
	// A call with an Idempotency-Key: its mark goes to the call that
	// answers, whose answer is kept; neither call holds it before, so the
	// loser's end cannot give it back, and it is given back if none answers.
	held := c.mark
	c.mark = nil
	defer func() {
		if held != nil {
			c.t.Answers.Release(*held)
		}
	}()
	award := func(w *call, r ran) ran {
		if held == nil || !r.good() || r.resp.StatusCode/100 != 2 {
			return r
		}
		if b, ok := r.resp.Body.(*body); ok {
			w.mark, w.secrets, held = held, c.secrets, nil
			w.capture(b, r.resp)
		}
		return r
	}
	c.cancelable()
	first := c.start()
	timer := time.NewTimer(wait)
	select {
	case r := <-first:
		timer.Stop()
		return award(c, r).get()
	case <-timer.C:
	}
	c2 := c.hedgeOrEnd(first, req, b)
	if c2 == nil {
		c.xs.refused.Store(true)
		return award(c, <-first).get()
	}
	second := c2.start()
	var failed ran
	for range 2 {
		var r ran
		var won, lost *call
		var other <-chan ran
		select {
		case r = <-first:
			won, lost, other = c, c2, second
		case r = <-second:
			won, lost, other = c2, c, first
		}
		if r.panic != nil || r.good() {
			lost.xs.lost.Store(true)
			lost.xs.lose(errHedgeLost)
			if other != nil { // nil: the loser failed already
				go closeLoser(other)
			}
			return award(won, r).get()
		}
		if failed.resp == nil && failed.err == nil {
			failed = r
		} else if r.resp != nil {
			r.resp.Body.Close()
		}
		if lost == c2 {
			first = nil
		} else {
			second = nil
		}
	}
	return failed.get()
}

// errHedgeLost cancels the attempt of a hedged call that lost.
var errHedgeLost = fmt.Errorf("sluice: the hedged call's other attempt answered first: %w", context.Canceled)

// closeLoser closes the answer of a hedged call that lost, if it comes.
// A hook's panic on that way out has no caller to go to: what the call
// took is given back all the same (body.end), and the panic is dropped.
func closeLoser(ch <-chan ran) {
	defer func() { recover() }()
	if r := <-ch; r.resp != nil {
		r.resp.Body.Close()
	}
}

// hedgeOrEnd returns the call's hedge, as hedge does. A panic in a hook
// on the way (the Limiter, the Meter, a Rewrite) cancels the first call
// and waits for it to end, so that both give back what they took, and
// goes on to the caller.
func (c *call) hedgeOrEnd(first <-chan ran, req *http.Request, b Body) *call {
	defer func() {
		if p := recover(); p != nil {
			c.xs.lose(context.Canceled)
			closeLoser(first)
			panic(p)
		}
	}()
	return c.hedge(req, b)
}

// hedge returns the call's hedge, admitted, or nil when it may not go:
// over MaxShare, the next target's breaker not closed, no rate-limit slot
// at once, or the Meter refuses it.
func (c *call) hedge(req *http.Request, b Body) *call {
	t := c.t
	share := c.policy.Hedge.MaxShare
	if share <= 0 {
		share = 0.05
	}
	// The caller's context: the first call's ends with it, the hedge's must not.
	r := req.Clone(req.Context())
	r.Header.Set("X-Request-Id", c.id) // the hedge is the same call
	r.Header.Set("X-Client-Request-Id", c.id)
	h := t.newCall(r, b)
	defer func() {
		if p := recover(); p != nil {
			h.abandon()
			panic(p)
		}
	}()
	h.endBy(c.deadline) // within the call's one total
	if len(t.Fallbacks) > 0 {
		h.aim(1)
	}
	if (h.xs != nil && h.xs.skip != nil) || h.breakerState() != breaker.Closed || !t.hedges.take(share) {
		h.end()
		return nil
	}
	if t.Limiter != nil {
		ask := h.ask()
		ask.MaxWait = time.Nanosecond // a slot at once, or no hedge
		waited, done, err := t.Limiter.Wait(h.ctx, ask)
		if err != nil {
			h.end()
			return nil
		}
		h.queued, h.limitDone = waited, done
	}
	if t.Meter != nil && h.reserve() != nil {
		h.end()
		return nil
	}
	h.cancelable()
	h.xs.hedgeSent = true
	return h
}

// cancelable gives the call's attempts a context its hedge's win cancels.
func (c *call) cancelable() {
	if c.xs == nil {
		c.xs = &xlState{}
	}
	c.ctx, c.xs.lose = context.WithCancelCause(c.ctx)
}

// hedgeLine says on the line r what the call's hedging did.
func (c *call) hedgeLine(x *xlState, r *Attempt) {
	switch {
	case x.hedgeSent:
		r.Hedge = HedgeSent
	case x.refused.Swap(false):
		r.Hedge = HedgeRefused
	}
	if x.lost.Load() {
		r.Outcome = OutcomeHedgeLost
	}
}
