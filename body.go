package sluice

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
)

// body is the response body handed to the caller. It replays the bytes
// read while judging the response, bounds every Read by the idle timeout,
// and reports the attempt's outcome once: at EOF, at an error, or at Close.
type body struct {
	a        *attempt
	rc       io.ReadCloser
	head     []byte // bytes already read from rc, replayed first
	n        int64  // bytes read from rc
	sent     int64  // bytes handed to the caller
	stream   bool
	errStat  int                     // for a stream whose first event is an error: its status
	errV     verdict                 // and its verdict, judged with the event's body
	count    func([]byte)            // the Meter's, for the bytes handed to the caller
	meterEnd func() (float64, int64) // and what the attempt cost and used, at its end
	ended    atomic.Bool
	mu       sync.Mutex  // held by Read, and by the total timeout ending a body nobody reads
	closing  atomic.Bool // Close was called: a Read's error is the caller's doing
	expired  error       // the total timeout that ended the body, returned by later Reads

	// An answer to keep (Transport.Answers): what the caller read of it.
	capture  bool
	status   int
	header   http.Header
	kept     []byte
	keptOver bool        // longer than the Transport's AnswerMax: not kept
	keyed    http.Header // the attempt's request header, when it carried a pool's key

	events   dialect.Stream // a stream's events as handed to the caller
	terminal atomic.Bool    // the stream's terminal event was handed to the caller
	midErr   *verdict       // a provider error event after the first, judged; nil if none
	strict   bool           // a cut stream is an error to the caller (dialect.Traits.StrictEnd)

	// Under Policy.Resume (resume.go): detached, the caller's body's
	// attempt was judged and logged when its stream broke; inner, the
	// body is a continuation's, read by the caller's, which logs it.
	detached bool
	inner    bool
}

// watch notes a stream's terminal event in p, bytes handed to the caller.
func (b *body) watch(p []byte) {
	if b.events == nil || len(p) == 0 || b.terminal.Load() {
		return
	}
	b.events.Feed(p, func(ev dialect.Event) bool {
		if ev.End {
			b.terminal.Store(true)
			return false
		}
		if b.midErr == nil && b.errStat == 0 && b.events.Events() > 1 && ev.Status != 0 {
			b.midErr = b.judgeErrorEvent(ev.Status, ev.Data)
		}
		return true
	})
}

// judgeErrorEvent judges a provider error event that came after a
// stream's first event, which the caller has read: as the status it
// stands for (an overloaded error as 529, a server error as 500), so that
// the attempt is a failure and the breaker counts it as it would that
// status.
func (b *body) judgeErrorEvent(status int, data []byte) *verdict {
	v := b.a.call.policy.Retry.judgeStatus(b.a.call.d, status, nil, data)
	if v.class != classQuota {
		v.class = "stream_error"
	}
	return &v
}

// Read reads from the replay buffer, then from the upstream body.
func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		if len(b.head) == 0 {
			b.head = nil // the peek's buffer is not kept for the stream's life
		}
		b.sent += int64(n)
		b.watch(p[:n])
		if b.count != nil {
			b.count(p[:n])
		}
		if b.capture {
			b.keep(p[:n])
		}
		return n, nil
	}
	if b.ended.Load() {
		if b.expired != nil {
			return 0, b.expired
		}
		return 0, errBodyClosed
	}
	b.a.arm(&b.a.idle)
	n, err := b.rc.Read(p)
	b.a.disarm()
	b.n += int64(n)
	b.sent += int64(n)
	b.watch(p[:n])
	if b.count != nil && n > 0 {
		b.count(p[:n])
	}
	if b.capture && n > 0 {
		b.keep(p[:n])
	}
	switch {
	case err == io.EOF && b.strict && !b.terminal.Load() && b.midErr == nil && b.errStat == 0:
		// A stream of a dialect whose clients take the end of the bytes
		// for a whole answer (Gemini's, which has no terminal event; an
		// AWS SDK's) that ends before its terminal event was cut, and
		// must not look whole (one that ends on the provider's error
		// event ended on it: the caller has the error already).
		err = &cutError{bytes: b.sent, err: io.ErrUnexpectedEOF}
		b.end(err)
	case err == io.EOF:
		b.end(nil)
	case err != nil && b.closing.Load():
		b.end(errEarlyClose) // the caller closed the body under this Read
	case err != nil:
		if !b.detached { // a continuation's error is its own
			err = b.a.cause(err)
		}
		if !isTimeoutOrCancel(err) && b.sent > 0 {
			err = &cutError{bytes: b.sent, err: err}
		}
		b.end(err)
	}
	return n, err
}

// expire ends, at the call's total timeout, a body the caller holds
// without reading it to its end or closing it: its attempt is judged (as
// a timeout the breaker ignores: the provider answered), logged, and what
// the call holds is given back. A Read in progress ends first, cancelled
// by the same timeout, and ends the body itself.
func (b *body) expire(te *TimeoutError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended.Load() {
		return
	}
	b.expired = te
	b.end(&heldError{te})
}

// heldError is the end of a body the caller held past the call's total
// timeout without reading it.
type heldError struct{ te *TimeoutError }

func (e *heldError) Error() string { return e.te.Error() + " (the answer was held unread)" }

func (e *heldError) Unwrap() error { return e.te }

var errBodyClosed = errors.New("sluice: read on closed response body")

func isTimeoutOrCancel(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, context.Canceled)
}

// Close closes the upstream body; an unfinished body ends the attempt as
// the caller's choice.
func (b *body) Close() error {
	b.closing.Store(true)
	if b.mu.TryLock() { // no Read under way: end it here
		b.end(errEarlyClose)
		b.mu.Unlock()
		return b.rc.Close()
	}
	// A Read is under way: cancelling the attempt and closing rc end it,
	// and it ends the body.
	b.a.cancel(errEarlyClose)
	return b.rc.Close()
}

var errEarlyClose = errors.New("sluice: body closed before its end")

func isHeld(err error) bool {
	var h *heldError
	return errors.As(err, &h)
}

// end reports how the attempt ended, once: the caller's body logs its
// attempt, or its continuation's (resume.go), and ends the call.
func (b *body) end(err error) {
	if b.ended.Swap(true) {
		return
	}
	if b.inner {
		b.judgeEnd(err) // the caller's body logs it
		return
	}
	a := b.a
	c := a.call
	defer c.end() // even when a hook panics
	if b.detached {
		cur := c.resuming().cur
		if cur == nil {
			return // its continuation failed, and is logged
		}
		cur.end(err)
		a = cur.a
	} else {
		b.judgeEnd(err)
	}
	if b.capture {
		c.keepAnswer(b, a) // before the line, which says what became of it
	}
	c.record(a)
}

// judgeEnd judges the attempt whose answer the body hands over, ended by
// err: its log line's figures and outcome, its breaker outcome and its
// cost. The line is not written.
func (b *body) judgeEnd(err error) {
	a := b.a
	a.disarm()
	latency := time.Since(a.start)
	r := &a.rec
	r.BytesIn = b.n
	r.LatencyMS = ms(latency)
	r.TTFBMS = ms(a.ttfb)
	slowBy := latency
	if b.stream {
		slowBy = a.ttfb
	}
	outcome, bo := b.judge(err)
	r.Outcome = outcome
	if err != nil && err != errEarlyClose && outcome != OutcomeOK {
		r.Error = errorClass(err)
	}
	a.release(bo, slowBy)
	if b.meterEnd != nil && b.errStat == 0 {
		r.CostUSD, a.call.usedTokens = b.meterEnd()
		a.call.cost += r.CostUSD
	}
}

// judge returns the log outcome and the breaker outcome of a finished body.
func (b *body) judge(err error) (Outcome, breaker.Outcome) {
	switch {
	case b.errStat != 0 && (err == nil || err == errEarlyClose):
		b.a.rec.Error = b.errV.class // judged on the event's body: a quota error is Ignored
		return OutcomeFail, b.errV.breaker
	case b.midErr != nil && (err == nil || err == errEarlyClose || b.terminal.Load()):
		b.a.rec.Error = b.midErr.class // the stream ended on the provider's error
		return OutcomeFail, b.midErr.breaker
	case err == nil, b.terminal.Load() && b.errStat == 0:
		// A stream whose terminal event reached the caller is complete,
		// whatever the caller does next.
		return OutcomeOK, breaker.Success
	case isHeld(err):
		return OutcomeTimeout, breaker.Ignored
	case err == errEarlyClose:
		if !b.stream && b.sent > 0 {
			return OutcomeOK, breaker.Success
		}
		return OutcomeClientCancel, breaker.Ignored
	case errors.Is(err, context.Canceled):
		return OutcomeClientCancel, breaker.Ignored
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		if te.Phase == PhaseIdle && b.stream {
			return OutcomeStreamStalled, breaker.Failure
		}
		return OutcomeTimeout, breaker.Failure
	}
	return OutcomeFail, breaker.Failure
}
