package fake

import (
	"cmp"
	"crypto/rand"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dialect is one API's wire shape.
type dialect interface {
	// idHeader is the response header that carries the request id.
	idHeader() string
	// defaultModel is the model of a request that names none.
	defaultModel() string
	// errorBody is the error for a status and a step's Error; a non-empty
	// message replaces the usual one.
	errorBody(status int, kind, message, requestID string) []byte
	// answer is a whole answer, events the whole stream of one.
	answer(r reply) []byte
	events(r reply) []event
	// failEvent is an overloaded error sent in a stream after seq events.
	failEvent(r reply, seq int) event
	// overloadedStatus is the status of an overloaded error answered as
	// plain HTTP, outside a stream.
	overloadedStatus() int
	// limitHeaders sets the rate-limit headers of an answer under the
	// limits; limitError is the 429 body of a call they refused.
	limitHeaders(h http.Header, q quota)
	limitError(q quota, requestID string) []byte
}

// event is one server-sent event.
type event struct {
	name string // the event field; "" for none
	data []byte
}

// reply is what an answer says, in any dialect.
type reply struct {
	id      string // unique; each dialect adds its prefix (chatcmpl-, msg_, resp_)
	model   string
	created int64    // Unix seconds
	prompt  int      // prompt tokens: request body bytes / 4
	chunks  []string // the text, one piece per event; completion tokens = len(chunks)
	usage   bool     // OpenAI chat: the request asked for a usage chunk
}

func (r reply) text() string { return strings.Join(r.chunks, "") }

var words = [...]string{"This", " is", " a", " fake", " answer."}

// pieces returns n pieces of the answer's text, one per event.
func pieces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = words[i%len(words)]
		if i > 0 && i%len(words) == 0 {
			out[i] = " This"
		}
	}
	return out
}

// forever is a pause that ends only when the client leaves or on Close.
const forever time.Duration = -1

// call is one call being played.
type call struct {
	p      *Provider
	w      http.ResponseWriter
	r      *http.Request
	d      dialect
	step   Step
	stream bool   // the request asked for a stream
	id     string // the response's request id
	rep    reply
	// throttle makes a Fail end send the dialect's throttling error
	// (throttler) in place of its overloaded one.
	throttle bool
	// chat is the scripted chat answer (Provider.Chat) in the dialect's
	// shape; nil for the fake's own text answer.
	chat *chatReply
}

func newCall(p *Provider, w http.ResponseWriter, r *http.Request, d dialect, step Step, in requestFields, body []byte) *call {
	c := &call{p: p, w: w, r: r, d: d, step: step, stream: in.Stream, id: "req_" + rand.Text()}
	c.rep = reply{
		id:      rand.Text(),
		model:   cmp.Or(in.Model, d.defaultModel()),
		created: p.now().Unix(),
		prompt:  len(body) / 4,
		chunks:  pieces(answerEvents(step, p.Events)),
		usage:   in.StreamOptions.IncludeUsage,
	}
	c.chat = newChatReply(p.Chat, d, c.rep, p.InterleaveCalls)
	if _, ok := d.(prefiller); ok && c.chat == nil {
		c.rep.chunks = continued(c.rep.chunks, prefill(body))
	}
	w.Header().Set(d.idHeader(), c.id)
	return c
}

// play does what the call's step says.
func (c *call) play() {
	switch s := c.step; s.Kind {
	case Hang:
		c.pause(forever)
	case Reset:
		c.abort(true)
	case Slow:
		if c.pause(s.Delay) {
			c.answer(http.StatusOK)
		}
	case Stream:
		c.send(http.StatusOK)
	case Partial:
		c.partial()
	case Overloaded:
		c.overloaded()
	case Throttled:
		c.throttled()
	default:
		if s.Status >= 400 {
			c.fail(s.Status, s.Error, "")
		} else {
			c.answer(s.Status)
		}
	}
}

// answer sends a whole answer, streamed when the request asked.
func (c *call) answer(status int) {
	if c.stream {
		c.send(status)
		return
	}
	if u, ok := c.d.(usageHeaders); ok {
		u.usageHeaders(c.w.Header(), c.rep)
	}
	writeJSON(c.w, status, c.body())
}

// body is the whole answer's body: the scripted chat answer, else the
// fake's text.
func (c *call) body() []byte {
	if c.chat != nil {
		return c.chat.body()
	}
	return c.d.answer(c.rep)
}

// events is the streamed answer's events: the scripted chat answer's,
// else the fake's text, after the dialect's own first event if it has
// one (leading).
func (c *call) events() []event {
	var evs []event
	if l, ok := c.d.(leading); ok {
		evs = l.leadingEvents()
	}
	if c.chat != nil {
		return append(evs, c.chat.events()...)
	}
	return append(evs, c.d.events(c.rep)...)
}

// leading is a dialect whose streams begin with events of their own
// before the answer's, as Azure OpenAI's chat completions begin with
// their prompt's content filter results.
type leading interface {
	leadingEvents() []event
}

// usageHeaders is a dialect whose whole answers carry their usage in
// headers too, as Bedrock's InvokeModel does.
type usageHeaders interface {
	usageHeaders(h http.Header, r reply)
}

// overloaded answers an Overloaded step: in a stream the provider says
// so with an error as the first event; otherwise with a plain error.
func (c *call) overloaded() {
	if c.stream {
		c.step = Step{Kind: Stream, End: Fail}
		c.send(http.StatusOK)
		return
	}
	c.fail(c.d.overloadedStatus(), "", "")
}

// throttler is a dialect whose provider throttles inside a stream, as
// Bedrock does with a throttlingException frame: throttleEvent is that
// error event.
type throttler interface {
	throttleEvent(r reply) event
}

// throttled answers a Throttled step: where the dialect throttles inside a
// stream (throttler) a request for a stream gets a 200 and the throttling
// error as its first event; any other request a plain 429.
func (c *call) throttled() {
	if _, ok := c.d.(throttler); ok && c.stream {
		c.step, c.throttle = Step{Kind: Stream, End: Fail}, true
		c.send(http.StatusOK)
		return
	}
	c.fail(http.StatusTooManyRequests, "", "")
}

// partialEvents is how many events a Partial step sends of a stream: the
// role chunk or message_start, then the first text.
const partialEvents = 2

// partial sends part of the answer, then stalls or cuts as the step says.
func (c *call) partial() {
	if c.stream {
		c.step = Step{Kind: Stream, End: c.step.End, After: partialEvents}
		c.send(http.StatusOK)
		return
	}
	body := c.body()
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(http.StatusOK)
	if _, err := c.w.Write(body[:len(body)/2]); err != nil {
		return
	}
	if http.NewResponseController(c.w).Flush() != nil {
		return
	}
	if c.step.End == Cut {
		c.abort(false)
		return
	}
	c.pause(forever)
}

// fail sends an error body with the step's hint headers.
func (c *call) fail(status int, kind, message string) {
	if g, ok := c.d.(gemini); ok { // Google gives its retry delay in the body
		g.fail(c, status, kind, message)
		return
	}
	now := c.p.now()
	for _, h := range c.step.Hints {
		h.set(c.w.Header(), now)
	}
	if hd, ok := c.d.(hinted); ok {
		if m := hd.hinted(c.w.Header(), status, kind); message == "" {
			message = m
		}
	}
	writeJSON(c.w, status, c.d.errorBody(status, kind, message, c.id))
}

// hinted is a dialect whose error answers follow the retry hints: it may
// add hints of its own to h, and returns the message that names them, ""
// for the usual one. Azure does (azure.go).
type hinted interface {
	hinted(h http.Header, status int, kind string) (message string)
}

// send streams the answer, flushing every event, and ends it as the step
// says.
func (c *call) send(status int) {
	h := c.w.Header()
	f, isFramed := c.d.(framed)
	if isFramed {
		h.Set("Content-Type", f.contentType())
	} else {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
	}
	c.w.WriteHeader(status)
	rc := http.NewResponseController(c.w)
	_ = rc.Flush() // a failure shows at the next write
	s := c.step
	gap := cmp.Or(s.Interval, c.p.Interval)
	for range s.KeepAlives {
		if isFramed {
			break // keep-alives are SSE comments
		}
		if !c.pause(gap) {
			return
		}
		if _, err := c.w.Write([]byte(keepAliveComment)); err != nil || rc.Flush() != nil {
			return
		}
	}
	for i, ev := range c.events() {
		if s.End != Done && i == s.After {
			break
		}
		if i > 0 && !c.pause(gap) {
			return
		}
		if c.write(rc, ev) != nil {
			return
		}
	}
	switch s.End {
	case Stall:
		c.pause(forever)
	case Cut:
		c.abort(false)
	case Fail:
		ev := c.d.failEvent(c.rep, s.After)
		if t, ok := c.d.(throttler); ok && c.throttle {
			ev = t.throttleEvent(c.rep)
		}
		_ = c.write(rc, ev)
	}
}

// keepAliveComment is the SSE comment a stream's keep-alives send, as
// OpenRouter does while a model is queued.
const keepAliveComment = ": OPENROUTER PROCESSING\n\n"

// write sends one event, framed as the dialect says (framed), else as a
// server-sent event, and flushes it.
func (c *call) write(rc *http.ResponseController, ev event) error {
	var b []byte
	if f, ok := c.d.(framed); ok {
		b = f.frame(ev)
	} else {
		if ev.name != "" {
			b = append(append(append(b, "event: "...), ev.name...), '\n')
		}
		b = append(append(append(b, "data: "...), ev.data...), "\n\n"...)
	}
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}

// pause waits d, or forever when d is negative. It reports whether the
// wait ran out; when the client leaves it returns false, and when the
// Provider is closed it also closes the connection.
func (c *call) pause(d time.Duration) bool {
	if d == 0 {
		return true
	}
	var end <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		end = t.C
	}
	select {
	case <-end:
		return true
	case <-c.r.Context().Done():
		return false
	case <-c.p.done():
		c.abort(false)
		return false
	}
}

// abort closes the call's connection without ending the response; with rst
// it sends a TCP RST instead of a FIN. Where the connection cannot be taken
// over (HTTP/2), it aborts the handler the way net/http provides.
func (c *call) abort(rst bool) {
	conn, _, err := http.NewResponseController(c.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	raw := conn
	if t, ok := conn.(*tls.Conn); ok {
		raw = t.NetConn()
	}
	if t, ok := raw.(*net.TCPConn); ok && rst {
		_ = t.SetLinger(0)
		conn = raw // no TLS close_notify before the RST
	}
	_ = conn.Close()
}

// set adds the hint's header to h; now dates a retry-after-date.
func (h Hint) set(hdr http.Header, now time.Time) {
	switch h.Name {
	case "retry-after":
		hdr.Set("Retry-After", h.Value)
	case "retry-after-ms":
		hdr.Set("retry-after-ms", h.Value)
	case "retry-after-date":
		n, _ := strconv.Atoi(h.Value)
		at := now.Add(time.Duration(n)*time.Second + time.Second - 1).Truncate(time.Second)
		hdr.Set("Retry-After", at.UTC().Format(http.TimeFormat))
	case "should-retry":
		hdr.Set("x-should-retry", h.Value)
	}
}
