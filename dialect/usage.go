package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/sluice-llm/sluice/internal/request"
	"github.com/sluice-llm/sluice/internal/sse"
)

// What the dialects' usage readers share: the usage object of OpenAI and
// Anthropic (one shape with both's names, as the servers that speak
// OpenAI's API relay Anthropic's answers too), read from a whole answer in
// one strict pass over its top-level members; the reader of a stream's
// usage, fed its bytes, each dialect saying what an event carries; beneath
// them, the one JSON reader (internal/request's Walk, which validates as
// it reads). Where each dialect puts its usage is in its own file.

// Tokens is how many tokens the answer counts against a provider's
// tokens-per-minute limit: its input and output, and the tokens written to
// the cache; tokens read from the cache only as far as Input already counts
// them (OpenAI's way), since Anthropic leaves them out of its input limit.
func (u Usage) Tokens() int64 { return u.Input + u.Output + u.CacheWrite }

// objectUsage reads the top-level "usage" object of a whole answer: an
// OpenAI chat completion's (prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens), an OpenAI Responses API
// response's (input_tokens, output_tokens,
// input_tokens_details.cached_tokens) or an Anthropic message's
// (input_tokens, output_tokens, cache_read_input_tokens,
// cache_creation_input_tokens). ok is false when body is not JSON or has no
// usage object, as in an error body. Counts that are negative read as
// zero. It allocates nothing.
func objectUsage(body []byte) (u Usage, ok bool) {
	if !hasUsageObject(body) {
		return Usage{}, false
	}
	// One pass validates the body and reads its top-level members; only
	// the usage members are decoded, into one object as encoding/json
	// decodes a repeated key: null drops what came before.
	var w usageWire
	seen := false
	valid := request.Walk(body, func(k, v []byte) bool {
		if request.KeyIs(k, "usage") {
			// As encoding/json does with a pointer: null sets it to nil;
			// any other value allocates it, and only an object fills it.
			switch v[0] {
			case 'n':
				w, seen = usageWire{}, false
			case '{':
				seen = true
				w.decode(v)
			default:
				seen = true
			}
		}
		return true
	})
	if !valid || !seen {
		return Usage{}, false
	}
	return w.usage(), true
}

// usageWire is a usage object as OpenAI or Anthropic writes it. Counts
// are decoded as numbers of any form (12, 12.0, 1.2e1) and clamped by
// tokenCount.
type usageWire struct {
	PromptTokens     float64      `json:"prompt_tokens"`
	CompletionTokens float64      `json:"completion_tokens"`
	InputTokens      float64      `json:"input_tokens"`
	OutputTokens     *float64     `json:"output_tokens"`
	CacheRead        float64      `json:"cache_read_input_tokens"`
	CacheWrite       float64      `json:"cache_creation_input_tokens"`
	PromptDetails    *cachedCount `json:"prompt_tokens_details"`
	InputDetails     *cachedCount `json:"input_tokens_details"`
}

// cachedCount is OpenAI's prompt_tokens_details / input_tokens_details.
type cachedCount struct {
	CachedTokens float64 `json:"cached_tokens"`
}

// decode reads the usage object v, valid JSON, into w as encoding/json
// decodes it into w's tagged fields, without its reflection: keys matched
// case-folded, a later member over an earlier one, numbers of any form; a
// member of another type leaves its field as it was (a type error), but
// allocates a pointer field that was nil, and null sets a pointer field to
// nil.
func (w *usageWire) decode(v []byte) {
	request.Walk(v, func(k, v []byte) bool {
		switch {
		case request.KeyIs(k, "prompt_tokens"):
			decodeNumber(v, &w.PromptTokens)
		case request.KeyIs(k, "completion_tokens"):
			decodeNumber(v, &w.CompletionTokens)
		case request.KeyIs(k, "input_tokens"):
			decodeNumber(v, &w.InputTokens)
		case request.KeyIs(k, "cache_read_input_tokens"):
			decodeNumber(v, &w.CacheRead)
		case request.KeyIs(k, "cache_creation_input_tokens"):
			decodeNumber(v, &w.CacheWrite)
		case request.KeyIs(k, "output_tokens"):
			if v[0] == 'n' {
				w.OutputTokens = nil
				break
			}
			if w.OutputTokens == nil {
				w.OutputTokens = new(float64)
			}
			decodeNumber(v, w.OutputTokens)
		case request.KeyIs(k, "prompt_tokens_details"):
			decodeCached(v, &w.PromptDetails)
		case request.KeyIs(k, "input_tokens_details"):
			decodeCached(v, &w.InputDetails)
		}
		return true
	})
}

// decodeCached reads a prompt_tokens_details or input_tokens_details
// value into *c, as decode does.
func decodeCached(v []byte, c **cachedCount) {
	if v[0] == 'n' {
		*c = nil
		return
	}
	if *c == nil {
		*c = new(cachedCount)
	}
	if v[0] == '{' {
		request.Walk(v, func(k, v []byte) bool {
			if request.KeyIs(k, "cached_tokens") {
				decodeNumber(v, &(*c).CachedTokens)
			}
			return true
		})
	}
}

// decodeNumber sets *f to the JSON number v; any other value, or a number
// out of float64's range, leaves *f as it was.
func decodeNumber(v []byte, f *float64) {
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return
	}
	if n, err := strconv.ParseFloat(string(v), 64); err == nil {
		*f = n
	}
}

// usage converts w, preferring OpenAI's names where both are set.
func (w *usageWire) usage() Usage {
	u := Usage{
		Input:      tokenCount(w.PromptTokens),
		Output:     tokenCount(w.CompletionTokens),
		CacheRead:  tokenCount(w.CacheRead),
		CacheWrite: tokenCount(w.CacheWrite),
	}
	if u.Input == 0 {
		u.Input = tokenCount(w.InputTokens)
	}
	if u.Output == 0 && w.OutputTokens != nil {
		u.Output = tokenCount(*w.OutputTokens)
	}
	details := w.PromptDetails
	if details == nil {
		details = w.InputDetails
	}
	if details != nil {
		u.CacheRead = tokenCount(details.CachedTokens)
		u.CacheReadInInput = true
	}
	return u
}

// tokenCount returns f as a count: truncated, negative and NaN read as 0,
// and too large read as math.MaxInt64.
func tokenCount(f float64) int64 {
	switch {
	case !(f > 0):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// addCounts adds two counts, at most math.MaxInt64.
func addCounts(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// isSyntaxError reports whether err says the JSON was malformed, in which
// case nothing decoded from it is kept. Other errors (a member of the wrong
// type) leave the rest decoded.
func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// usageKey is searched for without its opening quote: a quote is the
// commonest byte of JSON and a "u" a rare one, which keeps bytes.Index on
// its fast path.
var usageKey = []byte(`usage"`)

// hasUsageObject reports whether data may hold a usage object: somewhere
// in it, "usage" is followed by a colon and an opening brace. It is the
// cheap test that spares decoding the events without one, such as OpenAI
// chunks with "usage":null.
func hasUsageObject(data []byte) bool {
	for {
		i := bytes.Index(data, usageKey)
		if i < 0 {
			return false
		}
		quoted := i > 0 && data[i-1] == '"'
		data = data[i+len(usageKey):]
		if quoted && objectFollows(data) {
			return true
		}
	}
}

// objectFollows reports whether b starts with a colon and then an opening
// brace, JSON white space allowed around the colon.
func objectFollows(b []byte) bool {
	want := byte(':')
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		case want:
			if want == '{' {
				return true
			}
			want = '{'
		default:
			return false
		}
	}
	return false
}

// maxUsageEvent bounds the bytes a stream's usage reader buffers for one
// event. The Responses API's response.completed event repeats the whole
// answer, so the bound is well above sse.DefaultMaxEventSize; a larger
// event is skipped, and its usage with it.
const maxUsageEvent = 8 << 20

// sseUsage is the UsageReader of a stream of server-sent events, each
// event read by its dialect's read. It keeps no more than the current
// event (at most maxUsageEvent bytes).
type sseUsage struct {
	p    sse.Parser
	u    Usage
	ok   bool
	read func(r *sseUsage, ev sse.Event)
}

// newSSEUsage returns the reader of a stream whose events read reads.
func newSSEUsage(read func(*sseUsage, sse.Event)) *sseUsage {
	r := &sseUsage{read: read}
	r.p.MaxEventSize = maxUsageEvent
	return r
}

func (r *sseUsage) Write(p []byte) (int, error) {
	r.p.Feed(p, r.event)
	return len(p), nil
}

func (r *sseUsage) event(ev sse.Event) bool {
	r.read(r, ev)
	return true
}

func (r *sseUsage) Usage() (Usage, bool) { return r.u, r.ok }

func (r *sseUsage) Events() int { return r.p.Events() }

// set makes u the usage read so far.
func (r *sseUsage) set(u Usage) { r.u, r.ok = u, true }

// usageEvent is the part of an OpenAI-style or Anthropic-style stream
// event that may hold a usage object.
type usageEvent struct {
	Type     string       `json:"type"`
	Usage    *usageWire   `json:"usage"`    // OpenAI chat chunk, Anthropic message_delta
	Message  *usageHolder `json:"message"`  // Anthropic message_start
	Response *usageHolder `json:"response"` // Responses API response.*
}

// usageHolder is a JSON object with a "usage" member.
type usageHolder struct {
	Usage *usageWire `json:"usage"`
}

// messagesEvent reads the usage of an event of an OpenAI-style or
// Anthropic-style stream, which the servers that speak OpenAI's API mix:
// an OpenAI chat chunk's "usage", an Anthropic message_start's
// message.usage and message_delta's usage (merged, mergeDelta), a
// Responses API event's response.usage. The events without a usage
// object (content, pings, "[DONE]", chunks with "usage":null) are skipped
// after a cheap look, without decoding them.
func messagesEvent(r *sseUsage, e sse.Event) {
	if !hasUsageObject(e.Data) {
		return
	}
	var ev usageEvent
	if isSyntaxError(json.Unmarshal(e.Data, &ev)) {
		return
	}
	typ := ev.Type
	if typ == "" {
		typ = e.Type
	}
	switch {
	case ev.Usage != nil && typ == "message_delta":
		mergeDelta(r, ev.Usage)
	case ev.Usage != nil:
		r.set(ev.Usage.usage())
	case ev.Message != nil && ev.Message.Usage != nil:
		r.set(ev.Message.Usage.usage())
	case ev.Response != nil && ev.Response.Usage != nil:
		r.set(ev.Response.Usage.usage())
	}
}
