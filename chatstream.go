package sluice

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/internal/sse"
)

// A stream the caller gets in its own dialect's codec's writing
// (dialect/chat) rather than as the provider's bytes: one translated from
// a target of another dialect, or one under Policy.Resume, which a
// continuation may join (resume.go). Each event of the current attempt's
// stream is decoded by the target's codec and written by the caller's,
// one encoder for the whole call.

// chatStream is the caller's stream written event by event by its
// dialect's codec: a translated stream, or one under Policy.Resume.
type chatStream struct {
	c         *call
	body      *body         // the caller's, the first attempt's; nil for a stream held whole
	resumable bool          // a break may be resumed (Policy.Resume)
	req       *chat.Request // the client's request, as the chat model holds it
	from      chat.Codec    // the client's dialect's
	enc       chat.StreamEncoder

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
	obuf []byte // out's buffer, written again from its start once out is read
	evs  []chat.Event
	frs  []chat.Frame
	done bool // the caller's stream has ended (its stop or its error event)

	// The break: why the current stream broke, nil while it flows.
	brk   error
	brkEv *chat.Error // the provider's error event it broke on, if any

	// What the caller has.
	text     []byte // the text the caller got, kept when resumable
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

// newChatStream returns a stream written by codec from for the client's
// request req.
func newChatStream(c *call, from chat.Codec, req *chat.Request) *chatStream {
	return &chatStream{c: c, req: req, from: from, enc: from.NewStreamEncoder(req), top: -1,
		buf: make([]byte, 4096), obuf: make([]byte, 0, 8192)} // a read's events, written, fit obuf
}

// startStream hands the first attempt's stream resp over in b as the
// caller's dialect writes it, read from the target's by codec to:
// resumable or not. The Meter's count is moved onto the target's raw
// bytes.
func (c *call) startStream(resp *http.Response, b *body, to chat.Codec, req *chat.Request, resumable bool) {
	r := newChatStream(c, codecOf(c.d), req)
	r.body, r.resumable = b, resumable
	if c.xs == nil {
		c.xs = &xlState{}
	}
	c.xs.rs = r
	if resumable {
		c.ctx, r.cancel = context.WithCancelCause(c.ctx)
	}
	r.use(to, c.targetDialect().Stream(resp.Header), io.MultiReader(bytes.NewReader(b.head), resp.Body), resp.Body)
	r.count, b.count = b.count, nil
	b.head, b.n = nil, 0
	b.rc = r
	resp.Header.Del("Content-Length")
	resp.Header.Del("Content-Encoding")
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.ContentLength = -1
}

// translateHeld writes a stream of the target held whole (one that ended
// on its first event, an error, kept as the call's last failure), framed
// by fr, as the caller's dialect writes it.
func (c *call) translateHeld(x *translation, head []byte, fr dialect.Stream) []byte {
	r := newChatStream(c, x.from, x.req)
	r.use(x.to, fr, bytes.NewReader(head), nil)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out
		}
	}
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
func (r *chatStream) use(to chat.Codec, fr dialect.Stream, src io.Reader, closer io.Closer) {
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

// Read returns the caller's stream, reading the current attempt's until
// an event gives some; when it breaks, resume goes on with the next
// attempt's, or the break ends it (decline).
func (r *chatStream) Read(p []byte) (int, error) {
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
			if r.cur == nil && r.body != nil { // a continuation's body maps its own
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
func (r *chatStream) feed(p []byte) {
	r.frames.Feed(p, func(ev dialect.Event) bool {
		evs, err := r.dec.Decode(r.evs[:0], chat.Frame{Event: ev.Type, Data: ev.Data, Exception: r.exc && ev.Status != 0})
		if err != nil {
			evs = append(evs, failEvent(err))
		}
		r.handle(evs)
		return !r.done && r.brk == nil
	})
}

// errStreamEvent is the break of a stream on the provider's error event.
var errStreamEvent = errors.New("sluice: provider error event")

// handle passes the current stream's events on to the caller, in the
// caller's blocks: a continuation's start, and a restart's repeat of the
// text sent, are the caller's already. An error event is a break.
func (r *chatStream) handle(evs []chat.Event) {
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
			if r.resumable { // what a continuation is asked to go on from
				r.text = append(r.text, ev.Text...)
			}
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

// emit writes ev as the caller's server-sent events.
func (r *chatStream) emit(ev chat.Event) {
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
	fresh := len(r.out) == 0
	if fresh {
		r.out = r.obuf[:0] // the caller has read it all
	}
	for _, f := range frs {
		r.out = sse.AppendEvent(r.out, f.Event, f.Data)
	}
	if fresh {
		r.obuf = r.out[:0]
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

// decline ends the caller's stream on its break: an error event becomes
// the caller's error event; a cut or a stall is the error of the Read.
func (r *chatStream) decline() (int, error) {
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

// closeSource closes the current stream's source.
func (r *chatStream) closeSource() {
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
func (r *chatStream) Close() error {
	if r.cancel != nil {
		r.cancel(context.Canceled) // the caller left: no failure of the provider's
	}
	r.closeSource()
	return nil
}
