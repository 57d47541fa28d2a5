package sluice

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/request"
	"github.com/sluice-llm/sluice/internal/sse"
)

// Transport is an http.RoundTripper that makes a call to an LLM provider
// resilient: per-phase timeouts, retries of the retryable only with
// full-jitter backoff, a circuit breaker asked before every attempt, a retry
// budget across calls, a request id on every call and a log line per
// attempt.
//
// Inside one RoundTrip, each attempt goes retry budget → breaker → Base.
// A final status, success or not, is returned as a response with err nil;
// its body is bounded by the idle and total timeouts and reports the
// attempt's outcome at its end, so that a stream is judged when it ends.
//
// Set the fields before the first call and do not change them after. A
// Transport is safe for concurrent use.
type Transport struct {
	// Base makes each attempt. If nil, an http.Transport whose dial and
	// TLS handshake are bounded by Policy.Timeout.Connect.
	Base http.RoundTripper

	// Policy says how calls are timed, retried and guarded. The zero value
	// is the interactive policy.
	Policy Policy

	// Provider names the upstream in breaker names and the attempt log.
	// If empty, the request's host is used.
	Provider string

	// Store keeps the breakers' state. Share one Store (a file or Redis
	// store, or one Memory) between Transports to share their breakers.
	// If nil, a Memory store private to this Transport.
	Store breaker.Store

	// Log receives one line per attempt. If nil, nothing is logged.
	Log *AttemptLog

	// Observe, if set, is called with every attempt after it is logged
	// (for metrics). It must not keep the pointer.
	Observe func(*Attempt)

	// RetrySafe reports whether a non-idempotent request (a method other
	// than GET, HEAD or OPTIONS, without an Idempotency-Key header) may be
	// sent again after it may have reached the provider. If nil, requests
	// to LLM endpoints (paths ending in /chat/completions, /completions,
	// /messages, /responses, /embeddings) are retry-safe and others are
	// retried only when their connection was never made.
	RetrySafe func(*http.Request) bool

	// Spend caps what calls may cost. If nil, calls are not capped.
	Spend *Spend

	// BufferBody makes each attempt read a successful answer that is not a
	// stream whole, up to 8 MiB, before RoundTrip returns it, each read
	// bounded by Policy.Timeout.Idle. A body that stalls or is cut on the
	// way then fails its attempt, which is retried under the policy like
	// any other failure, instead of failing in the caller's hands; a longer
	// body is handed over as read so far plus the rest. A server relaying
	// answers (the gateway) sets it, so that nothing reaches its client
	// before the answer is whole. If false (the default), the body is read
	// as the caller reads it.
	BufferBody bool

	// Fallbacks are tried in order when the primary cannot answer: its
	// attempts ran out on a retryable failure, its breaker is open, it did
	// not answer in time (a first-byte timeout moves on at once instead of
	// retrying the silent target), or it refused the request for a reason
	// another model may not share (Retry.FallbackMarkers, such as
	// context_length_exceeded). Never after a byte reached the caller, never
	// on auth, quota or content-policy errors; all within the one
	// Timeout.Total. Each target has its own breaker.
	Fallbacks []Target

	// KeepShouldRetry, if true, hands the provider's x-should-retry header
	// back as it came. If false (the default), every response RoundTrip
	// returns carries x-should-retry: false, since it comes after this
	// Transport's own retry decision: an SDK that honours the header (the
	// OpenAI and Anthropic SDKs do) then does not multiply the attempts
	// with its own retries. Set it when the caller's retries should be the
	// only ones, as with Policy.Retry.MaxAttempts 1.
	KeepShouldRetry bool

	// RetryBudget caps the retries of the calls to Provider, shared with
	// every Transport that calls it. If nil, a budget private to this
	// Transport.
	RetryBudget *RetryBudget

	once     sync.Once
	policy   Policy
	base     http.RoundTripper
	store    breaker.Store
	ledger   Ledger
	breakers sync.Map // name → *breaker.Breaker
	budget   *RetryBudget
	own      RetryBudget // the budget when RetryBudget is nil
}

// Target is a fallback: another provider or model that may answer a call
// the primary cannot.
type Target struct {
	// Provider names the target in breaker names and the attempt log.
	// If empty, the Transport's Provider.
	Provider string

	// Model replaces the top-level "model" of the request's JSON body.
	// If empty, the model is kept.
	Model string

	// Rewrite, if set, adapts the request to the target: its URL, its
	// host, its key. It gets a copy of the request whose Header and URL it
	// may change.
	Rewrite func(*http.Request)

	// RetryBudget caps the retries of the calls to the target's provider:
	// a call that falls back to it moves its count there. If nil, the
	// Transport's budget.
	RetryBudget *RetryBudget
}

// NewClient returns an *http.Client whose Transport applies p.
func NewClient(p Policy) *http.Client {
	return &http.Client{Transport: &Transport{Policy: p}}
}

func (t *Transport) init() {
	t.once.Do(func() {
		t.policy = t.Policy.WithDefaults()
		t.budget = t.RetryBudget
		if t.budget == nil {
			t.budget = &t.own
		}
		t.base = t.Base
		if t.base == nil {
			t.base = newBase(t.policy.Timeout.Connect)
		}
		t.store = t.Store
		if t.store == nil {
			t.store = breaker.NewMemory()
		}
		if t.Spend != nil {
			t.ledger = t.Spend.Ledger
			if t.ledger == nil {
				t.ledger = NewLedger(new(memoryRecords))
			}
		}
	})
}

// newBase returns an http.Transport for LLM calls: bounded dials and
// handshakes, enough idle connections per host for a busy gateway.
func newBase(connect time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ExpectContinueTimeout: time.Second,
	}
}

// Breaker returns the breaker called name, as this Transport uses it.
func (t *Transport) Breaker(name string) *breaker.Breaker {
	t.init()
	if b, ok := t.breakers.Load(name); ok {
		return b.(*breaker.Breaker)
	}
	b, _ := t.breakers.LoadOrStore(name, breaker.New(name, t.policy.Breaker, t.store))
	return b.(*breaker.Breaker)
}

// BreakerName returns the name of the breaker guarding calls to model:
// the provider, or the provider and model with ScopeModel. It gives the
// same answer before and after the Transport's first call.
func (t *Transport) BreakerName(provider, model string) string {
	t.init()
	if t.policy.BreakerScope == ScopeModel && model != "" {
		return provider + "/" + model
	}
	return provider
}

// RoundTrip makes the call, retrying as the policy allows.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	c, err := t.newCall(req)
	if err != nil {
		return nil, err
	}
	if t.Spend != nil && len(t.Spend.Budgets) > 0 {
		if err := c.reserve(); err != nil {
			c.logBudgetRefusal(err)
			c.end()
			return nil, err
		}
	}
	return c.run()
}

// call is one RoundTrip in progress.
type call struct {
	t        *Transport
	policy   *Policy
	req      *http.Request // the caller's request
	header   http.Header   // its header, with the request id
	reqBody  []byte        // its body
	reqModel string        // its body's "model"
	id       string
	target   int // 0: the primary; i: Fallbacks[i-1]
	tries    int // attempts on the current target
	sent     int // upstream attempts made, across targets
	treq     *http.Request
	body     []byte
	model    string
	provider string
	brk      *breaker.Breaker

	holds     []hold  // spend reservations
	cost      float64 // USD spent by the attempts so far
	remaining float64 // USD left under the tightest budget; -1 when none

	ctx        context.Context
	cancel     context.CancelFunc
	deadline   time.Time
	idempotent bool
	budget     *RetryBudget // the budget the call counts in: its provider's
	retrying   bool         // holds a token of budget
	ended      atomic.Bool
	totalErr   TimeoutError
}

func (t *Transport) newCall(req *http.Request) (*call, error) {
	c := &call{t: t, policy: &t.policy, req: req, remaining: -1}
	if req.Body != nil && req.Body != http.NoBody {
		b, err := readBody(req)
		req.Body.Close()
		if err != nil {
			return nil, errors.Join(errors.New("sluice: reading request body"), err)
		}
		c.reqBody = b
	}
	c.header = req.Header
	c.id = requestID(req.Header)
	if c.id == "" {
		c.id = NewRequestID()
	}
	if req.Header.Get("X-Request-Id") != c.id || req.Header.Get("X-Client-Request-Id") != c.id {
		c.header = req.Header.Clone()
		if c.header == nil {
			c.header = http.Header{}
		}
		ids := []string{c.id}
		c.header["X-Request-Id"] = ids
		c.header["X-Client-Request-Id"] = ids
	}
	c.reqModel = request.Model(c.reqBody)
	c.aim(0)
	c.idempotent = isIdempotent(req) || req.Header.Get("Idempotency-Key") != ""
	if !c.idempotent {
		if t.RetrySafe != nil {
			c.idempotent = t.RetrySafe(req)
		} else {
			c.idempotent = isLLMPath(req.URL.Path)
		}
	}
	c.totalErr = TimeoutError{Phase: PhaseTotal, Limit: t.policy.Timeout.Total}
	c.deadline = time.Now().Add(t.policy.Timeout.Total)
	c.ctx, c.cancel = context.WithDeadlineCause(req.Context(), c.deadline, &c.totalErr)
	return c, nil
}

// NewBody returns a request body over b that a Transport uses in place,
// without copying it. b must not change while the request is in flight.
func NewBody(b []byte) io.ReadCloser { return &bytesBody{Reader: bytes.NewReader(b), b: b} }

type bytesBody struct {
	*bytes.Reader
	b []byte
}

func (*bytesBody) Close() error { return nil }

// readBody returns a request's body whole: in place for a NewBody not yet
// read, else read in one allocation when its length is known.
func readBody(req *http.Request) ([]byte, error) {
	if bb, ok := req.Body.(*bytesBody); ok && bb.Len() == len(bb.b) {
		return bb.b, nil
	}
	if n := req.ContentLength; n > 0 && n <= 64<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(req.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(req.Body)
}

func isIdempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

func isLLMPath(p string) bool {
	for _, s := range [...]string{"/chat/completions", "/completions", "/messages", "/responses", "/embeddings"} {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// end releases what the call holds, once.
func (c *call) end() {
	if c.ended.Swap(true) {
		return
	}
	c.cancel()
	c.settleSpend()
	c.useBudget(nil)
}

// useBudget moves the call's count to budget b (nil: out of every
// budget), giving back the retry it holds in the one it leaves.
func (c *call) useBudget(b *RetryBudget) {
	if c.budget == b {
		return
	}
	if old := c.budget; old != nil {
		old.calls.Add(-1)
		if c.retrying {
			old.retries.Add(-1)
			c.retrying = false
		}
	}
	c.budget = b
	if b != nil {
		b.calls.Add(1)
	}
}

// record logs a finished attempt.
func (c *call) record(a *Attempt) {
	c.t.Log.Write(a)
	if c.t.Observe != nil {
		c.t.Observe(a)
	}
}

// aim points the call at target i: 0 for the primary, i for
// Fallbacks[i-1].
func (c *call) aim(i int) {
	t := c.t
	c.target, c.tries = i, 0
	c.model = c.reqModel
	c.body = c.reqBody
	c.provider = t.Provider
	if c.provider == "" {
		c.provider = c.req.URL.Host
	}
	c.treq = c.req
	budget := t.budget
	if i > 0 {
		tg := t.Fallbacks[i-1]
		if tg.RetryBudget != nil {
			budget = tg.RetryBudget
		}
		r := *c.req
		r.Header = c.header.Clone()
		u := *c.req.URL
		r.URL = &u
		if tg.Rewrite != nil {
			tg.Rewrite(&r)
		}
		c.treq = &r
		if tg.Provider != "" {
			c.provider = tg.Provider
		}
		if tg.Model != "" {
			if b, ok := request.WithModel(c.reqBody, tg.Model); ok {
				c.body, c.model = b, tg.Model
			}
		}
	}
	c.brk = t.Breaker(t.BreakerName(c.provider, c.model))
	c.useBudget(budget)
}

// hasNext reports whether a fallback follows the current target.
func (c *call) hasNext() bool { return c.target < len(c.t.Fallbacks) }

// run is the attempt loop.
func (c *call) run() (*http.Response, error) {
	var last *http.Response // the last failed response, body buffered
	var lastErr error
	p := &c.policy.Retry
	for line := 1; ; line++ {
		permit, err := c.brk.Allow()
		if err != nil {
			c.logRefusal(line, err)
			if c.hasNext() && c.ctx.Err() == nil {
				c.aim(c.target + 1)
				continue
			}
			if last == nil && lastErr == nil {
				lastErr = err
			}
			return c.give(last, lastErr)
		}
		c.tries++
		c.sent++
		a := c.newAttempt(line, permit)
		resp, v, err := c.try(a)
		if resp != nil && v.class == "" && !v.retryable { // handed to the caller
			return resp, nil
		}
		if last != nil {
			last.Body.Close()
		}
		last, lastErr = resp, err

		wait, retry := c.decide(v, resp, err)
		move := false
		switch {
		case retry && c.hasNext() && isFirstByteTimeout(err):
			retry, move = false, true // a silent target rarely answers the second time
		case !retry && c.hasNext():
			move = c.shouldFallBack(v, a.errBody, err)
		}
		if retry && !c.retrying { // the budget decides before the line says retry
			if c.retrying = c.budget.take(p.Budget); !c.retrying {
				retry = false
				a.rec.RetryBudgetExhausted = true
			}
		}
		a.rec.Outcome = finalOutcome(err, resp)
		if retry {
			a.rec.RetryInMS = ms(wait)
		}
		if retry || move {
			a.rec.Outcome = OutcomeRetry
		}
		c.record(&a.rec)
		switch {
		case move:
			c.aim(c.target + 1)
			continue
		case !retry:
			return c.give(last, lastErr)
		}
		if !sleep(c.ctx, wait) {
			if last == nil {
				lastErr = c.ctxErr()
			}
			return c.give(last, lastErr)
		}
	}
}

func isFirstByteTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && te.Phase == PhaseFirstByte
}

// shouldFallBack says whether a failure the current target will not get
// past may pass on the next: a retryable failure whose attempts ran out, or
// a caller error that another model may not share. Never an auth, quota
// or content-policy error, never once the call's time is up.
func (c *call) shouldFallBack(v verdict, errBody []byte, err error) bool {
	if c.ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return false
	}
	if v.retryable {
		return true
	}
	return errBody != nil && containsAny(errBody, c.policy.Retry.FallbackMarkers)
}

// give ends the call with the last response, or else the last error.
func (c *call) give(last *http.Response, lastErr error) (*http.Response, error) {
	c.end()
	if last != nil {
		c.stamp(last)
		return last, nil
	}
	if errors.Is(lastErr, context.Canceled) || errors.Is(lastErr, breaker.ErrOpen) {
		return nil, lastErr
	}
	return nil, &ExhaustedError{Attempts: c.sent, Last: lastErr}
}

// ctxErr is the error of the call's context: the total timeout, or the
// caller's cancellation.
func (c *call) ctxErr() error {
	if err := context.Cause(c.ctx); err != nil {
		return err
	}
	return c.ctx.Err()
}

// stamp sets the response headers that describe the call: its id
// (Sluice-Request-Id; the provider's own X-Request-Id is left as it came,
// for the SDKs that show it), the upstream attempts made, and who
// answered; and, unless KeepShouldRetry, x-should-retry: false, on success
// and failure alike, since the call's retries are done: a success is not
// retried anyway, and a failure must not be retried again by a client that
// would multiply the attempts.
func (c *call) stamp(resp *http.Response) {
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	v := [...]string{c.id, strconv.Itoa(c.sent), c.provider, c.model, "", "false"} // one allocation for all
	vals := v[:]
	resp.Header["Sluice-Request-Id"] = vals[0:1:1]
	resp.Header["Sluice-Attempts"] = vals[1:2:2]
	resp.Header["Sluice-Provider"] = vals[2:3:3]
	if !c.t.KeepShouldRetry {
		resp.Header["X-Should-Retry"] = vals[5:6:6]
	}
	if c.model != "" && request.CheckModel(c.model) == nil { // never a client's raw, invalid name
		resp.Header["Sluice-Model"] = vals[3:4:4]
	}
	if c.remaining >= 0 {
		vals[4] = strconv.FormatFloat(c.remaining, 'f', 6, 64)
		resp.Header["Sluice-Budget-Remaining"] = vals[4:5:5]
	}
}

func finalOutcome(err error, resp *http.Response) Outcome {
	switch {
	case resp != nil:
		return OutcomeFail
	case errors.Is(err, context.Canceled):
		return OutcomeClientCancel
	case errors.Is(err, ErrTimeout):
		return OutcomeTimeout
	}
	return OutcomeFail
}

// decide says whether to retry the current target, and after how long.
func (c *call) decide(v verdict, resp *http.Response, err error) (time.Duration, bool) {
	p := &c.policy.Retry
	n := c.tries
	if !v.retryable || n >= p.MaxAttempts || c.ctx.Err() != nil {
		return 0, false
	}
	var te *TimeoutError
	if errors.As(err, &te) && te.Phase == PhaseTotal {
		return 0, false
	}
	wait := p.backoff(n - 1)
	if resp != nil {
		if hint, ok := retryAfter(resp.Header, time.Now()); ok && hint > 0 {
			if hint > p.MaxRetryAfter {
				return 0, false
			}
			wait = jitter(hint)
		}
	}
	if time.Now().Add(wait).After(c.deadline) {
		return 0, false
	}
	return wait, true
}

func (c *call) newAttempt(n int, permit breaker.Permit) *attempt {
	pol := c.policy
	a := &attempt{
		call:      c,
		permit:    permit,
		start:     time.Now(),
		firstByte: TimeoutError{Phase: PhaseFirstByte, Limit: pol.Timeout.FirstByte},
		idle:      TimeoutError{Phase: PhaseIdle, Limit: pol.Timeout.Idle},
	}
	a.ctx, a.cancel = context.WithCancelCause(c.ctx)
	a.rec = Attempt{
		TS: a.start, RequestID: c.id, Attempt: n, Policy: pol.Name,
		Provider: c.provider, Model: c.model, Method: c.treq.Method, Path: c.treq.URL.Path,
		BytesOut: int64(len(c.body)), Breaker: permit.State().String(),
	}
	// Until the request is written, connect and first_byte together bound
	// the attempt; wroteRequest then restarts the clock at first_byte.
	a.armed = &a.firstByte
	a.timer = time.AfterFunc(pol.Timeout.Connect+pol.Timeout.FirstByte, a.fire)
	a.trace.WroteRequest = a.wroteRequest
	a.ctx = httptrace.WithClientTrace(a.ctx, &a.trace)
	return a
}

// logRefusal logs a call refused by the breaker.
func (c *call) logRefusal(n int, err error) {
	state := breaker.Open
	name := c.brk.Name()
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		state, name = oe.State, oe.Name
	}
	c.logUnsent("breaker:"+name, n, OutcomeCircuitOpen, "circuit_open", state)
}

// logUnsent logs an attempt refused before it was sent: no status, no
// bytes, no time. Every one is observed; the log folds them per key (the
// refusing breaker or budget), at most one line a second.
func (c *call) logUnsent(key string, n int, outcome Outcome, class string, state breaker.State) {
	a := Attempt{
		TS: time.Now(), RequestID: c.id, Attempt: n, Policy: c.policy.Name,
		Provider: c.provider, Model: c.model, Method: c.treq.Method, Path: c.treq.URL.Path,
		Outcome: outcome, Error: class, Breaker: state.String(),
	}
	c.t.Log.WriteRefused(key, &a)
	if c.t.Observe != nil {
		c.t.Observe(&a)
	}
}

// try makes one attempt. It returns the response for the caller (verdict
// with no class and not retryable), or a judged failure: a response whose
// body is buffered, or an error.
func (c *call) try(a *attempt) (*http.Response, verdict, error) {
	r := c.treq.WithContext(a.ctx)
	if c.target == 0 {
		r.Header = c.header
	}
	if c.body != nil {
		r.Body = io.NopCloser(bytes.NewReader(c.body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(c.body)), nil }
		r.ContentLength = int64(len(c.body))
	}
	resp, err := c.t.base.RoundTrip(r)
	a.answer()
	if err != nil {
		return nil, c.failed(a, err), a.err
	}
	a.ttfb = time.Since(a.start)
	a.rec.Status = resp.StatusCode
	a.rec.UpstreamRequestID = upstreamID(resp.Header)
	if resp.StatusCode >= 400 {
		return c.judgeError(a, resp)
	}
	stream := isEventStream(resp.Header)
	a.rec.Stream = stream
	b := &body{a: a, rc: resp.Body, stream: stream}
	if c.t.Spend != nil && c.t.Spend.Prices != nil {
		b.usage = newUsageTap(stream)
	}
	if stream {
		head, errEvent, err := a.peek(resp.Body)
		b.head, b.n = head, int64(len(head))
		if err != nil {
			resp.Body.Close()
			a.rec.BytesIn = b.n
			return nil, c.failed(a, err), a.err
		}
		if errEvent != nil {
			status := errorEventStatus(errEvent)
			v := c.policy.Retry.judgeStatus(status, resp.Header, errEvent)
			if v.retryable && (c.tries < c.policy.Retry.MaxAttempts || c.hasNext()) {
				resp.Body.Close()
				c.settle(a, v, int64(len(head)))
				return nil, v, &statusError{status: status}
			}
			b.errStat, b.errV = status, v
		}
		b.events = &sse.Parser{}
	} else {
		a.disarm()
		if c.t.BufferBody {
			head, err := a.readAll(resp.Body, maxBufferedBody)
			b.head, b.n = head, int64(len(head))
			if err != nil {
				resp.Body.Close()
				a.rec.BytesIn = b.n
				return nil, c.failed(a, err), a.err
			}
		}
	}
	resp.Body = b
	c.stamp(resp)
	return resp, verdict{}, nil
}

// statusError is the error of an attempt that failed on a provider error
// event inside a stream.
type statusError struct{ status int }

func (e *statusError) Error() string {
	return "sluice: provider error event (status " + strconv.Itoa(e.status) + ")"
}

// failed judges an attempt that ended in an error, and settles it.
func (c *call) failed(a *attempt, err error) verdict {
	a.disarm()
	err = a.cause(err)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && op.Timeout() {
		err = &TimeoutError{Phase: PhaseConnect, Limit: c.policy.Timeout.Connect}
	}
	v, sent := judgeError(err)
	if sent && !c.idempotent {
		v.retryable = false
	}
	a.err = err
	c.settle(a, v, a.rec.BytesIn)
	return v
}

// judgeError reads a ≥400 response's body and judges it. The response,
// with its body in memory, is what the caller gets if no retry follows.
func (c *call) judgeError(a *attempt, resp *http.Response) (*http.Response, verdict, error) {
	buf, err := a.readAll(resp.Body, maxErrorBody)
	resp.Body.Close()
	if err != nil {
		v := c.failed(a, err)
		return nil, v, a.err
	}
	v := c.policy.Retry.judgeStatus(resp.StatusCode, resp.Header, buf)
	a.errBody = buf
	resp.Body = io.NopCloser(bytes.NewReader(buf))
	resp.ContentLength = int64(len(buf))
	resp.Header.Del("Content-Length")
	resp.Header["Content-Length"] = []string{strconv.Itoa(len(buf))}
	c.settle(a, v, int64(len(buf)))
	return resp, v, nil
}

// settle reports a judged attempt to the breaker and fills its log line;
// the caller writes the line once the retry decision is known.
func (c *call) settle(a *attempt, v verdict, bytesIn int64) {
	a.disarm()
	latency := time.Since(a.start)
	a.permit.Done(v.breaker, latency)
	a.cancel(nil)
	a.rec.Error = v.class
	a.rec.BytesIn = bytesIn
	a.rec.LatencyMS = ms(latency)
	a.rec.TTFBMS = ms(a.ttfb)
}

func upstreamID(h http.Header) string {
	if v := h.Get("X-Request-Id"); v != "" {
		return v
	}
	return h.Get("Request-Id")
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// CloseIdleConnections closes the idle connections of Base, when Base
// has such a method.
func (t *Transport) CloseIdleConnections() {
	t.init()
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
