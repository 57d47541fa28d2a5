package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/scrub"
	"github.com/sluice-llm/sluice/internal/usagechunk"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relay copies the provider's answer to the client: headers, status, then
// the body, flushed at once for a stream, whose headers leave with its
// first bytes. A stream that fails after its first byte ends with an
// error event; another body that fails is cut so the client sees an
// incomplete answer, never a whole-looking one.
// With hideUsage, the usage chunk the gateway asked for is left out.
// Every injected key is scrubbed from the headers and the body, streams
// included; the body's length then changes, so Content-Length is dropped.
//
// With finish (a call under an Idempotency-Key), a client that leaves
// does not end the relay: the answer is read to its end all the same, for
// the engine to keep it.
func (g *Gateway) relay(w http.ResponseWriter, resp *http.Response, d dialect.Dialect, hideUsage, finish bool) {
	defer resp.Body.Close()
	relayed := g.relayHeader(w, resp, d) // what the client has read of a stream, to close a cut event
	stream := relayed != nil
	pass := g.passes(stream && hideUsage)
	clientGone := false
	rc := http.NewResponseController(w)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	// The engine answers a stream once its first event is read, so the
	// first Read returns at once and the headers leave with it.
	headersOut := !stream
	for {
		n, err := resp.Body.Read(buf)
		out := pass.apply(buf[:n], err != nil)
		switch {
		case len(out) > 0 && !clientGone:
			if _, werr := w.Write(out); werr != nil {
				if !finish {
					return // the client left; closing the body cancels upstream
				}
				clientGone = true // read on: the answer is kept for its retry
			}
			if stream && !clientGone {
				relayed.Feed(out, func(dialect.Event) bool { return true })
				rc.Flush()
			}
		case len(out) == 0 && !headersOut && !clientGone:
			rc.Flush()
		}
		headersOut = true
		switch {
		case err == io.EOF:
			return
		case err != nil && clientGone:
			return
		case err != nil && !stream:
			panic(http.ErrAbortHandler) // cut the connection: no clean end
		case err != nil:
			w.Write(relayed.CloseEvent()) // close an event cut mid-way
			w.Write(streamEnd(d, err))
			rc.Flush()
			return
		}
	}
}

// relayHeader sends the answer's status and header to the client: the
// hop-by-hop headers dropped, the provider's X-Request-Id left out,
// injected keys scrubbed, X-Should-Retry: false, and no Content-Length
// where the body may change (a stream, or keys to scrub). It returns the
// dialect's reader of the stream, nil when the answer is none.
func (g *Gateway) relayHeader(w http.ResponseWriter, resp *http.Response, d dialect.Dialect) dialect.Stream {
	h := w.Header()
	removeHopHeaders(resp.Header)
	delete(h, "X-Request-Id") // the provider's, if it gave one, as it came
	g.secrets.Header(resp.Header)
	for k, v := range resp.Header {
		h[k] = v
	}
	h.Set("X-Should-Retry", "false")
	relayed := d.Stream(resp.Header)
	if relayed != nil || g.secrets != nil {
		h.Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	return relayed
}

// passes is what a relayed answer's bytes pass through on their way to
// the client, in order: the usage chunk the gateway asked for left out,
// and injected keys scrubbed. Each is nil when not needed.
type passes struct {
	hide  *usagechunk.Hider
	scrub *scrub.Body
}

// passes returns the passes of an answer: hideUsage leaves the usage chunk
// out.
func (g *Gateway) passes(hideUsage bool) passes {
	var p passes
	if hideUsage {
		p.hide = &usagechunk.Hider{}
	}
	if g.secrets != nil {
		p.scrub = g.secrets.Body()
	}
	return p
}

// apply passes out, the bytes just read, through p; last says that no
// more follow, so what the passes held back goes out too.
func (p passes) apply(out []byte, last bool) []byte {
	if p.hide != nil {
		out = p.hide.Hide(out)
		if last {
			out = append(out, p.hide.Rest()...)
		}
	}
	if p.scrub != nil {
		out = p.scrub.Scrub(out, last)
	}
	return out
}

// streamEnd is the error event that ends a stream the gateway cannot
// finish, in the dialect d's framing and shape.
func streamEnd(d dialect.Dialect, err error) []byte {
	var te *sluice.TimeoutError
	code, msg := codeStreamCut, "sluice: the provider's stream was cut; the answer is incomplete"
	switch {
	case errors.Is(err, errAborted):
		code, msg = codeShuttingDown, "sluice: the gateway is shutting down; the answer is incomplete"
	case errors.As(err, &te) && te.Phase == sluice.PhaseIdle:
		code, msg = codeStreamStalled, fmt.Sprintf("sluice: the provider's stream stalled for %s; the answer is incomplete", te.Limit)
	case errors.As(err, &te):
		code, msg = codeTimeout, fmt.Sprintf("sluice: the call ran past its %s limit of %s; the answer is incomplete", te.Phase, te.Limit)
	}
	return d.Client().ErrorEvent(code, msg)
}
