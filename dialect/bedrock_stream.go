package dialect

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/sluice-llm/sluice/internal/awsevent"
)

// Bedrock's streams: AWS event-stream frames, read as their bytes pass.

// isAWSEventStream reports whether h announces an AWS event stream.
func isAWSEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	base, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(base), awsevent.ContentType) {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == awsevent.ContentType
}

// bedrockExceptions are Bedrock's error types and the status each comes
// with: over HTTP, and as a stream's exception frame, whose :exception-type
// is the name with a lower-case first letter. A model stream error comes
// only in a stream: it stands for a server error.
var bedrockExceptions = [...]struct {
	name   string
	status int
}{
	{"ThrottlingException", http.StatusTooManyRequests},
	{"ServiceUnavailableException", http.StatusServiceUnavailable},
	{"ModelNotReadyException", http.StatusTooManyRequests},
	{"ModelStreamErrorException", http.StatusInternalServerError},
	{"InternalServerException", http.StatusInternalServerError},
	{"ModelTimeoutException", http.StatusRequestTimeout},
	{"ModelErrorException", http.StatusFailedDependency},
	{"ValidationException", http.StatusBadRequest},
	{"AccessDeniedException", http.StatusForbidden},
	{"ResourceNotFoundException", http.StatusNotFound},
	{"ServiceQuotaExceededException", http.StatusBadRequest},
}

// bedrockQuota is the error type of a used-up quota.
const bedrockQuota = "ServiceQuotaExceededException"

// exceptionStatus returns the status an exception frame's type stands for;
// 500 for a type Bedrock does not document.
func exceptionStatus(name string) int {
	for _, e := range bedrockExceptions {
		if strings.EqualFold(e.name, name) {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// ErrorEvent returns an exception frame, which the AWS SDKs raise as the
// stream's error: modelTimeoutException for a stall or the call's time
// run out (codes stream_stalled and timeout), else
// serviceUnavailableException.
func (bedrockClient) ErrorEvent(code, message string) []byte {
	status := http.StatusServiceUnavailable
	if code == "stream_stalled" || code == "timeout" {
		status = http.StatusGatewayTimeout
	}
	name := bedrockErrorName(status)
	b, _ := json.Marshal(bedrockMessage{message, code})
	return awsevent.Frame{Type: awsevent.Exception, Name: strings.ToLower(name[:1]) + name[1:], Payload: b}.Encode()
}

// frameReader cuts the frames of an event stream out of bytes fed in
// chunks split anywhere, and decodes each with aws-sdk-go-v2's eventstream
// decoder. A frame that does not decode (a bad length or checksum) breaks
// the stream: nothing after it is read, as after a cut.
type frameReader struct {
	buf    []byte // the bytes of a frame begun in an earlier feed
	want   int    // its length, once its prelude is whole
	n      int    // frames read
	broken bool
}

// feed reads p and calls fn with each frame it completes, until fn
// returns false.
func (r *frameReader) feed(p []byte, fn func(awsevent.Frame) bool) {
	for len(p) > 0 && !r.broken {
		var frame []byte
		if len(r.buf) == 0 && len(p) >= awsevent.PreludeLen { // a frame starts at p: whole in it?
			n, err := awsevent.Length(p)
			if err != nil {
				r.fail()
				return
			}
			if n <= len(p) {
				frame, p = p[:n], p[n:]
			}
		}
		if frame == nil { // gather the prelude, then the rest of the frame
			want := awsevent.PreludeLen
			if len(r.buf) >= awsevent.PreludeLen {
				want = r.want
			}
			k := min(want-len(r.buf), len(p))
			r.buf, p = append(r.buf, p[:k]...), p[k:]
			if len(r.buf) == awsevent.PreludeLen && r.want == 0 {
				n, err := awsevent.Length(r.buf)
				if err != nil {
					r.fail()
					return
				}
				r.want = n
			}
			if len(r.buf) < awsevent.PreludeLen || len(r.buf) < r.want {
				continue
			}
			frame = r.buf
		}
		f, err := awsevent.Decode(frame)
		r.buf, r.want = r.buf[:0], 0
		if err != nil {
			r.fail()
			return
		}
		r.n++
		if !fn(f) {
			return
		}
	}
}

func (r *frameReader) fail() { r.broken, r.buf, r.want = true, nil, 0 }

// inFrame reports whether a frame has begun and is not whole, or never
// will be (the stream broke).
func (r *frameReader) inFrame() bool { return len(r.buf) > 0 || r.broken }

// bedrockStream is the Stream of a Bedrock answer.
type bedrockStream struct{ r frameReader }

// Feed calls fn with an Event per frame: an event frame's :event-type and
// payload, End for the terminal event; an exception frame's
// :exception-type and payload, with the status it stands for; an error
// frame's :error-code and :error-message, as a server error.
func (s *bedrockStream) Feed(p []byte, fn func(Event) bool) {
	s.r.feed(p, func(f awsevent.Frame) bool {
		ev := Event{Type: f.Name, Data: f.Payload}
		switch f.Type {
		case awsevent.Event:
			ev.End = isBedrockEnd(f.Name, f.Payload)
		case awsevent.Exception:
			ev.Status = exceptionStatus(f.Name)
		default:
			ev.Status = http.StatusInternalServerError
		}
		return fn(ev)
	})
}

func (s *bedrockStream) InEvent() bool { return s.r.inFrame() }

func (s *bedrockStream) Events() int { return s.r.n }

// CloseEvent is nil: a frame cut mid-way cannot be closed, its length
// names bytes that never came.
func (s *bedrockStream) CloseEvent() []byte { return nil }

// invokeChunk is an InvokeModelWithResponseStream chunk's payload, and
// what Sluice reads of the model's event its bytes hold.
type invokeChunk struct {
	Bytes []byte `json:"bytes"` // base64 in JSON
}

// invokeEvent is a model's stream event, as a chunk holds it, with the
// invocation metrics Bedrock adds to the last chunk, whatever the model.
type invokeEvent struct {
	Type    string `json:"type"`
	Metrics *struct {
		InputTokenCount           int64 `json:"inputTokenCount"`
		OutputTokenCount          int64 `json:"outputTokenCount"`
		CacheReadInputTokenCount  int64 `json:"cacheReadInputTokenCount"`
		CacheWriteInputTokenCount int64 `json:"cacheWriteInputTokenCount"`
	} `json:"amazon-bedrock-invocationMetrics"`
}

// readChunk returns the model event a chunk's payload holds, its bytes,
// and false when the payload holds none.
func readChunk(payload []byte) (invokeEvent, []byte, bool) {
	var c invokeChunk
	var ev invokeEvent
	if json.Unmarshal(payload, &c) != nil || json.Unmarshal(c.Bytes, &ev) != nil {
		return invokeEvent{}, nil, false
	}
	return ev, c.Bytes, true
}

// isBedrockEnd reports whether an event ends a whole Bedrock answer:
// ConverseStream's metadata, which follows messageStop; an
// InvokeModelWithResponseStream chunk holding Anthropic's message_stop, or
// Bedrock's invocation metrics (any model's last chunk).
func isBedrockEnd(name string, payload []byte) bool {
	switch name {
	case "metadata":
		return true
	case "chunk":
		ev, _, ok := readChunk(payload)
		return ok && (ev.Type == "message_stop" || ev.Metrics != nil)
	}
	return false
}

// converseUsage is the usage of a Converse answer and of ConverseStream's
// metadata event.
type converseUsage struct {
	Usage *struct {
		InputTokens           *int64 `json:"inputTokens"`
		OutputTokens          *int64 `json:"outputTokens"`
		CacheReadInputTokens  int64  `json:"cacheReadInputTokens"`
		CacheWriteInputTokens int64  `json:"cacheWriteInputTokens"`
	} `json:"usage"`
}

// readConverseUsage reads a Converse usage object; ok is false when b has
// none. Its inputTokens leave out the cached tokens, counted apart.
func readConverseUsage(b []byte) (Usage, bool) {
	var c converseUsage
	if json.Unmarshal(b, &c) != nil || c.Usage == nil || (c.Usage.InputTokens == nil && c.Usage.OutputTokens == nil) {
		return Usage{}, false
	}
	u := Usage{CacheRead: c.Usage.CacheReadInputTokens, CacheWrite: c.Usage.CacheWriteInputTokens}
	if c.Usage.InputTokens != nil {
		u.Input = *c.Usage.InputTokens
	}
	if c.Usage.OutputTokens != nil {
		u.Output = *c.Usage.OutputTokens
	}
	return u, true
}

// bedrockUsage reads the usage of a Bedrock stream: ConverseStream's
// metadata event, or the invocation metrics of an invoke stream's last
// chunk; before those, what Anthropic's usage reader makes of the chunks'
// events.
type bedrockUsage struct {
	r         frameReader
	u         Usage
	ok        bool
	anthropic UsageReader // nil when Anthropic has none
}

func (b *bedrockUsage) Write(p []byte) (int, error) {
	b.r.feed(p, func(f awsevent.Frame) bool {
		if f.Type != awsevent.Event {
			return true
		}
		switch f.Name {
		case "metadata":
			if u, ok := readConverseUsage(f.Payload); ok {
				b.u, b.ok = u, true
			}
		case "chunk":
			b.chunk(f.Payload)
		}
		return true
	})
	return len(p), nil
}

// chunk reads an invoke stream's chunk: Bedrock's invocation metrics, else
// the model's event, passed to Anthropic's reader as the server-sent event
// Anthropic's API would send.
func (b *bedrockUsage) chunk(payload []byte) {
	ev, data, ok := readChunk(payload)
	switch {
	case !ok:
	case ev.Metrics != nil:
		m := ev.Metrics
		b.u = Usage{Input: m.InputTokenCount, Output: m.OutputTokenCount,
			CacheRead: m.CacheReadInputTokenCount, CacheWrite: m.CacheWriteInputTokenCount}
		b.ok = true
	case b.anthropic != nil && ev.Type != "":
		sse := make([]byte, 0, len(ev.Type)+len(data)+16)
		sse = append(append(append(append(sse, "event: "...), ev.Type...), "\ndata: "...), data...)
		b.anthropic.Write(append(sse, "\n\n"...))
	}
}

func (b *bedrockUsage) Usage() (Usage, bool) {
	if b.ok || b.anthropic == nil {
		return b.u, b.ok
	}
	return b.anthropic.Usage()
}

func (b *bedrockUsage) Events() int { return b.r.n }
