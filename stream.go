package sluice

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/sse"
)

// maxPeek bounds how much of a stream is read, before its first event is
// complete, to judge that event.
const maxPeek = 64 << 10

// peek reads a stream until its first event is complete, under the
// first-byte timer until that event begins and then the idle timer. It
// returns the bytes read and the first event's data when that event is a
// provider error. Comment lines before it (": keep-alive", OpenRouter's
// ": OPENROUTER PROCESSING" while a model is queued) are no event: the
// first-byte timer keeps running through them. The bytes are read
// straight into the buffer returned, which grows only for a first event
// larger than peekChunk.
func (a *attempt) peek(rc io.Reader) (buf []byte, errEvent []byte, err error) {
	var p sse.Parser
	done, begun := false, false
	buf = make([]byte, 0, peekChunk)
	for !done && len(buf) < maxPeek {
		if begun {
			a.arm(&a.idle)
		}
		if cap(buf)-len(buf) < peekChunk/2 {
			buf = slices.Grow(buf, peekChunk)
		}
		n, rerr := rc.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			chunk := buf[len(buf) : len(buf)+n]
			buf = buf[:len(buf)+n]
			p.Feed(chunk, func(ev sse.Event) bool {
				if isErrorEvent(ev) {
					errEvent = bytes.Clone(ev.Data)
				}
				done = true
				return false
			})
			if !begun && (done || p.InEvent()) {
				begun = true
				a.ttfb = time.Since(a.start)
			}
		}
		if rerr != nil {
			if rerr == io.EOF && begun {
				break
			}
			if rerr == io.EOF { // nothing, or comments only: cut before the first event
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
// else → 400. A Google error event says its status itself: its numeric
// code, or its status name (UNAVAILABLE → 503).
func errorEventStatus(data []byte) int {
	var ev struct {
		Error struct {
			Type   string `json:"type"`
			Code   any    `json:"code"`
			Status string `json:"status"` // Google's
		} `json:"error"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return http.StatusInternalServerError
	}
	if s := rpcEventStatus(ev.Error.Code, ev.Error.Status); s != 0 {
		return s
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

func isEventStream(h http.Header) bool {
	ct := get(h, "Content-Type")
	if ct == "" {
		return false
	}
	// ParseMediaType allocates; only a type that may be a stream needs it.
	base, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(base), "text/event-stream") {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
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
