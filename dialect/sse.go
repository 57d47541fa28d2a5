package dialect

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/sluice-llm/sluice/internal/sse"
)

// Server-sent events frame the streams of every dialect but Bedrock's.
// What the SSE dialects share is here: the framing, and the terminal and
// error events of the OpenAI-style and Anthropic-style streams, which
// OpenAI-compatible servers mix.

// isEventStream reports whether h announces a text/event-stream.
func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
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

// sseStream is a Stream of server-sent events, each judged by classify.
type sseStream struct {
	p        sse.Parser
	classify func(ev sse.Event) (end bool, status int)
}

// newSSEStream returns the Stream of an answer whose header is h, nil when
// h announces no event stream.
func newSSEStream(h http.Header, classify func(sse.Event) (bool, int)) Stream {
	if !isEventStream(h) {
		return nil
	}
	return &sseStream{classify: classify}
}

func (s *sseStream) Feed(p []byte, fn func(Event) bool) {
	s.p.Feed(p, func(ev sse.Event) bool {
		end, status := s.classify(ev)
		return fn(Event{Type: ev.Type, Data: ev.Data, End: end, Status: status})
	})
}

func (s *sseStream) InEvent() bool { return s.p.InEvent() }

func (s *sseStream) Events() int { return s.p.Events() }

// CloseEvent is the blank line that ends a server-sent event begun, nil
// when none is.
func (s *sseStream) CloseEvent() []byte {
	if !s.p.Pending() {
		return nil
	}
	return []byte("\n\n")
}

// classifyEvent judges an event of an OpenAI-style or Anthropic-style
// stream: its end (terminalEvent) and, for an error, its status.
func classifyEvent(ev sse.Event) (end bool, status int) {
	if isTerminalEvent(ev) {
		return true, 0
	}
	if isErrorEvent(ev) {
		return false, errorEventStatus(ev.Data)
	}
	return false, 0
}

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
