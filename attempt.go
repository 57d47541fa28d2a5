package sluice

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// maxErrorBody bounds how much of an error response is held in memory to
// judge it and to hand it back after the retry decision.
const maxErrorBody = 1 << 20

// maxBufferedBody bounds how much of an answer that is not a stream
// Transport.BufferBody reads inside the attempt.
const maxBufferedBody = 8 << 20

// attempt is one upstream attempt in progress.
type attempt struct {
	call    *call
	ctx     context.Context
	cancel  context.CancelCauseFunc
	permit  breaker.Permit
	start   time.Time
	ttfb    time.Duration
	rec     Attempt
	err     error        // what ended a failed attempt
	errBody []byte       // the body of a ≥400 response
	sending bytes.Reader // the request body it sends
	out     body         // the response body handed to the caller

	firstByte, idle TimeoutError

	// traceEnd ends the attempt's span (Transport.Tracer); nil when none.
	traceEnd func(*Attempt)

	budget   *RetryBudget // the budget the attempt counts in
	handed   atomic.Bool  // its answer was handed to the caller (out)
	released bool         // release ran
}

// release reports the attempt's outcome to the breaker, ends its context
// and counts it out of the retry budget, once. It runs on the goroutine
// that ends the attempt: the caller's, or the total timeout's for a body
// nobody reads (under the body's lock).
func (a *attempt) release(o breaker.Outcome, latency time.Duration) {
	if a.released {
		return
	}
	a.released = true
	a.permit.Done(o, latency)
	a.cancel(nil)
	a.budget.active.Add(-1)
}

// endSpan ends the attempt's span with its log line, once.
func (a *attempt) endSpan() {
	if end := a.traceEnd; end != nil {
		a.traceEnd = nil
		end(&a.rec)
	}
}

// newAttempt starts attempt n (its log line's number) on the current
// target, under the permit its breaker gave: the connect and first-byte
// timeout runs from here.
func (c *call) newAttempt(n int, permit breaker.Permit) *attempt {
	c.tries++
	c.sent++
	pol := c.policy
	a := &c.first
	if c.sent > 1 {
		a = new(attempt)
	}
	a.call, a.permit, a.start = c, permit, time.Now()
	a.budget = c.budget
	a.budget.active.Add(1)
	a.firstByte = TimeoutError{Phase: PhaseFirstByte, Limit: pol.Timeout.FirstByte}
	a.idle = TimeoutError{Phase: PhaseIdle, Limit: pol.Timeout.Idle}
	a.ctx, a.cancel = context.WithCancelCause(c.ctx)
	a.rec = Attempt{
		TS: a.start, RequestID: c.id, Attempt: n, Policy: pol.Name,
		Provider: c.provider, Model: c.model, Method: c.treq.Method, Path: c.treq.URL.Path,
		BytesOut: int64(len(c.body)), Breaker: permit.State().String(),
		QueuedMS: ms(c.queued), Key: c.keyID, Target: c.target, Priority: c.caller.Priority,
	}
	if x := c.xl(); x != nil {
		a.rec.Translated = x.label
	}
	c.queued = 0
	c.begin(a)
	return a
}

// cause maps an error of the attempt to what ended it: one of our
// *TimeoutErrors, the caller's cancellation, or err itself.
func (a *attempt) cause(err error) error {
	c := context.Cause(a.ctx)
	if c == nil {
		return err
	}
	var te *TimeoutError
	if errors.As(c, &te) {
		return te
	}
	return c
}

// readAll reads a response body under the idle timer, at most limit bytes,
// into one buffer when size, its declared length, is known (-1 unknown).
func (a *attempt) readAll(rc io.Reader, limit int, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 && size <= int64(limit) {
		buf.Grow(int(size) + bytes.MinRead) // one buffer: ReadFrom keeps MinRead free
	}
	_, err := buf.ReadFrom(&idleReader{a: a, r: io.LimitReader(rc, int64(limit))})
	return buf.Bytes(), err
}

// idleReader bounds each Read by the idle timeout.
type idleReader struct {
	a *attempt
	r io.Reader
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.a.arm(&r.a.idle)
	n, err := r.r.Read(p)
	r.a.disarm()
	if err != nil && err != io.EOF {
		err = r.a.cause(err)
	}
	return n, err
}

// try makes one attempt. It returns the response for the caller (verdict
// with no class and not retryable), or a judged failure: a response whose
// body is buffered, or an error.
func (c *call) try(a *attempt) (*http.Response, verdict, error) {
	c.switchKey = false
	r := c.treq.WithContext(a.ctx)
	if c.target == 0 {
		r.Header = c.header
	}
	if c.keySet != nil {
		r.Header = r.Header.Clone()
		c.keySet(r.Header)
	}
	if c.t.Tracer != nil {
		r = c.startTrace(a, r)
	}
	if c.signer != nil {
		if c.keySet == nil {
			r.Header = r.Header.Clone() // the signature is this attempt's
		}
		if err := c.signer.Sign(r, c.body); err != nil {
			return nil, c.unsigned(a, err), a.err
		}
	}
	if c.body != nil {
		// A NopCloser over a bytes.Reader, which net/http knows to be in
		// memory: it writes the headers and the body in one go.
		a.sending.Reset(c.body)
		r.Body, r.GetBody, r.ContentLength = io.NopCloser(&a.sending), c.getBody, int64(len(c.body))
	} else { // no body, whatever req.Body holds (Send ignores it)
		r.Body, r.GetBody, r.ContentLength = nil, nil, 0
	}
	resp, err := c.t.base.RoundTrip(r)
	a.answer()
	c.dropToken() // a retry is outstanding until answered
	if err != nil {
		return nil, c.failed(a, err), a.err
	}
	a.ttfb = time.Since(a.start)
	a.rec.Status = resp.StatusCode
	a.rec.UpstreamRequestID = upstreamID(resp.Header)
	if resp.StatusCode >= 400 {
		return c.judgeError(a, resp)
	}
	c.learn(a, resp.StatusCode, resp.Header, verdict{}) // its rate-limit headers, at once
	peeker := c.targetDialect().Stream(resp.Header)
	stream := peeker != nil
	a.rec.Stream = stream
	b := &a.out
	b.a, b.rc, b.stream = a, resp.Body, stream
	if c.t.Meter != nil {
		b.count, b.meterEnd = c.t.Meter.Count(c.targetDialect(), c.model, stream, len(c.body))
	}
	if stream {
		head, errEvent, status, err := a.peek(resp.Body, peeker)
		b.head, b.n = head, int64(len(head))
		if err != nil {
			resp.Body.Close()
			a.rec.BytesIn = b.n
			return nil, c.failed(a, err), a.err
		}
		if errEvent != nil {
			// The provider's error, in a 200: judged, and learnt by the
			// Limiter and the Keys, as the status it stands for, so that
			// a rate limit or a quota sent this way pauses the model or
			// the key as a 429 answer would.
			v := c.policy.Retry.judgeStatus(c.targetDialect(), status, resp.Header, errEvent)
			c.learn(a, status, resp.Header, v)
			retry := v.retryable && (c.tries < c.policy.Retry.MaxAttempts || c.hasNext())
			move := c.switchKey && c.tries < c.policy.Retry.MaxAttempts // another key is ready
			if retry || move {
				// Kept as the call's last failure, as it came: should no
				// attempt follow after all (the breaker opens, the time
				// runs out), the caller gets the provider's own error
				// event, never a made-up "could not be reached".
				resp.Body.Close()
				if x := c.xl(); x != nil { // the client gets its own dialect's error event
					head = c.translateHeld(x, head, c.targetDialect().Stream(resp.Header))
					resp.Header.Set("Content-Type", "text/event-stream")
					resp.Header.Del("Content-Length")
				}
				resp.Body = io.NopCloser(bytes.NewReader(head))
				resp.ContentLength = -1
				c.settle(a, v, int64(len(head)))
				return resp, v, nil
			}
			b.errStat, b.errV = status, v
		}
		if rs := c.resuming(); rs != nil { // a continuation of the caller's stream
			rs.adopt(b, resp)
			a.handed.Store(true)
			return resp, verdict{}, nil
		}
		if !c.policy.Resume || !c.startResume(resp, b) {
			if c.xl() != nil {
				c.translateAnswer(a, resp, b, head) // a stream's cannot fail here
			}
		}
		b.events = c.d.Stream(resp.Header)
		b.strict = c.d.Traits().StrictEnd
	} else {
		a.disarm()
		if c.t.BufferBody {
			head, err := a.readAll(resp.Body, maxBufferedBody, resp.ContentLength)
			b.head, b.n = head, int64(len(head))
			if err != nil {
				resp.Body.Close()
				a.rec.BytesIn = b.n
				return nil, c.failed(a, err), a.err
			}
		}
		if c.xl() != nil {
			if err := c.translateAnswer(a, resp, b, b.head); err != nil {
				resp.Body.Close()
				a.rec.BytesIn = b.n
				return nil, c.failed(a, err), a.err
			}
		}
	}
	resp.Body = b
	c.stamp(resp)
	if c.mark != nil && resp.StatusCode/100 == 2 { // an answer to keep
		c.capture(b, resp)
	}
	if c.policy.Hedge.After.Quantile > 0 { // the quantile hedges wait for
		c.t.hedges.observe(c.provider, c.model, a.ttfb)
	}
	a.handed.Store(true)
	return resp, verdict{}, nil
}

// capture makes b keep what the caller reads of resp, b's answer, for
// the call's mark.
func (c *call) capture(b *body, resp *http.Response) {
	b.capture, b.status, b.header = true, resp.StatusCode, resp.Header
	if c.keyID != "" && resp.Request != nil {
		b.keyed = resp.Request.Header // the pool's key, which the caller's request did not carry
	}
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

// unsigned fails an attempt whose request could not be signed: nothing
// was sent, and the call is not retried.
func (c *call) unsigned(a *attempt, err error) verdict {
	a.disarm()
	v := verdict{breaker: breaker.Ignored, class: "credentials"}
	a.err = &CredentialsError{Provider: c.provider, Err: err}
	c.settle(a, v, 0)
	return v
}

// judgeError reads a ≥400 response's body and judges it. The response,
// with its body in memory, is what the caller gets if no retry follows.
func (c *call) judgeError(a *attempt, resp *http.Response) (*http.Response, verdict, error) {
	buf, err := a.readAll(resp.Body, maxErrorBody, resp.ContentLength)
	resp.Body.Close()
	if err != nil {
		v := c.failed(a, err)
		return nil, v, a.err
	}
	v := c.policy.Retry.judgeStatus(c.targetDialect(), resp.StatusCode, resp.Header, buf)
	c.learn(a, resp.StatusCode, resp.Header, v)
	a.errBody = buf
	if x := c.xl(); x != nil { // judged as the target wrote it, handed over as the client's dialect writes it
		buf = x.errorBody(resp.StatusCode, buf)
		resp.Header.Set("Content-Type", "application/json")
	}
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
	a.release(v.breaker, latency)
	c.limitEnd()
	a.rec.Error = v.class
	a.rec.BytesIn = bytesIn
	a.rec.LatencyMS = ms(latency)
	a.rec.TTFBMS = ms(a.ttfb)
}

func upstreamID(h http.Header) string {
	if v := get(h, "X-Request-Id"); v != "" {
		return v
	}
	return get(h, "Request-Id")
}
