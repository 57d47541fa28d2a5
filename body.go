package sluice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/sse"
)

// maxErrorBody bounds how much of an error response is held in memory to
// judge it and to hand it back after the retry decision.
const maxErrorBody = 1 << 20

// maxBufferedBody bounds how much of an answer that is not a stream
// Transport.BufferBody reads inside the attempt.
const maxBufferedBody = 8 << 20

// maxPeek bounds how much of a stream is read, before its first event is
// complete, to judge that event.
const maxPeek = 64 << 10

// attempt is one upstream attempt in progress.
type attempt struct {
	call    *call
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	trace   httptrace.ClientTrace
	permit  breaker.Permit
	start   time.Time
	ttfb    time.Duration
	rec     Attempt
	err     error  // what ended a failed attempt
	errBody []byte // the body of a ≥400 response

	mu       sync.Mutex    // guards the timer's meaning
	armed    *TimeoutError // what the timer means when it fires; nil when stopped
	answered bool          // the response headers arrived

	firstByte, idle TimeoutError
}

func (a *attempt) fire() {
	a.mu.Lock()
	te := a.armed
	a.mu.Unlock()
	if te != nil {
		a.cancel(te)
	}
}

// arm (re)starts the attempt's timer for te.
func (a *attempt) arm(te *TimeoutError) {
	a.mu.Lock()
	a.armed = te
	a.timer.Reset(te.Limit)
	a.mu.Unlock()
}

// disarm stops the attempt's timer.
func (a *attempt) disarm() {
	a.mu.Lock()
	a.armed = nil
	a.timer.Stop()
	a.mu.Unlock()
}

// wroteRequest starts the first-byte timeout when the request has been
// written, unless the answer already began. It is an httptrace hook.
func (a *attempt) wroteRequest(httptrace.WroteRequestInfo) {
	a.mu.Lock()
	if a.armed == &a.firstByte && !a.answered {
		a.timer.Reset(a.firstByte.Limit)
	}
	a.mu.Unlock()
}

// answer notes that the response headers arrived: a late wroteRequest
// must not restart the first-byte timeout.
func (a *attempt) answer() {
	a.mu.Lock()
	a.answered = true
	a.mu.Unlock()
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

// readAll reads a response body under the idle timer, at most limit bytes.
func (a *attempt) readAll(rc io.Reader, limit int) ([]byte, error) {
	var buf bytes.Buffer
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

// peek reads a stream until its first event is complete, under the
// first-byte timer and then the idle timer. It returns the bytes read and
// the first event's data when that event is a provider error. The bytes
// are read straight into the buffer returned, which grows only for a
// first event larger than peekChunk.
func (a *attempt) peek(rc io.Reader) (buf []byte, errEvent []byte, err error) {
	var p sse.Parser
	done := false
	buf = make([]byte, 0, peekChunk)
	for !done && len(buf) < maxPeek {
		if len(buf) > 0 {
			a.arm(&a.idle)
		}
		if cap(buf)-len(buf) < peekChunk/2 {
			buf = slices.Grow(buf, peekChunk)
		}
		n, rerr := rc.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			if len(buf) == 0 {
				a.ttfb = time.Since(a.start)
			}
			chunk := buf[len(buf) : len(buf)+n]
			buf = buf[:len(buf)+n]
			p.Feed(chunk, func(ev sse.Event) bool {
				if isErrorEvent(ev) {
					errEvent = bytes.Clone(ev.Data)
				}
				done = true
				return false
			})
		}
		if rerr != nil {
			if rerr == io.EOF && len(buf) > 0 {
				break
			}
			if rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			a.disarm()
			return buf, nil, a.cause(rerr)
		}
	}
	a.disarm()
	return buf, errEvent, nil
}

// peekChunk is the least room peek offers each Read.
const peekChunk = 4096

// isErrorEvent reports whether an SSE event is a provider's error: an
// Anthropic "event: error", or an OpenAI-style {"error": …} data object.
func isErrorEvent(ev sse.Event) bool {
	if ev.Type == "error" {
		return true
	}
	d := bytes.TrimLeft(ev.Data, " \t\r\n")
	return len(d) > 0 && d[0] == '{' && bytes.HasPrefix(bytes.TrimLeft(d[1:], " \t\r\n"), []byte(`"error"`))
}

// errorEventStatus maps a provider error event to the HTTP status it
// stands for: overloaded → 529, rate limit → 429, server error → 500, a
// quota error → 429 (whose body then carries the quota marker), anything
// else → 400.
func errorEventStatus(data []byte) int {
	var ev struct {
		Error struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return http.StatusInternalServerError
	}
	code, _ := ev.Error.Code.(string)
	for _, s := range []string{ev.Error.Type, code} {
		switch s {
		case "overloaded_error", "overloaded":
			return 529
		case "rate_limit_error", "rate_limit_exceeded", "insufficient_quota":
			return http.StatusTooManyRequests
		case "api_error", "server_error", "internal_error", "service_unavailable":
			return http.StatusInternalServerError
		}
	}
	return http.StatusBadRequest
}

// body is the response body handed to the caller. It replays the bytes
// read while judging the response, bounds every Read by the idle timeout,
// and reports the attempt's outcome once: at EOF, at an error, or at Close.
type body struct {
	a       *attempt
	rc      io.ReadCloser
	head    []byte // bytes already read from rc, replayed first
	n       int64  // bytes read from rc
	sent    int64  // bytes handed to the caller
	stream  bool
	errStat int            // for a stream whose first event is an error: its status
	errV    verdict        // and its verdict, judged with the event's body
	count   func([]byte)   // the Meter's, for the bytes handed to the caller
	cost    func() float64 // and what the attempt cost, at its end
	ended   atomic.Bool

	events   *sse.Parser // a stream's events as handed to the caller
	terminal atomic.Bool // the stream's terminal event was handed to the caller
}

// watch notes a stream's terminal event in p, bytes handed to the caller.
func (b *body) watch(p []byte) {
	if b.events == nil || len(p) == 0 || b.terminal.Load() {
		return
	}
	b.events.Feed(p, func(ev sse.Event) bool {
		if isTerminalEvent(ev) {
			b.terminal.Store(true)
			return false
		}
		return true
	})
}

// isTerminalEvent reports whether ev ends a complete answer: OpenAI's
// data: [DONE], Anthropic's message_stop, the Responses API's
// response.completed or response.incomplete, whether named in the event
// line or only in the data's "type".
func isTerminalEvent(ev sse.Event) bool {
	switch ev.Type {
	case "message_stop", "response.completed", "response.incomplete":
		return true
	case "", "message":
		d := bytes.TrimSpace(ev.Data)
		if bytes.Equal(d, []byte("[DONE]")) {
			return true
		}
		for _, t := range terminalTypes {
			if bytes.HasPrefix(d, t) {
				return true
			}
		}
	}
	return false
}

var terminalTypes = [][]byte{
	[]byte(`{"type":"message_stop"`),
	[]byte(`{"type":"response.completed"`),
	[]byte(`{"type":"response.incomplete"`),
}

// Read reads from the replay buffer, then from the upstream body.
func (b *body) Read(p []byte) (int, error) {
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
		return n, nil
	}
	if b.ended.Load() {
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
	switch {
	case err == io.EOF:
		b.end(nil)
	case err != nil:
		err = b.a.cause(err)
		if !isTimeoutOrCancel(err) && b.sent > 0 {
			err = &cutError{bytes: b.sent, err: err}
		}
		b.end(err)
	}
	return n, err
}

var errBodyClosed = errors.New("sluice: read on closed response body")

func isTimeoutOrCancel(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, context.Canceled)
}

// Close closes the upstream body; an unfinished body ends the attempt as
// the caller's choice.
func (b *body) Close() error {
	b.end(errEarlyClose)
	return b.rc.Close()
}

var errEarlyClose = errors.New("sluice: body closed before its end")

// end reports how the attempt ended, once.
func (b *body) end(err error) {
	if b.ended.Swap(true) {
		return
	}
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
	a.permit.Done(bo, slowBy)
	a.cancel(nil)
	if b.cost != nil && b.errStat == 0 {
		r.CostUSD = b.cost()
		a.call.cost += r.CostUSD
	}
	a.call.record(r)
	a.call.end()
}

// judge returns the log outcome and the breaker outcome of a finished body.
func (b *body) judge(err error) (Outcome, breaker.Outcome) {
	switch {
	case b.errStat != 0 && (err == nil || err == errEarlyClose):
		b.a.rec.Error = b.errV.class // judged on the event's body: a quota error is Ignored
		return OutcomeFail, b.errV.breaker
	case err == nil, b.terminal.Load() && b.errStat == 0:
		// A stream whose terminal event reached the caller is complete,
		// whatever the caller does next.
		return OutcomeOK, breaker.Success
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
