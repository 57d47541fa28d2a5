package sluice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"unicode"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/internal/sse"
)

// A stream under Policy.Resume is handed to the caller as its dialect's
// codec writes it (dialect/chat), event by event, by one encoder across
// attempts: when the current attempt's stream breaks after the answer
// began, resume judges and logs that attempt (OutcomeResumed) and runs the
// attempt loop again for the rest, and the continuation's events join the
// same stream. The caller's body (body) stays the first attempt's; each
// continuation's answer is read through a body of its own (inner), which
// the caller's body logs at its end.

// resumer is the caller's stream of a call under Policy.Resume.
type resumer struct {
	c    *call
	body *body         // the caller's, the first attempt's
	req  *chat.Request // the client's request, as the chat model holds it
	from chat.Codec    // the client's dialect's
	enc  chat.StreamEncoder

	// cancel ends every attempt of the call, when the caller closes its
	// body.
	cancel context.CancelCauseFunc

	// The current attempt's stream, raw: the first attempt's bytes, or a
	// continuation's body (cur).
	mu     sync.Mutex // guards src and closer against Close
	src    io.Reader
	closer io.Closer
	cur    *body // the continuation being read; nil for the first attempt
	frames dialect.Stream
	dec    chat.StreamDecoder
	exc    bool         // a frame with a status is an AWS exception frame
	count  func([]byte) // the Meter's, for the first attempt's raw bytes

	buf  []byte
	out  []byte // bytes for the caller not yet read
	evs  []chat.Event
	frs  []chat.Frame
	done bool // the caller's stream has ended (its stop or its error event)

	// The break: why the current stream broke, nil while it flows.
	brk   error
	brkEv *chat.Error // the provider's error event it broke on, if any

	// What the caller has.
	text     []byte // the text the caller got
	tools    bool   // a tool call reached it
	finished bool   // the answer's stop reason reached it
	top      int    // the highest block begun; -1 before any
	open     bool   // top is not ended
	base     int    // the caller's block of the current stream's block 0

	// The continuation.
	resumes  int
	adopted  bool        // the last run of the attempt loop ended in a continuation
	diverged bool        // a restart's text differed from the text sent
	prefill  bool        // the current attempt carries the text sent as a prefix
	plain    []byte      // and its body without it
	prefixed []byte      // the body with it
	refused  []int       // the targets that refused a prefix
	suppress []byte      // a restart: text to see again before relaying
	ws       []byte      // a prefix's trailing white space, left out of it
	usage    chat.Usage  // the broken attempts'
	curUse   *chat.Usage // the current attempt's, as far as known
	pieces   int64       // the pieces of text the current attempt gave
}

// resuming returns the call's resumer, nil unless its stream is resumable.
func (c *call) resuming() *resumer {
	if c.xs == nil {
		return nil
	}
	return c.xs.rs
}

// startResume makes the stream of the first attempt, whose answer resp
// try hands over in b, resumable when the policy and the call allow it:
// the caller's dialect has a chat codec and frames its stream as
// server-sent events, the target's has one, the answer is not compressed
// and the request asks for no structured output.
func (c *call) startResume(resp *http.Response, b *body) bool {
	from, to := codecOf(c.d), codecOf(c.targetDialect())
	if from == nil || to == nil || c.d == dialect.Bedrock {
		return false
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return false
	}
	req, err := c.chatRequest()
	if err != nil || (req.Format != nil && req.Format.Type != chat.FormatText) {
		return false
	}
	r := &resumer{c: c, body: b, req: req, from: from, enc: from.NewStreamEncoder(req), top: -1,
		buf: make([]byte, 4096)}
	c.xs.rs = r
	c.ctx, r.cancel = context.WithCancelCause(c.ctx)
	r.use(to, c.targetDialect().Stream(resp.Header), io.MultiReader(bytes.NewReader(b.head), resp.Body), resp.Body)
	r.count, b.count = b.count, nil // the Meter reads the target's raw bytes
	b.head, b.n = nil, 0
	b.rc = r
	resp.Header.Del("Content-Length")
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.ContentLength = -1
	return true
}

// chatRequest returns the call's request as the chat model holds it, read
// once.
func (c *call) chatRequest() (*chat.Request, error) {
	if c.xs == nil {
		c.xs = &xlState{}
	}
	if !c.xs.read {
		c.xs.read = true
		from := codecOf(c.d)
		if from == nil {
			c.xs.inErr = &chat.UnsupportedError{Dialect: c.d.Kind(), What: "the chat model"}
			return nil, c.xs.inErr
		}
		c.xs.in, c.xs.inErr = from.DecodeRequest(c.in.Bytes)
		if c.xs.inErr == nil && !c.xs.in.Stream {
			c.xs.in.Stream = c.d.Request(c.req.URL.Path, nil).Stream // the APIs that ask for a stream by the path
		}
	}
	return c.xs.in, c.xs.inErr
}

// use makes src, framed by fr and read by codec to, the current stream.
func (r *resumer) use(to chat.Codec, fr dialect.Stream, src io.Reader, closer io.Closer) {
	r.mu.Lock()
	r.src, r.closer = src, closer
	r.mu.Unlock()
	r.frames, r.dec = fr, to.NewStreamDecoder()
	r.exc = to == chat.Bedrock
	r.brk, r.brkEv = nil, nil
	r.base = r.top + 1
	if r.open {
		r.base = r.top // the text goes on in the block it broke in
	}
}

// adopt makes the answer of the current attempt, which try hands over in
// b, the continuation of the caller's stream.
func (r *resumer) adopt(b *body, resp *http.Response) {
	c := r.c
	b.inner = true
	td := c.targetDialect()
	b.events, b.strict = td.Stream(resp.Header), td.Traits().StrictEnd
	r.cur, r.adopted = b, true
	r.use(codecOf(td), td.Stream(resp.Header), b, b)
}

// Read returns the caller's stream, reading the current attempt's until
// an event gives some, and resuming it on the next target when it breaks.
func (r *resumer) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.brk != nil {
			if !r.resume() {
				return r.decline()
			}
			continue
		}
		if r.done {
			return 0, io.EOF
		}
		n, err := r.src.Read(r.buf)
		if n > 0 {
			if r.count != nil && r.cur == nil {
				r.count(r.buf[:n])
			}
			r.feed(r.buf[:n])
		}
		switch {
		case r.done || r.brk != nil:
		case err == io.EOF:
			r.handle(r.dec.End(r.evs[:0])) // a cut is an error event, never an end
		case err != nil:
			if r.cur == nil { // a continuation's body maps its own
				err = r.body.a.cause(err)
			}
			r.brk = err
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// feed decodes the events p completes.
func (r *resumer) feed(p []byte) {
	r.frames.Feed(p, func(ev dialect.Event) bool {
		evs, err := r.dec.Decode(r.evs[:0], chat.Frame{Event: ev.Type, Data: ev.Data, Exception: r.exc && ev.Status != 0})
		if err != nil {
			evs = append(evs, failEvent(err))
		}
		r.handle(evs)
		return !r.done && r.brk == nil
	})
}

// errDiverged breaks a restarted stream whose text is not the text the
// caller already has.
var errDiverged = errors.New("sluice: the stream, started again, does not repeat the text already sent")

// handle passes the current stream's events on to the caller, in the
// caller's blocks: a continuation's start, and a restart's repeat of the
// text sent, are the caller's already. An error event is a break.
func (r *resumer) handle(evs []chat.Event) {
	r.evs = evs
	for _, ev := range evs {
		if r.done || r.brk != nil {
			return
		}
		switch ev.Type {
		case chat.EventStart: // a continuation's: the encoder writes the first only
			r.curUse = ev.Usage
			ev.ID = chat.AnswerID(r.from, ev.ID, r.c.id) // in the client's form, never empty
		case chat.EventText:
			ev.Index += r.base
			if ev.Text = r.unseen(ev.Text); ev.Text == "" {
				continue
			}
			r.text = append(r.text, ev.Text...)
			r.pieces++
		case chat.EventToolStart, chat.EventToolArgs:
			if len(r.suppress) > 0 {
				r.diverge()
				return
			}
			r.tools = true
			ev.Index += r.base
		case chat.EventBlockStop:
			ev.Index += r.base
			if len(r.suppress) > 0 {
				r.diverge()
				return
			}
			if ev.Index > r.top || (ev.Index == r.top && !r.open) {
				continue // a block the caller never saw begin, or saw end
			}
		case chat.EventDelta:
			if len(r.suppress) > 0 {
				r.diverge()
				return
			}
			r.finished = true
			r.curUse = ev.Usage
			if ev.Usage != nil {
				u := add(r.usage, *ev.Usage)
				ev.Usage = &u
			}
		case chat.EventError:
			r.brk, r.brkEv = errStreamEvent, ev.Err
			return
		}
		r.emit(ev)
	}
}

// unseen returns what of t, a piece of the current stream's text, the
// caller has not seen: after a restart, the text sent is seen again
// first; after a prefix that left its trailing white space out, that
// space when it comes first.
func (r *resumer) unseen(t string) string {
	if len(r.suppress) > 0 {
		k := commonPrefix(r.suppress, t)
		if k < len(r.suppress) && k < len(t) {
			r.diverge()
			return ""
		}
		r.suppress, t = r.suppress[k:], t[k:]
	}
	if len(r.ws) > 0 && t != "" {
		k := commonPrefix(r.ws, t)
		r.ws, t = nil, t[k:]
	}
	return t
}

func commonPrefix(a []byte, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// diverge breaks a restarted stream whose text is not the text sent.
func (r *resumer) diverge() {
	r.diverged = true
	r.brk = errDiverged
	r.brkEv = &chat.Error{Status: http.StatusBadGateway, Type: "api_error", Message: errDiverged.Error()}
}

// errStreamEvent is the break of a stream on the provider's error event.
var errStreamEvent = errors.New("sluice: provider error event")

// emit writes ev as the caller's server-sent events.
func (r *resumer) emit(ev chat.Event) {
	if i := ev.Index; ev.Type == chat.EventText || ev.Type == chat.EventToolStart || ev.Type == chat.EventToolArgs {
		if i > r.top {
			r.top, r.open = i, true
		}
	} else if ev.Type == chat.EventBlockStop && ev.Index == r.top {
		r.open = false
	}
	frs, err := r.enc.Encode(r.frs[:0], ev)
	if err != nil {
		frs, _ = r.enc.Encode(frs[:0], failEvent(err))
		r.done = true
	}
	for _, f := range frs {
		r.out = sse.AppendEvent(r.out, f.Event, f.Data)
	}
	r.frs = frs
	if ev.Type == chat.EventStop || ev.Type == chat.EventError {
		r.done = true
	}
}

func add(a, b chat.Usage) chat.Usage {
	return chat.Usage{Input: a.Input + b.Input, Output: a.Output + b.Output,
		CacheRead: a.CacheRead + b.CacheRead, CacheWrite: a.CacheWrite + b.CacheWrite}
}

// resume continues the caller's stream after the current attempt's broke:
// it judges and logs that attempt, OutcomeResumed, and runs the attempt
// loop for the rest, on the same target while it may be tried again, else
// on the next. False when the break must end the stream: a tool call or
// the stop reason reached the caller, the resumes are used up, the caller
// left, or no attempt may follow; true when a continuation or its failure,
// as an error event, is the caller's.
func (r *resumer) resume() bool {
	c := r.c
	if r.tools || r.finished || r.diverged || r.resumes >= c.policy.ResumeMax || r.body.closing.Load() {
		return false
	}
	cur := r.cur
	if cur == nil {
		cur = r.body
	}
	a := cur.a
	v, err := r.judgeBreak(a)
	if isTimeoutOrCancel(err) && !isIdle(err) {
		return false // the call's time is up, or the caller left
	}
	s, wait := c.plan(a, v, nil, err)
	if s == stepStop {
		return false
	}
	if cur == r.body {
		cur.detached = true
	} else {
		cur.ended.Store(true)
	}
	if r.brkEv != nil {
		cur.midErr = &v
		err = nil
	}
	cur.judgeEnd(err)
	c.limitEnd()
	a.rec.Outcome, a.rec.Error = OutcomeResumed, v.class
	if s == stepRetry {
		a.rec.RetryInMS = ms(wait)
	}
	c.record(a)
	r.closeSource()
	r.cur = nil
	r.usage = add(r.usage, r.brokenUsage())
	r.resumes++
	last := err
	if r.brkEv != nil {
		last = &statusError{status: r.brkEv.Status}
	}
	r.brk, r.brkEv = nil, nil
	c.keep(nil, last)
	line := a.rec.Attempt + 1
	if s == stepFallBack {
		c.aim(c.target + 1)
	} else if !c.backOff(wait) {
		r.fail(c.give())
		return true
	}
	r.adopted = false
	resp, rerr := c.run(line)
	if !r.adopted {
		r.fail(resp, rerr)
	}
	return true
}

// brokenUsage returns the usage of the current attempt, whose stream
// broke: as far as it reported it, its output at least one token a piece
// of text it gave, its input, when unreported, a token per 4 bytes of the
// request (as the Meter estimates a cut stream).
func (r *resumer) brokenUsage() chat.Usage {
	var u chat.Usage
	if r.curUse != nil {
		u = *r.curUse
	}
	if u.Prompt() == 0 {
		u.Input = int64(len(r.c.body)+3) / 4
	}
	u.Output = max(u.Output, r.pieces)
	r.curUse, r.pieces = nil, 0
	return u
}

// judgeBreak returns the verdict on the current stream's break, and the
// error it stands for (nil for an error event).
func (r *resumer) judgeBreak(a *attempt) (verdict, error) {
	c := r.c
	if e := r.brkEv; e != nil {
		v := c.policy.Retry.judgeStatus(c.targetDialect(), e.Status, nil, []byte(e.Type+": "+e.Message))
		if v.class != classQuota {
			v.class = "stream_error"
		}
		return v, nil
	}
	err := r.brk
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, context.Canceled) {
		err = &cutError{bytes: r.body.sent, err: err}
	}
	v, sent := judgeError(err)
	if sent && !c.idempotent {
		v.retryable = false
	}
	return v, err
}

func isIdle(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && te.Phase == PhaseIdle
}

// decline ends the caller's stream on its break: an error event becomes
// the caller's error event; a cut or a stall is the error of the Read.
func (r *resumer) decline() (int, error) {
	if r.brkEv == nil {
		err := r.brk
		r.closeSource()
		return 0, err
	}
	ev := chat.Event{Type: chat.EventError, Err: r.brkEv}
	if r.diverged && r.cur != nil && r.cur.midErr == nil {
		// The continuation's own stream was sound: its attempt fails for
		// the text, which is no fault of the provider's.
		r.cur.midErr = &verdict{breaker: breaker.Ignored, class: "resume_diverged"}
	}
	r.brk, r.brkEv = nil, nil
	r.emit(ev)
	r.closeSource()
	return 0, nil
}

// fail ends the caller's stream with the error event of a continuation
// that did not come: the last failure resp (its body in the caller's
// dialect), or err.
func (r *resumer) fail(resp *http.Response, err error) {
	e := &chat.Error{Status: http.StatusBadGateway, Type: "api_error",
		Message: "sluice: the stream broke and could not be resumed"}
	switch {
	case resp != nil:
		buf, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		e.Status = resp.StatusCode
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			if se := r.streamError(buf); se != nil {
				e = se
			}
		} else if de := r.from.DecodeError(resp.StatusCode, buf); de != nil && de.Message != "" {
			e = de
			if e.Status == 0 {
				e.Status = resp.StatusCode
			}
		}
	case errors.Is(err, ErrTimeout):
		e.Status, e.Message = http.StatusGatewayTimeout, err.Error()
	case err != nil:
		e.Message = err.Error()
	}
	r.emit(chat.Event{Type: chat.EventError, Err: e})
}

// streamError returns the error event of a stream in the caller's
// dialect, held whole, nil if it has none.
func (r *resumer) streamError(buf []byte) *chat.Error {
	var p sse.Parser
	dec := r.from.NewStreamDecoder()
	var found *chat.Error
	p.Feed(buf, func(ev sse.Event) bool {
		evs, _ := dec.Decode(nil, chat.Frame{Event: ev.Type, Data: ev.Data})
		for _, e := range evs {
			if e.Type == chat.EventError {
				found = e.Err
				return false
			}
		}
		return true
	})
	return found
}

// closeSource closes the current stream's source.
func (r *resumer) closeSource() {
	r.mu.Lock()
	cl := r.closer
	r.closer = nil
	r.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// Close ends every attempt of the call and closes the current source: the
// caller closed its body.
func (r *resumer) Close() error {
	r.cancel(context.Canceled) // the caller left: no failure of the provider's
	r.closeSource()
	return nil
}

// prepare writes the current target's request for the continuation: the
// call's, with the text sent as the assistant's prefix where the
// target's API takes one and the target has not refused it, else as it
// came, its answer to repeat that text before anything is relayed.
func (r *resumer) prepare() {
	c := r.c
	if r.prefixed != nil && len(c.body) == len(r.prefixed) && len(c.body) > 0 && &c.body[0] == &r.prefixed[0] {
		c.body = r.plain // the last attempt's prefix, refused
	}
	r.prefill, r.prefixed, r.suppress, r.ws = false, nil, nil, nil
	if len(r.text) == 0 {
		return // nothing sent: the call again as it came
	}
	d := c.targetDialect()
	trimmed := bytes.TrimRightFunc(r.text, unicode.IsSpace)
	if takesPrefix(d) && len(trimmed) > 0 && !r.refusedBy(c.target) {
		if body, err := withPrefix(d, c.body, string(trimmed)); err == nil {
			r.plain, r.prefixed, c.body = c.body, body, body
			r.prefill, r.ws = true, r.text[len(trimmed):]
			return
		}
	}
	r.suppress = r.text[:len(r.text):len(r.text)]
}

func (r *resumer) refusedBy(target int) bool {
	for _, t := range r.refused {
		if t == target {
			return true
		}
	}
	return false
}

// refusedPrefix reports whether attempt a, which carried the text sent as
// a prefix, was refused for it (400): it logs the attempt, and the same
// target is tried again without one.
func (r *resumer) refusedPrefix(a *attempt, resp *http.Response) bool {
	if !r.prefill || resp == nil || resp.StatusCode != http.StatusBadRequest {
		return false
	}
	resp.Body.Close()
	r.refused = append(r.refused, r.c.target)
	a.rec.Outcome = OutcomeRetry
	r.c.record(a)
	return true
}

// takesPrefix reports whether d's API continues a final assistant message
// (a prefill) instead of answering after it.
func takesPrefix(d dialect.Dialect) bool {
	return d == dialect.Anthropic || d == dialect.Bedrock
}

// withPrefix returns body, a request of dialect d, with text appended as
// the final assistant message, every other member as it came.
func withPrefix(d dialect.Dialect, body []byte, text string) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return nil, err
	}
	var msg any = map[string]any{"role": "assistant", "content": text}
	if d == dialect.Bedrock {
		msg = map[string]any{"role": "assistant", "content": []any{map[string]string{"text": text}}}
	}
	m, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if top["messages"], err = json.Marshal(append(msgs, m)); err != nil {
		return nil, err
	}
	return json.Marshal(top)
}
