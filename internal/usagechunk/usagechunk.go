// Package usagechunk is the usage chunk of an OpenAI-compatible stream:
// such a stream reports its usage only when the request asks for it
// (stream_options.include_usage), in a last chunk with no choices. Under a
// budget the gateway asks for it when the client did not (Ask), so the
// call is settled to its real cost, and hides that chunk from the client,
// which did not ask for it (Hider).
package usagechunk

import (
	"bytes"
	"encoding/json"

	"github.com/sluice-llm/sluice/internal/sse"
)

var includeUsage = []byte(`"stream_options":{"include_usage":true},`)

// Ask returns a copy of a JSON object body with the ask for usage added
// as its first member. The caller has checked (request.Scan) that the
// body streams and has no stream_options.
func Ask(body []byte) []byte {
	i := bytes.IndexByte(body, '{')
	out := make([]byte, 0, len(body)+len(includeUsage))
	out = append(out, body[:i+1]...)
	out = append(out, includeUsage...)
	return append(out, body[i+1:]...)
}

// Hider drops the usage-only chunk from a relayed stream. The project's
// SSE parser finds the events, whatever the framing (LF, CRLF or CR); the
// Hider holds back only the bytes of the event being read, so every other
// event passes as soon as its blank line arrives. The zero value is ready
// for one stream; it is not safe for concurrent use.
type Hider struct {
	p       sse.Parser
	pending []byte // the bytes of the event being read
	usage   bool   // the event the parser just dispatched is the usage chunk
	skipLF  bool   // a dropped event ended in CR: drop the LF that may follow
}

// Hide returns the bytes of p, after those held back, that are not in the
// usage chunk or in an event not yet complete, and keeps the latter.
func (f *Hider) Hide(p []byte) []byte {
	var out []byte
	for len(p) > 0 {
		line := p
		if i := bytes.IndexAny(p, "\r\n"); i >= 0 {
			line = p[:i+1]
		}
		p = p[len(line):]
		if f.skipLF {
			f.skipLF = false
			if line[0] == '\n' {
				f.p.Feed(line, f.see) // the end of a CRLF: no event
				continue
			}
		}
		events := f.p.Events()
		f.usage = false
		f.p.Feed(line, f.see)
		f.pending = append(f.pending, line...)
		switch {
		case f.p.Events() > events && f.usage:
			f.skipLF = f.pending[len(f.pending)-1] == '\r'
			f.pending = f.pending[:0]
		case f.p.Events() > events, !f.p.Pending(), len(f.pending) > sse.DefaultMaxEventSize:
			out = append(out, f.pending...)
			f.pending = f.pending[:0]
		}
	}
	return out
}

// see marks the usage chunk as the parser dispatches it.
func (f *Hider) see(ev sse.Event) bool {
	f.usage = isUsageChunk(ev.Data)
	return true
}

// Rest returns what is held back: an event the stream did not finish.
func (f *Hider) Rest() []byte {
	r := f.pending
	f.pending = nil
	return r
}

// isUsageChunk reports whether data is an OpenAI chunk with no choices
// and a usage.
func isUsageChunk(data []byte) bool {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return false
	}
	var c struct {
		Choices []json.RawMessage `json:"choices"`
		Usage   json.RawMessage   `json:"usage"`
	}
	return json.Unmarshal(data, &c) == nil && c.Choices != nil && len(c.Choices) == 0 &&
		len(c.Usage) > 0 && string(c.Usage) != "null"
}
