package sluice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/internal/sse"
)

// A stream under Policy.Resume (a chatStream, chatstream.go) that breaks
// after its answer began is not the end: resume judges and logs the
// broken attempt (OutcomeResumed) and runs the attempt loop again for the
// rest, and the continuation's events join the same stream. The caller's
// body (body) stays the first attempt's; each continuation's answer is
// read through a body of its own (inner), which the caller's body logs at
// its end.

// resuming returns the caller's stream when it may be resumed, else nil.
func (c *call) resuming() *chatStream {
	if c.xs == nil || c.xs.rs == nil || !c.xs.rs.resumable {
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
	from, to := codecOf(c.d), c.targetChat()
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
	c.startStream(resp, b, to, req, true)
	return true
}

// adopt makes the answer of the current attempt, which try hands over in
// b, the continuation of the caller's stream.
func (r *chatStream) adopt(b *body, resp *http.Response) {
	c := r.c
	b.inner = true
	td := c.targetDialect()
	b.events, b.strict = td.Stream(resp.Header), td.Traits().StrictEnd
	r.cur, r.adopted = b, true
	r.use(c.targetChat(), td.Stream(resp.Header), b, b)
}

// errDiverged breaks a restarted stream whose text is not the text the
// caller already has.
var errDiverged = errors.New("sluice: the stream, started again, does not repeat the text already sent")

// unseen returns what of t, a piece of the current stream's text, the
// caller has not seen: after a restart, the text sent is seen again
// first; after a prefix that left its trailing white space out, that
// space when it comes first.
func (r *chatStream) unseen(t string) string {
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
func (r *chatStream) diverge() {
	r.diverged = true
	r.brk = errDiverged
	r.brkEv = &chat.Error{Status: http.StatusBadGateway, Type: "api_error", Message: errDiverged.Error()}
}

// resume continues the caller's stream after the current attempt's broke:
// it judges and logs that attempt, OutcomeResumed, and runs the attempt
// loop for the rest, on the same target while it may be tried again, else
// on the next. False when the break must end the stream: a tool call or
// the stop reason reached the caller, the resumes are used up, the caller
// left, or no attempt may follow; true when a continuation or its failure,
// as an error event, is the caller's.
func (r *chatStream) resume() bool {
	c := r.c
	if !r.resumable || r.tools || r.finished || r.diverged || r.resumes >= c.policy.ResumeMax || r.body.closing.Load() {
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
func (r *chatStream) brokenUsage() chat.Usage {
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
func (r *chatStream) judgeBreak(a *attempt) (verdict, error) {
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

// fail ends the caller's stream with the error event of a continuation
// that did not come: the last failure resp (its body in the caller's
// dialect), or err.
func (r *chatStream) fail(resp *http.Response, err error) {
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
func (r *chatStream) streamError(buf []byte) *chat.Error {
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

// prepare writes the current target's request for the continuation: the
// call's, with the text sent as the assistant's prefix where the
// target's API takes one and the target has not refused it, else as it
// came, its answer to repeat that text before anything is relayed.
func (r *chatStream) prepare() {
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

func (r *chatStream) refusedBy(target int) bool {
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
func (r *chatStream) refusedPrefix(a *attempt, resp *http.Response) bool {
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
